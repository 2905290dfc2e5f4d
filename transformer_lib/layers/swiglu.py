"""SwiGLU (Shazeer 2020, "GLU Variants Improve Transformer"): a gated feed-forward network.

    FFN(x)    = max(0, x W_1 + b_1) W_2 + b_2                     (Eq. 2: two matrices)
    SwiGLU(x) = (Swish(x W_gate) * (x W_up)) W_down               (three matrices, no biases)

Swish(z) = z * sigmoid(z) (also called SiLU). One projection is a gate that scales the other,
feature by feature, before they go down to d_model. With three matrices instead of two, the inner
size is cut to about 2/3 of the ReLU network's to keep the parameter count the same
(`same_parameters_as`), as Shazeer and Llama do.
"""

from __future__ import annotations

import keras
from keras import ops

from transformer_lib.utils.checks import require_positive_int
from transformer_lib.utils.sublayers import build_unbuilt


@keras.saving.register_keras_serializable(package="transformer_lib")
class SwiGLUFeedForward(keras.layers.Layer):
    """Swish(x W_gate) * (x W_up), then W_down, position by position.

    Args:
        d_model: input and output size.
        dff: inner size (`same_parameters_as(d_model, 4 * d_model)` matches a ReLU network of 4 * d_model).

    Call arguments:
        x: `[batch, seq, d_model]`.

    Returns:
        `[batch, seq, d_model]`; 3 * d_model * dff parameters.
    """

    def __init__(self, d_model: int, dff: int, **kwargs):
        super().__init__(**kwargs)
        require_positive_int("d_model", d_model)
        require_positive_int("dff", dff)
        self.d_model, self.dff = d_model, dff
        self.gate = keras.layers.Dense(dff, use_bias=False, name="gate")  # W_gate
        self.up = keras.layers.Dense(dff, use_bias=False, name="up")  # W_up
        self.down = keras.layers.Dense(d_model, use_bias=False, name="down")  # W_down

    @staticmethod
    def same_parameters_as(d_model: int, dff: int) -> int:
        """The inner size at which this network has as many parameters as Eq. 2's with inner size `dff`
        (2 * d_model * dff + dff + d_model, with its biases): the nearest whole number."""
        return max(1, round((2 * d_model * dff + dff + d_model) / (3 * d_model)))

    def build(self, x_shape):
        build_unbuilt(self.gate, x_shape)
        build_unbuilt(self.up, x_shape)
        build_unbuilt(self.down, (*x_shape[:-1], self.dff))

    def call(self, x):
        gate = ops.silu(self.gate(x))  # (batch, seq, dff): Swish(x W_gate) = z * sigmoid(z)
        return self.down(gate * self.up(x))  # the gate scales x W_up feature by feature, then (batch, seq, d_model)

    def get_config(self):
        return {**super().get_config(), "d_model": self.d_model, "dff": self.dff}
