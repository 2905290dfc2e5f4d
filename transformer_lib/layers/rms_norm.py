"""RMSNorm (Zhang & Sennrich 2019): LayerNorm without its mean.

    LayerNorm(x) = (x - mean(x)) / sqrt(var(x) + eps) * g + b
    RMSNorm(x)   =  x            / sqrt(mean(x^2) + eps) * g

It drops the centring and the bias: the root mean square alone rescales each vector, which is what
keeps the residual stream's size in check. Zhang & Sennrich found the re-centring contributes little;
RMSNorm costs one reduction instead of two. Llama-style blocks use it in the pre-LN place.
"""

from __future__ import annotations

import keras
from keras import ops

from transformer_lib.utils.checks import require_non_negative_number


@keras.saving.register_keras_serializable(package="transformer_lib")
class RMSNorm(keras.layers.Layer):
    """x / sqrt(mean(x^2) + epsilon) * g over the last axis, with one learned gain g per feature
    (initialised to 1; no bias).

    Args:
        epsilon: added to the mean square, so that a zero vector stays zero instead of dividing by 0.

    Call arguments:
        x: `[..., d]`.

    Returns:
        `[..., d]`, the dtype of x (the mean square is taken in float32).
    """

    def __init__(self, epsilon: float = 1e-6, **kwargs):
        super().__init__(**kwargs)
        require_non_negative_number("epsilon", epsilon)
        self.epsilon = epsilon

    def build(self, x_shape):
        self.gain = self.add_weight(shape=(x_shape[-1],), initializer="ones", name="gain")

    def call(self, x):
        x32 = ops.cast(x, "float32")
        mean_square = ops.mean(ops.square(x32), axis=-1, keepdims=True)  # (..., 1)
        normalized = x32 / ops.sqrt(mean_square + self.epsilon)  # each vector's root mean square is now ~1
        return ops.cast(normalized * ops.cast(self.gain, "float32"), x.dtype)

    def get_config(self):
        return {**super().get_config(), "epsilon": self.epsilon}
