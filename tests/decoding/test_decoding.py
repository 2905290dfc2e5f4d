import itertools
import warnings

import keras
import numpy as np
import pytest
from conftest import random_ids

import transformer_lib as tl
from transformer_lib.decoding.search import beam_search, greedy_decode, length_penalty
from transformer_lib.decoding.translator import Translator
from transformer_lib.decoding.bleu import evaluate_bleu, group_references
from transformer_lib.export.saved_model import load_translator, save_translator
from transformer_lib.data.tokenizer import END_ID, PAD_ID, START_ID


@pytest.fixture(scope="module")
def tiny(trained_tiny):
    return load_translator(trained_tiny)


def random_model(**options):
    return tl.Transformer(2, 32, 4, 64, 50, 40, dropout_rate=0.0, **options)


def test_xla_compiled_decoding_gives_the_tokens_of_the_graph_and_of_the_rerun(rng):
    model = random_model()
    source = random_ids(rng, 4, 7, 50, pad_from=[3, 7, 5, 1])
    full = greedy_decode(model, source, max_length=12, use_cache=False)
    np.testing.assert_array_equal(greedy_decode(model, source, max_length=12, jit_compile=True), full)
    np.testing.assert_array_equal(beam_search(model, source, 3, max_length=12, jit_compile=True),
                                  beam_search(model, source, 3, max_length=12))
    with pytest.raises(ValueError, match="jit_compile=True needs use_cache=True"):
        greedy_decode(model, source, max_length=12, use_cache=False, jit_compile=True)


@pytest.mark.parametrize("norm_first", [False, True])
def test_cached_greedy_decoding_equals_rerunning_the_decoder(norm_first, rng):
    model = random_model(norm_first=norm_first)
    source = random_ids(rng, 4, 7, 50, pad_from=[3, 7, 5, 1])
    cached = greedy_decode(model, source, max_length=12)
    full = greedy_decode(model, source, max_length=12, use_cache=False)
    np.testing.assert_array_equal(cached, full)


def test_beam_of_one_is_greedy(rng):
    model = random_model()
    source = random_ids(rng, 4, 7, 50, pad_from=[3, 7, 5, 1])
    np.testing.assert_array_equal(beam_search(model, source, beam_size=1, max_length=12), greedy_decode(model, source, 12))


@pytest.mark.parametrize("bad", [-1, 50, 2**40], ids=["negative", "vocabulary size", "past int32"])
@pytest.mark.parametrize("decode", [greedy_decode, beam_search], ids=["greedy", "beam"])
def test_decoding_refuses_source_ids_outside_the_source_vocabulary(decode, bad, rng):
    model = random_model()  # a source vocabulary of 50 ids
    source = random_ids(rng, 2, 5, 50).astype("int64")
    decode(model, source, max_length=4)  # now built: its first forward pass, which checks ids, is behind it
    source[1, 2] = bad
    with pytest.raises(ValueError, match=rf"source_ids include {bad}, outside this vocabulary of 50 ids \(0\.\.49\)"
                                         r"\. Encode with the tokenizer"):
        decode(model, source, max_length=4)


def sequence_log_prob(model, source, tokens):
    decoder_input = np.array([[START_ID, *tokens[:-1]]], np.int32)
    log_probs = keras.ops.log_softmax(model((source, decoder_input), training=False), axis=-1)
    return float(sum(np.asarray(log_probs)[0, i, token] for i, token in enumerate(tokens)))


@pytest.mark.parametrize("jit_compile", [False, True])
def test_a_wide_beam_finds_the_most_probable_translation_by_exhaustive_search(jit_compile, rng):
    """Vocabulary of 6 (4 that may be generated), at most 3 tokens: few enough sequences to score
    every one. Without a length
    penalty (alpha = 0) a beam as wide as all prefixes must return the best of them."""
    keras.utils.set_random_seed(3)
    model = tl.Transformer(1, 16, 2, 32, 10, 6, dropout_rate=0.0)
    source = random_ids(rng, 1, 5, 10)
    candidates = []
    for length in (1, 2, 3):
        for tokens in itertools.product(range(2, 6), repeat=length):  # never PAD (0) or START (1)
            if END_ID in tokens[:-1] or (length < 3 and tokens[-1] != END_ID):
                continue  # END ends a sequence; shorter than 3 only if it ends with END
            candidates.append((sequence_log_prob(model, source, list(tokens)), list(tokens)))
    best_score, best = max(candidates)
    found = beam_search(model, source, beam_size=16, alpha=0.0, max_length=3, jit_compile=jit_compile)[0]
    found = [int(t) for t in found if t != PAD_ID] if END_ID in found else [int(t) for t in found]
    assert found == best, (found, best, best_score)


def test_length_penalty_is_the_gnmt_formula():
    assert length_penalty(1, 0.6) == pytest.approx(1.0)
    assert length_penalty(7, 0.6) == pytest.approx(2.0**0.6)
    assert length_penalty(10, 0.0) == 1.0


def test_trained_model_translates_held_out_numbers(tiny, record_property):
    pairs = tl.load_parallel_corpus("synthetic", "test")
    translations = tiny([s for s, _ in pairs], beam_size=1)
    exact = np.mean([t == reference for t, (_, reference) in zip(translations, pairs)])
    record_property("exact_match", float(exact))
    assert exact >= 0.97, exact  # measured 1.0 with 1, 2 and 4 threads (see the trained_tiny fixture)


def test_cache_is_exact_on_the_trained_model_too(tiny):
    pairs = tl.load_parallel_corpus("synthetic", "validation")[:64]
    sources = tiny.encode_sources([s for s, _ in pairs])
    np.testing.assert_array_equal(
        greedy_decode(tiny.model, sources, 24), greedy_decode(tiny.model, sources, 24, use_cache=False)
    )
    np.testing.assert_array_equal(beam_search(tiny.model, sources, 1, max_length=24), greedy_decode(tiny.model, sources, 24))


def test_translator_handles_blank_long_and_bad_input(tiny):
    assert tiny("") == "" and tiny("   \t") == ""
    assert tiny(["", "двести пять", " "]) == ["", tiny("двести пять"), ""]  # blanks do not disturb the rest
    assert isinstance(tiny("сто"), str)
    with pytest.warns(UserWarning, match="longer than max_length=24 tokens were cut"):
        long = tiny("девять тысяч " * 30, beam_size=1)
    assert isinstance(long, str)
    with pytest.raises(TypeError, match="Translator expects str or a list of str, got int"):
        tiny(["сто", 5])
    with pytest.raises(ValueError, match="beam_size must be a positive integer, got 0"):
        tiny("сто", beam_size=0)


def test_cut_to_fit_keeps_short_rows_and_ends_long_ones_with_end(tiny):
    from transformer_lib.data.tokenizer import END_ID
    from transformer_lib.decoding.translator import cut_to_fit

    rows = [[1, 5, 6, END_ID], [1, 5, 6, 7, 8, 9, END_ID]]
    with pytest.warns(UserWarning, match=r"1 sentence\(s\) longer than max_length=5 tokens were cut to fit \(first: #1\)"):
        cut = cut_to_fit(rows, 5)
    assert cut == [[1, 5, 6, END_ID], [1, 5, 6, 7, END_ID]]
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert cut_to_fit(rows[:1], 5) == rows[:1]  # nothing cut, no warning
    with pytest.warns(UserWarning) as caught:  # the warning names the reader's line, not the library's
        tiny("девять тысяч " * 30, beam_size=1)
    assert caught[0].filename == __file__


def test_the_translators_alpha_is_the_beam_searchs_when_a_call_gives_none(tiny, monkeypatch, tmp_path):
    import transformer_lib.decoding.translator as translator_module

    used = []
    search = translator_module.beam_search
    monkeypatch.setattr(translator_module, "beam_search", lambda model, ids, k, alpha, n: used.append(alpha) or search(model, ids, k, alpha, n))
    assert tiny.alpha == 0.6  # the paper's, by default
    tiny("сто")
    tiny.alpha = 1.25
    try:
        tiny("сто")
        tiny("сто", alpha=0.0)  # a call's own alpha wins
        tiny("сто", beam_size=1)  # greedy: no search, no alpha
        with pytest.raises(ValueError, match="alpha must be"):
            tiny.alpha = -1
        assert tiny.alpha == 1.25
        assert load_translator(save_translator(tiny, tmp_path / "saved")).alpha == 1.25  # saved with it
    finally:
        tiny.alpha = 0.6
    assert used == [0.6, 1.25, 0.0]
    with pytest.raises(ValueError, match="alpha must be"):
        Translator(tiny.model, tiny.source_tokenizer, tiny.target_tokenizer, 24, alpha=-0.1)


def test_attention_weights_cover_every_layer_and_head(tiny):
    result = tiny.attention_weights("две тысячи двадцать один")
    weights = result["weights"]
    assert weights.shape == (2, 4, len(result["target_pieces"]), len(result["source_pieces"]))
    np.testing.assert_allclose(weights.sum(axis=-1), 1.0, atol=1e-5)


def test_attention_weights_of_a_translation_longer_than_max_length_cover_its_first_positions(tiny):
    """A translation given (or decoded, then re-encoded) can have more pieces than the model has positions."""
    result = tiny.attention_weights("сто", translation="nine thousand " * 30)
    assert result["weights"].shape[2] == len(result["target_pieces"]) == tiny.max_length
    assert result["target_pieces"][:3] == ["<s>", *tiny.target_tokenizer.pieces("nine thousand")[:2]]


def test_attention_weights_of_a_source_cut_to_max_length_end_with_the_end_token(tiny):
    """The model sees a cut source as its first pieces and then END: so must the plot's labels."""
    text = "тысяча " * 40
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # the cut is announced with a warning
        result = tiny.attention_weights(text, translation="one")
    assert result["weights"].shape[3] == len(result["source_pieces"]) == tiny.max_length
    assert result["source_pieces"][-1] == "</s>"
    assert result["source_pieces"][1:3] == tiny.source_tokenizer.pieces(text)[:2]


def test_references_of_repeated_sources_are_grouped():
    sources, streams = group_references([("a", "x"), ("b", "y"), ("a", "z")])
    assert sources == ["a", "b"] and streams == [["x", "y"], ["z", None]]


class NeverCalled:
    def __call__(self, texts, beam_size=4, alpha=0.6):
        raise AssertionError("pairs that are not (source, target) strings must be refused before translating")


@pytest.mark.parametrize(
    "pairs, error, message",
    [
        (["да", "не"], TypeError, r"item #0 is str 'да'.*list\(zip\(sources, references\)\)"),
        ([("сто", "one hundred"), ("двести", 200)], TypeError, r"item #1 is tuple \('двести', 200\)"),
        ([("сто", "one hundred", "extra")], TypeError, r"item #0 is tuple \('сто', 'one hundred', 'extra'\)"),
        ("сто", TypeError, r"pairs must be a list of \(source, target\) pairs of strings.*; got str\."),
        ({"сто": "one hundred"}, TypeError, r"got dict"),
        ([], ValueError, r"needs at least one \(source, target\) pair"),
    ],
    ids=["plain strings", "a target that is not a string", "a triple", "one string", "a dict", "empty"],
)
def test_bleu_refuses_pairs_that_are_not_source_target_strings(pairs, error, message):
    with pytest.raises(error, match=message):
        evaluate_bleu(NeverCalled(), pairs, verbose=False)


def test_bleu_is_sacrebleus_and_perfect_translations_score_100(tiny, record_property):
    # Targets of 4+ words: BLEU multiplies 1- to 4-gram precisions, so one-word targets score 0.
    pairs = [pair for pair in tl.load_parallel_corpus("synthetic", "test") if len(pair[1].split()) >= 4][:40]

    class Oracle(Translator):
        def __init__(self):  # no model: it answers from the references
            pass

        def __call__(self, texts, beam_size=4, alpha=0.6):
            return [dict(pairs)[t] for t in texts]

    perfect = evaluate_bleu(Oracle(), pairs, verbose=False)
    assert perfect["bleu"] == pytest.approx(100.0) and perfect["chrf"] == pytest.approx(100.0)
    assert perfect["bleu_signature"].startswith("nrefs:1|case:mixed|eff:no|tok:13a")
    real = evaluate_bleu(tiny, pairs, verbose=False)
    record_property("bleu", real["bleu"])
    assert real["bleu"] > 50  # the trained tiny model is good at this task


def test_decoding_does_not_warn(tiny):
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        tiny(["сто один", "пять тысяч"], beam_size=4)
