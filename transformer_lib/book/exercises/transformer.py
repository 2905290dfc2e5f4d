"""Check for chapter 6: the Transformer's call, assembled from embeddings, layers and masks."""

from __future__ import annotations

import numpy as np

from transformer_lib.book.exercises._core import call_answer, compare, exercise

SIZES = dict(num_layers=2, d_model=16, num_heads=2, dff=32, input_vocab_size=20, target_vocab_size=22, dropout_rate=0.0)


def _library_model(rng):
    from transformer_lib.models.transformer import Transformer

    model = Transformer(**SIZES)
    source, target = _batch()
    model((source, target))
    model.set_weights([rng.normal(scale=0.3, size=w.shape).astype("float32") + (1.0 if "gamma" in v.path else 0.0)
                       for v, w in zip(model.weights, model.get_weights())])
    return model


def _batch():
    source = np.array([[1, 5, 6, 7, 2], [1, 8, 2, 0, 0], [1, 9, 10, 2, 0]], np.int32)
    target = np.array([[1, 11, 12, 13], [1, 14, 0, 0], [1, 15, 16, 0]], np.int32)
    return source, target


def _copy_weights(model, library) -> None:
    """The library model's weights into the student's, part by part (names of the exercise)."""
    model.source_embedding.set_weights(library.encoder.embedding.get_weights())
    model.target_embedding.set_weights(library.decoder.embedding.get_weights())
    for mine, theirs in zip(model.encoder_layers, library.encoder.stack_layers):
        mine.set_weights(theirs.get_weights())
    for mine, theirs in zip(model.decoder_layers, library.decoder.stack_layers):
        mine.set_weights(theirs.get_weights())
    model.final_layer.set_weights(library.final_layer.get_weights())


def reference_logits(library, source, target, source_mask=True, target_mask=True):
    """The library's layers run by hand; leaving a mask out shows what a common slip computes."""
    from transformer_lib.layers.masks import decoder_mask, padding_mask

    padding = padding_mask(source) if source_mask else None
    x = library.encoder.embedding(source)
    for layer in library.encoder.stack_layers:
        x = layer(x, padding_mask=padding)
    y = library.decoder.embedding(target)
    for layer in library.decoder.stack_layers:
        y, _ = layer(y, x, decoder_mask(target) if target_mask else None, padding)
    return np.asarray(library.final_layer(y))


@exercise("the Transformer's call", "your model gives the library's logits with the same weights: embeddings, "
          "both stacks, the three masks and the final projection in place.")
def check_transformer(cls) -> None:
    """Exercise (chapter 6): `cls(num_layers, d_model, num_heads, dff, input_vocab_size,
    target_vocab_size, dropout_rate)` builds `source_embedding`, `target_embedding`, `dropout`,
    `encoder_layers`, `decoder_layers` and `final_layer` (given); its `call((source_ids, target_ids),
    training=None)` returns the logits `[batch, tgt_len, target_vocab_size]`, as `tl.Transformer`."""
    import tensorflow as tf

    from transformer_lib.layers.decoder import Decoder
    from transformer_lib.layers.encoder import Encoder
    from transformer_lib.models.transformer import Transformer

    forbidden = [Transformer, Encoder, Decoder]
    rng = np.random.default_rng(8)
    library, source, target = _library_model(rng), *_batch()
    model = cls(**SIZES)
    call_answer("Transformer", model, forbidden, (source, target))
    _copy_weights(model, library)
    hints = [(reference_logits(library, source, target, source_mask=False),
              "the source padding is not masked: build tl.padding_mask(source_ids) and give it to the encoder "
              "layers and to the decoder's cross-attention."),
             (reference_logits(library, source, target, target_mask=False),
              "the decoder's self-attention has no look-ahead mask: give it tl.decoder_mask(target_ids).")]
    yours = call_answer("Transformer", model, forbidden, (source, target), training=False)
    compare("Transformer", yours, reference_logits(library, source, target),
            "a batch of 3 pairs with padding on both sides", hints)
    probe = rng.normal(size=yours.shape)
    gradients = []
    for which, variables in ((model, lambda m: [m.source_embedding.weights[0], m.final_layer.kernel]),
                             (library, lambda m: [m.encoder.embedding.weights[0], m.final_layer.kernel])):
        with tf.GradientTape() as tape:
            loss = tf.reduce_sum(which((source, target), training=False) * probe)
        gradients.append(tape.gradient(loss, variables(which)))
    for name, mine, theirs in zip(("the source embedding", "the final layer"), *gradients):
        compare(f"Transformer: the gradient of {name}", tf.convert_to_tensor(mine), tf.convert_to_tensor(theirs),
                "the same batch", rtol=1e-3)
