"""The decoder alone (GPT's idea; Radford et al. 2018), the block of every language model since: the
translator's decoder layer without its cross-attention (there is no encoder to attend to), so masked
self-attention and the feed-forward network, each in Add & Norm. Chapter 9 builds it; the chapter
"Since 2017" switches on, in the same block, what changed since: the norm (RMSNorm), the positions
(rotary, turned into the queries and keys of every layer), the feed-forward network (SwiGLU) and the
key/value heads (grouped-query attention), each a field of `TransformerConfig`.
"""

from __future__ import annotations

import keras

from transformer_lib.layers.kv_cache import cached_self_attention, start_caches, step_layers
from transformer_lib.layers.masks import decoder_mask
from transformer_lib.layers.rotary import RotaryEmbedding
from transformer_lib.layers.stack import BaseTransformerLayer, Stack


@keras.saving.register_keras_serializable(package="transformer_lib")
class DecoderOnlyLayer(BaseTransformerLayer):
    """`DecoderLayer` without its cross-attention. Arguments as in `transformer_lib.layers.stack.BaseTransformerLayer`,
    and `rotary_base` (`TransformerConfig`'s) for the rotary positions.

    1. masked multi-head self-attention: position t sees positions <= t only;
    2. the feed-forward network; both wrapped in Add & Norm.

    Call arguments:
        x: `[batch, len, d_model]`.
        self_attention_mask: float `[batch, 1, len, len]`, 1.0 = blocked (`decoder_mask`).
        training: enables dropout.

    Returns `[batch, len, d_model]`.
    """

    takes_rotary = True

    def __init__(self, *args, rotary_base: float = 10_000.0, **kwargs):
        super().__init__(*args, **kwargs)
        self.settings["rotary_base"] = rotary_base
        self.self_attention = self.attention("self_attention")
        self.self_attention_add_norm = self.add_norm("self_attention_add_norm")
        self.rotary = RotaryEmbedding(rotary_base, name="rotary") if self.settings["rotary"] else None

    def call(self, x, self_attention_mask=None, training=None):
        # 1. Masked self-attention: position t sees positions <= t only.
        x = self.self_attention_add_norm(
            x, lambda h: self.attend_to_itself(h, self_attention_mask, training)[0], training=training)
        # 2. The position-wise feed-forward network. (No cross-attention: there is no encoder.)
        return self.feed_forward_add_norm(x, self.feed_forward, training=training)

    def attend_to_itself(self, h, mask=None, training=None):
        """The self-attention of `h` `[B, T, d_model]`; with rotary positions, the queries and keys turned by
        their positions between `MultiHeadAttention`'s steps 2 and 3 (the chapter "Since 2017")."""
        if self.rotary is None:
            return self.self_attention(h, h, h, mask=mask, training=training)
        attention = self.self_attention
        q = attention.split_heads(attention.wq(h))  # 1-2. (B, h, T, d_k)
        k, v = attention.project_key_value(h, h)  # (B, g, T, d_k) x 2
        q, k = self.rotary(q), self.rotary(k)  # each pair of features turned by its position
        return attention.attend_heads(q, k, v, mask, training)  # 3-4. (B, T, d_model), (B, h, T, T)

    def step(self, x, offset, cache):
        """`call` for the newest position(s) at `offset`, `offset + 1`, ..., with the key/value cache
        (`transformer_lib.layers.kv_cache`). Returns `(x, cache)`."""
        x, cache = self.self_attention_add_norm(
            x, lambda h: cached_self_attention(self.self_attention, h, offset, cache, self.rotary), training=False)
        return self.feed_forward_add_norm(x, self.feed_forward, training=False), cache


@keras.saving.register_keras_serializable(package="transformer_lib")
class DecoderOnly(Stack):
    """Token ids in, one vector per position out, each from that position and the ones before it.
    Arguments as in `transformer_lib.layers.stack.Stack`."""

    layer_class = DecoderOnlyLayer

    def build(self, token_ids_shape):
        self.build_stack(token_ids_shape)

    def call(self, token_ids, training=None):
        mask = decoder_mask(token_ids)  # (batch, 1, len, len): the future and the padding blocked
        x = self.embed(token_ids, training)  # (batch, len, d_model)
        for layer in self.stack_layers:
            x = layer(x, mask, training=training)
        return self.finish(x)

    def start_cache(self, batch: int, max_length: int):
        """Per layer, `(keys, values)` of zeros `[batch, g, max_length, d_k]`, one slot per position."""
        return start_caches([layer.self_attention for layer in self.stack_layers], batch, max_length,
                            self.compute_dtype)

    def step(self, token_ids, offset, caches):
        """The newest token(s) `[batch, new]` at positions `offset`, ...: `(x, caches)`."""
        x = self.embed_positions(token_ids, offset)  # (batch, new, d_model), no dropout
        x, caches = step_layers(self.stack_layers, x, offset, caches)
        return self.finish(x), caches
