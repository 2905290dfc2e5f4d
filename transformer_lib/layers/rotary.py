"""Rotary position embeddings (Su et al. 2021, RoFormer): positions as rotations of the queries and keys.

Chapter 2's sinusoids are added to the embeddings once, at the bottom. A rotary embedding instead
rotates each pair of query and key features (2i, 2i + 1) by the angle t * theta_i, where t is the
position and theta_i = base^(-2i/d), in every attention layer:

    [x_2i, x_2i+1] at position t  ->  [x_2i cos(t theta_i) - x_2i+1 sin(t theta_i),
                                       x_2i sin(t theta_i) + x_2i+1 cos(t theta_i)]

A rotation keeps lengths, and the dot product of a vector rotated by a and one rotated by b depends
only on b - a. So the score q_m . k_n depends on the content and on the offset n - m alone, never
on where in the sequence the pair stands: chapter 2's "PE(t + k) is a rotation of PE(t)", built into
the attention score itself. Nothing is learned.
"""

from __future__ import annotations

import keras
from keras import ops

from transformer_lib.utils.checks import require_positive_int


@keras.saving.register_keras_serializable(package="transformer_lib")
class RotaryEmbedding(keras.layers.Layer):
    """Rotate feature pairs (2i, 2i + 1) of `x` by position * base^(-2i/d).

    Args:
        base: the longest wavelength's scale, 10,000 as in chapter 2's sinusoids and in RoFormer.

    Call arguments:
        x: queries or keys, `[..., length, d]` (d even): the position is the second-last axis, so a
            head axis before it is fine (`[B, h, T, d_k]`).
        offset: the position of the first row (an int or a scalar tensor): the cached decoding step
            gives its single new row the position it has in the whole sequence.

    Returns:
        `[..., length, d]`, the same dtype.
    """

    def __init__(self, base: float = 10_000.0, **kwargs):
        super().__init__(**kwargs)
        if not base > 1:
            raise ValueError(f"base must be > 1 (10000 in the paper), got {base!r}.")
        self.base = float(base)

    def angles(self, length, depth: int, offset=0):
        """`[length, depth / 2]`: position (offset + t) times theta_i = base^(-2i/depth)."""
        require_positive_int("depth", depth)
        if depth % 2:
            raise ValueError(f"A rotary embedding rotates pairs of features; d={depth} is odd. Use an even d_k.")
        theta = ops.power(self.base, -ops.arange(0, depth, 2, dtype="float32") / depth)  # (d/2,)
        positions = ops.cast(ops.arange(length) + offset, "float32")  # (length,)
        return positions[:, None] * theta[None, :]  # (length, d/2)

    def call(self, x, offset=0):
        length, depth = ops.shape(x)[-2], x.shape[-1]
        angles = self.angles(length, depth, offset)
        cos, sin = ops.cast(ops.cos(angles), x.dtype), ops.cast(ops.sin(angles), x.dtype)  # (length, d/2)
        even, odd = x[..., 0::2], x[..., 1::2]  # the two features of each pair, (..., length, d/2)
        rotated = ops.stack([even * cos - odd * sin, even * sin + odd * cos], axis=-1)  # (..., length, d/2, 2)
        return ops.reshape(rotated, ops.shape(x))  # pairs back in place: (..., length, d)

    def get_config(self):
        return {**super().get_config(), "base": self.base}
