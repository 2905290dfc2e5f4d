"""Scaled dot-product attention (§3.2.1, Eq. 1) and multi-head attention (§3.2.2).

    Attention(Q, K, V) = softmax(Q K^T / sqrt(d_k)) V
    MultiHead(Q, K, V) = Concat(head_1, ..., head_h) W^O,  head_i = Attention(Q W_i^Q, K W_i^K, V W_i^V)

Since 2017 (Shazeer 2019; Ainslie et al. 2023): the h query heads may share g < h key/value heads, each
serving a group of h / g neighbouring query heads, so that the key/value cache of decoding keeps g heads
instead of h. g = h is the paper's multi-head attention, g = 1 multi-query attention; `num_kv_heads` of
`MultiHeadAttention` is g, and `GroupedQueryAttention` is the same layer under the name of the paper that
introduced it.

Shapes use B = batch, T = query length, S = key/value length, h = num_heads, g = num_kv_heads,
d_k = d_model / h.
"""

from __future__ import annotations

import keras
from keras import ops

from transformer_lib.utils.checks import require_heads_divide, require_kv_heads_divide, require_rate
from transformer_lib.utils.sublayers import build_unbuilt


def large_negative(dtype) -> float:
    """A number that acts as -inf in a softmax yet stays finite in `dtype`.

    float16 overflows below -65504, and -inf itself would turn `0 * -inf` into NaN, so float16
    gets -3e4 (exp(-3e4) is 0 all the same); wider dtypes get -1e9.
    """
    return -3e4 if keras.backend.standardize_dtype(dtype) == "float16" else -1e9


def float_mask(mask):
    """`mask` as a tensor, after refusing a boolean one: our masks are floats with 1.0 = blocked, and
    Keras's boolean masks mean the opposite, so a boolean mask is not guessed at."""
    mask = ops.convert_to_tensor(mask)
    if keras.backend.standardize_dtype(mask.dtype) == "bool":
        raise TypeError(
            "Got a boolean mask. transformer_lib masks are floats with 1.0 = blocked, while "
            "Keras's boolean masks mean True = may attend. Build the mask with "
            "transformer_lib.padding_mask / look_ahead_mask / decoder_mask, or convert a Keras "
            "mask with transformer_lib.from_keras_mask."
        )
    return mask


def scaled_dot_product_attention(q, k, v, mask=None):
    """Eq. 1: softmax(q k^T / sqrt(d_k)) v, with blocked positions removed from the softmax.

    Args:
        q: queries `[..., T, d_k]`.
        k: keys `[..., S, d_k]`.
        v: values `[..., S, d_v]`.
        mask: optional float mask broadcastable to `[..., T, S]`, **1.0 = blocked** (see
            `transformer_lib.layers.masks`). Boolean Keras-style masks are refused, not guessed at.

    Returns:
        `(output, weights)`: output `[..., T, d_v]` and attention weights `[..., T, S]`, whose rows
        sum to 1.
    """
    d_k = ops.shape(k)[-1]
    scores = ops.matmul(q, ops.swapaxes(k, -1, -2))  # (..., T, S)
    scores = scores / ops.sqrt(ops.cast(d_k, scores.dtype))
    if mask is not None:
        scores = scores + ops.cast(float_mask(mask), scores.dtype) * large_negative(scores.dtype)
    # Softmax over the keys, in float32 even under mixed precision (float16 sums of exps lose
    # accuracy). Subtracting the row maximum first keeps exp() from overflowing.
    scores = ops.cast(scores, "float32")
    exps = ops.exp(scores - ops.max(scores, axis=-1, keepdims=True))
    weights = ops.cast(exps / ops.sum(exps, axis=-1, keepdims=True), v.dtype)  # (..., T, S)
    return ops.matmul(weights, v), weights  # (..., T, d_v), (..., T, S)


@keras.saving.register_keras_serializable(package="transformer_lib")
class MultiHeadAttention(keras.layers.Layer):
    """Multi-head attention (§3.2.2): h heads of size d_k = d_model / h, run in parallel.

    The heads split d_model; they do not each get d_model. Together the four projections
    W^Q, W^K, W^V (d_model -> h * d_k) and W^O (h * d_k -> d_model) hold 4 * d_model * (d_model + 1)
    parameters (weights and biases), whatever h is.

    Args:
        d_model: size of the input and output vectors.
        num_heads: h; must divide d_model.
        attention_dropout: drop this share of the attention weights in training (not in the paper,
            which drops only sub-layer outputs and embeddings: its P_drop is `AddNorm`'s; default 0: none).
        num_kv_heads: g, the key/value heads (grouped-query attention, the module's docstring); must
            divide h. None (the paper): one per query head. W^K and W^V then map d_model -> g * d_k.
        use_bias: the four projections have biases (the paper's layer; Keras's default); False: none
            (Llama, SmolLM2).

    Call arguments:
        query: `[B, T, d_model]`.
        key: `[B, S, d_model]`.
        value: `[B, S, d_model]`.
        mask: optional float mask broadcastable to `[B, h, T, S]`, 1.0 = blocked
            (`padding_mask` gives `[B, 1, 1, S]`, `decoder_mask` gives `[B, 1, T, T]`).
        training: enables the attention dropout (if any).

    Returns:
        `(output, weights)`: output `[B, T, d_model]`, weights `[B, h, T, S]`.

    About the name `mask`: Keras treats a call argument of that name specially. Here it is always
    our float mask, passed explicitly; Keras never fills it from an input's implicit Keras mask
    (that happens only for layers with a single tensor input), and `compute_mask` returns None so
    the float mask is never attached to the outputs as if it were a Keras mask.
    """

    def __init__(self, d_model: int, num_heads: int, attention_dropout: float = 0.0, num_kv_heads: int | None = None,
                 use_bias: bool = True, **kwargs):
        super().__init__(**kwargs)
        require_heads_divide(d_model, num_heads)
        require_kv_heads_divide(num_heads, num_kv_heads)
        require_rate("attention_dropout", attention_dropout)
        self.attention_dropout = attention_dropout
        self.d_model = d_model
        self.num_heads = num_heads
        self.num_kv_heads = num_kv_heads or num_heads  # g
        self.d_k = d_model // num_heads
        self.group = num_heads // self.num_kv_heads  # query heads per key/value head: 1 in the paper
        self.use_bias = use_bias
        self.wq = keras.layers.Dense(d_model, use_bias=use_bias, name="query")
        self.wk = keras.layers.Dense(self.num_kv_heads * self.d_k, use_bias=use_bias, name="key")
        self.wv = keras.layers.Dense(self.num_kv_heads * self.d_k, use_bias=use_bias, name="value")
        self.wo = keras.layers.Dense(d_model, use_bias=use_bias, name="output")
        self.dropout = keras.layers.Dropout(attention_dropout, name="attention_dropout") if attention_dropout else None

    def build(self, query_shape, key_shape, value_shape):
        build_unbuilt(self.wq, query_shape)
        build_unbuilt(self.wk, key_shape)
        build_unbuilt(self.wv, value_shape)
        build_unbuilt(self.wo, (*query_shape[:-1], self.d_model))

    def split_heads(self, x):
        """`[B, L, n * d_k]` -> `[B, n, L, d_k]` (n = h, or g for grouped keys and values): head i gets
        dimensions i*d_k ... (i+1)*d_k - 1."""
        batch, length = ops.shape(x)[0], ops.shape(x)[1]
        x = ops.reshape(x, (batch, length, x.shape[-1] // self.d_k, self.d_k))  # (B, L, n, d_k)
        return ops.transpose(x, (0, 2, 1, 3))  # (B, n, L, d_k)

    def merge_heads(self, x):
        """`[B, h, L, d_k]` -> `[B, L, d_model]`, the Concat of Eq. (MultiHead)."""
        batch, length = ops.shape(x)[0], ops.shape(x)[2]
        x = ops.transpose(x, (0, 2, 1, 3))  # (B, L, h, d_k)
        return ops.reshape(x, (batch, length, self.d_model))  # (B, L, d_model)

    def call(self, query, key, value, mask=None, training=None):
        # 1. Project: Q W^Q, K W^K, V W^V for all heads at once (one d_model x d_model matrix each).
        q, k, v = self.wq(query), self.wk(key), self.wv(value)  # (B, T, d_model), (B, S, d_model) x 2 (g * d_k if g < h)
        # 2. Split the projected features into heads of d_k: head i gets features i*d_k ... (i+1)*d_k - 1.
        q, k, v = self.split_heads(q), self.split_heads(k), self.split_heads(v)  # (B, h, T|S, d_k)
        # 3. and 4.: Eq. 1 in every head, then Concat and W^O.
        return self.attend_heads(q, k, v, mask, training)  # (B, T, d_model), (B, h, T, S)

    def attend_heads(self, q, k, v, mask=None, training=None):
        """Steps 3 and 4 of `call`, on queries `[B, h, T, d_k]` and keys and values `[B, g, S, d_k]`
        already projected and split (the cached decoding and rotary positions come in between)."""
        # 3. Eq. 1 in every head at once: softmax(q k^T / sqrt(d_k)) v. With g < h key/value heads, each
        #    serves `group` query heads in a row: query head i reads key/value head i // group.
        if self.group > 1:
            k, v = ops.repeat(k, self.group, axis=1), ops.repeat(v, self.group, axis=1)  # (B, h, S, d_k)
        heads, weights = scaled_dot_product_attention(q, k, v, mask)  # (B, h, T, d_k), (B, h, T, S)
        if self.dropout is not None:  # attention dropout (not in the paper): the values mixed again by dropped weights
            heads = ops.matmul(self.dropout(weights, training=training), v)
        # 4. Concat(head_1, ..., head_h), then W^O.
        return self.wo(self.merge_heads(heads)), weights  # (B, T, d_model), (B, h, T, S)

    # The cached path (chapter 8's decoding) uses the same weights in two halves: the keys and values
    # are projected once and kept, and each new query attends to them.

    def project_key_value(self, key, value):
        """K W^K and V W^V, split into heads: two `[B, g, S, d_k]` tensors (steps 1-2 of `call`).

        Decoding computes these once per source sentence (cross-attention) or once per new token
        (self-attention, the key/value cache) instead of at every step.
        """
        return self.split_heads(self.wk(key)), self.split_heads(self.wv(value))

    def attend(self, query, k, v, mask=None):
        """`call` for queries against keys and values already projected and split, `[B, g, S, d_k]`."""
        return self.attend_heads(self.split_heads(self.wq(query)), k, v, mask)  # (B, T, d_model), (B, h, T, S)

    def cache_bytes_per_token(self, bytes_per_number: int = 4) -> int:
        """What one generated token adds to this layer's key/value cache: keys and values of g heads."""
        return 2 * self.num_kv_heads * self.d_k * bytes_per_number

    def compute_mask(self, *args, **kwargs):
        return None  # overriding this also tells Keras the layer accepts `mask` (no "destroys the mask" warning)

    def get_config(self):
        return {**super().get_config(), "d_model": self.d_model, "num_heads": self.num_heads,
                "attention_dropout": self.attention_dropout, "num_kv_heads": self.num_kv_heads,
                "use_bias": self.use_bias}


@keras.saving.register_keras_serializable(package="transformer_lib")
class GroupedQueryAttention(MultiHeadAttention):
    """`MultiHeadAttention` with g = `num_kv_heads` key/value heads, given third (Ainslie et al. 2023):
    `GroupedQueryAttention(d_model, num_heads, num_kv_heads)`; g = 1 is multi-query attention (Shazeer
    2019). The same layer, only named for the chapter "Since 2017"."""

    def __init__(self, d_model: int, num_heads: int, num_kv_heads: int, attention_dropout: float = 0.0, **kwargs):
        super().__init__(d_model, num_heads, attention_dropout, num_kv_heads=num_kv_heads, **kwargs)
