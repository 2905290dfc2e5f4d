"""Chapters 1, 2 and 4: chapter 1's batching exercise (its check accepts a right answer, lets a stub pass
with one line, names the typical mistakes and refuses the library), and the chapters' exercises teach
rather than copy: no exercise asks for code its chapter printed
before it, and chapters 2 and 4 use no term that a later chapter defines."""

import json
import re
from pathlib import Path

import numpy as np
import pytest

import transformer_lib as tl
from transformer_lib import exercises
from transformer_lib.exercises import check_batch_padding_share

ROOT = Path(__file__).resolve().parents[3]
CHAPTERS = {stem: ROOT / "chapters" / f"{stem}.ipynb" for stem in ("01_data", "02_positional_encoding", "04_masks")}


def batch_padding_share(lengths, batch_size, order=list, whole=False, drop_last=False):
    """The right answer, with knobs for the slips a student makes."""
    lengths = order(lengths)
    batches = [lengths] if whole else [lengths[i:i + batch_size] for i in range(0, len(lengths), batch_size)]
    if drop_last and len(batches[-1]) < batch_size:
        batches = batches[:-1]
    pads = sum(len(batch) * max(batch) - sum(batch) for batch in batches)
    return pads / sum(len(batch) * max(batch) for batch in batches)


def test_the_batch_padding_share_is_accepted_and_remembered(capsys):
    check_batch_padding_share(batch_padding_share)
    assert capsys.readouterr().out.startswith("Correct: ")
    assert exercises.passed(check_batch_padding_share)


def test_the_batch_padding_share_not_written_yet_gets_one_line(capsys):
    def stub(lengths, batch_size):
        raise NotImplementedError("hint")

    assert check_batch_padding_share(stub) is None
    out = capsys.readouterr().out
    assert out.startswith("Not written yet: ") and out.count("\n") == 1
    assert not exercises.passed(check_batch_padding_share)


@pytest.mark.parametrize("answer, message", [
    (lambda lengths, size: 1 - batch_padding_share(lengths, size), "share of real tokens"),
    (lambda lengths, size: batch_padding_share(lengths, size, order=sorted), "you sorted the lengths"),
    (lambda lengths, size: batch_padding_share(lengths, size, whole=True), "its own longest sentence"),
    (lambda lengths, size: batch_padding_share(lengths, size, drop_last=True), "the last batch"),
    (lambda lengths, size: batch_padding_share(lengths, size + 1), "batch padding share"),
], ids=["real-tokens", "sorted", "one-rectangle", "last-batch-dropped", "wrong-batch-size"])
def test_a_typical_batching_mistake_is_refused_and_named(answer, message):
    with pytest.raises(AssertionError, match=message):
        check_batch_padding_share(answer)
    assert not exercises.passed(check_batch_padding_share)


def test_a_batch_padding_share_calling_the_library_is_refused():
    import tensorflow as tf

    def through_the_library(lengths, batch_size):
        batches = [lengths[i:i + batch_size] for i in range(0, len(lengths), batch_size)]
        total = pads = 0
        for batch in batches:
            ids = np.array([[1] * n + [0] * (max(batch) - n) for n in batch])
            share = tl.padding_fraction(tf.data.Dataset.from_tensors(((ids, ids), ids)))
            pads, total = pads + share * ids.size, total + ids.size
        return pads / total

    with pytest.raises(AssertionError, match="library"):
        check_batch_padding_share(through_the_library)


# --- The chapters' exercises ------------------------------------------------------------------------------

def _cells(stem):
    return json.loads(CHAPTERS[stem].read_text())["cells"]


def _exercise_cells(stem):
    return [(i, cell) for i, cell in enumerate(_cells(stem)) if "exercise" in cell["metadata"].get("tags", [])]


# The library function each exercise asks the student to write again, by chapter.
TWINS = {"01_data": {"group_pairs": "connected_groups", "batch_padding_share": None},
         "02_positional_encoding": {"my_positional_encoding": "positional_encoding", "concatenated_encoding": None},
         "04_masks": {"my_look_ahead_mask": "look_ahead_mask", "combined_mask": "decoder_mask",
                      "causal_self_attention": "scaled_dot_product_attention"}}


@pytest.mark.parametrize("stem", CHAPTERS)
def test_no_exercise_asks_for_code_its_chapter_printed_before_it(stem):
    cells = _cells(stem)
    for index, cell in _exercise_cells(stem):
        (name,) = re.findall(r"^(?:def|class) (\w+)", "".join(cell["source"]), re.M)[:1]
        twin = TWINS[stem][name]
        if twin is None:
            continue
        shown = [c["id"] for c in cells[:index] if c["cell_type"] == "code"
                 and re.search(rf"show_source\([\w.]*\b{twin}\b", "".join(c["source"]))]
        assert not shown, f"{stem}: exercise {name} asks for {twin}, whose source cell {shown} prints before it"


def test_chapter_2_prints_the_encoding_it_asks_for_only_after_the_exercise():
    cells = _cells("02_positional_encoding")
    ids = [cell["id"] for cell in cells]
    listing = next(i for i, c in enumerate(cells) if "show_source(tl.positional_encoding)" in "".join(c["source"]))
    assert listing > ids.index("exercise-positional-encoding-check")


def _prose(stem) -> str:
    """The chapter's markdown without its solution dropdowns (a solution may look ahead)."""
    text = "\n".join("".join(c["source"]) for c in _cells(stem) if c["cell_type"] == "markdown")
    return re.sub(r"```\{admonition\} Solution.*?```", " ", text, flags=re.S)


@pytest.mark.parametrize("stem, later_terms", [
    ("02_positional_encoding", r"\b(quer(y|ies)|keys?|heads?|masks?|self-attention)\b"),  # chapters 3 to 5
    ("04_masks", r"\bheads?\b"),  # chapter 5
])
def test_the_chapter_uses_no_term_a_later_chapter_defines(stem, later_terms):
    used = sorted({match.group(0) for match in re.finditer(later_terms, _prose(stem), re.I)})
    assert not used, f"{stem} uses {used} before the chapter that defines them"


@pytest.mark.parametrize("stem", CHAPTERS)
def test_the_prose_cites_no_article_a_student_cannot_read(stem):
    assert "articles this course grew from" not in _prose(stem) and "original articles" not in _prose(stem)
