"""BERT's pretraining (`transformer_lib.models.bert`): the 80/10/10 masking rule, masks drawn anew every
epoch, the masked-language model and its output layer, pretraining that learns, and fine-tuning from it."""

import keras
import numpy as np
import pytest
import tensorflow as tf
from conftest import random_ids, synthetic_reviews

import transformer_lib as tl
from transformer_lib.models import bert
from transformer_lib.data import imdb

SMALL = dict(num_layers=1, d_model=32, num_heads=2, dff=64)


def test_mlm_masking_follows_bert_80_10_10_rule(rng):
    vocab = 1000  # ids 3..999 are tokens, 1000 is the mask
    ids = random_ids(rng, 256, 128, vocab, pad_from=rng.integers(10, 129, 256))
    ids[:, 0] = tl.START_ID
    inputs, labels = (t.numpy() for t in bert.mask_tokens(ids, mask_id=vocab, seed=[3, 4]))
    real = ids > tl.END_ID
    chosen = labels != 0
    assert abs(chosen.sum() / real.sum() - 0.15) < 0.01
    assert not chosen[~real].any()  # padding, start and end are never chosen
    np.testing.assert_array_equal(labels[chosen], ids[chosen])  # labels: the original token, only there
    np.testing.assert_array_equal(inputs[~chosen], ids[~chosen])  # nothing else is touched
    masked = inputs[chosen] == vocab
    kept = inputs[chosen] == ids[chosen]
    replaced = ~masked & ~kept
    assert abs(masked.mean() - 0.8) < 0.02
    assert abs(replaced.mean() - 0.1) < 0.02  # a random replacement equals the original only 1 time in ~1000
    assert abs(kept.mean() - 0.1) < 0.02
    assert (inputs[chosen][replaced] > tl.END_ID).all() and (inputs[chosen][replaced] < vocab).all()


def test_mlm_masks_are_fixed_by_the_seed_and_change_with_it(rng):
    ids = random_ids(rng, 8, 40, 500)
    first, again, other = (bert.mask_tokens(ids, 500, seed)[0].numpy() for seed in ([1, 2], [1, 2], [1, 3]))
    np.testing.assert_array_equal(first, again)
    assert (first != other).any()


def test_mlm_batches_draw_new_masks_every_epoch(rng):
    ids = random_ids(rng, 4, 30, 300)
    batches = tf.data.Dataset.from_tensor_slices((ids, np.zeros(4, "int32"))).batch(2)
    masked = bert.make_mlm_batches(batches, mask_id=300, seed=0)
    assert int(masked.cardinality()) == 2
    epoch_1, epoch_2 = ([chosen.numpy() for (_, chosen), _ in masked] for _ in range(2))
    assert any(a.shape != b.shape or (a != b).any() for a, b in zip(epoch_1, epoch_2))


@pytest.mark.parametrize("rate", [0.15, 0.6])
def test_mlm_batches_choose_the_asked_share_of_real_tokens(rng, rate):
    ids = random_ids(rng, 64, 50, 300, pad_from=[50, 25] * 32)
    batches = tf.data.Dataset.from_tensor_slices(ids).batch(64)
    ((_, chosen), _), = bert.make_mlm_batches(batches, 300, seed=3, rate=rate)
    real = int((ids > 2).sum())  # 2,400 real tokens: the share's standard error is under 0.01
    assert abs(len(chosen) / real - rate) < 0.04
    with pytest.raises(ValueError, match="rate"):
        bert.make_mlm_batches(batches, 300, rate=1.5)


def test_mlm_batches_hold_the_original_tokens_at_the_chosen_positions(rng):
    ids = random_ids(rng, 6, 40, 300, pad_from=[40, 30, 20, 10, 5, 40])
    batches = tf.data.Dataset.from_tensor_slices(ids).batch(3)
    for ((inputs, chosen), targets), original in zip(bert.make_mlm_batches(batches, 300, seed=1), (ids[:3], ids[3:])):
        rows, positions = chosen.numpy().T
        np.testing.assert_array_equal(targets, original[rows, positions])
        untouched = np.ones(original.shape, bool)
        untouched[rows, positions] = False
        np.testing.assert_array_equal(inputs.numpy()[untouched], original[untouched])


def test_the_mlm_model_scores_only_the_chosen_positions_when_told_them(rng):
    model = bert.MaskedLanguageModel(61, dropout_rate=0.0, **SMALL)
    ids = random_ids(rng, 2, 7, 61)
    chosen = np.array([[0, 1], [1, 4], [1, 6]])
    np.testing.assert_allclose(model((ids, chosen)), model(ids).numpy()[chosen[:, 0], chosen[:, 1]], atol=1e-5)


def test_the_mlm_output_layer_is_the_token_embedding(rng):
    model = bert.MaskedLanguageModel(61, dropout_rate=0.0, **SMALL)
    ids = random_ids(rng, 2, 7, 61)
    model(ids)
    embedding = model.encoder.embedding.embeddings
    hidden = model.norm(model.transform(model.encoder(ids)))
    np.testing.assert_allclose(model(ids), hidden @ tf.transpose(embedding) + model.output_bias, atol=1e-5)
    d = SMALL["d_model"]
    head = (d * d + d) + 2 * d + 61  # transform, norm, bias: no second [vocab, d_model] matrix
    assert model.count_params() == model.encoder.count_params() + head


def test_fine_tuning_starts_from_the_pretrained_encoder(rng):
    pretrained = bert.MaskedLanguageModel(61, dropout_rate=0.0, **SMALL)
    ids = random_ids(rng, 2, 7, 61)
    pretrained(ids)
    classifier = bert.classifier_from_pretrained(pretrained)
    np.testing.assert_allclose(classifier.encoder(ids), pretrained.encoder(ids), atol=1e-6)
    assert classifier.hyperparameters["activation"] == "gelu" and classifier.hyperparameters["num_classes"] == 2


def test_pre_ln_side_models_normalize_before_each_sublayer_and_fine_tuning_keeps_it(rng):
    pretrained = bert.MaskedLanguageModel(61, dropout_rate=0.0, norm_first=True, **SMALL)
    ids = random_ids(rng, 2, 7, 61)
    pretrained(ids)
    assert pretrained.encoder.final_norm is not None  # pre-LN: one norm after the last layer
    assert bert.MaskedLanguageModel(61, **SMALL).hyperparameters["norm_first"] is False  # BERT's post-LN by default
    classifier = bert.classifier_from_pretrained(pretrained)
    assert classifier.hyperparameters["norm_first"] is True
    np.testing.assert_allclose(classifier.encoder(ids), pretrained.encoder(ids), atol=1e-6)
    post = bert.MaskedLanguageModel(61, dropout_rate=0.0, **SMALL)
    post(ids)
    assert len(pretrained.encoder.get_weights()) == len(post.encoder.get_weights()) + 2  # the final norm's scale and shift


def test_mlm_pretraining_learns_to_fill_in_tokens_and_the_model_still_saves(tmp_path, record_property):
    keras.utils.set_random_seed(0)
    reviews = synthetic_reviews(400, seed=5)
    tokenizer = imdb.train_review_tokenizer(reviews, vocab_size=320)
    batches = bert.make_mlm_batches(imdb.make_review_batches(reviews, tokenizer, max_length=64, batch_tokens=2048),
                                    mask_id=tokenizer.vocab_size)
    model = bert.MaskedLanguageModel(tokenizer.vocab_size + 1, dropout_rate=0.0, **SMALL)
    model.compile(optimizer=keras.optimizers.Adam(3e-3), metrics=["accuracy"],
                  loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True))
    history = model.fit(batches, epochs=4, verbose=0, shuffle=False)
    record_property("loss_ratio", history.history["loss"][-1] / history.history["loss"][0])
    assert history.history["loss"][-1] < 0.8 * history.history["loss"][0]
    assert history.history["accuracy"][-1] > 5 / tokenizer.vocab_size  # far above guessing
    model.save(tmp_path / "mlm.keras")
    ids = np.array([tokenizer.encode("the movie was great")])
    np.testing.assert_allclose(keras.saving.load_model(tmp_path / "mlm.keras")(ids), model(ids), atol=1e-6)
