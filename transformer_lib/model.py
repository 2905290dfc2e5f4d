"""The whole Transformer (§3, Figure 1): encoder, decoder and the final linear layer.

The paper's configurations (Table 3) are in `PRESETS`; `count_parameters` reproduces the sizes it
reports from our own layers.
"""

from __future__ import annotations

import keras
from keras import ops

from transformer_lib._checks import build_unbuilt, check_sentence_pairs, constructor_arguments
from transformer_lib.decoder import Decoder
from transformer_lib.encoder import Encoder
from transformer_lib.positional_encoding import PositionalEmbedding

# Sizes of Table 3 (base, big) and two small ones for a CPU or a free Colab GPU.
PRESETS = {
    "tiny": dict(num_layers=2, d_model=64, num_heads=4, dff=256, dropout_rate=0.1),
    "small": dict(num_layers=4, d_model=128, num_heads=8, dff=512, dropout_rate=0.1),
    "base": dict(num_layers=6, d_model=512, num_heads=8, dff=2048, dropout_rate=0.1),
    "big": dict(num_layers=6, d_model=1024, num_heads=16, dff=4096, dropout_rate=0.3),
}


def require_preset(preset: str) -> None:
    """Raise a ValueError naming the presets unless `preset` is one of them."""
    if preset not in PRESETS:
        raise ValueError(f"Unknown preset {preset!r}; choose one of {sorted(PRESETS)}.")


@keras.saving.register_keras_serializable(package="transformer_lib")
class Transformer(keras.Model):
    """Encoder-decoder Transformer: source ids and (shifted) target ids in, next-token logits out.

    Args:
        num_layers: N, layers in each stack.
        d_model: model width.
        num_heads: h; must divide d_model.
        dff: feed-forward inner size.
        input_vocab_size: source vocabulary size (id 0 = padding).
        target_vocab_size: target vocabulary size (id 0 = padding).
        dropout_rate: P_drop (§5.4).
        norm_first: False: post-LN, as in the paper; True: pre-LN (Xiong et al. 2020).
        share_embeddings: tie the source embedding, the target embedding and the output projection
            to one matrix (§3.4); needs a joint vocabulary, so the two sizes must be equal.
        max_length: longest source or target sequence.
        activation: feed-forward activation.
        learned_positions: learn one vector per position instead of the sinusoids (Table 3, row E).
        attention_dropout: dropout on the attention weights; activation_dropout: on the
            feed-forward's inner activations. Not in the paper (default 0: none); regularizers for
            small corpora (chapter 7's study).

    Call arguments:
        inputs: a pair `(source_ids, target_ids)`, int `[batch, src_len]` and `[batch, tgt_len]`,
            0 = padding. All masks are built inside from the ids.
        training: enables dropout.

    Returns:
        float32 logits `[batch, tgt_len, target_vocab_size]`: position t predicts target token t + 1.
    """

    def __init__(self, num_layers: int, d_model: int, num_heads: int, dff: int,
                 input_vocab_size: int, target_vocab_size: int, dropout_rate: float = 0.1,
                 norm_first: bool = False, share_embeddings: bool = False, max_length: int = 2048,
                 activation: str = "relu", learned_positions: bool = False, attention_dropout: float = 0.0,
                 activation_dropout: float = 0.0, **kwargs):
        super().__init__(**kwargs)
        if share_embeddings and input_vocab_size != target_vocab_size:
            raise ValueError(
                f"share_embeddings=True ties one embedding matrix to both languages, so it needs one "
                f"joint vocabulary; got input_vocab_size={input_vocab_size} and "
                f"target_vocab_size={target_vocab_size}. Train a joint tokenizer, or set share_embeddings=False."
            )
        self.hyperparameters = constructor_arguments(locals())
        shared = None
        if share_embeddings:
            shared = PositionalEmbedding(input_vocab_size, d_model, max_length, learned_positions, name="shared_embedding")
        self.encoder = Encoder.from_sizes(self.hyperparameters, vocab_size=input_vocab_size, embedding=shared, name="encoder")
        self.decoder = Decoder.from_sizes(self.hyperparameters, vocab_size=target_vocab_size, embedding=shared, name="decoder")
        # §3.4: with shared embeddings the output layer reuses the embedding matrix (transposed).
        self.final_layer = None if share_embeddings else keras.layers.Dense(target_vocab_size, name="final_layer")

    def build(self, input_shape):
        source_shape, target_shape = input_shape
        d_model = self.hyperparameters["d_model"]
        build_unbuilt(self.encoder, source_shape)
        build_unbuilt(self.decoder, target_shape, (*source_shape, d_model), source_shape)
        if self.final_layer is not None:
            build_unbuilt(self.final_layer, (*target_shape, d_model))

    def call(self, inputs, training=None):
        source_ids, target_ids = inputs
        encoder_output = self.encoder(source_ids, training=training)  # (batch, src_len, d_model)
        x, _ = self.decoder(target_ids, encoder_output, source_ids, training=training)  # (batch, tgt_len, d_model)
        return self.project(x)

    def __call__(self, inputs, *args, **kwargs):
        check_sentence_pairs(inputs)  # before any work: row i of each input is one sentence pair
        return super().__call__(inputs, *args, **kwargs)

    def project(self, x):
        """Decoder output `[batch, len, d_model]` -> float32 logits `[batch, len, target_vocab_size]`."""
        if self.final_layer is not None:
            logits = self.final_layer(x)
        else:
            logits = self.decoder.embedding.tied_logits(x)  # the embedding matrix, transposed
        return ops.cast(logits, "float32")  # the loss wants float32, even under mixed precision

    def get_config(self):
        return {**super().get_config(), **self.hyperparameters}

    @classmethod
    def from_preset(cls, preset: str, input_vocab_size: int, target_vocab_size: int, **overrides) -> "Transformer":
        """A model with the sizes of `PRESETS[preset]` ("tiny", "small", "base", "big")."""
        require_preset(preset)
        sizes = {**PRESETS[preset], **overrides}
        return cls(**sizes, input_vocab_size=input_vocab_size, target_vocab_size=target_vocab_size)


def count_parameters(model: keras.Model, source_len: int = 8, target_len: int = 8) -> int:
    """Build `model` on a dummy batch if needed and return its number of trainable parameters
    (shared weights counted once)."""
    if not model.built:
        model((ops.ones((1, source_len), "int32"), ops.ones((1, target_len), "int32")))
    return int(sum(ops.size(w) for w in model.trainable_weights))
