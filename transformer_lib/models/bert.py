"""BERT's pretraining idea (Devlin et al. 2019), at the size of a CPU: masked language modelling.

BERT is the Transformer's encoder alone, trained first on plain text to fill in hidden tokens
(the "masked language model", MLM), then fine-tuned on a labeled task. BERT also trained on "next
sentence prediction" (is sentence B the one that followed A?); later work (RoBERTa, Liu et al. 2019)
found it unnecessary, and we leave it out.

- `mask_tokens`: choose 15% of the real tokens; of those, 80% become the mask token, 10% a random
  token and 10% stay as they are (BERT §3.1, "masking procedure"). The model must predict the
  original token at every chosen position, and only there.
- `MaskedLanguageModel`: an `Encoder` (GELU feed-forward, as BERT) and an MLM head whose output
  matrix is the token embedding itself (tied), plus a bias.
- `classifier_from_pretrained`: a `TransformerClassifier` that starts from the pretrained encoder.

The mask token is one extra id after the tokenizer's vocabulary: `mask_id = tokenizer.vocab_size`,
so models that read masked text have `vocab_size = tokenizer.vocab_size + 1`.
"""

from __future__ import annotations

import keras
import tensorflow as tf
from keras import ops

from transformer_lib.config import one_stack_config, one_stack_fields
from transformer_lib.utils.checks import require_rate
from transformer_lib.utils.sublayers import build_unbuilt
from transformer_lib.layers.add_norm import LAYER_NORM_EPSILON
from transformer_lib.models.classifier import TransformerClassifier
from transformer_lib.layers.encoder import Encoder
from transformer_lib.data.tokenizer import END_ID, PAD_ID

MASK_RATE = 0.15


def mask_tokens(token_ids, mask_id: int, seed, rate: float = MASK_RATE):
    """BERT's masking of a batch, for one training step.

    Args:
        token_ids: int `[batch, len]`, 0 = padding; ids 0 (pad), 1 (start), 2 (end) are never chosen.
        mask_id: the mask token's id; it is also the vocabulary size for the random replacements,
            which are drawn from the real tokens (ids above END_ID, below mask_id).
        seed: int `[2]`, as for `tf.random.stateless_uniform`: the same seed gives the same masks.
        rate: share of real tokens to choose (0.15 in BERT).

    Returns:
        `(inputs, labels)`, both int32 `[batch, len]`: the masked input, and the original id at each
        chosen position with 0 (= nothing to predict) elsewhere, as `masked_loss` expects.
    """
    require_rate("rate", rate)
    token_ids = tf.convert_to_tensor(token_ids, tf.int32)
    shape = tf.shape(token_ids)
    choose_seed, action_seed, random_seed = tf.unstack(tf.random.experimental.stateless_split(seed, 3))
    chosen = (tf.random.stateless_uniform(shape, choose_seed) < rate) & (token_ids > END_ID)
    action = tf.random.stateless_uniform(shape, action_seed)  # < 0.8: mask; 0.8-0.9: random; else keep
    random_ids = tf.random.stateless_uniform(shape, random_seed, minval=END_ID + 1, maxval=mask_id, dtype=tf.int32)
    inputs = tf.where(chosen & (action < 0.8), mask_id, token_ids)
    inputs = tf.where(chosen & (action >= 0.8) & (action < 0.9), random_ids, inputs)
    labels = tf.where(chosen, token_ids, PAD_ID)
    return inputs, labels


def make_mlm_batches(token_batches: tf.data.Dataset, mask_id: int, seed: int = 0,
                     rate: float = MASK_RATE) -> tf.data.Dataset:
    """Batches `((inputs, chosen), targets)` for `MaskedLanguageModel.fit`, from batches of token ids
    (or of `(token_ids, label)`, whose labels are ignored).

    `inputs` is the masked batch, `chosen` int64 `[n, 2]` the (row, position) of its n chosen tokens,
    and `targets` `[n]` their original ids. The masks are drawn anew every epoch (as in RoBERTa).
    `rate` is the share of tokens chosen (`mask_tokens`): BERT's 0.15, or more when compute is short
    (Wettig et al. 2023, "Should You Mask 15% in Masked Language Modeling?": more targets per token read).
    """
    require_rate("rate", rate)
    ids = token_batches.map(lambda *batch: batch[0])
    seeds = tf.data.Dataset.random(seed=seed, rerandomize_each_iteration=True).batch(2)
    masked = tf.data.Dataset.zip(ids, seeds).map(lambda x, s: _gather_chosen(*mask_tokens(x, mask_id, s, rate)))
    return masked.apply(tf.data.experimental.assert_cardinality(token_batches.cardinality()))


def _gather_chosen(inputs, labels):
    chosen = tf.where(labels != PAD_ID)  # (n, 2): row and position of every chosen token
    return (inputs, chosen), tf.gather_nd(labels, chosen)


BERT = dict(num_layers=2, d_model=128, num_heads=4, dff=512, dropout_rate=0.1, max_length=512, activation="gelu")


@keras.saving.register_keras_serializable(package="transformer_lib")
class MaskedLanguageModel(keras.Model):
    """BERT's pretraining model, without next-sentence prediction.

    Args:
        config: a `TransformerConfig` (its `input_vocab_size` is the vocabulary); or, as a convenience,
        vocab_size: tokens the model reads and predicts, the mask token included, then any field of
            `TransformerConfig` by name (the first four also in order), over the defaults `BERT`:
            `activation` "gelu" as in BERT; `norm_first` False for post-LN (BERT's), True for pre-LN
            (chapter 6), which trains at higher learning rates.

    Call arguments:
        inputs: int `[batch, len]` token ids (masked), 0 = padding; or a pair `(token_ids, chosen)`
            with `chosen` int `[n, 2]`, the (row, position) of the tokens to predict (what
            `make_mlm_batches` gives). Only those positions then go through the output layer,
            which saves most of the work: it scores every token of the vocabulary.
        training: enables dropout.

    Returns:
        float32 logits `[batch, len, vocab_size]` for the original token at every position, or
        `[n, vocab_size]` at the chosen positions.
    """

    def __init__(self, *config, **kwargs):
        config, kwargs = one_stack_config(config, kwargs, BERT)
        super().__init__(**kwargs)
        self.config = config
        self.encoder = Encoder(config, vocab_size=config.input_vocab_size, name="encoder")
        self.transform = keras.layers.Dense(config.d_model, activation=config.activation, name="transform")
        self.norm = keras.layers.LayerNormalization(epsilon=LAYER_NORM_EPSILON, name="norm")

    @property
    def hyperparameters(self) -> dict:
        """The constructor's arguments (what `get_config` saves beside Keras's own keys)."""
        return one_stack_fields(self.config)

    def build(self, inputs_shape):
        token_ids_shape = inputs_shape[0] if isinstance(inputs_shape[0], (tuple, list)) else inputs_shape
        d_model = self.config.d_model
        build_unbuilt(self.encoder, token_ids_shape)
        build_unbuilt(self.transform, (None, d_model))
        build_unbuilt(self.norm, (None, d_model))
        self.output_bias = self.add_weight(shape=(self.config.input_vocab_size,), initializer="zeros",
                                           name="output_bias")

    def call(self, inputs, training=None):
        token_ids, chosen = inputs if isinstance(inputs, (tuple, list)) else (inputs, None)
        x = self.encoder(token_ids, training=training)  # (batch, len, d_model)
        if chosen is not None:
            x = tf.gather_nd(x, chosen)  # (n, d_model): only the chosen positions
        h = self.norm(self.transform(x))
        logits = self.encoder.embedding.tied_logits(h) + ops.cast(self.output_bias, h.dtype)  # output layer = embeddings
        return ops.cast(logits, "float32")  # (batch, len, vocab) or (n, vocab)

    def get_config(self):
        return {**super().get_config(), **self.hyperparameters}


def classifier_from_pretrained(pretrained: MaskedLanguageModel, num_classes: int = 2,
                               dropout_rate: float | None = None) -> TransformerClassifier:
    """A `TransformerClassifier` of the same sizes whose encoder starts with `pretrained`'s weights
    (only the small classification head starts from scratch)."""
    sizes = dict(pretrained.hyperparameters)
    if dropout_rate is not None:
        sizes["dropout_rate"] = dropout_rate
    classifier = TransformerClassifier(num_classes=num_classes, **sizes)
    classifier.build((None, None))
    classifier.encoder.set_weights(pretrained.encoder.get_weights())
    return classifier
