"""Checks for chapter 3 (Eq. 1 in NumPy, a self-attention layer in Keras) and chapter 4 (causal self-attention)."""

from __future__ import annotations

import numpy as np

from transformer_lib.book.exercises._core import call_answer, compare, exercise


def reference_attention(q, k, v, mask=None, scale=True, polarity=1.0, float32=False, axis=-1):
    """Eq. 1 in float64, written from the paper (mask: 1.0 = blocked). `scale=False`, `scale="d_k"`,
    `polarity=-1` and `axis=-2` give what common mistakes compute (no sqrt(d_k); d_k for sqrt(d_k); the
    mask's meaning reversed; the softmax over the queries instead of the keys).
    `float32=True` rounds the masked scores as float32 code does: a row whose keys are all blocked
    then gets uniform weights (in float64 it keeps its softmax), which is what a reversed mask gives."""
    divisor = {True: np.sqrt(k.shape[-1]), False: 1.0, "d_k": k.shape[-1]}[scale]
    scores = q @ np.swapaxes(k, -1, -2) / divisor
    if mask is not None:
        blocked = mask if polarity > 0 else 1 - mask
        scores = scores - 1e9 * blocked
        if float32:
            scores = scores.astype(np.float32).astype(float)
    weights = np.exp(scores - scores.max(axis=axis, keepdims=True))
    weights = weights / weights.sum(axis=axis, keepdims=True)
    return weights @ v, weights


def attention_hints(q, k, v, mask) -> list:
    hints = [(reference_attention(q, k, v, mask, scale=False)[0],
              "the scores are not divided by sqrt(d_k) (Eq. 1 scales them so the softmax does not saturate)."),
             (reference_attention(q, k, v, mask, scale="d_k")[0],
              "the scores are divided by d_k; Eq. 1 divides them by its square root, sqrt(d_k)."),
             *((reference_attention(q, k, v, mask, axis=-2, float32=float32)[0],
                "the softmax runs over the queries: each query's weights must sum to 1 over the keys (the last axis).")
               for float32 in (False, True))]
    if mask is not None:
        hints += [(reference_attention(q, k, v, mask, polarity=-1, float32=float32)[0],
                   "the mask's polarity is reversed: 1.0 means blocked, so add mask * -1e9 to the scores.")
                  for float32 in (False, True)]
        hints += [(reference_attention(q, k, v, None)[0], "the mask is ignored: blocked keys must get no weight.")]
    return hints


def _library_attention():
    from transformer_lib.layers.attention import MultiHeadAttention, scaled_dot_product_attention

    return [scaled_dot_product_attention, MultiHeadAttention]


@exercise("attention in NumPy", "your attention matches Eq. 1, masked and unmasked.")
def check_attention(fn) -> None:
    """Exercise (chapter 3): `fn(q, k, v, mask)` in NumPy returns Eq. 1's output (mask: 1.0 = blocked)."""
    rng = np.random.default_rng(0)
    for t, s, d in [(5, 5, 8), (2, 3, 4)]:
        q, k, v = rng.normal(size=(t, d)), rng.normal(size=(s, d)), rng.normal(size=(s, d))
        mask = np.zeros((t, s))
        mask[:, -2:] = 1.0
        for m in (mask, None):
            context = f"{t} queries, {s} keys, d_k={d}, mask={'none' if m is None else 'last two keys blocked'}"
            yours = call_answer("attention", fn, _library_attention(), q.copy(), k.copy(), v.copy(), m)
            compare("attention", yours, reference_attention(q, k, v, m)[0], context, attention_hints(q, k, v, m))


@exercise("causal self-attention", "every position attends to itself and the positions before it, never after.")
def check_causal_self_attention(fn) -> None:
    """Exercise (chapter 4): `fn(x, w_q, w_k, w_v)` is self-attention over `x` `[length, d]` with the
    look-ahead mask: Eq. 1 on Q = x W_q, K = x W_k, V = x W_v."""
    from transformer_lib.layers.masks import decoder_mask, look_ahead_mask

    rng = np.random.default_rng(1)
    for length, d, d_k in [(6, 8, 8), (3, 4, 2)]:
        x = rng.normal(size=(length, d))
        w = [rng.normal(size=(d, d_k)) for _ in range(3)]
        q, k, v = x @ w[0], x @ w[1], x @ w[2]
        future = np.triu(np.ones((length, length)), k=1)
        hints = attention_hints(q, k, v, future) + [
            (reference_attention(q, k, v, np.triu(np.ones((length, length))))[0],
             "each position is blocked from itself too: block only the keys after it (np.triu with k=1)."),
            (reference_attention(q, k, v, future.T)[0], "the past is blocked instead of the future.")]
        yours = call_answer("causal self-attention", fn, [*_library_attention(), look_ahead_mask, decoder_mask],
                            x.copy(), *(m.copy() for m in w))
        compare("causal self-attention", yours, reference_attention(q, k, v, future)[0],
                f"x of shape {x.shape}, d_k={d_k}", hints)


def _self_attention_cases(rng):
    """(name, x, mask) for the layer: a padded batch, the look-ahead mask, and both together."""
    x = rng.normal(size=(2, 5, 6)).astype("float32")
    padding = np.zeros((2, 1, 5), "float32")
    padding[1, 0, 3:] = 1.0  # the second sentence has two padding positions
    future = np.triu(np.ones((5, 5), "float32"), k=1)
    return [("a batch of 2, the second padded at positions 3-4 (mask [2, 1, 5])", x, padding),
            ("the look-ahead mask [5, 5]", x, future),
            ("no mask", x[:1], None),
            ("padding and look-ahead together (mask [2, 5, 5])", x, np.maximum(padding, future))]


def _gradients(layer, x, mask, probe):
    import tensorflow as tf

    with tf.GradientTape() as tape:
        loss = tf.reduce_sum(layer(x, attention_mask=mask) * probe)
    return [g.numpy() for g in tape.gradient(loss, [layer.w_q, layer.w_k, layer.w_v])]


@exercise("the SelfAttention layer", "your layer computes Eq. 1 on its own projections, and its gradients agree.")
def check_self_attention_layer(cls) -> None:
    """Exercise (chapter 3): `cls(d_k)` is a Keras layer with weights `w_q`, `w_k`, `w_v`
    (`[d_model, d_k]`, made in `build`) whose `call(x, attention_mask=None)` returns one head of
    self-attention `[batch, length, d_k]`; the mask (1.0 = blocked) broadcasts to `[batch, T, S]`."""
    import tensorflow as tf

    from transformer_lib.layers.attention import scaled_dot_product_attention as reference_attention_tf

    rng = np.random.default_rng(4)
    layer = cls(3)
    cases = _self_attention_cases(rng)
    call_answer("SelfAttention", layer, _library_attention(), cases[0][1], attention_mask=cases[0][2])
    for name in ("w_q", "w_k", "w_v"):
        if getattr(layer, name, None) is None or tuple(getattr(layer, name).shape) != (6, 3):
            raise AssertionError(f"SelfAttention: after a call on x [2, 5, 6], layer.{name} should be a weight of "
                                 "shape (6, 3) made in build with self.add_weight.")
    weights = [rng.normal(size=(6, 3)).astype("float32") for _ in range(3)]
    for variable, value in zip((layer.w_q, layer.w_k, layer.w_v), weights):
        variable.assign(value)
    for context, x, mask in cases:
        q, k, v = (x.astype(float) @ w for w in weights)
        yours = call_answer("SelfAttention", layer, _library_attention(), x, attention_mask=mask)
        compare("SelfAttention", yours, reference_attention(q, k, v, mask)[0], context, attention_hints(q, k, v, mask))
    x, mask = cases[0][1], cases[0][2]
    probe = rng.normal(size=(2, 5, 3)).astype("float32")
    with tf.GradientTape() as tape:
        variables = [tf.Variable(w) for w in weights]
        out, _ = reference_attention_tf(*(x @ w for w in variables), mask)
        expected = tape.gradient(tf.reduce_sum(out * probe), variables)
    for name, yours, theirs in zip(("w_q", "w_k", "w_v"), _gradients(layer, x, mask, probe), expected):
        compare(f"SelfAttention: the gradient of {name}", yours, theirs.numpy(), cases[0][0], rtol=1e-3)
