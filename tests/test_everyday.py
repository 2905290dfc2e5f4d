"""The everyday sentences kept apart (benchmarks/everyday.py): well formed, never seen in training, scored
exactly, and the record holds what the page's translator writes."""

import json
import re

import pytest

from benchmarks import everyday
from conftest import requires_shared_data


def _plain(text: str) -> str:  # an independent, looser match than the scorer's: no case, no ё, no final mark
    return re.sub(r"\s+", " ", text.lower().replace("ё", "е").replace("\u2019", "'")).strip().rstrip(".!?")


def test_the_everyday_sentences_are_well_formed_and_each_once():
    sentences = everyday.read_sentences()
    assert len(sentences) >= 70
    russian = [_plain(ru) for ru, _ in sentences]
    assert len(set(russian)) == len(russian)
    assert all(re.search("[а-яё]", ru.lower()) and all(re.search("[a-z]", en.lower()) for en in accepted)
               for ru, accepted in sentences)


def test_a_malformed_line_is_refused_with_its_number(tmp_path):
    path = tmp_path / "s.tsv"
    path.write_text("Привет.\tHello. | Hi.\nПока.\n", encoding="utf-8")
    with pytest.raises(ValueError, match="line 2"):
        everyday.read_sentences(path)
    path.write_text("Привет.\tHello. | \n", encoding="utf-8")
    with pytest.raises(ValueError, match="line 1"):
        everyday.read_sentences(path)


def test_exact_means_one_accepted_translation_up_to_case_spacing_and_a_final_full_stop():
    accepted = ["Please close the window.", "Please shut the window."]
    assert everyday.is_exact("please  close the window", accepted)
    assert everyday.is_exact("Please shut the window.", accepted)
    assert not everyday.is_exact("Please keep the window.", accepted)
    assert not everyday.is_exact("Please close the window!", accepted)
    assert not everyday.is_exact("Close the window.", accepted)
    assert everyday.is_exact("I don\u2019t eat meat.", ["I don't eat meat."])
    assert not everyday.is_exact("How much does it cost.", ["How much does it cost?"])


@requires_shared_data
def test_no_everyday_sentence_or_accepted_translation_is_in_what_the_translator_learns_from():
    from transformer_lib.data.corpora import load_parallel_corpus, monolingual_english

    russian, english = set(), {_plain(en) for en in monolingual_english()}
    for corpus in ("tatoeba/rus-eng", "smartool/rus-eng"):
        for split in ("train", "validation", "test"):
            pairs = load_parallel_corpus(corpus, split)
            russian |= {_plain(ru) for ru, _ in pairs}
            english |= {_plain(en) for _, en in pairs}
    seen = [(ru, [en for en in accepted if _plain(en) in english]) for ru, accepted in everyday.read_sentences()
            if _plain(ru) in russian or any(_plain(en) in english for en in accepted)]
    assert not seen, f"everyday sentences found in the corpora: {seen}"


def test_the_record_holds_what_the_page_in_the_book_translates_scored_against_todays_references():
    pytest.importorskip("onnxruntime")
    record = json.loads(everyday.OUT.read_text())
    manifest = json.loads((everyday.PAGE / "manifest.json").read_text())
    rows = [row for row in record["translators"].values() if row["about"] == manifest["about"]]
    assert rows, "the page's translator has no row: run `python -m benchmarks.everyday` after exporting it"
    row, sentences = rows[-1], everyday.read_sentences()
    assert [t["russian"] for t in row["translations"]] == [ru for ru, _ in sentences]
    assert row["exact"] == sum(everyday.is_exact(t["translation"], accepted)
                               for t, (_, accepted) in zip(row["translations"], sentences))
    sample = [0, len(sentences) // 2, len(sentences) - 1]  # three sentences translated again by the page
    assert everyday.page_translations([sentences[i][0] for i in sample]) == [row["translations"][i]["translation"]
                                                                            for i in sample]
