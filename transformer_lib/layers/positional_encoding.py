"""Positional encoding (§3.5) and the embedding layer that adds it to token embeddings (§3.4).

    PE(pos, 2i)   = sin(pos / 10000^(2i / d_model))
    PE(pos, 2i+1) = cos(pos / 10000^(2i / d_model))

Even dimensions carry the sines and odd dimensions the cosines (interleaved, as in the paper), so
dimension pair (2i, 2i+1) is one rotating "clock" whose wavelength grows geometrically with i.
"""

from __future__ import annotations

import keras
import numpy as np
from keras import ops

from transformer_lib.utils.checks import require_positive_int
from transformer_lib.utils.sublayers import build_unbuilt


def positional_encoding(length: int, depth: int):
    """The sinusoidal positional encoding of §3.5.

    Args:
        length: number of positions (0, 1, ..., length - 1).
        depth: size of each position's vector (`d_model`). Odd depths are allowed: the last,
            unpaired dimension is a sine.

    Returns:
        A float32 tensor of shape `[length, depth]`; row `pos` is the encoding of position `pos`.
    """
    require_positive_int("length", length)
    require_positive_int("depth", depth)
    positions = np.arange(length, dtype=np.float64)[:, np.newaxis]  # (length, 1)
    dims = np.arange(depth)[np.newaxis, :]  # (1, depth)
    pair_index = dims // 2  # i in the formula: dims 2i and 2i+1 share a frequency
    angles = positions / np.power(10000.0, 2 * pair_index / depth)  # (length, depth)
    encoding = np.where(dims % 2 == 0, np.sin(angles), np.cos(angles))
    return ops.convert_to_tensor(encoding.astype(np.float32))


@keras.saving.register_keras_serializable(package="transformer_lib")
class PositionalEmbedding(keras.layers.Layer):
    """Token embedding scaled by sqrt(d_model), plus a positional encoding (§3.4, §3.5).

    Args:
        vocab_size: number of token ids; id 0 is padding.
        d_model: size of the embedding vectors.
        max_length: longest sequence the layer accepts.
        learned_positions: if True, learn one vector per position (the paper's Table 3 row (E),
            "nearly identical results") instead of the fixed sinusoids.

    Call arguments:
        token_ids: int tensor `[batch, seq_len]`, `seq_len <= max_length`.
        offset: position of the first token (a step of incremental decoding passes its step
            number), default 0.

    Returns:
        `[batch, seq_len, d_model]` in the layer's compute dtype.

    No Keras mask is attached to the output: this library builds its own float masks from the
    token ids (see `transformer_lib.layers.masks`), so nothing here has `mask_zero=True`.
    """

    def __init__(
        self,
        vocab_size: int,
        d_model: int,
        max_length: int = 2048,
        learned_positions: bool = False,
        **kwargs,
    ):
        super().__init__(**kwargs)
        require_positive_int("vocab_size", vocab_size)
        require_positive_int("d_model", d_model)
        require_positive_int("max_length", max_length)
        self.vocab_size = vocab_size
        self.d_model = d_model
        self.max_length = max_length
        self.learned_positions = learned_positions
        self.token_embedding = keras.layers.Embedding(vocab_size, d_model, name="token_embedding")
        if learned_positions:
            self.position_embedding = keras.layers.Embedding(
                max_length, d_model, name="position_embedding"
            )
        else:
            self.position_embedding = None
            # a constant, not a weight; a NumPy array, so that a traced graph holds it as a constant
            # (an eager tensor would become an extra input of an exported graph)
            self.encoding = ops.convert_to_numpy(positional_encoding(max_length, d_model))

    def build(self, token_ids_shape):
        build_unbuilt(self.token_embedding, token_ids_shape)
        if self.position_embedding is not None:
            build_unbuilt(self.position_embedding, (self.max_length,))

    @property
    def embeddings(self):
        """The `[vocab_size, d_model]` token embedding matrix (shared with the output layer in §3.4)."""
        return self.token_embedding.embeddings

    def tied_logits(self, x):
        """The embedding matrix used as the output layer (§3.4, weight tying): `[..., d_model]` ->
        `[..., vocab_size]`, a score per token from the dot product with its embedding."""
        return ops.matmul(x, ops.transpose(ops.cast(self.embeddings, x.dtype)))

    def scaled_tokens(self, token_ids):
        """The token embeddings * sqrt(d_model), without positions (§3.4): `call`'s first step, for a model
        whose positions are rotary (given to the queries and keys instead, the chapter "Since 2017")."""
        x = self.token_embedding(token_ids)  # (batch, seq, d_model)
        return x * ops.cast(ops.sqrt(float(self.d_model)), x.dtype)

    def call(self, token_ids, offset=0):
        seq_len = ops.shape(token_ids)[-1]
        if isinstance(seq_len, int) and isinstance(offset, int) and offset + seq_len > self.max_length:
            raise ValueError(
                f"Sequence length {offset + seq_len} exceeds max_length={self.max_length}; "
                "build the layer (or the Transformer) with a larger max_length."
            )
        x = self.token_embedding(token_ids)  # (batch, seq, d_model)
        x = x * ops.cast(ops.sqrt(float(self.d_model)), x.dtype)
        if self.position_embedding is not None:
            positions = self.position_embedding(offset + ops.arange(seq_len))  # (seq, d_model)
        else:
            positions = ops.slice(self.encoding, (offset, 0), (seq_len, self.d_model))  # (seq, d_model)
        return x + ops.cast(positions, x.dtype)[None]

    def get_config(self):
        return {
            **super().get_config(),
            "vocab_size": self.vocab_size,
            "d_model": self.d_model,
            "max_length": self.max_length,
            "learned_positions": self.learned_positions,
        }
