"""The decoder-only language model with the changes since 2017, each switched on by its own argument
(the chapter "Since 2017" measures them one at a time and all together):

    norm_first     pre-LN instead of the paper's post-LN (chapter 6)
    rms_norm       RMSNorm instead of LayerNorm (Zhang & Sennrich 2019)
    rotary         rotary position embeddings in every attention layer instead of the sinusoids added
                   once at the bottom (Su et al. 2021)
    swiglu         a SwiGLU feed-forward network at the ReLU network's parameter count (Shazeer 2020)
    num_kv_heads   grouped-query attention: fewer key/value heads than query heads (Shazeer 2019;
                   Ainslie et al. 2023); None keeps one per query head

All off, the block is the paper's (§3.1, without cross-attention: chapter 9's `DecoderOnlyLayer`);
all on, it is the block of a Llama-style model. `generate` (chapter 9) works with every switch, with
chapter 8's key/value cache, which keeps only the key/value heads.
"""

from __future__ import annotations

import keras
from keras import ops

from transformer_lib.config import TransformerConfig
from transformer_lib.layers.feed_forward import FeedForward
from transformer_lib.layers.attention import MultiHeadAttention
from transformer_lib.layers.kv_cache import cached_self_attention, start_caches, step_layers
from transformer_lib.layers.masks import decoder_mask
from transformer_lib.layers.positional_encoding import PositionalEmbedding
from transformer_lib.layers.rms_norm import RMSNorm
from transformer_lib.layers.rotary import RotaryEmbedding
from transformer_lib.layers.swiglu import SwiGLUFeedForward
from transformer_lib.utils.checks import require_positive_int, require_rate
from transformer_lib.utils.sublayers import build_unbuilt

SWITCHES = ("norm_first", "rms_norm", "rotary", "swiglu", "num_kv_heads")


@keras.saving.register_keras_serializable(package="transformer_lib")
class ModernBlock(keras.layers.Layer):
    """Masked self-attention and a feed-forward network, each in a residual connection with dropout and a
    norm, with the switches of the module's docstring. Call: `x [B, T, d_model]`, `self_attention_mask`
    (float, 1.0 = blocked; not named `mask`, which Keras would fill from implicit masks), training ->
    `[B, T, d_model]`; `step` is the cached call of one or more new positions."""

    def __init__(self, d_model: int, num_heads: int, dff: int, dropout_rate: float = 0.0, norm_first: bool = False,
                 rms_norm: bool = False, rotary: bool = False, swiglu: bool = False, num_kv_heads: int | None = None,
                 **kwargs):
        super().__init__(**kwargs)
        require_rate("dropout_rate", dropout_rate)
        self.settings = dict(d_model=d_model, num_heads=num_heads, dff=dff, dropout_rate=dropout_rate,
                             norm_first=norm_first, rms_norm=rms_norm, rotary=rotary, swiglu=swiglu,
                             num_kv_heads=num_kv_heads)
        self.norm_first = norm_first
        self.attention = MultiHeadAttention(d_model, num_heads, num_kv_heads=num_kv_heads, name="self_attention")
        self.rotary = RotaryEmbedding(name="rotary") if rotary else None
        self.feed_forward = (SwiGLUFeedForward(d_model, SwiGLUFeedForward.same_parameters_as(d_model, dff),
                                               name="feed_forward")
                             if swiglu else FeedForward(d_model, dff, name="feed_forward"))
        norm = RMSNorm if rms_norm else keras.layers.LayerNormalization
        self.attention_norm, self.feed_forward_norm = norm(epsilon=1e-6, name="attention_norm"), norm(
            epsilon=1e-6, name="feed_forward_norm")
        self.dropout = keras.layers.Dropout(dropout_rate)

    def build(self, x_shape):
        build_unbuilt(self.attention, x_shape, x_shape, x_shape)
        for sublayer in (self.feed_forward, self.attention_norm, self.feed_forward_norm):
            build_unbuilt(sublayer, x_shape)

    def residual(self, x, norm, sublayer, training=None):
        """Pre-LN: x + Dropout(Sublayer(Norm(x))); post-LN: Norm(x + Dropout(Sublayer(x)))."""
        if self.norm_first:
            output, extra = sublayer(norm(x))
            return x + self.dropout(output, training=training), extra
        output, extra = sublayer(x)
        return norm(x + self.dropout(output, training=training)), extra

    def self_attention(self, h, mask=None, training=None):
        """Self-attention of `h` `[B, T, d_model]` against itself: `MultiHeadAttention`'s four steps, with
        the queries and keys turned by their positions between steps 2 and 3 when the positions are rotary.
        (The cached step of decoding is `kv_cache.cached_self_attention`, given the same rotation.)"""
        q = self.attention.split_heads(self.attention.wq(h))  # 1-2. (B, h, T, d_k)
        k, v = self.attention.project_key_value(h, h)  # (B, g, T, d_k) x 2
        if self.rotary is not None:  # rotate queries and keys by their positions, in every layer
            q, k = self.rotary(q), self.rotary(k)
        return self.attention.attend_heads(q, k, v, mask, training)  # 3-4. (B, T, d_model), (B, h, T, T)

    def call(self, x, self_attention_mask=None, training=None):
        x, _ = self.residual(
            x, self.attention_norm, lambda h: self.self_attention(h, self_attention_mask, training=training), training)
        x, _ = self.residual(x, self.feed_forward_norm, lambda h: (self.feed_forward(h), None), training)
        return x

    def step(self, x, offset, cache):
        """`call` for the newest position(s) `x` at `offset`, ..., with the key/value `cache`: `(x, cache)`."""
        x, cache = self.residual(x, self.attention_norm,
                                 lambda h: cached_self_attention(self.attention, h, offset, cache, self.rotary))
        x, _ = self.residual(x, self.feed_forward_norm, lambda h: (self.feed_forward(h), None))
        return x, cache

    def compute_mask(self, *args, **kwargs):
        return None  # `mask` is our float mask, never a Keras mask

    def get_config(self):
        return {**super().get_config(), **self.settings}


@keras.saving.register_keras_serializable(package="transformer_lib")
class ModernLanguageModel(keras.Model):
    """Token ids in, next-token logits out (the output layer tied to the embedding, §3.4), with the
    switches of the module's docstring; the other arguments as in `LanguageModel`.

    Call arguments: token_ids int `[batch, len]`, 0 = padding; training. Returns float32 logits
    `[batch, len, vocab_size]`. `start_cache` and `step` make it work with `generate`."""

    def __init__(self, vocab_size: int, num_layers: int = 2, d_model: int = 128, num_heads: int = 4, dff: int = 512,
                 dropout_rate: float = 0.1, max_length: int = 256, norm_first: bool = False, rms_norm: bool = False,
                 rotary: bool = False, swiglu: bool = False, num_kv_heads: int | None = None, **kwargs):
        super().__init__(**kwargs)
        require_positive_int("num_layers", num_layers)
        self.config = TransformerConfig(num_layers, d_model, num_heads, dff, input_vocab_size=vocab_size,
                                        target_vocab_size=vocab_size, dropout_rate=dropout_rate, norm_first=norm_first,
                                        max_length=max_length)  # the sizes (generate reads them)
        self.switches = dict(rms_norm=rms_norm, rotary=rotary, swiglu=swiglu, num_kv_heads=num_kv_heads)  # the rest
        self.embedding = PositionalEmbedding(vocab_size, d_model, max_length, name="embedding")
        self.dropout = keras.layers.Dropout(dropout_rate)
        self.blocks = [ModernBlock(d_model, num_heads, dff, dropout_rate, norm_first, rms_norm, rotary, swiglu,
                                   num_kv_heads, name=f"block_{i}") for i in range(num_layers)]
        norm = RMSNorm if rms_norm else keras.layers.LayerNormalization
        self.final_norm = norm(epsilon=1e-6, name="final_norm") if norm_first else None

    @property
    def hyperparameters(self) -> dict:
        """The sizes and the switches: what `get_config` saves, under the constructor's names."""
        sizes = self.config.pick("num_layers", "d_model", "num_heads", "dff", "dropout_rate", "max_length", "norm_first")
        return {"vocab_size": self.config.target_vocab_size, **sizes, **self.switches}

    def build(self, token_ids_shape):
        build_unbuilt(self.embedding, token_ids_shape)
        x_shape = (*token_ids_shape, self.config.d_model)
        for layer in [*self.blocks, *([self.final_norm] if self.final_norm is not None else [])]:
            build_unbuilt(layer, x_shape)

    def embed(self, token_ids, offset=0):
        """Token embeddings * sqrt(d_model), plus the sinusoids unless the positions are rotary."""
        if self.switches["rotary"]:
            x = self.embedding.token_embedding(token_ids)
            return x * ops.cast(ops.sqrt(float(self.config.d_model)), x.dtype)
        return self.embedding(token_ids, offset=offset)

    def logits(self, x):
        x = x if self.final_norm is None else self.final_norm(x)
        return ops.cast(self.embedding.tied_logits(x), "float32")

    def call(self, token_ids, training=None):
        mask = decoder_mask(token_ids)  # (batch, 1, len, len)
        x = self.dropout(self.embed(token_ids), training=training)
        for block in self.blocks:
            x = block(x, mask, training=training)
        return self.logits(x)

    def start_cache(self, batch: int, max_length: int | None = None):
        """Per block, `(keys, values)` of zeros `[batch, g, max_length, d_k]`: only the key/value heads."""
        return start_caches([block.attention for block in self.blocks], batch, max_length or self.config.max_length,
                            self.compute_dtype)

    def step(self, token_ids, offset, caches):
        """The newest token(s) `[batch, new]` at `offset`, ...: `(logits [batch, new, vocab], caches)`."""
        x, caches = step_layers(self.blocks, self.embed(token_ids, offset), offset, caches)
        return self.logits(x), caches

    def cache_bytes_per_token(self, bytes_per_number: int = 4) -> int:
        """What each generated token adds to the key/value cache, over all blocks."""
        return sum(block.attention.cache_bytes_per_token(bytes_per_number) for block in self.blocks)

    def get_config(self):
        return {**super().get_config(), **self.hyperparameters}
