"""The decoder (§3.1, Figure 1 right): N identical layers of masked self-attention,
encoder-decoder (cross) attention and feed-forward."""

from __future__ import annotations

import keras
from keras import ops

from transformer_lib.layers.stack import BaseTransformerLayer, Stack
from transformer_lib.layers.kv_cache import cached_self_attention, start_caches, step_layers
from transformer_lib.layers.masks import decoder_mask, padding_mask


@keras.saving.register_keras_serializable(package="transformer_lib")
class DecoderLayer(BaseTransformerLayer):
    """One decoder layer. Arguments as in `transformer_lib.layers.stack.BaseTransformerLayer`.

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
        self.self_attention = self.attention("self_attention")
        self.self_attention_add_norm = self.add_norm("self_attention_add_norm")
        self.cross_attention = self.attention("cross_attention")
        self.cross_attention_add_norm = self.add_norm("cross_attention_add_norm")

    def build(self, x_shape, encoder_output_shape):
        self.build_sublayers(x_shape, encoder_output_shape)

    def call(self, x, encoder_output, self_attention_mask=None, cross_attention_mask=None, training=None):
        # 1. Masked self-attention: target position t sees target positions <= t only.
        x = self.self_attention_add_norm(
            x, lambda h: self.self_attention(h, h, h, mask=self_attention_mask)[0], training=training)
        # 2. Cross-attention: queries from the target, keys and values from the encoder output.
        x, cross_weights = self.cross_attention_add_norm(
            x, lambda h: self.cross_attention(h, encoder_output, encoder_output, mask=cross_attention_mask),
            training=training)
        # 3. The position-wise feed-forward network.
        x = self.feed_forward_add_norm(x, self.feed_forward, training=training)
        return x, cross_weights  # (batch, tgt_len, d_model), (batch, heads, tgt_len, src_len)

    def step(self, x, offset, cache, source_kv, cross_attention_mask=None):
        """Incremental decoding: `call` for the newest position(s) only, with a key/value cache.

        Args:
            x: `[batch, new, d_model]`, the newest position(s), at `offset`, `offset + 1`, ...
            offset: int or scalar int tensor.
            cache: `(keys, values)`, each `[batch, num_heads, max_length, d_k]`, preallocated by
                `Decoder.start_cache`. Slots before `offset` hold the self-attention keys and values
                of earlier positions, which never change (the look-ahead mask hides later ones).
            source_kv: the cross-attention keys and values of the encoder output, projected once.
            cross_attention_mask: the source padding mask, `[batch, 1, 1, src_len]`.

        Returns:
            `(x, cache, cross_weights)`, the new positions' keys and values written into their slots
            of the cache; no shape changes. With `new = 1` this matches `call` on the whole prefix, at
            the cost of one position.
        """

        x, cache = self.self_attention_add_norm(
            x, lambda h: cached_self_attention(self.self_attention, h, offset, cache), training=False)
        x, cross_weights = self.cross_attention_add_norm(
            x, lambda h: self.cross_attention.attend(h, *source_kv, mask=cross_attention_mask), training=False)
        x = self.feed_forward_add_norm(x, self.feed_forward, training=False)
        return x, cache, cross_weights


@keras.saving.register_keras_serializable(package="transformer_lib")
class Decoder(Stack):
    """Target ids (shifted right) and the encoder output in, one vector per target position out.
    Arguments as in `transformer_lib.layers.stack.Stack`.

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

    def start_cache(self, encoder_output, source_ids, max_length):
        """What decoding needs, set up once per batch of source sentences.

        Returns `(caches, source)`:
            caches: per layer, `(keys, values)` of zeros, each `[batch, num_heads, max_length, d_k]`:
                one slot per target position, filled by `step` (the shapes never change, so a
                decoding loop needs no shape invariants and compiles with XLA);
            source: `(source_kv, cross_mask)`: each layer's cross-attention keys and values of the
                encoder output, and the source padding mask `[batch, 1, 1, src_len]`.
        """
        caches = start_caches([layer.self_attention for layer in self.stack_layers], ops.shape(encoder_output)[0],
                              max_length, encoder_output.dtype)
        source_kv = [layer.cross_attention.project_key_value(encoder_output, encoder_output)
                     for layer in self.stack_layers]
        return caches, (source_kv, padding_mask(source_ids))

    def step(self, target_ids, offset, caches, source):
        """Decode the newest target token(s) `[batch, new]` at positions offset, offset + 1, ...,
        given the caches and the source part from `start_cache`. Returns `(x, caches)`."""
        source_kv, cross_mask = source
        x = self.embedding(target_ids, offset=offset)  # (batch, new, d_model), no dropout
        x, caches = step_layers(self.stack_layers, x, offset, caches, source_kv, [cross_mask] * len(source_kv))
        return self.finish(x), caches

    def call(self, target_ids, encoder_output, source_ids, training=None):
        self_mask = decoder_mask(target_ids)  # (batch, 1, tgt_len, tgt_len)
        cross_mask = padding_mask(source_ids)  # (batch, 1, 1, src_len)
        x = self.embed(target_ids, training)  # (batch, tgt_len, d_model)
        cross_weights = []
        for layer in self.stack_layers:
            x, weights = layer(x, encoder_output, self_mask, cross_mask, training=training)
            cross_weights.append(weights)
        return self.finish(x), cross_weights
