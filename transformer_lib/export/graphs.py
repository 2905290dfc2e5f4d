"""The translator's model as the two graphs the page runs, traced from the library's own layers and
converted to ONNX (tf2onnx), split where chapter 8's cached decoding splits the work:

- `encoder.onnx` (`ENCODER`), once per sentence: source ids `[1, S]` -> each decoder layer's cross-attention
  keys and values `cross_key_i`, `cross_value_i` `[1, h, S, d_k]` and the source padding mask
  `source_mask` `[1, 1, 1, S]` (what `Decoder.start_cache` computes);
- `decoder_step.onnx` (`STEP`), once per generated token: the newest token of each row `token` `[B, 1]` at
  position `offset`, each layer's self-attention cache `self_key_i`, `self_value_i`
  `[B, h, max_length, d_k]`, and the encoder graph's outputs (batch 1: they broadcast over the B
  hypotheses of a beam) -> `logits` `[B, V]`, the caches with this position written
  (`new_self_key_i`, `new_self_value_i`) and the cross-attention weights `cross_weights`
  `[B, layers, h, S]` of this position (for the attention map).
"""

from __future__ import annotations

import contextlib

ENCODER, STEP, MANIFEST, PIECES = "encoder.onnx", "decoder_step.onnx", "manifest.json", "target_pieces.json"
OPSET = 17


def require_web_extra():
    """Raise an ImportError that says what to install unless tf2onnx, onnx and onnxruntime are there."""
    try:
        import onnx  # noqa: F401
        import onnxruntime  # noqa: F401
        import tf2onnx  # noqa: F401
    except ImportError as error:
        raise ImportError(f"Exporting for the browser needs tf2onnx, onnx and onnxruntime ({error.name} is missing): "
                          'pip install "transformer_lib[web]".') from None


def decoding_graphs(model, max_length: int):
    """The two `tf.function`s that become the ONNX graphs (see the module's docstring), with their
    input signatures: `(encoder, step)`. Both call the model's own layers."""
    import tensorflow as tf

    layers = model.decoder.stack_layers
    attention = layers[0].self_attention
    heads, d_k = attention.num_kv_heads, attention.d_k  # the key/value heads: what the caches keep

    @tf.function(input_signature=[tf.TensorSpec([1, None], tf.int32, name="source_ids")])
    def encoder(source_ids):
        _, (source_kv, mask) = model.decoder.start_cache(model.encoder(source_ids, training=False), source_ids, 1)
        outputs = {"source_mask": mask}
        for i, (keys, values) in enumerate(source_kv):
            outputs[f"cross_key_{i}"], outputs[f"cross_value_{i}"] = keys, values
        return outputs

    cache = tf.TensorSpec([None, heads, max_length, d_k], tf.float32)
    cross = tf.TensorSpec([1, heads, None, d_k], tf.float32)
    signature = [tf.TensorSpec([None, 1], tf.int32, name="token"), tf.TensorSpec([], tf.int32, name="offset"),
                 *[tf.TensorSpec(spec.shape, spec.dtype, name=f"{kind}_{part}_{i}")
                   for kind, spec in (("self", cache), ("cross", cross)) for i in range(len(layers))
                   for part in ("key", "value")],
                 tf.TensorSpec([1, 1, 1, None], tf.float32, name="source_mask")]

    @tf.function(input_signature=signature)
    def step(token, offset, *tensors):
        count = len(layers)
        caches = [tensors[2 * i: 2 * i + 2] for i in range(count)]
        source_kv = [tensors[2 * count + 2 * i: 2 * count + 2 * i + 2] for i in range(count)]
        mask = tensors[4 * count]
        x = model.decoder.embedding(token, offset=offset)  # Decoder.step, keeping each layer's cross weights
        outputs, weights = {}, []
        for i, (layer, cache, kv) in enumerate(zip(layers, caches, source_kv)):
            x, (keys, values), cross_weights = layer.step(x, offset, cache, kv, mask)
            outputs[f"new_self_key_{i}"], outputs[f"new_self_value_{i}"] = keys, values
            weights.append(cross_weights[:, :, 0])  # (B, h, S)
        outputs["logits"] = model.project(model.decoder.finish(x))[:, -1]  # (B, V)
        outputs["cross_weights"] = tf.stack(weights, axis=1)  # (B, layers, h, S)
        return outputs

    return encoder, step


@contextlib.contextmanager
def _without_reshape_optimizer():
    """tf2onnx 1.17's `reshape_optimizer` merges a Dense layer's reshape with `split_heads`' into one
    wrong Reshape; convert without it."""
    from tf2onnx import optimizer

    saved = dict(optimizer._optimizers)
    optimizer._optimizers.pop("reshape_optimizer", None)
    try:
        yield
    finally:
        optimizer._optimizers.clear()
        optimizer._optimizers.update(saved)


def to_onnx(function):
    """The ONNX `ModelProto` of a `tf.function` with an input signature."""
    import tf2onnx

    with _without_reshape_optimizer():
        proto, _ = tf2onnx.convert.from_function(function, input_signature=function.input_signature, opset=OPSET)
    return proto
