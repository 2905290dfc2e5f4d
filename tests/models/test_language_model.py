"""The decoder-only language model (chapter 9): causal, cached decoding equal to full passes,
perplexity and sampling against NumPy references, and clear errors for bad prompts."""

import math

import keras
import numpy as np
import pytest

import transformer_lib as tl
from transformer_lib.layers.decoder_only import DecoderOnlyLayer
from transformer_lib.models.language_model import next_token
from transformer_lib.data.tokenizer import END_ID, PAD_ID, START_ID

VOCAB = 23


def small_model(seed=0, **overrides):
    keras.utils.set_random_seed(seed)
    sizes = dict(vocab_size=VOCAB, num_layers=2, d_model=16, num_heads=2, dff=32, dropout_rate=0.0, max_length=24)
    model = tl.LanguageModel(**{**sizes, **overrides})
    model.build((None, None))
    return model


def test_a_position_never_sees_the_tokens_after_it():
    model = small_model()
    ids = np.array([[START_ID, 5, 9, 11, 7, 4]], np.int32)
    changed = ids.copy()
    changed[0, 4:] = [13, 20]
    a, b = np.asarray(model(ids)), np.asarray(model(changed))
    np.testing.assert_allclose(a[0, :4], b[0, :4], atol=1e-6)  # positions 0..3 do not see 4 and 5
    assert np.abs(a[0, 4:] - b[0, 4:]).max() > 1e-3  # the changed positions do change


def test_padding_after_a_text_changes_nothing_before_it():
    model = small_model()
    ids = np.array([[START_ID, 5, 9, 11, END_ID]], np.int32)
    padded = np.concatenate([ids, np.zeros((1, 3), np.int32)], axis=1)
    np.testing.assert_allclose(np.asarray(model(padded))[0, :5], np.asarray(model(ids))[0], atol=1e-6)


@pytest.mark.parametrize("norm_first", [True, False])
def test_cached_steps_give_the_full_passes_logits(norm_first):
    """The prompt in one step, then one token per step: each position's logits equal those of a
    whole forward pass without the cache (an independent path through the same weights)."""
    model = small_model(norm_first=norm_first)
    ids = np.array([[START_ID, 5, 9, 11, 7, 4, 19, 3]], np.int32)
    full = np.asarray(model(ids))[0]  # (len, vocab)
    caches = model.start_cache(1, 12)
    logits, caches = model.step(ids[:, :3], 0, caches)
    np.testing.assert_allclose(np.asarray(logits)[0], full[:3], atol=1e-5)
    for t in range(3, ids.shape[1]):
        logits, caches = model.step(ids[:, t: t + 1], t, caches)
        np.testing.assert_allclose(np.asarray(logits)[0, 0], full[t], atol=1e-5)


def test_the_layer_is_the_decoder_layer_without_cross_attention():
    layer = DecoderOnlyLayer(d_model=16, num_heads=2, dff=32)
    decoder_layer = tl.DecoderLayer(d_model=16, num_heads=2, dff=32)
    layer.build((None, 5, 16))
    decoder_layer.build((None, 5, 16), (None, 4, 16))
    names = {w.path.split("/", 1)[1] for w in layer.weights}
    decoder_names = {w.path.split("/", 1)[1] for w in decoder_layer.weights}
    assert names and names < decoder_names
    assert {n.split("/")[0] for n in decoder_names - names} == {"cross_attention", "cross_attention_add_norm"}


def test_greedy_generation_is_the_argmax_of_full_passes():
    model = small_model(seed=3)
    prompt = [START_ID, 5, 9]
    expected, ids = [], list(prompt)
    for _ in range(8):  # without the cache: the whole text through the model for every new token
        scores = np.asarray(model(np.array([ids], np.int32)))[0, -1].astype(np.float64)
        scores[[PAD_ID, START_ID]] = -np.inf
        token = int(np.argmax(scores))
        expected.append(token)
        ids.append(token)
        if token == END_ID:
            break
    assert tl.generate(model, prompt, 8, temperature=0) == expected


def test_sampling_follows_the_tempered_softmax_of_the_k_best():
    logits = np.array([0.0, 5.0, 1.0, 2.0, 0.5, 1.5, -1.0, 0.2])  # ids 0 (PAD) and 1 (START) are never chosen
    rng = np.random.default_rng(0)
    draws = np.array([next_token(logits, temperature=0.7, top_k=3, rng=rng) for _ in range(6000)])
    allowed = logits.copy()
    allowed[[0, 1]] = -np.inf
    best = np.argsort(-allowed)[:3]  # ids 3, 5, 2
    assert set(draws) == set(best.tolist())
    p = np.exp(allowed[best] / 0.7)
    p /= p.sum()
    observed = np.array([(draws == i).mean() for i in best])
    np.testing.assert_allclose(observed, p, atol=0.02)
    assert next_token(logits, temperature=0) == 3
    assert {next_token(logits, temperature=2.0, top_k=1, rng=rng) for _ in range(20)} == {3}


def test_a_seed_makes_sampling_repeatable_and_a_temperature_changes_it():
    model = small_model(seed=1)
    prompt = [START_ID, 7]
    a = tl.generate(model, prompt, 15, temperature=1.0, seed=4)
    assert a == tl.generate(model, prompt, 15, temperature=1.0, seed=4)
    others = {tuple(tl.generate(model, prompt, 15, temperature=1.5, seed=s)) for s in range(5)}
    assert len(others) > 1
    assert all(PAD_ID not in row and START_ID not in row for row in others)


def test_perplexity_is_exp_of_the_mean_cross_entropy_of_real_tokens():
    model = small_model(seed=2)
    ids = np.array([[START_ID, 5, 9, 11, END_ID, 0, 0], [START_ID, 4, 4, 8, 6, 12, END_ID]], np.int32)
    inputs, targets = tl.next_token_pairs(ids)
    np.testing.assert_array_equal(inputs[1], ids[1, :-1])
    np.testing.assert_array_equal(targets[1], ids[1, 1:])
    logits = np.asarray(model(inputs)).astype(np.float64)
    log_p = logits - logits.max(-1, keepdims=True)
    log_p -= np.log(np.exp(log_p).sum(-1, keepdims=True))
    nll = [-log_p[b, t, targets[b, t]] for b in range(2) for t in range(targets.shape[1]) if targets[b, t] != PAD_ID]
    assert len(nll) == 4 + 6
    assert tl.perplexity(model, (inputs, targets), batch_size=1) == pytest.approx(math.exp(np.mean(nll)), rel=1e-5)


def test_a_model_learns_a_repeating_text_and_its_perplexity_falls():
    rng = np.random.default_rng(0)
    rows = []
    for _ in range(64):  # each text counts up from a random start: 5 6 7 ... wrapping at 20
        start = int(rng.integers(5, 21))
        rows.append([START_ID] + [5 + (start - 5 + i) % 16 for i in range(12)] + [END_ID])
    inputs, targets = tl.next_token_pairs(np.array(rows, np.int32))
    model = small_model(seed=0)
    before = tl.perplexity(model, (inputs, targets))
    model.compile(optimizer=keras.optimizers.Adam(3e-3), loss=tl.MaskedLoss(label_smoothing=0.0))
    model.fit(inputs, targets, batch_size=16, epochs=40, verbose=0)
    after = tl.perplexity(model, (inputs, targets))
    assert before > 10 and after < 2.0, (before, after)  # only the first token after START is a guess
    assert tl.generate(model, [START_ID, 9, 10], 4, temperature=0) == [11, 12, 13, 14]


def test_a_saved_model_loads_with_the_same_logits(tmp_path):
    model = small_model(seed=5)
    ids = np.array([[START_ID, 5, 9, 11]], np.int32)
    model.save(tmp_path / "lm.keras")
    loaded = keras.saving.load_model(tmp_path / "lm.keras")
    np.testing.assert_allclose(np.asarray(loaded(ids)), np.asarray(model(ids)), atol=1e-6)


@pytest.mark.parametrize("prompt, kwargs, message", [
    ([5, 9], {}, "starts with START"),
    ([START_ID, 5, PAD_ID], {}, "no padding"),
    ([START_ID] * 1 + [5] * 20, {"max_new_tokens": 10}, "at most the model's max_length"),
    ([START_ID, 5], {"temperature": -1.0}, "temperature must be >= 0"),
    ([START_ID, 5], {"top_k": 0}, "top_k must be between 1"),
    ([START_ID, 5], {"max_new_tokens": 0}, "max_new_tokens must be >= 1"),
])
def test_bad_generation_arguments_say_what_to_do(prompt, kwargs, message):
    model = small_model()
    with pytest.raises(ValueError, match=message):
        tl.generate(model, prompt, **{"max_new_tokens": 5, **kwargs})


def test_next_token_pairs_refuses_what_is_not_a_batch_of_texts():
    with pytest.raises(ValueError, match=r"shape \[batch, len\] with len >= 2"):
        tl.next_token_pairs(np.array([START_ID, 5, END_ID]))
