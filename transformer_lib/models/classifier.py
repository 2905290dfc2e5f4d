"""A transformer encoder as a text classifier (chapter 9): one vector per review, then a label.

The encoder is the translator's (`Encoder`: embeddings with positions, N encoder layers, padding
masked). Its outputs are averaged over the real tokens only (`masked_mean`), so a review's padding
can neither be attended to nor averaged in; a dense layer turns the average into class scores.
"""

from __future__ import annotations

import keras
import numpy as np
from keras import ops

from transformer_lib.config import one_stack_config, one_stack_fields
from transformer_lib.utils.checks import require_positive_int
from transformer_lib.utils.sublayers import build_unbuilt
from transformer_lib.layers.encoder import Encoder
from transformer_lib.data.tokenizer import PAD_ID


def masked_mean(x, token_ids):
    """Mean of `x` `[batch, len, d]` over the positions where `token_ids` `[batch, len]` is not padding."""
    keep = ops.cast(ops.not_equal(token_ids, PAD_ID), x.dtype)[..., None]  # (batch, len, 1)
    return ops.sum(x * keep, axis=1) / ops.maximum(ops.sum(keep, axis=1), 1.0)  # (batch, d)


CLASSIFIER = dict(num_layers=1, d_model=64, num_heads=4, dff=128, dropout_rate=0.1, max_length=512)


@keras.saving.register_keras_serializable(package="transformer_lib")
class TransformerClassifier(keras.Model):
    """Token ids in, class logits out.

    Args:
        config: a `TransformerConfig` (its `input_vocab_size` is the vocabulary); or, as a convenience,
        vocab_size: size of the token vocabulary (0 = padding), then any field of `TransformerConfig` by
            name (the first four also in order), over the defaults `CLASSIFIER`: `activation` "gelu" for
            BERT-style models; `norm_first` False for post-LN (the paper, and BERT), True for pre-LN
            (chapter 6), which trains at higher learning rates; `max_length` the longest input, in tokens.
        num_classes: number of labels (2 for positive/negative).
        mask_padding: False attends to and averages over padding too: the usual tutorial's mistake,
            kept to measure what the mask is worth.

    Call arguments:
        token_ids: int `[batch, len]`, 0 = padding.
        training: enables dropout.

    Returns:
        float32 logits `[batch, num_classes]`.
    """

    def __init__(self, *config, num_classes: int = 2, mask_padding: bool = True, **kwargs):
        config, kwargs = one_stack_config(config, kwargs, CLASSIFIER)
        super().__init__(**kwargs)
        require_positive_int("num_classes", num_classes)
        self.config, self.num_classes, self.mask_padding = config, num_classes, mask_padding
        self.encoder = Encoder(config, vocab_size=config.input_vocab_size, name="encoder")
        self.dropout = keras.layers.Dropout(config.dropout_rate)
        self.head = keras.layers.Dense(num_classes, name="head")

    @property
    def hyperparameters(self) -> dict:
        """The constructor's arguments (what `get_config` saves beside Keras's own keys)."""
        return {**one_stack_fields(self.config), "num_classes": self.num_classes, "mask_padding": self.mask_padding}

    def build(self, token_ids_shape):
        build_unbuilt(self.encoder, token_ids_shape)
        build_unbuilt(self.head, (token_ids_shape[0], self.config.d_model))

    def call(self, token_ids, training=None):
        mask_padding = self.mask_padding
        x = self.encoder(token_ids, training=training, mask_padding=mask_padding)  # (batch, len, d_model)
        pooled = masked_mean(x, token_ids) if mask_padding else ops.mean(x, axis=1)  # (batch, d_model)
        return ops.cast(self.head(self.dropout(pooled, training=training)), "float32")

    def get_config(self):
        return {**super().get_config(), **self.hyperparameters}


def alone_and_beside(model: TransformerClassifier, reviews: list[list[int]], longer: list[int],
                     batch_size: int = 64) -> tuple[np.ndarray, np.ndarray]:
    """What padding does to a prediction, without any training noise: the class probabilities of
    each review read alone (a batch of one, no padding at all), and read in a batch beside a longer
    review (so padded up to its length). A model that masks its padding gives both the same.

    Args:
        model: a `TransformerClassifier` (any callable from token ids to logits).
        reviews: token ids of the reviews, one list each (no padding).
        longer: token ids of one review longer than all of them.

    Returns:
        `(alone, beside)`: float `[len(reviews), num_classes]` probabilities.
    """
    if not reviews:
        raise ValueError("alone_and_beside needs at least one review")
    longest = max(len(review) for review in reviews)
    if len(longer) <= longest:
        raise ValueError(f"`longer` has {len(longer)} tokens but a review has {longest}: pass a review longer than "
                         "all of them, so that every review is padded beside it")
    alone = np.stack([ops.convert_to_numpy(ops.softmax(model(np.asarray([review], "int32")), axis=-1))[0]
                      for review in reviews])
    beside = []
    for start in range(0, len(reviews), batch_size):
        batch = keras.utils.pad_sequences([*reviews[start:start + batch_size], longer], padding="post", value=PAD_ID)
        beside.append(ops.convert_to_numpy(ops.softmax(model(batch), axis=-1))[:-1])
    return alone, np.concatenate(beside)
