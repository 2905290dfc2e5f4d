"""Checks for chapter 5: splitting and merging heads in NumPy, and multi-head attention in Keras."""

from __future__ import annotations

import numpy as np

from transformer_lib.book.exercises._core import call_answer, compare, exercise
from transformer_lib.book.exercises.attention import reference_attention


def reference_split(x, num_heads, transpose=True):
    """`[B, L, d_model]` -> `[B, h, L, d_k]`; `transpose=False` is the common mistake (a bare reshape)."""
    batch, length, d_model = x.shape
    if not transpose:
        return x.reshape(batch, num_heads, length, d_model // num_heads)
    return x.reshape(batch, length, num_heads, d_model // num_heads).transpose(0, 2, 1, 3)


def reference_merge(x, transpose=True):
    batch, heads, length, d_k = x.shape
    if not transpose:
        return x.reshape(batch, length, heads * d_k)
    return x.transpose(0, 2, 1, 3).reshape(batch, length, heads * d_k)


NO_TRANSPOSE = "the heads are split without the transpose: reshape to [B, L, h, d_k] first, then move h forward."


def _heads_methods():
    from transformer_lib.attention import MultiHeadAttention

    return [MultiHeadAttention]


@exercise("split_heads", "each head gets its own slice of d_model, for every position.")
def check_split_heads(fn) -> None:
    """Exercise (chapter 5): `fn(x, num_heads)` turns `[batch, length, d_model]` into `[batch, heads, length, d_k]`."""
    rng = np.random.default_rng(0)
    for batch, length, d_model, heads in [(2, 5, 12, 3), (1, 3, 8, 2)]:
        x = rng.normal(size=(batch, length, d_model)).astype("float32")
        yours = call_answer("split heads", fn, _heads_methods(), x.copy(), heads)
        compare("split heads", yours, reference_split(x, heads), f"x of shape {x.shape}, {heads} heads",
                hints=[(reference_split(x, heads, transpose=False), NO_TRANSPOSE)])


@exercise("merge_heads", "the heads' outputs side by side again, head 1's d_k values first, for every position.")
def check_merge_heads(fn) -> None:
    """Exercise (chapter 5): `fn(x)` turns `[batch, heads, length, d_k]` back into `[batch, length, heads * d_k]`."""
    rng = np.random.default_rng(0)
    for batch, heads, length, d_k in [(2, 3, 5, 2), (1, 2, 3, 4)]:
        x = rng.normal(size=(batch, heads, length, d_k)).astype("float32")
        yours = call_answer("merge heads", fn, _heads_methods(), x.copy())
        compare("merge heads", yours, reference_merge(x), f"x of shape {x.shape}",
                hints=[(reference_merge(x, transpose=False),
                        "the heads are merged without the transpose: move h next to d_k first, then reshape.")])


def reference_multi_head(query, key, value, weights, num_heads, mask=None, **mistake):
    """§3.2.2 in float64 from the four (kernel, bias) pairs; `mistake` passes `transpose=False`,
    `scale=False` or `polarity=-1` on to show what a typical wrong layer computes."""
    (wq, bq), (wk, bk), (wv, bv), (wo, bo) = weights
    transpose = mistake.pop("transpose", True)
    q, k, v = (reference_split(x @ w + b, num_heads, transpose) for x, w, b in
               ((query, wq, bq), (key, wk, bk), (value, wv, bv)))
    heads, attention = reference_attention(q, k, v, mask, **mistake)
    return reference_merge(heads, transpose) @ wo + bo, attention


def _mha_cases(rng, d_model=8):
    """(context, query, key, mask): self-attention of a padded batch, cross-attention, the decoder mask."""
    from transformer_lib.masks import decoder_mask, padding_mask

    ids = np.array([[4, 5, 6, 7, 8], [4, 5, 6, 0, 0]])
    target = np.array([[3, 9, 2, 0], [3, 9, 9, 2]])
    x, memory = rng.normal(size=(2, 5, d_model)), rng.normal(size=(2, 4, d_model))
    return [("self-attention over a batch of 2, the second with 2 padding positions", x, x, np.asarray(padding_mask(ids))),
            ("cross-attention: 4 queries, 5 keys, the source padding masked", memory, x, np.asarray(padding_mask(ids))),
            ("self-attention with the decoder mask (look-ahead and padding)", memory, memory, np.asarray(decoder_mask(target))),
            ("no mask", x[:1], x[:1], None)]


def _copy_weights(layer, library):
    for name in ("wq", "wk", "wv", "wo"):
        sub = getattr(layer, name, None)
        if sub is None or len(sub.get_weights()) != 2:
            raise AssertionError(f"multi-head attention: after the first call, layer.{name} should be a built "
                                 "keras.layers.Dense(d_model) (a kernel and a bias), made in build.")
        sub.set_weights(getattr(library, name).get_weights())
    return [getattr(library, name).get_weights() for name in ("wq", "wk", "wv", "wo")]


def _mha_hints(query, key, weights, mask) -> list:
    args = (query, key, key, weights, 2, mask)
    hints = [(reference_multi_head(*args, transpose=False)[0], NO_TRANSPOSE),
             (reference_multi_head(*args, scale=False)[0], "the scores are not divided by sqrt(d_k).")]
    if mask is not None:
        hints += [(reference_multi_head(*args, polarity=-1, float32=float32)[0],
                   "the mask's polarity is reversed: 1.0 means blocked.") for float32 in (False, True)]
        hints += [(reference_multi_head(*args[:-1], None)[0], "the mask is ignored.")]
    return hints


@exercise("MultiHeadAttention", "your layer matches tl.MultiHeadAttention with the same weights: outputs, "
          "attention weights and gradients.")
def check_multi_head_attention(cls) -> None:
    """Exercise (chapter 5): `cls(d_model, num_heads)` is a Keras layer whose `build` makes four Dense
    layers `wq, wk, wv, wo` and whose `call(query, key, value, attention_mask=None)` returns
    `(output [B, T, d_model], weights [B, h, T, S])`, like `tl.MultiHeadAttention`."""
    import tensorflow as tf

    from transformer_lib.attention import MultiHeadAttention

    rng = np.random.default_rng(5)
    cases = _mha_cases(rng)
    layer, library = cls(8, 2), MultiHeadAttention(8, 2)
    _, query, key, mask = cases[0]
    call_answer("multi-head attention", layer, _heads_methods(), query, key, key, attention_mask=mask)
    library(query, key, key, mask=mask)
    weights = _copy_weights(layer, library)
    for context, query, key, mask in cases:
        result = call_answer("multi-head attention", layer, _heads_methods(), query, key, key, attention_mask=mask)
        if not isinstance(result, (tuple, list)) or len(result) != 2:
            raise AssertionError("multi-head attention: call should return a pair (output, attention weights).")
        expected, attention = reference_multi_head(query, key, key, weights, 2, mask)
        compare("multi-head attention: the output", result[0], expected, context, _mha_hints(query, key, weights, mask))
        compare("multi-head attention: the attention weights", result[1], attention, context)
    _, query, key, mask = cases[1]
    probe = rng.normal(size=(2, 4, 8))
    gradients = []
    for layer_, keyword in ((layer, "attention_mask"), (library, "mask")):
        with tf.GradientTape() as tape:
            loss = tf.reduce_sum(layer_(query, key, key, **{keyword: mask})[0] * probe)
        gradients.append(tape.gradient(loss, [layer_.wq.kernel, layer_.wk.kernel, layer_.wv.kernel, layer_.wo.kernel]))
    for name, yours, theirs in zip(("wq", "wk", "wv", "wo"), *gradients):
        compare(f"multi-head attention: the gradient of {name}.kernel", yours, theirs, cases[1][0], rtol=1e-3)
