"""Automatic checks for the book's exercises: call `check_<name>(your_function)`.

Each check compares your function with the library's own implementation on several inputs and
either prints a short confirmation or raises an AssertionError that says what differs.
"""

from __future__ import annotations

import numpy as np

from transformer_lib.masks import look_ahead_mask, padding_mask
from transformer_lib.positional_encoding import positional_encoding


def _compare(name: str, yours, expected, context: str) -> None:
    yours, expected = np.asarray(yours), np.asarray(expected)
    if yours.shape != expected.shape:
        raise AssertionError(f"{name}: for {context} the shape is {yours.shape}, expected {expected.shape}.")
    if not np.allclose(yours, expected, atol=1e-5):
        where = tuple(int(i) for i in np.argwhere(~np.isclose(yours, expected, atol=1e-5))[0])
        raise AssertionError(
            f"{name}: for {context} entry {where} is {yours[where]:.6g}, expected {expected[where]:.6g}."
        )


def check_concatenated_encoding(fn) -> None:
    """Exercise (chapter 2): `fn(length, depth)` puts all sines first, then all cosines."""
    for length, depth in [(5, 4), (50, 16), (7, 32)]:
        interleaved = np.asarray(positional_encoding(length, depth))
        expected = np.concatenate([interleaved[:, 0::2], interleaved[:, 1::2]], axis=1)
        _compare("concatenated encoding", fn(length, depth), expected, f"length={length}, depth={depth}")
    print("Correct: the same numbers as the interleaved encoding, with the dimensions reordered.")


def check_combined_mask(fn) -> None:
    """Exercise (chapter 3): `fn(target_ids)` combines the look-ahead and padding masks."""
    for ids in ([[5, 6, 0]], [[1, 2, 3, 4], [7, 0, 0, 0]]):
        ids = np.array(ids)
        expected = np.maximum(np.asarray(look_ahead_mask(ids.shape[1])), np.asarray(padding_mask(ids)))
        _compare("combined mask", fn(ids), expected, f"target_ids={ids.tolist()}")
    print("Correct: a key is blocked when it is in the future or when it is padding.")


def check_attention(fn) -> None:
    """Exercise (chapter 4): `fn(q, k, v, mask)` in NumPy returns Eq. 1's output (mask: 1.0 = blocked)."""
    from transformer_lib.attention import scaled_dot_product_attention

    rng = np.random.default_rng(0)
    for t, s, d in [(2, 3, 4), (5, 5, 8)]:
        q, k, v = rng.normal(size=(t, d)), rng.normal(size=(s, d)), rng.normal(size=(s, d))
        mask = np.zeros((t, s))
        mask[:, -1] = 1.0
        for m in (None, mask):
            expected, _ = scaled_dot_product_attention(q.astype("float32"), k.astype("float32"), v.astype("float32"), m)
            _compare("attention", fn(q, k, v, m), expected, f"{t} queries, {s} keys, d_k={d}, mask={'none' if m is None else 'last key blocked'}")
    print("Correct: your attention matches Eq. 1, masked and unmasked.")


def check_split_heads(fn) -> None:
    """Exercise (chapter 5): `fn(x, num_heads)` turns `[batch, length, d_model]` into `[batch, heads, length, d_k]`."""
    from transformer_lib.attention import MultiHeadAttention

    rng = np.random.default_rng(0)
    for batch, length, d_model, heads in [(1, 3, 8, 2), (2, 5, 12, 3)]:
        x = rng.normal(size=(batch, length, d_model)).astype("float32")
        expected = MultiHeadAttention(d_model, heads).split_heads(x)
        _compare("split heads", fn(x, heads), expected, f"x of shape {x.shape}, {heads} heads")
    print("Correct: each head gets its own slice of d_model, for every position.")


def check_padding_share(fn) -> None:
    """Exercise (chapter 1): `fn(batch)` returns the share of padding (id 0) in one `[batch, len]` array."""
    import tensorflow as tf

    from transformer_lib.data import padding_fraction

    for rows in ([[1, 5, 2, 0], [1, 2, 0, 0]], [[1, 7, 7, 2]], [[1, 2, 0, 0, 0, 0]]):
        batch = np.array(rows, np.int32)
        dataset = tf.data.Dataset.from_tensors(((batch, batch), batch))  # the same array as source and target
        _compare("padding share", fn(batch), padding_fraction(dataset), f"batch={rows}")
    print("Correct: that is the fraction of the computation spent on padding.")


def check_encoder_layer_parameters(fn) -> None:
    """Exercise (chapter 6): `fn(d_model, dff)` counts the parameters of one encoder layer."""
    from transformer_lib.encoder import EncoderLayer

    for d_model, heads, dff in [(512, 8, 2048), (64, 4, 256), (12, 3, 7)]:
        layer = EncoderLayer(d_model, heads, dff)
        layer.build((None, None, d_model))
        yours, expected = fn(d_model, dff), layer.count_params()
        if yours != expected:
            raise AssertionError(
                f"encoder layer parameters: for d_model={d_model}, dff={dff} you count {yours:,}, the layer has "
                f"{expected:,}. Count weights and biases of the four attention projections, both feed-forward "
                "layers, and the scale and offset of both layer norms."
            )
    print("Correct: attention 4·d(d+1), feed-forward 2·d·dff + dff + d, two layer norms 2·2d.")


def check_schedule(fn) -> None:
    """Exercise (chapter 7): `fn(step_num, d_model, warmup_steps)` is the §5.3 learning rate (step_num from 1)."""
    from transformer_lib.training import TransformerSchedule

    for d_model, warmup in [(512, 4000), (128, 1000)]:
        steps = np.array([1, 2, warmup // 2, warmup, warmup + 1, 10 * warmup])
        expected = TransformerSchedule(d_model, warmup)(steps - 1)  # Keras counts updates from 0
        yours = np.array([fn(int(step), d_model, warmup) for step in steps])
        _compare("learning rate", yours, expected, f"steps {steps.tolist()}, d_model={d_model}, warmup_steps={warmup}")
    print("Correct: a linear warm-up to (d_model * warmup_steps)^-0.5, then decay as 1/sqrt(step).")


def check_length_penalty(fn) -> None:
    """Exercise (chapter 8): `fn(length, alpha)` is the GNMT length penalty used to rank beams."""
    from transformer_lib.decoding import length_penalty

    for length in (1, 5, 12, 40):
        for alpha in (0.0, 0.6, 1.0):
            _compare("length penalty", fn(length, alpha), length_penalty(length, alpha), f"length={length}, alpha={alpha}")
    print("Correct: lp = ((5 + length) / 6) ** alpha; alpha = 0 turns it off.")


def check_masked_mean(fn) -> None:
    """Exercise (chapter 9): `fn(x, token_ids)` averages `x` `[batch, len, d]` over the non-padding positions."""
    from transformer_lib.classifier import masked_mean

    rng = np.random.default_rng(0)
    for ids in ([[5, 6, 7, 0, 0]], [[4, 0, 0, 0], [9, 8, 7, 6]]):
        ids = np.array(ids)
        x = rng.normal(size=(*ids.shape, 3)).astype("float32")
        _compare("masked mean", fn(x, ids), masked_mean(x, ids), f"token_ids={ids.tolist()}")
    print("Correct: padding neither counts in the sum nor in the number of positions.")
