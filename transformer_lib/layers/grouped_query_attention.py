"""Multi-query and grouped-query attention (Shazeer 2019; Ainslie et al. 2023): fewer key/value heads.

Multi-head attention (§3.2.2) gives each of its h heads its own keys and values. When decoding,
those are what the key/value cache of chapter 8 keeps for every generated token: 2 * h * d_k
numbers per layer and token. Grouped-query attention keeps h query heads but only g key/value heads;
each key/value head serves h / g query heads (a group). g = h is multi-head attention, g = 1 is
multi-query attention. The cache shrinks by h / g; the queries still look in h different ways.
"""

from __future__ import annotations

import keras
from keras import ops

from transformer_lib.layers.attention import scaled_dot_product_attention
from transformer_lib.utils.checks import require_heads_divide, require_positive_int, require_rate
from transformer_lib.utils.sublayers import build_unbuilt


@keras.saving.register_keras_serializable(package="transformer_lib")
class GroupedQueryAttention(keras.layers.Layer):
    """h query heads that share g = `num_kv_heads` key/value heads, called like `MultiHeadAttention`.

    Args:
        d_model: size of the input and output vectors.
        num_heads: h, the query heads; must divide d_model (d_k = d_model / h).
        num_kv_heads: g, the key/value heads; must divide h. h: multi-head attention, 1: multi-query.
        attention_dropout: as in `MultiHeadAttention` (default 0: none).

    Call arguments:
        query `[B, T, d_model]`, key and value `[B, S, d_model]`, mask (float, 1.0 = blocked,
        broadcastable to `[B, h, T, S]`), training.

    Returns:
        `(output, weights)`: `[B, T, d_model]` and `[B, h, T, S]`.
    """

    def __init__(self, d_model: int, num_heads: int, num_kv_heads: int, attention_dropout: float = 0.0, **kwargs):
        super().__init__(**kwargs)
        require_heads_divide(d_model, num_heads)
        require_positive_int("num_kv_heads", num_kv_heads)
        if num_heads % num_kv_heads:
            raise ValueError(f"num_kv_heads={num_kv_heads} does not divide num_heads={num_heads}: each key/value "
                             f"head serves a whole group of query heads. Use a divisor of {num_heads}.")
        require_rate("attention_dropout", attention_dropout)
        self.d_model, self.num_heads, self.num_kv_heads = d_model, num_heads, num_kv_heads
        self.d_k, self.group = d_model // num_heads, num_heads // num_kv_heads
        self.attention_dropout = attention_dropout
        self.wq = keras.layers.Dense(d_model, name="query")  # h heads of d_k
        self.wk = keras.layers.Dense(num_kv_heads * self.d_k, name="key")  # only g heads of d_k
        self.wv = keras.layers.Dense(num_kv_heads * self.d_k, name="value")
        self.wo = keras.layers.Dense(d_model, name="output")
        self.dropout = keras.layers.Dropout(attention_dropout) if attention_dropout else None

    def build(self, query_shape, key_shape, value_shape):
        build_unbuilt(self.wq, query_shape)
        build_unbuilt(self.wk, key_shape)
        build_unbuilt(self.wv, value_shape)
        build_unbuilt(self.wo, (*query_shape[:-1], self.d_model))

    def heads(self, x, count: int):
        """`[B, L, count * d_k]` -> `[B, count, L, d_k]`."""
        batch, length = ops.shape(x)[0], ops.shape(x)[1]
        return ops.transpose(ops.reshape(x, (batch, length, count, self.d_k)), (0, 2, 1, 3))

    def call(self, query, key, value, mask=None, training=None):
        q, k, v = self.project(query, key, value)  # (B, h, T, d_k), (B, g, S, d_k) x 2
        return self.combine(q, k, v, mask, training)  # (B, T, d_model), (B, h, T, S)

    def project(self, query, key, value):
        """Q W^Q into h heads, K W^K and V W^V into only g heads: `[B, h, T, d_k]`, `[B, g, S, d_k]` x 2
        (the g-head keys and values are what a key/value cache keeps)."""
        return (self.heads(self.wq(query), self.num_heads), self.heads(self.wk(key), self.num_kv_heads),
                self.heads(self.wv(value), self.num_kv_heads))

    def combine(self, q, k, v, mask=None, training=None):
        """Eq. 1 in every query head against its group's keys and values, then Concat and W^O."""
        # Each key/value head serves `group` query heads in a row: query head i reads key/value head i // group.
        k, v = ops.repeat(k, self.group, axis=1), ops.repeat(v, self.group, axis=1)  # (B, h, S, d_k)
        out, weights = scaled_dot_product_attention(q, k, v, mask)  # (B, h, T, d_k), (B, h, T, S)
        if self.dropout is not None:
            out = ops.matmul(self.dropout(weights, training=training), v)
        batch, length = ops.shape(out)[0], ops.shape(out)[2]
        out = ops.reshape(ops.transpose(out, (0, 2, 1, 3)), (batch, length, self.d_model))  # Concat of the h heads
        return self.wo(out), weights  # (B, T, d_model), (B, h, T, S)

    def cache_bytes_per_token(self, bytes_per_number: int = 4) -> int:
        """What one generated token adds to this layer's key/value cache: keys and values of g heads."""
        return 2 * self.num_kv_heads * self.d_k * bytes_per_number

    def compute_mask(self, *args, **kwargs):
        return None  # as MultiHeadAttention: `mask` is our float mask, never a Keras mask

    def get_config(self):
        return {**super().get_config(), "d_model": self.d_model, "num_heads": self.num_heads,
                "num_kv_heads": self.num_kv_heads, "attention_dropout": self.attention_dropout}
