"""The key/value cache of decoding (chapter 8), one home for the translator's decoder and the language
models: every self-attention layer keeps the keys and values of the positions decoded so far, one slot
per position, so that a new token computes only its own.

    caches = start_caches(attention_layers, batch, max_length, dtype)   # zeros: one (keys, values) per layer
    h, cache = cached_self_attention(attention, h, offset, cache)       # one layer: write the new slots, attend
    x, caches = step_layers(layers, x, offset, caches)                  # the new position(s) through every layer

The shapes never change while decoding (the slots are preallocated and `slot_mask` hides the empty
ones), so a decoding loop needs no shape invariants and compiles with XLA.
"""

from __future__ import annotations

from keras import ops


def start_caches(attention_layers, batch, max_length: int, dtype) -> list:
    """Per attention layer, `(keys, values)` of zeros `[batch, g, max_length, d_k]`: one slot per
    position, for its g key/value heads only (g = h unless the attention is grouped-query)."""
    caches = []
    for attention in attention_layers:
        shape = (batch, attention.num_kv_heads, max_length, attention.d_k)
        caches.append((ops.zeros(shape, dtype), ops.zeros(shape, dtype)))
    return caches


def write_slots(cache, offset, new):
    """`cache` `[batch, heads, max_length, d_k]` with its slots `offset`, `offset + 1`, ... replaced by
    the `new` `[batch, heads, new, d_k]`; the other slots unchanged, the shape too.

    Written with a gather and a select, not `ops.slice_update`, so that the cached step also
    exports to ONNX (TensorFlow lowers `slice_update` to an XLA op that tf2onnx cannot convert)."""
    slots, count = ops.shape(cache)[2], ops.shape(new)[2]
    if isinstance(count, int) and count == 1:  # the decoding loops' case: one new position, broadcast to its slot
        return ops.where((ops.arange(slots) == offset)[:, None], new, cache)
    index = ops.arange(slots) - offset  # slot s takes new position s - offset, if there is one
    inside = (index >= 0) & (index < count)  # (max_length,)
    spread = ops.take(new, ops.clip(index, 0, count - 1), axis=2)  # (batch, heads, max_length, d_k)
    return ops.where(inside[:, None], spread, cache)


def slot_mask(offset, new, slots):
    """Float `[new, slots]`, 1.0 = blocked: query `offset + i` sees slots 0 .. offset + i (its past and
    itself), not the slots still empty."""
    return ops.cast(ops.arange(slots)[None, :] > (offset + ops.arange(new))[:, None], "float32")


def cached_self_attention(attention, h, offset, cache, rotary=None):
    """Masked self-attention of the newest position(s) `h` `[batch, new, d_model]`, at `offset`,
    `offset + 1`, ..., against the key/value `cache` of the earlier ones; `rotary` (a `RotaryEmbedding`,
    or None) turns the new queries and keys by their positions first. Returns `(output [batch, new,
    d_model], (keys, values))`, the new keys and values written in."""
    q = attention.split_heads(attention.wq(h))  # (batch, h, new, d_k)
    new_keys, new_values = attention.project_key_value(h, h)  # (batch, g, new, d_k)
    if rotary is not None:
        q, new_keys = rotary(q, offset=offset), rotary(new_keys, offset=offset)
    keys = write_slots(cache[0], offset, new_keys)  # (batch, g, max_length, d_k)
    values = write_slots(cache[1], offset, new_values)
    mask = slot_mask(offset, ops.shape(h)[1], ops.shape(keys)[2])  # (new, max_length)
    h, _ = attention.attend_heads(q, keys, values, mask)
    return h, (keys, values)


def step_layers(layers, x, offset, caches, *per_layer):
    """`x` `[batch, new, d_model]` through every layer's `step(x, offset, cache, *its items of
    per_layer)`, each with its own cache: `(x, new caches)`."""
    new_caches = []
    for layer, cache, *extra in zip(layers, caches, *per_layer):
        x, cache, *_ = layer.step(x, offset, cache, *extra)  # a DecoderLayer also returns its cross weights
        new_caches.append(cache)
    return x, new_caches
