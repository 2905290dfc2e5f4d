"""The side chapter's classifier (`TransformerClassifier`): a mean over the real positions only, so that
padding changes no prediction; it learns a sentiment task from text; the side chapter's models round-trip."""

import keras
import numpy as np
import pytest
from conftest import random_ids, synthetic_reviews

from transformer_lib.models import bert
from transformer_lib.data import imdb
from transformer_lib.models.classifier import TransformerClassifier, masked_mean

SMALL = dict(num_layers=1, d_model=32, num_heads=2, dff=64)


def test_masked_mean_pooling_ignores_padding(rng):
    ids = random_ids(rng, 3, 12, 50, pad_from=[12, 7, 3])
    model = TransformerClassifier(50, dropout_rate=0.0, **SMALL)
    padded = np.pad(ids, ((0, 0), (0, 9)))  # nine more pad columns
    np.testing.assert_allclose(model(padded), model(ids), atol=1e-5)


def test_without_the_mask_padding_changes_the_prediction(rng):
    """The control for the test above: the unmasked model (the usual tutorial's) is not invariant."""
    ids = random_ids(rng, 3, 12, 50, pad_from=[12, 7, 3])
    model = TransformerClassifier(50, dropout_rate=0.0, mask_padding=False, **SMALL)
    assert np.abs(model(np.pad(ids, ((0, 0), (0, 9)))) - model(ids)).max() > 1e-3


def test_a_review_alone_and_beside_a_longer_one_gets_one_probability_only_with_the_mask(rng):
    """Chapter 9's check that cannot be noise: the same weights, the same reviews, only the padding differs."""
    from transformer_lib.models.classifier import alone_and_beside

    reviews = [list(rng.integers(3, 50, n)) for n in (3, 9, 14)]
    longer = list(rng.integers(3, 50, 40))
    masked = TransformerClassifier(50, dropout_rate=0.0, **SMALL)
    unmasked = TransformerClassifier(50, dropout_rate=0.0, mask_padding=False, **SMALL)
    for model in (masked, unmasked):
        model.build((None, None))
    unmasked.set_weights(masked.get_weights())  # the same model, only the mask switched off
    alone, beside = alone_and_beside(masked, reviews, longer, batch_size=2)
    assert alone.shape == beside.shape == (3, 2)
    np.testing.assert_allclose(alone.sum(-1), 1.0, rtol=1e-5)
    np.testing.assert_allclose(beside, alone, atol=1e-5)
    alone_u, beside_u = alone_and_beside(unmasked, reviews, longer)
    np.testing.assert_allclose(alone_u, alone, atol=1e-5)  # with no padding the mask changes nothing
    assert np.abs(beside_u - alone_u).max() > 1e-3


def test_alone_and_beside_refuses_a_companion_that_would_not_pad_the_reviews(rng):
    from transformer_lib.models.classifier import alone_and_beside

    model = TransformerClassifier(50, dropout_rate=0.0, **SMALL)
    with pytest.raises(ValueError, match="longer than all"):
        alone_and_beside(model, [[5, 6, 7]], [8, 9, 10])
    with pytest.raises(ValueError, match="at least one review"):
        alone_and_beside(model, [], [8, 9, 10])


def test_masked_mean_is_the_mean_of_the_real_positions():
    x = np.arange(2 * 4 * 3, dtype="float32").reshape(2, 4, 3)
    ids = np.array([[5, 6, 0, 0], [5, 6, 7, 8]])
    expected = np.stack([x[0, :2].mean(0), x[1].mean(0)])
    np.testing.assert_allclose(masked_mean(x, ids), expected, rtol=1e-6)


def test_the_classifier_learns_a_sentiment_task_from_text(record_property):
    keras.utils.set_random_seed(0)
    train, held_out = synthetic_reviews(1200, seed=1), synthetic_reviews(300, seed=2)
    tokenizer = imdb.train_review_tokenizer(train, vocab_size=320)
    batches = imdb.make_review_batches(train, tokenizer, max_length=64, batch_tokens=2048)
    model = TransformerClassifier(tokenizer.vocab_size, dropout_rate=0.0, **SMALL)
    model.compile(optimizer=keras.optimizers.Adam(3e-3), metrics=["accuracy"],
                  loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True))
    model.fit(batches, epochs=6, verbose=0, shuffle=False)  # the batches are shuffled already
    _, accuracy = model.evaluate(imdb.make_review_batches(held_out, tokenizer, shuffle=False), verbose=0)
    record_property("accuracy", accuracy)
    assert accuracy > 0.75


@pytest.mark.parametrize("name", ["classifier", "mlm"])
def test_the_side_chapter_models_round_trip_through_keras_saving(name, tmp_path, rng):
    ids = random_ids(rng, 2, 9, 60, pad_from=[9, 4])
    model = (TransformerClassifier(60, activation="gelu", **SMALL) if name == "classifier"
             else bert.MaskedLanguageModel(61, **SMALL))
    expected = model(ids)
    model.save(tmp_path / "model.keras")
    reloaded = keras.saving.load_model(tmp_path / "model.keras")
    assert reloaded.get_config() == model.get_config()
    np.testing.assert_allclose(reloaded(ids), expected, atol=1e-6)
