"""Attention block by block over the keys, with an online softmax (Milakov & Gimelshein 2018; the idea
behind FlashAttention, Dao et al. 2022): Eq. 1 without ever holding the T x S matrix of scores.

Eq. 1 computes all T x S scores, their softmax, then the weighted sum of the values. The softmax
needs each row's maximum and sum over all S keys, which seems to need the whole row first. It does
not: read the keys in blocks and keep, for every query, a running maximum m, a running sum l of
exp(score - m) and a running weighted sum of the values. When a block brings a larger maximum m',
everything kept so far was scaled by exp(-m) and must now be scaled by exp(-m'): multiply it by
exp(m - m'). After the last block, divide by l. Only T x block scores exist at any time.
"""

from __future__ import annotations

import keras
from keras import ops

from transformer_lib.layers.attention import float_mask, large_negative
from transformer_lib.utils.checks import require_positive_int


def online_softmax_update(state, scores, values):
    """One block of the online softmax: `state` = (m `[..., T, 1]`, l `[..., T, 1]`, acc `[..., T, d_v]`),
    `scores` `[..., T, block]` (float32, masked already), `values` `[..., block, d_v]` -> the new state."""
    m, l, acc = state
    m_new = ops.maximum(m, ops.max(scores, axis=-1, keepdims=True))  # the largest score seen so far
    p = ops.exp(scores - m_new)  # (..., T, block): this block's exps, on the new scale
    rescale = ops.exp(m - m_new)  # what was kept on the old scale, brought to the new one
    l = l * rescale + ops.sum(p, axis=-1, keepdims=True)
    acc = acc * rescale + ops.matmul(p, values)
    return m_new, l, acc


def blockwise_attention(q, k, v, mask=None, block_size: int = 128):
    """Eq. 1, softmax(q k^T / sqrt(d_k)) v, computed `block_size` keys at a time.

    Args:
        q: queries `[..., T, d_k]`; k: keys `[..., S, d_k]`; v: values `[..., S, d_v]`.
        mask: optional float mask broadcastable to `[..., T, S]`, 1.0 = blocked, as in
            `scaled_dot_product_attention` (its last axis S, or 1).
        block_size: keys per block; the scores held at once are `[..., T, block_size]`.

    Returns:
        the output `[..., T, d_v]` (float32 inside, the dtype of v out). Unlike
        `scaled_dot_product_attention` it returns no weights: it never holds them.
    """
    require_positive_int("block_size", block_size)
    length = k.shape[-2]
    if length is None:
        raise ValueError("blockwise_attention needs a known number of keys (k.shape[-2]) to cut it into blocks.")
    mask = None if mask is None else float_mask(mask)
    q32 = ops.cast(q, "float32") / ops.sqrt(ops.cast(q.shape[-1], "float32"))
    m = ops.full((*ops.shape(q)[:-1], 1), -float("inf"), "float32")  # running maximum (..., T, 1)
    state = (m, ops.zeros_like(m), ops.zeros((*ops.shape(q)[:-1], v.shape[-1]), "float32"))
    for start in range(0, length, block_size):
        stop = min(start + block_size, length)
        scores = ops.matmul(q32, ops.swapaxes(ops.cast(k[..., start:stop, :], "float32"), -1, -2))  # (..., T, block)
        if mask is not None:
            block_mask = mask if mask.shape[-1] == 1 else mask[..., start:stop]  # a mask of one column broadcasts
            scores = scores + ops.cast(block_mask, "float32") * large_negative("float32")
        state = online_softmax_update(state, scores, ops.cast(v[..., start:stop, :], "float32"))
    _, l, acc = state
    return ops.cast(acc / l, v.dtype)
