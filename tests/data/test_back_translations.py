"""Back-translation: the reverse corpora, the synthetic pairs, and the leak rule that keeps them off the
held-out sentences."""

import numpy as np
import pytest

import transformer_lib as tl
from transformer_lib.data import back_translations, corpora
from transformer_lib.data.splits import split_of_key
from conftest import requires_shared_data

SPLITS = ("train", "validation", "test")


def _keys(split, count):
    return [f"Фраза {i}." for i in range(2000) if split_of_key(f"Фраза {i}.") == split][:count]


@pytest.fixture
def tiny_corpora(monkeypatch, tmp_path):
    """A Tatoeba of one pair per split, no SMARTool pair, and back-translations in a file of our own."""
    (train,), (validation,), (test,) = _keys("train", 1), _keys("validation", 1), _keys("test", 1)
    tatoeba = [(train, "A training sentence."), (validation, "A validation sentence."), (test, "A test sentence.")]
    monkeypatch.setattr(corpora, "_tatoeba_pairs", lambda name: tatoeba)
    monkeypatch.setattr(corpora, "_smartool_pairs", lambda: [])
    path = tmp_path / "bt.tsv"
    monkeypatch.setenv(back_translations.BACK_TRANSLATIONS_ENV, str(path))
    return tatoeba, path


def test_a_reversed_corpus_holds_each_splits_pairs_swapped(tiny_corpora):
    tatoeba, _ = tiny_corpora
    for split in SPLITS:
        forward = tl.load_parallel_corpus("tatoeba/rus-eng", split)
        assert tl.load_parallel_corpus("tatoeba/eng-rus", split) == [(en, ru) for ru, en in forward]
    assert tl.load_parallel_corpus("tatoeba/eng-rus", "test") == [("A test sentence.", tatoeba[2][0])]
    assert "tatoeba+smartool/eng-rus" in tl.CORPORA and "tatoeba+smartool+bt/eng-rus" in tl.CORPORA
    with pytest.raises(ValueError, match="Unknown corpus"):
        tl.load_parallel_corpus("synthetic/eng-rus", "train")  # no Russian -> English corpus of that name


def test_no_back_translated_pair_linked_to_a_held_out_sentence_is_used_and_held_out_splits_stay_tatoebas(tiny_corpora):
    tatoeba, path = tiny_corpora
    synthetic = [("Машинная фраза.", "A test sentence."),  # its English is a test pair's
                 (tatoeba[1][0], "Some other English."),  # its Russian is a validation pair's
                 ("Другая фраза.", "A chained sentence."),  # planted link: shares its Russian with the next pair,
                 ("Другая фраза.", "A test sentence."),  # whose English is a test pair's
                 ("Ещё фраза.", "A training sentence."),  # linked to a training pair only: kept
                 ("Новая фраза.", "A new sentence.")]  # linked to nothing: kept
    back_translations.write_back_translations(path, synthetic)
    name = "tatoeba+smartool+bt/rus-eng"
    assert tl.load_parallel_corpus(name, "validation") == tl.load_parallel_corpus("tatoeba/rus-eng", "validation")
    assert tl.load_parallel_corpus(name, "test") == tl.load_parallel_corpus("tatoeba/rus-eng", "test")
    assert tl.load_parallel_corpus(name, "train") == [tatoeba[0], synthetic[4], synthetic[5]]


def test_back_translations_round_trip_and_bad_files_get_clear_errors(tmp_path):
    pairs = [("<bt> Привет.", "Hello."), ("Как дела?", "How are you?")]
    digest = back_translations.write_back_translations(tmp_path / "bt.tsv", pairs)
    assert back_translations.read_back_translations(tmp_path / "bt.tsv") == pairs and len(digest) == 64
    with pytest.raises(ValueError, match="a tab, a line break or an empty side"):
        back_translations.write_back_translations(tmp_path / "bad.tsv", [("Привет.\tой", "Hello.")])
    (tmp_path / "broken.tsv").write_text("Привет.\tHello.\nno tab here\n", encoding="utf-8")
    with pytest.raises(ValueError, match="line 2: expected 'russian<TAB>english'"):
        back_translations.read_back_translations(tmp_path / "broken.tsv")
    with pytest.raises(tl.CorpusUnavailableError, match="back-translate"):
        back_translations.read_back_translations(tmp_path / "missing.tsv")


@pytest.fixture(scope="module")
def reverse(trained_tiny):
    # The tiny translator goes from Russian number words to English ones; here it plays the reverse model:
    # what it is given stands for the monolingual side, what it writes for the synthetic side.
    return tl.load_translator(trained_tiny)


SENTENCES = ["сто двадцать три", "семь", "две тысячи сорок семь", "девятьсот", "тридцать один"]


def test_greedy_and_beam_back_translations_are_the_translators_and_a_tag_marks_each_synthetic_source(reverse):
    greedy = tl.back_translate(reverse, SENTENCES, method="greedy", progress=False, batch_size=2)
    assert greedy == list(zip(reverse(SENTENCES, beam_size=1), SENTENCES))  # the monolingual side is the target
    beam = tl.back_translate(reverse, SENTENCES, method="beam", tag="<bt>", progress=False)
    assert beam == [(f"<bt> {ru}", en) for ru, en in zip(reverse(SENTENCES, beam_size=4), SENTENCES)]


def test_sampled_back_translations_repeat_with_a_seed_and_vary_with_another(reverse):
    def sampled(seed, temperature=3.0):
        return tl.back_translate(reverse, SENTENCES * 4, method="sampled", temperature=temperature, seed=seed,
                                 progress=False)

    assert sampled(0) == sampled(0)
    assert sampled(0) != sampled(1)  # at a high temperature, 20 sentences cannot all draw the same
    cold = tl.back_translate(reverse, SENTENCES, method="sampled", temperature=1e-3, progress=False)
    assert cold == tl.back_translate(reverse, SENTENCES, method="greedy", progress=False)  # near 0 it is greedy


def test_back_translate_refuses_an_unknown_method_blank_sentences_and_a_bad_temperature(reverse):
    with pytest.raises(ValueError, match="choose one of greedy, beam, sampled"):
        tl.back_translate(reverse, SENTENCES, method="nucleus", progress=False)
    with pytest.raises(ValueError, match="blank"):
        tl.back_translate(reverse, ["семь", "  "], progress=False)
    with pytest.raises(ValueError, match="positive"):
        tl.back_translate(reverse, SENTENCES, method="sampled", temperature=0.0, progress=False)


def test_the_monolingual_english_is_the_portuguese_sets_english_each_once():
    english = corpora.monolingual_english()
    pairs = corpora._tatoeba_pairs("tatoeba/por-eng")
    assert len(english) == len(set(english)) and set(english) == {" ".join(en.split()) for _, en in pairs}
    assert len(english) > 10_000


def test_the_command_writes_the_pairs_file_that_the_corpus_reads(trained_tiny, tmp_path):
    from transformer_lib.__main__ import main

    english = tmp_path / "english.txt"
    english.write_text("семь\n\nдвести один\n", encoding="utf-8")  # a blank line is not a sentence
    pairs = main(["back-translate", "--model", str(trained_tiny), "--method", "greedy", "--tag",
                  "--out", str(tmp_path / "bt.tsv"), str(english)])
    assert [en for _, en in pairs] == ["семь", "двести один"] and all(ru.startswith("<bt> ") for ru, _ in pairs)
    assert back_translations.read_back_translations(tmp_path / "bt.tsv") == pairs


def test_a_synthetic_source_with_a_line_break_or_a_tab_becomes_one_line_and_an_empty_one_no_pair():
    def translator(texts, **options):  # what a sampled reverse model can write: drawn line-break and tab pieces
        return [{"one": "\nпри\tвет ", "two": " \n", "three": "три"}[text] for text in texts]

    with pytest.warns(UserWarning, match="1 of 3 sentences were translated to nothing"):
        pairs = tl.back_translate(translator, ["one", "two", "three"], method="sampled", progress=False)
    assert pairs == [("при вет", "one"), ("три", "three")]


def test_the_books_back_translations_are_read_by_default_and_checked(monkeypatch, tmp_path):
    import hashlib
    import shutil

    from transformer_lib.data.downloads import ChecksumError

    monkeypatch.delenv(back_translations.BACK_TRANSLATIONS_ENV, raising=False)
    shipped = back_translations.shipped_path()
    pairs = back_translations.read_back_translations()
    assert len(pairs) == len(shipped.read_text(encoding="utf-8").splitlines()) > 12_000
    assert hashlib.sha256(shipped.read_bytes()).hexdigest() in (shipped.parent / "README.md").read_text()
    assert "CC BY 2.0 FR" in (shipped.parent / "README.md").read_text()
    # a copy with one line changed is refused where the book's file is expected
    changed = tmp_path / "back_translations" / shipped.name
    changed.parent.mkdir()
    shutil.copy(shipped, changed)
    changed.write_text(changed.read_text(encoding="utf-8").replace(pairs[0][0], pairs[0][0] + "!", 1), encoding="utf-8")
    monkeypatch.setattr(back_translations, "shipped_path", lambda: changed)
    with pytest.raises(ChecksumError):
        back_translations.read_back_translations()


@requires_shared_data
def test_the_books_back_translations_are_the_portuguese_sets_english_each_once_in_order(monkeypatch):
    monkeypatch.delenv(back_translations.BACK_TRANSLATIONS_ENV, raising=False)
    english = [en for _, en in back_translations.read_back_translations()]
    assert english == corpora.monolingual_english()
