"""The encoder (§3.1, Figure 1 left): N identical layers of self-attention and feed-forward.
Its bases, which the decoder and the decoder-only stack share, are in `transformer_lib.layers.stack`."""

from __future__ import annotations

import keras

from transformer_lib.layers.masks import padding_mask
from transformer_lib.layers.stack import BaseTransformerLayer, Stack


@keras.saving.register_keras_serializable(package="transformer_lib")
class EncoderLayer(BaseTransformerLayer):
    """One encoder layer: multi-head self-attention, then the feed-forward network, each wrapped
    in Add & Norm. Arguments as in `transformer_lib.layers.stack.BaseTransformerLayer`.

    Call arguments:
        x: `[batch, src_len, d_model]`.
        padding_mask: float `[batch, 1, 1, src_len]`, 1.0 at padding (`transformer_lib.padding_mask`).
        training: enables dropout.

    Returns:
        `[batch, src_len, d_model]`.
    """

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.self_attention = self.attention("self_attention")
        self.attention_add_norm = self.add_norm("attention_add_norm")

    def call(self, x, padding_mask=None, training=None):
        # 1. Self-attention: every position attends to every real (non-padding) source token.
        x = self.attention_add_norm(x, lambda h: self.self_attention(h, h, h, mask=padding_mask)[0], training=training)
        # 2. The position-wise feed-forward network.
        return self.feed_forward_add_norm(x, self.feed_forward, training=training)  # (batch, src_len, d_model)


@keras.saving.register_keras_serializable(package="transformer_lib")
class Encoder(Stack):
    """Source token ids in, one contextual vector per source position out. Arguments as in
    `transformer_lib.layers.stack.Stack`.

    Call arguments:
        source_ids: int `[batch, src_len]`, 0 = padding. The padding mask is built from them.
        training: enables dropout.
        mask_padding: False lets every position attend to the padding too (wrong; it exists to
            measure what the mask is worth, chapter 9).

    Returns:
        `[batch, src_len, d_model]`.
    """

    layer_class = EncoderLayer

    def build(self, source_ids_shape):
        self.build_stack(source_ids_shape)

    def call(self, source_ids, training=None, mask_padding=True):
        mask = padding_mask(source_ids) if mask_padding else None  # (batch, 1, 1, src_len)
        x = self.embed(source_ids, training)  # (batch, src_len, d_model)
        for layer in self.stack_layers:
            x = layer(x, padding_mask=mask, training=training)
        return self.finish(x)
