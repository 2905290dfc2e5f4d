"""`tl.paired_bootstrap`: sacreBLEU's paired bootstrap resampling, with the interval of the difference."""

import pytest
import sacrebleu
from sacrebleu.significance import _paired_bs_test

import transformer_lib as tl
from transformer_lib.decoding.bleu import group_references

REFERENCES = ["the cat sat on the mat", "a dog barks at night", "I like green tea", "he is here today",
              "we go home now", "she reads a long book", "it is raining again", "they lost the game"] * 8
GOOD = ["the cat sat on the mat", "a dog barked at night", "I like tea", "he is there today",
        "we go home now", "she reads a book", "it rains again", "they lost the game"] * 8
POOR = ["cat on mat", "dog night", "I tea", "he here", "home now", "she reads", "rain", "they game"] * 8


def test_identical_systems_differ_by_nothing_on_every_draw():
    found = tl.paired_bootstrap(GOOD, GOOD, [REFERENCES])
    assert found["difference"] == found["mean"] == found["low"] == found["high"] == 0 and found["within_noise"]


def test_the_whole_set_scores_are_sacrebleus_corpus_bleu():
    found = tl.paired_bootstrap(GOOD, POOR, [REFERENCES])
    assert found["bleu_a"] == pytest.approx(sacrebleu.corpus_bleu(GOOD, [REFERENCES]).score)
    assert found["bleu_b"] == pytest.approx(sacrebleu.corpus_bleu(POOR, [REFERENCES]).score)
    assert found["difference"] == pytest.approx(found["bleu_a"] - found["bleu_b"])


def test_against_a_system_that_scores_zero_it_is_sacrebleus_own_paired_test():
    # every draw of a system with no matching word scores 0, so the differences are the draws of `GOOD`
    # alone: their mean and 95% half-width are what sacreBLEU's paired bootstrap reports for it
    nothing = ["xyz"] * len(GOOD)
    found = tl.paired_bootstrap(GOOD, nothing, [REFERENCES], seed=7)
    bleu = sacrebleu.metrics.BLEU()
    stats = bleu._extract_corpus_statistics(nothing, [REFERENCES])
    _, result = _paired_bs_test({"BLEU": (stats, bleu._aggregate_and_compute(stats))}, "good", GOOD, [REFERENCES],
                                {"BLEU": bleu}, n_samples=1000, seed=7)
    assert found["mean"] == pytest.approx(result["BLEU"].mean, abs=1e-4)
    assert (found["high"] - found["low"]) / 2 == pytest.approx(result["BLEU"].ci, abs=1e-4)


def test_a_clear_gain_is_beyond_the_noise_and_the_interval_turns_round_with_the_order():
    ahead, behind = tl.paired_bootstrap(GOOD, POOR, [REFERENCES]), tl.paired_bootstrap(POOR, GOOD, [REFERENCES])
    assert 0 < ahead["low"] < ahead["difference"] < ahead["high"] and not ahead["within_noise"]
    assert (behind["low"], behind["high"]) == pytest.approx((-ahead["high"], -ahead["low"]))


def test_a_one_word_difference_in_many_sentences_is_within_the_noise():
    changed = list(GOOD)
    changed[0] = "the cat sat on a mat"  # one word of one sentence of 64
    found = tl.paired_bootstrap(changed, GOOD, [REFERENCES])
    assert found["difference"] < 0 and found["within_noise"]


def test_grouped_references_with_gaps_are_scored_as_evaluate_bleu_scores_them():
    pairs = [("кот", "the cat sat on the mat"), ("кот", "a cat sat on the mat"), ("чай", "I like green tea")]
    sources, streams = group_references(pairs)  # the second stream has None for "чай"
    found = tl.paired_bootstrap(["a cat sat on the mat", "I like tea"], ["cat", "tea"], streams, samples=200)
    assert found["bleu_a"] == pytest.approx(sacrebleu.corpus_bleu(["a cat sat on the mat", "I like tea"], streams).score)


def test_translations_of_other_sentences_or_too_few_draws_are_refused():
    with pytest.raises(ValueError, match="same sources"):
        tl.paired_bootstrap(GOOD, GOOD[:-1], [REFERENCES])
    with pytest.raises(ValueError, match="same sources"):
        tl.paired_bootstrap(GOOD, GOOD, [REFERENCES[:-1]])
    with pytest.raises(ValueError, match="at least 100"):
        tl.paired_bootstrap(GOOD, POOR, [REFERENCES], samples=10)
