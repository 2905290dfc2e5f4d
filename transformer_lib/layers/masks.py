"""Attention masks: which keys a query may not look at.

Convention everywhere in this library: **1.0 = blocked, 0.0 = may attend**. Attention adds
`mask * large_negative` to the scores before the softmax (§3.2.3: "setting to -inf"), so a blocked
key gets weight 0.

Keras uses the opposite polarity: its boolean masks (`Embedding(mask_zero=True)`, the
`attention_mask` of `keras.layers.MultiHeadAttention`) are **True = may attend**. `to_keras_mask`
and `from_keras_mask` are the one conversion between the two, in each direction; the library never
consumes Keras's implicit masks.
"""

from __future__ import annotations

import keras
from keras import ops

from transformer_lib.utils.checks import require_positive_int
from transformer_lib.data.tokenizer import PAD_ID


def padding_mask(token_ids, pad_id: int = PAD_ID):
    """Block the padding positions of a batch of token ids.

    Args:
        token_ids: int tensor `[batch, seq]`.
        pad_id: the id used for padding.

    Returns:
        float32 `[batch, 1, 1, seq]`: 1.0 where the token is padding. The last unit axis broadcasts
        over the query positions, because padding is a property of the *keys*; the first one over
        the attention heads of chapter 5 (every head hides the same padding).
    """
    token_ids = ops.convert_to_tensor(token_ids)
    if len(token_ids.shape) != 2:
        raise ValueError(
            f"padding_mask expects token ids of shape [batch, seq], got shape {tuple(token_ids.shape)}."
        )
    is_pad = ops.cast(ops.equal(token_ids, pad_id), "float32")  # (batch, seq)
    return is_pad[:, None, None, :]  # (batch, 1, 1, seq)


def look_ahead_mask(size):
    """Block every position after the query's own (the decoder's causality, §3.2.3).

    Args:
        size: sequence length (a Python int, or a scalar tensor inside a traced function).

    Returns:
        float32 `[size, size]`: entry (i, j) is 1.0 when j > i, i.e. strictly above the diagonal.
    """
    if not ops.is_tensor(size):
        require_positive_int("size", size)
    rows = ops.arange(size)[:, None]  # query positions
    cols = ops.arange(size)[None, :]  # key positions
    return ops.cast(cols > rows, "float32")


def decoder_mask(target_ids, pad_id: int = PAD_ID):
    """The decoder self-attention mask: look-ahead and target padding together.

    Returns:
        float32 `[batch, 1, tgt_len, tgt_len]`, the element-wise maximum of
        `look_ahead_mask(tgt_len)` and `padding_mask(target_ids)`.
    """
    pad = padding_mask(target_ids, pad_id)  # (batch, 1, 1, tgt)
    future = look_ahead_mask(ops.shape(target_ids)[1])  # (tgt, tgt)
    return ops.maximum(future, pad)  # (batch, 1, tgt, tgt)


def to_keras_mask(mask):
    """Convert one of our float masks (1.0 = blocked) to Keras's boolean convention (True = may attend).

    `[batch, 1, q, k]` masks lose their head axis, giving `[batch, q, k]`, the `attention_mask`
    shape of `keras.layers.MultiHeadAttention`; `[q, k]` masks keep their shape (Keras broadcasts).
    """
    mask = ops.convert_to_tensor(mask)
    if len(mask.shape) == 4:
        if mask.shape[1] not in (1, None):
            raise ValueError(
                f"to_keras_mask expects one mask for all heads ([batch, 1, q, k]), got shape {tuple(mask.shape)}."
            )
        mask = mask[:, 0]  # (batch, q, k)
    return ops.logical_not(ops.cast(mask, "bool"))


def from_keras_mask(keras_mask):
    """Convert a Keras boolean mask (True = may attend) to our float convention (1.0 = blocked).

    A `[batch, seq]` mask, such as `Embedding(mask_zero=True)` attaches (True = real token), becomes a
    padding mask `[batch, 1, 1, seq]`; a `[batch, q, k]` attention mask becomes `[batch, 1, q, k]`.
    """
    keras_mask = ops.convert_to_tensor(keras_mask)
    if keras.backend.standardize_dtype(keras_mask.dtype) != "bool":
        raise TypeError(
            f"from_keras_mask expects a boolean Keras mask, got dtype {keras_mask.dtype}; "
            "a float mask is presumably already in this library's convention (1.0 = blocked)."
        )
    blocked = ops.cast(ops.logical_not(keras_mask), "float32")
    if len(blocked.shape) == 2:
        return blocked[:, None, None, :]  # (batch, 1, 1, seq)
    if len(blocked.shape) == 3:
        return blocked[:, None]  # (batch, 1, q, k)
    raise ValueError(f"from_keras_mask expects shape [batch, seq] or [batch, q, k], got {tuple(blocked.shape)}.")
