"""The "Add & Norm" box around every sub-layer (§3.1, §5.4), post-LN or pre-LN.

Post-LN, the paper's choice:  x + sublayer -> LayerNorm(x + Dropout(Sublayer(x)))
Pre-LN (Xiong et al. 2020):   x + Dropout(Sublayer(LayerNorm(x))), plus one final LayerNorm
                              after the whole stack (see `Encoder` and `Decoder`).

Pre-LN keeps an identity path from input to output, so gradients at the first layers stay well
scaled and training tolerates a larger learning rate with less warm-up.
"""

from __future__ import annotations

import keras

from transformer_lib._checks import build_unbuilt, require_rate

LAYER_NORM_EPSILON = 1e-6


@keras.saving.register_keras_serializable(package="transformer_lib")
class AddNorm(keras.layers.Layer):
    """Residual connection, dropout and layer normalization for one sub-layer.

    Use it in two steps, so the sub-layer itself stays an ordinary call:

        h = add_norm.sublayer_input(x)          # LayerNorm(x) for pre-LN, x for post-LN
        h = sublayer(h)
        x = add_norm(x, h, training=training)   # the residual sum, normalized for post-LN

    Args:
        dropout_rate: dropout on the sub-layer output, "before it is added ... and normalized" (§5.4).
        norm_first: False for post-LN (the paper), True for pre-LN.

    Call arguments:
        x: the sub-layer's input `[batch, seq, d_model]`.
        sublayer_output: the sub-layer's output, same shape.

    Returns:
        `[batch, seq, d_model]`.
    """

    def __init__(self, dropout_rate: float = 0.1, norm_first: bool = False, **kwargs):
        super().__init__(**kwargs)
        require_rate("dropout_rate", dropout_rate)
        self.dropout_rate = dropout_rate
        self.norm_first = norm_first
        self.norm = keras.layers.LayerNormalization(epsilon=LAYER_NORM_EPSILON, name="norm")
        self.dropout = keras.layers.Dropout(dropout_rate)

    def build(self, x_shape, sublayer_output_shape):
        build_unbuilt(self.norm, x_shape)

    def sublayer_input(self, x):
        """What the sub-layer reads: LayerNorm(x) for pre-LN, x itself for post-LN."""
        return self.norm(x) if self.norm_first else x

    def call(self, x, sublayer_output, training=None):
        residual = x + self.dropout(sublayer_output, training=training)
        return residual if self.norm_first else self.norm(residual)

    def get_config(self):
        return {**super().get_config(), "dropout_rate": self.dropout_rate, "norm_first": self.norm_first}
