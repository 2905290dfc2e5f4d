"""The peer: the same encoder-decoder built from keras-hub's layers, as a user might build it instead.

    encoder: TokenAndPositionEmbedding -> Dropout -> N x keras_hub.layers.TransformerEncoder
    decoder: TokenAndPositionEmbedding -> Dropout -> N x keras_hub.layers.TransformerDecoder
    output:  Dense(target_vocab_size)  (logits)

Sizes match `transformer_lib.Transformer` exactly (N, d_model, h, dff, P_drop, both vocabularies), and
so do the matrix products; the differences are keras-hub's own choices, which cost little time:

- `TokenAndPositionEmbedding` *learns* one vector per position (up to `max_length`) instead of the
  paper's fixed sinusoids, and does not scale the token embedding by sqrt(d_model);
- its attention layers (Keras's `MultiHeadAttention`) also apply dropout to the attention weights;
- padding is handled by Keras masks: `mask_zero=True` in the embeddings attaches a boolean mask to
  the activations, and every keras-hub layer reads it.

Requires `keras-hub` (benchmarks/requirements.txt).
"""

from __future__ import annotations

import keras


def build_peer_transformer(num_layers: int, d_model: int, num_heads: int, dff: int, input_vocab_size: int,
                           target_vocab_size: int, dropout_rate: float = 0.1, max_length: int = 64) -> keras.Model:
    """A functional Keras model: `(source_ids [B, S], target_in [B, T])` -> float32 logits `[B, T, V]`.

    Ids are int32 with 0 = padding, as `transformer_lib.make_batches` yields them, so the same batches
    feed both models. `max_length` bounds S and T: the learned position table has that many rows.
    """
    try:
        import keras_hub
    except ImportError as error:
        raise ImportError(
            "The peer model needs keras-hub: `pip install -r benchmarks/requirements.txt` (make install does it)."
        ) from error

    def embed(ids, vocab_size, name):
        x = keras_hub.layers.TokenAndPositionEmbedding(vocab_size, max_length, d_model, mask_zero=True,
                                                      name=f"{name}_embedding")(ids)
        return keras.layers.Dropout(dropout_rate, name=f"{name}_dropout")(x)  # (B, L, d_model), masked

    source = keras.Input((None,), dtype="int32", name="source_ids")
    target = keras.Input((None,), dtype="int32", name="target_in")
    x = embed(source, input_vocab_size, "encoder")
    for i in range(num_layers):
        x = keras_hub.layers.TransformerEncoder(dff, num_heads, dropout=dropout_rate, name=f"encoder_{i}")(x)
    y = embed(target, target_vocab_size, "decoder")
    for i in range(num_layers):
        y = keras_hub.layers.TransformerDecoder(dff, num_heads, dropout=dropout_rate, name=f"decoder_{i}")(
            y, encoder_sequence=x)  # causal mask by default; source padding from x's Keras mask
    logits = keras.layers.Dense(target_vocab_size, name="final_layer")(y)  # (B, T, V)
    return keras.Model((source, target), logits, name="keras_hub_transformer")
