"""The decoder (§3.1, Figure 1 right): N identical layers of masked self-attention,
encoder-decoder (cross) attention and feed-forward."""

from __future__ import annotations

import keras

from transformer_lib.attention import MultiHeadAttention
from transformer_lib.encoder import BaseTransformerLayer, Stack
from transformer_lib.masks import decoder_mask, padding_mask


@keras.saving.register_keras_serializable(package="transformer_lib")
class DecoderLayer(BaseTransformerLayer):
    """One decoder layer. Arguments as in `transformer_lib.encoder.BaseTransformerLayer`.

    1. masked multi-head self-attention: position t sees target positions <= t only;
    2. cross-attention: queries from the decoder, keys and values from the encoder output;
    3. the feed-forward network; each of the three wrapped in Add & Norm.

    Call arguments:
        x: `[batch, tgt_len, d_model]`.
        encoder_output: `[batch, src_len, d_model]`.
        self_attention_mask: float `[batch, 1, tgt_len, tgt_len]`, 1.0 = blocked (`decoder_mask`).
        cross_attention_mask: float `[batch, 1, 1, src_len]`, 1.0 at source padding (`padding_mask`).
        training: enables dropout.

    Returns:
        `(x, cross_attention_weights)`: `[batch, tgt_len, d_model]` and
        `[batch, num_heads, tgt_len, src_len]` (which source words each target word looked at).
    """

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.self_attention = MultiHeadAttention(self.d_model, self.num_heads, name="self_attention")
        self.self_attention_add_norm = self.add_norm("self_attention_add_norm")
        self.cross_attention = MultiHeadAttention(self.d_model, self.num_heads, name="cross_attention")
        self.cross_attention_add_norm = self.add_norm("cross_attention_add_norm")

    def build(self, x_shape, encoder_output_shape):
        self.self_attention.build(x_shape, x_shape, x_shape)
        self.self_attention_add_norm.build(x_shape, x_shape)
        self.cross_attention.build(x_shape, encoder_output_shape, encoder_output_shape)
        self.cross_attention_add_norm.build(x_shape, x_shape)
        self.feed_forward.build(x_shape)
        self.feed_forward_add_norm.build(x_shape, x_shape)

    def call(self, x, encoder_output, self_attention_mask=None, cross_attention_mask=None, training=None):
        h = self.self_attention_add_norm.sublayer_input(x)
        h, _ = self.self_attention(h, h, h, mask=self_attention_mask)  # no peeking at later targets
        x = self.self_attention_add_norm(x, h, training=training)

        h = self.cross_attention_add_norm.sublayer_input(x)
        h, cross_weights = self.cross_attention(h, encoder_output, encoder_output, mask=cross_attention_mask)
        x = self.cross_attention_add_norm(x, h, training=training)

        h = self.feed_forward(self.feed_forward_add_norm.sublayer_input(x))
        x = self.feed_forward_add_norm(x, h, training=training)
        return x, cross_weights  # (batch, tgt_len, d_model), (batch, heads, tgt_len, src_len)


@keras.saving.register_keras_serializable(package="transformer_lib")
class Decoder(Stack):
    """Target ids (shifted right) and the encoder output in, one vector per target position out.
    Arguments as in `transformer_lib.encoder.Stack`.

    Call arguments:
        target_ids: int `[batch, tgt_len]`, 0 = padding; masks are built from them.
        encoder_output: `[batch, src_len, d_model]`.
        source_ids: int `[batch, src_len]`, to mask the source padding in cross-attention.
        training: enables dropout.

    Returns:
        `(x, cross_attention_weights)`: `[batch, tgt_len, d_model]` and a list with one
        `[batch, num_heads, tgt_len, src_len]` tensor per layer.
    """

    layer_class = DecoderLayer

    def build(self, target_ids_shape, encoder_output_shape, source_ids_shape):
        self.build_stack(target_ids_shape, encoder_output_shape)

    def call(self, target_ids, encoder_output, source_ids, training=None):
        self_mask = decoder_mask(target_ids)  # (batch, 1, tgt_len, tgt_len)
        cross_mask = padding_mask(source_ids)  # (batch, 1, 1, src_len)
        x = self.embed(target_ids, training)  # (batch, tgt_len, d_model)
        cross_weights = []
        for layer in self.stack_layers:
            x, weights = layer(x, encoder_output, self_mask, cross_mask, training=training)
            cross_weights.append(weights)
        return self.finish(x), cross_weights
