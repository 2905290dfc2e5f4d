"""Checks for chapter 5: splitting and merging heads in NumPy, and multi-head attention in Keras (as one
projection split into heads, `check_multi_head_attention`, and as h heads with their own projections,
`check_per_head_attention`)."""

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
    from transformer_lib.layers.attention import MultiHeadAttention

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
    from transformer_lib.layers.masks import decoder_mask, padding_mask

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

    from transformer_lib.layers.attention import MultiHeadAttention

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


def _copy_per_head_weights(layer, library, num_heads):
    """Give head i of the student's layer the columns i*d_k ... (i+1)*d_k - 1 of the library's W^Q, W^K
    and W^V (the projection of head i, chapter 5), and the library's W^O."""
    d_k = library.d_k
    for name in ("wq", "wk", "wv"):
        heads = getattr(layer, name, None)
        try:
            count = len(heads)
        except TypeError:
            count = None
        if count != num_heads:
            raise AssertionError(f"per-head attention: layer.{name} should be a list of num_heads={num_heads} "
                                 f"keras.layers.Dense(d_k) layers, one per head; got {type(heads).__name__}"
                                 + (f" of length {count}" if count is not None else "") + ".")
        kernel, bias = getattr(library, name).get_weights()
        for i, dense in enumerate(heads):
            columns = slice(i * d_k, (i + 1) * d_k)
            if len(dense.get_weights()) != 2 or dense.get_weights()[0].shape != kernel[:, columns].shape:
                raise AssertionError(f"per-head attention: after the first call, layer.{name}[{i}] should be a built "
                                     f"keras.layers.Dense(d_k) with a kernel of shape {kernel[:, columns].shape}, "
                                     "and a bias.")
            dense.set_weights([kernel[:, columns], bias[columns]])
    wo = getattr(layer, "wo", None)
    if wo is None or len(wo.get_weights()) != 2:
        raise AssertionError("per-head attention: after the first call, layer.wo should be a built "
                             "keras.layers.Dense(d_model) (a kernel and a bias).")
    wo.set_weights(library.wo.get_weights())
    return [getattr(library, name).get_weights() for name in ("wq", "wk", "wv", "wo")]


def _per_head_hints(query, key, weights, mask, num_heads) -> list:
    (wq, bq), (wk, bk), (wv, bv), (wo, bo) = weights
    d_k = wq.shape[1] // num_heads
    first = slice(0, d_k)
    same = [(np.tile(w[:, first], num_heads), np.tile(b[first], num_heads)) for w, b in weights[:3]]
    reversed_heads = [np.arange(d_k) + i * d_k for i in reversed(range(num_heads))]
    order = np.concatenate(reversed_heads)
    args = (query, key, key)
    hints = [(reference_multi_head(*args, [*same, (wo, bo)], num_heads, mask)[0],
              "every head uses head 1's projections: head i needs its own W_i^Q, W_i^K, W_i^V."),
             (reference_multi_head(*args, [*weights[:3], (wo[order], bo)], num_heads, mask)[0],
              "the heads are concatenated in the reverse order: head 1's output comes first."),
             (reference_multi_head(*args, [*weights[:3], (np.eye(wo.shape[0]), np.zeros_like(bo))], num_heads, mask)[0],
              "W^O is missing: the concatenated heads must go through layer.wo."),
             (reference_multi_head(*args, weights, num_heads, mask, scale=False)[0],
              "the scores are not divided by sqrt(d_k).")]
    if mask is not None:
        hints += [(reference_multi_head(*args, weights, num_heads, mask, polarity=-1, float32=float32)[0],
                   "the mask's polarity is reversed: 1.0 means blocked.") for float32 in (False, True)]
        hints += [(reference_multi_head(*args, weights, num_heads, None)[0], "the mask is ignored.")]
    return hints


@exercise("per-head attention", "your h separate heads compute exactly tl.MultiHeadAttention: one d_model x d_model "
          "projection cut into h column blocks is h projections of d_k.")
def check_per_head_attention(cls) -> None:
    """Exercise (chapter 5): `cls(d_model, num_heads)` is a Keras layer with lists `wq`, `wk`, `wv` of
    `num_heads` `Dense(d_k)` layers (head i's W_i^Q, W_i^K, W_i^V) and a `Dense(d_model)` `wo`, whose
    `call(query, key, value, attention_mask=None)` runs Eq. 1 in each head on its own projections,
    concatenates the heads' outputs (head 1 first) and applies `wo`; it returns
    `(output [B, T, d_model], weights [B, h, T, S])`. The check copies column block i of
    `tl.MultiHeadAttention`'s kernels into head i and compares outputs, weights and gradients."""
    import tensorflow as tf

    from transformer_lib.layers.attention import MultiHeadAttention

    rng = np.random.default_rng(7)
    cases = _mha_cases(rng)
    num_heads = 2
    layer, library = cls(8, num_heads), MultiHeadAttention(8, num_heads)
    _, query, key, mask = cases[0]
    call_answer("per-head attention", layer, _heads_methods(), query, key, key, attention_mask=mask)
    library(query, key, key, mask=mask)
    weights = _copy_per_head_weights(layer, library, num_heads)
    for context, query, key, mask in cases:
        result = call_answer("per-head attention", layer, _heads_methods(), query, key, key, attention_mask=mask)
        if not isinstance(result, (tuple, list)) or len(result) != 2:
            raise AssertionError("per-head attention: call should return a pair (output, attention weights).")
        expected, attention = reference_multi_head(query, key, key, weights, num_heads, mask)
        compare("per-head attention: the output", result[0], expected, context,
                _per_head_hints(query, key, weights, mask, num_heads))
        compare("per-head attention: the attention weights [B, h, T, S]", result[1], attention, context)
    _, query, key, mask = cases[1]
    probe = rng.normal(size=(2, 4, 8))
    d_k = library.d_k
    with tf.GradientTape() as tape:
        loss = tf.reduce_sum(layer(query, key, key, attention_mask=mask)[0] * probe)
    yours = tape.gradient(loss, [dense.kernel for name in ("wq", "wk", "wv") for dense in getattr(layer, name)])
    with tf.GradientTape() as tape:
        loss = tf.reduce_sum(library(query, key, key, mask=mask)[0] * probe)
    theirs = tape.gradient(loss, [library.wq.kernel, library.wk.kernel, library.wv.kernel])
    for n, name in enumerate(("wq", "wk", "wv")):
        for i in range(num_heads):
            compare(f"per-head attention: the gradient of {name}[{i}].kernel", yours[n * num_heads + i],
                    np.asarray(theirs[n])[:, i * d_k:(i + 1) * d_k], cases[1][0], rtol=1e-3)
