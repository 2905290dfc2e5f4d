"""The whole Transformer (§3, Figure 1): encoder, decoder and the final linear layer, built from
one `TransformerConfig` (`transformer_lib.config`, where the paper's sizes, Table 3, are in `PRESETS`);
`count_parameters` reproduces the sizes the paper reports from our own layers.
"""

from __future__ import annotations

import keras
from keras import ops

from transformer_lib.config import PRESETS, config_and_rest, require_preset
from transformer_lib.layers.decoder import Decoder
from transformer_lib.layers.encoder import Encoder
from transformer_lib.layers.positional_encoding import PositionalEmbedding
from transformer_lib.utils.checks import check_sentence_pairs
from transformer_lib.utils.sublayers import build_unbuilt


@keras.saving.register_keras_serializable(package="transformer_lib")
class Transformer(keras.Model):
    """Encoder-decoder Transformer: source ids and (shifted) target ids in, next-token logits out.

    Args:
        config: a `TransformerConfig` with both vocabulary sizes: `Transformer(config)`. Its fields
            may also be given directly, in their order or by name, as Keras's `from_config` does:
            `Transformer(num_layers=2, d_model=64, num_heads=4, dff=256, input_vocab_size=8000,
            target_vocab_size=8000)`.

    Call arguments:
        inputs: a pair `(source_ids, target_ids)`, int `[batch, src_len]` and `[batch, tgt_len]`,
            0 = padding. All masks are built inside from the ids.
        training: enables dropout.

    Returns:
        float32 logits `[batch, tgt_len, target_vocab_size]`: position t predicts target token t + 1.
    """

    def __init__(self, *config, **kwargs):
        config, kwargs = config_and_rest(config, kwargs)
        super().__init__(**kwargs)
        if config.input_vocab_size is None or config.target_vocab_size is None:
            raise ValueError("A Transformer needs both vocabulary sizes: config.replace(input_vocab_size=..., "
                             "target_vocab_size=...) with your tokenizers' vocab_size.")
        self.config = config
        shared = None
        if config.share_embeddings:
            shared = PositionalEmbedding(config.input_vocab_size, config.d_model, config.max_length,
                                         config.learned_positions, name="shared_embedding")
        self.encoder = Encoder(config, vocab_size=config.input_vocab_size, embedding=shared, name="encoder")
        self.decoder = Decoder(config, vocab_size=config.target_vocab_size, embedding=shared, name="decoder")
        # §3.4: with shared embeddings (or a tied output) the output layer reuses the target embedding, transposed.
        tied = config.share_embeddings or config.tie_output
        self.final_layer = None if tied else keras.layers.Dense(config.target_vocab_size, name="final_layer")

    @property
    def hyperparameters(self) -> dict:
        """The config as a dict (what `get_config` saves beside Keras's own keys, and runs record)."""
        return self.config.to_dict()

    def build(self, input_shape):
        source_shape, target_shape = input_shape
        d_model = self.config.d_model
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
        return {**super().get_config(), **self.config.to_dict()}

    @classmethod
    def from_preset(cls, preset: str, input_vocab_size: int, target_vocab_size: int, **overrides) -> "Transformer":
        """A model with the sizes of `PRESETS[preset]` ("tiny", "small", "wide", "base", "big"), changed by `overrides`."""
        require_preset(preset)
        return cls(PRESETS[preset].replace(input_vocab_size=input_vocab_size, target_vocab_size=target_vocab_size,
                                           **overrides))


def count_parameters(model: keras.Model, source_len: int = 8, target_len: int = 8) -> int:
    """Build `model` on a dummy batch if needed and return its number of trainable parameters
    (shared weights counted once)."""
    if not model.built:
        model((ops.ones((1, source_len), "int32"), ops.ones((1, target_len), "int32")))
    return int(sum(ops.size(w) for w in model.trainable_weights))
