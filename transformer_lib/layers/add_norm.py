"""The "Add & Norm" box around every sub-layer (§3.1, §5.4), post-LN or pre-LN.

Post-LN, the paper's choice:  LayerNorm(x + Dropout(Sublayer(x)))
Pre-LN (tensor2tensor, 2018): x + Dropout(Sublayer(LayerNorm(x))), plus one final LayerNorm
                              after the whole stack (see `Encoder` and `Decoder`).

Pre-LN keeps an identity path from input to output, so gradients at the first layers stay well
scaled and training tolerates a larger learning rate with less warm-up.
"""

from __future__ import annotations

import keras

from transformer_lib.layers.rms_norm import RMSNorm
from transformer_lib.utils.checks import require_rate
from transformer_lib.utils.sublayers import build_unbuilt

LAYER_NORM_EPSILON = 1e-6


@keras.saving.register_keras_serializable(package="transformer_lib")
class AddNorm(keras.layers.Layer):
    """Residual connection, dropout and layer normalization around one sub-layer.

    The sub-layer is handed in as a function of one tensor, so the call reads like the formula:

        x = add_norm(x, feed_forward)                                     # FFN(x) wrapped
        x = add_norm(x, lambda h: attention(h, h, h, mask=mask)[0])       # self-attention wrapped

    Args:
        dropout_rate: dropout on the sub-layer output, "before it is added ... and normalized" (§5.4).
        norm_first: False for post-LN (the paper), True for pre-LN.
        rms_norm: the norm is RMSNorm (Zhang & Sennrich 2019, the chapter "Since 2017"), not LayerNorm.
        epsilon: the norm's epsilon (added to the variance, or to RMSNorm's mean square).

    Call arguments:
        x: the sub-layer's input `[batch, seq, d_model]`.
        sublayer: a function `[batch, seq, d_model] -> [batch, seq, d_model]`; it may also return a
            pair `(output, extra)` (attention returns its weights), and then `extra` is passed on.
        training: enables dropout.

    Returns:
        `[batch, seq, d_model]`, or `([batch, seq, d_model], extra)` when the sub-layer returns a pair.
    """

    def __init__(self, dropout_rate: float = 0.1, norm_first: bool = False, rms_norm: bool = False,
                 epsilon: float = LAYER_NORM_EPSILON, **kwargs):
        super().__init__(**kwargs)
        require_rate("dropout_rate", dropout_rate)
        self.dropout_rate = dropout_rate
        self.norm_first = norm_first
        self.rms_norm, self.epsilon = rms_norm, epsilon
        self.norm = make_norm(rms_norm, epsilon, name="norm")
        self.dropout = keras.layers.Dropout(dropout_rate)

    def build(self, x_shape):
        build_unbuilt(self.norm, x_shape)

    def __call__(self, x, sublayer, **kwargs):
        # Keras takes only tensors as positional arguments: the function goes in by name.
        return super().__call__(x, sublayer=sublayer, **kwargs)

    def call(self, x, sublayer, training=None):
        if self.norm_first:  # pre-LN: x + Dropout(Sublayer(Norm(x)))
            output, extra = _split(sublayer(self.norm(x)))
            y = x + self.dropout(output, training=training)
        else:  # post-LN: Norm(x + Dropout(Sublayer(x)))
            output, extra = _split(sublayer(x))
            y = self.norm(x + self.dropout(output, training=training))
        return y if extra is None else (y, extra)

    def get_config(self):
        return {**super().get_config(), "dropout_rate": self.dropout_rate, "norm_first": self.norm_first,
                "rms_norm": self.rms_norm, "epsilon": self.epsilon}


def make_norm(rms_norm: bool = False, epsilon: float = LAYER_NORM_EPSILON, **kwargs):
    """The norm of Add & Norm and of pre-LN's final norm: LayerNorm (the paper's), or RMSNorm."""
    return RMSNorm(epsilon=epsilon, **kwargs) if rms_norm else keras.layers.LayerNormalization(epsilon=epsilon, **kwargs)


def _split(result):
    """A sub-layer's result as `(output, extra)`: `extra` is None for a plain tensor."""
    if isinstance(result, (tuple, list)):
        output, extra = result
        return output, extra
    return result, None
