"""Attention block by block over the keys, with an online softmax (Milakov & Gimelshein 2018; the idea
behind FlashAttention, Dao et al. 2022): Eq. 1 without ever holding the T x S matrix of scores.

Eq. 1 computes all T x S scores, their softmax, then the weighted sum of the values. The softmax
needs each row's maximum and sum over all S keys, which seems to need the whole row first. It does
not: read the keys in blocks and keep, for every query, a running maximum m, a running sum l of
exp(score - m) and a running weighted sum of the values. When a block brings a larger maximum m',
everything kept so far was scaled by exp(-m) and must now be scaled by exp(-m'): multiply it by
exp(m - m'). After the last block, divide by l. Only T x block scores exist at any time.

Training needs the gradients too, and automatic differentiation would keep every block's scores and exps for the
backward pass: the T x S matrix again, in pieces. FlashAttention's answer is to keep only the output and each
query's final m and l, and to compute every block's weights again in the backward pass: P = exp(scores - m) / l.
(FlashAttention-2, Dao 2023, keeps one number, m + log l; with this library's masks, scores of -1e9, log l would
vanish in the rounding of a query that may see nothing, so both are kept.) `blockwise_backward` does that, block by
block (the backward pass of Dao et al. 2022, on whole rows of queries).
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
    """Eq. 1, softmax(q k^T / sqrt(d_k)) v, computed `block_size` keys at a time, forward and backward.

    Args:
        q: queries `[..., T, d_k]`; k: keys `[..., S, d_k]`; v: values `[..., S, d_v]` (the same leading axes).
        mask: optional float mask broadcastable to `[..., T, S]`, 1.0 = blocked, as in
            `scaled_dot_product_attention` (its last axis S, or 1).
        block_size: keys per block; the scores held at once are `[..., T, block_size]`.

    Returns:
        the output `[..., T, d_v]` (float32 inside, the dtype of v out). Unlike
        `scaled_dot_product_attention` it returns no weights: it never holds them. Its gradient is
        `blockwise_backward`'s, which computes the blocks' weights again instead of keeping them.
    """
    require_positive_int("block_size", block_size)
    if k.shape[-2] is None:
        raise ValueError("blockwise_attention needs a known number of keys (k.shape[-2]) to cut it into blocks.")
    if mask is None:
        return _recomputing_gradient(block_size, masked=False)(q, k, v)
    return _recomputing_gradient(block_size, masked=True)(q, k, v, float_mask(mask))


def blockwise_forward(q, k, v, mask=None, block_size: int = 128):
    """The forward pass: the keys and values block by block with `online_softmax_update`. Returns, in float32, the
    output `[..., T, d_v]` and each query's largest score m and sum l of exps `[..., T, 1]` (what the backward
    pass keeps besides the inputs)."""
    length = k.shape[-2]
    q32 = ops.cast(q, "float32") / ops.sqrt(ops.cast(q.shape[-1], "float32"))
    m = ops.full((*ops.shape(q)[:-1], 1), -float("inf"), "float32")  # running maximum (..., T, 1)
    state = (m, ops.zeros_like(m), ops.zeros((*ops.shape(q)[:-1], v.shape[-1]), "float32"))
    for start in range(0, length, block_size):
        stop = min(start + block_size, length)
        scores = block_scores(q32, k, mask, start, stop)  # (..., T, block)
        state = online_softmax_update(state, scores, ops.cast(v[..., start:stop, :], "float32"))
    m, l, acc = state
    return acc / l, m, l  # (..., T, d_v), (..., T, 1), (..., T, 1)


def block_scores(q32, k, mask, start: int, stop: int):
    """The scores of keys `start` ... `stop - 1`: (q / sqrt(d_k)) k^T, blocked positions pushed to -1e9."""
    scores = ops.matmul(q32, ops.swapaxes(ops.cast(k[..., start:stop, :], "float32"), -1, -2))  # (..., T, block)
    if mask is not None:
        block_mask = mask if mask.shape[-1] == 1 else mask[..., start:stop]  # a mask of one column broadcasts
        scores = scores + ops.cast(block_mask, "float32") * large_negative("float32")
    return scores


def blockwise_backward(q, k, v, mask, output, m, l, d_output, block_size: int = 128):
    """The gradients of `blockwise_attention` with respect to q, k and v, given the gradient `d_output` of its
    output, block by block: each block's weights P = exp(scores - m) / l are computed again from q and that
    block's keys, used, and dropped. With dS = P * (dP - D), where dP = d_output v^T and D, one number per
    query, = sum(d_output * output) (the softmax's backward pass, rearranged by FlashAttention):

        dv_block = P^T d_output,   dq += dS k_block / sqrt(d_k),   dk_block = dS^T q / sqrt(d_k)

    Returns float32 `(dq, dk, dv)`."""
    scale = 1.0 / ops.sqrt(ops.cast(q.shape[-1], "float32"))
    q32, d_out = ops.cast(q, "float32") * scale, ops.cast(d_output, "float32")
    total = ops.sum(d_out * output, axis=-1, keepdims=True)  # D: (..., T, 1)
    dq, dk, dv = ops.zeros_like(q32), [], []
    for start in range(0, k.shape[-2], block_size):
        stop = min(start + block_size, k.shape[-2])
        k_block, v_block = ops.cast(k[..., start:stop, :], "float32"), ops.cast(v[..., start:stop, :], "float32")
        p = ops.exp(block_scores(q32, k, mask, start, stop) - m) / l  # (..., T, block): the weights again
        dv.append(ops.matmul(ops.swapaxes(p, -1, -2), d_out))  # (..., block, d_v)
        d_scores = p * (ops.matmul(d_out, ops.swapaxes(v_block, -1, -2)) - total)  # dS: (..., T, block)
        dq = dq + ops.matmul(d_scores, k_block)  # (..., T, d_k), still to be scaled
        dk.append(ops.matmul(ops.swapaxes(d_scores, -1, -2), q32))  # (..., block, d_k): q32 carries the scale
    return dq * scale, ops.concatenate(dk, axis=-2), ops.concatenate(dv, axis=-2)


def _recomputing_gradient(block_size: int, masked: bool):
    """`blockwise_forward` with `blockwise_backward` as its gradient (`keras.ops.custom_gradient`): what the
    backward pass keeps is q, k, v, the mask, the output, m and l, never a block's scores."""

    @ops.custom_gradient
    def attention(q, k, v, *mask):
        # stop_gradient: automatic differentiation must not record the loop (and keep its blocks); this is the gradient
        constants = [ops.stop_gradient(x) for x in (q, k, v)]
        output, m, l = blockwise_forward(*constants, mask[0] if masked else None, block_size)

        def gradient(*args, upstream=None):
            d_output = args[0] if upstream is None else upstream
            dq, dk, dv = blockwise_backward(q, k, v, mask[0] if masked else None, output, m, l, d_output, block_size)
            grads = (ops.cast(dq, q.dtype), ops.cast(dk, k.dtype), ops.cast(dv, v.dtype))
            return grads + tuple(ops.zeros_like(m) for m in mask)  # the mask gets no gradient

        return ops.cast(output, v.dtype), gradient

    return attention
