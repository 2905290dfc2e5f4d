"""The position-wise feed-forward network (§3.3, Eq. 2).

    FFN(x) = max(0, x W_1 + b_1) W_2 + b_2

The same two dense layers are applied to every position separately ("two convolutions with
kernel size 1"); d_model -> dff -> d_model, with dff = 4 * d_model in the paper (512 -> 2048).
"""

from __future__ import annotations

import keras

from transformer_lib.utils.checks import require_positive_int, require_rate
from transformer_lib.utils.sublayers import build_unbuilt


@keras.saving.register_keras_serializable(package="transformer_lib")
class FeedForward(keras.layers.Layer):
    """Eq. 2, position by position.

    Args:
        d_model: input and output size.
        dff: inner size.
        activation: "relu" as in the paper; "gelu" for BERT-style models.
        activation_dropout: drop this share of the inner activations in training (not in the paper,
            whose P_drop is `AddNorm`'s; a regularizer for small corpora; default 0: none).
        use_bias: the biases b_1 and b_2 (the paper's); False: none.

    Call arguments:
        x: `[batch, seq, d_model]`.
        training: enables the activation dropout (if any).

    Returns:
        `[batch, seq, d_model]`; 2 * d_model * dff + dff + d_model parameters.
    """

    def __init__(self, d_model: int, dff: int, activation: str = "relu", activation_dropout: float = 0.0,
                 use_bias: bool = True, **kwargs):
        super().__init__(**kwargs)
        require_positive_int("d_model", d_model)
        require_positive_int("dff", dff)
        self.d_model = d_model
        self.dff = dff
        self.activation = activation
        require_rate("activation_dropout", activation_dropout)
        self.activation_dropout = activation_dropout
        self.use_bias = use_bias
        self.inner = keras.layers.Dense(dff, activation=activation, use_bias=use_bias, name="inner")  # W_1, b_1
        self.outer = keras.layers.Dense(d_model, use_bias=use_bias, name="outer")  # W_2, b_2
        self.dropout = keras.layers.Dropout(activation_dropout, name="activation_dropout") if activation_dropout else None

    def build(self, x_shape):
        build_unbuilt(self.inner, x_shape)
        build_unbuilt(self.outer, (*x_shape[:-1], self.dff))

    def call(self, x, training=None):
        hidden = self.inner(x)  # (batch, seq, dff): max(0, x W_1 + b_1)
        if self.dropout is not None:  # activation dropout, in training only
            hidden = self.dropout(hidden, training=training)
        return self.outer(hidden)  # (batch, seq, d_model)

    def get_config(self):
        return {**super().get_config(), "d_model": self.d_model, "dff": self.dff, "activation": self.activation,
                "activation_dropout": self.activation_dropout, "use_bias": self.use_bias}
