"""The instructor's guide agrees with the chapters: points per chapter and chapter 7's training time."""

import re
from pathlib import Path

import nbformat
import pytest

ROOT = Path(__file__).resolve().parent.parent
GUIDE = (ROOT / "instructors.md").read_text()
CHAPTERS = sorted((ROOT / "chapters").glob("*.ipynb"))  # the appendix too


def _exercises(notebook) -> tuple[int, int]:
    """(code exercises, question exercises): the numbered items of the Exercises section, checks counted."""
    items = 0
    for cell in notebook.cells:
        if cell.cell_type == "markdown" and "## Exercises" in cell.source:
            items += len(re.findall(r"^\d+\. ", cell.source.split("## Exercises", 1)[1], re.M))
    checks = sum("check" in cell.metadata.get("tags", []) for cell in notebook.cells)
    return checks, items - checks


def _map_row(path: Path) -> list[str]:
    rows = [line for line in GUIDE.splitlines() if line.startswith("| [") and f"(chapters/{path.name})" in line]
    assert len(rows) == 1, f"instructors.md's chapter map has no single row for {path.name}"
    return [cell.strip() for cell in rows[0].strip("|").split("|")]


@pytest.mark.parametrize("path", CHAPTERS, ids=lambda path: path.stem)
def test_the_chapter_map_gives_each_chapter_its_points(path):
    code, questions = _exercises(nbformat.read(path, as_version=4))
    assert code + questions > 0, f"{path.name} has no exercises"
    assert int(_map_row(path)[-1]) == 10 * code + 5 * questions, (
        f"{path.name}: {code} code exercise(s) at 10 points and {questions} question(s) at 5")


def _rubric_prefix(path: Path) -> str:
    """The rubric rows' prefix of a chapter: its number ("10" for 10.4), or "A" for the appendix (A.1, A.2, ...)."""
    return "A" if _map_row(path)[0].startswith("[Appendix") else str(int(path.name[:2]))


def _rubric_ids() -> list[str]:
    """The id of every rubric row, in order: "1.2", "10.4", "A.2–A.5", ..."""
    rubric = GUIDE.split("### Rubric for the question exercises", 1)[1].split("<!-- end key only -->", 1)[0]
    return re.findall(r"^\| ((?:\d+|A)\.\d+(?:–(?:\d+|A)\.\d+)?) \(", rubric, re.M)


def test_every_question_exercise_has_a_rubric_row():
    ids = _rubric_ids()
    for path in CHAPTERS:
        prefix = _rubric_prefix(path)
        code, questions = _exercises(nbformat.read(path, as_version=4))
        rows = [row for row in ids if row.split(".", 1)[0] == prefix]
        assert (questions > 0) == bool(rows), f"{path.stem}: {questions} question(s), rubric rows {rows}"


def test_every_rubric_row_has_an_id_of_its_own():
    ids = _rubric_ids()
    assert ids, "instructors.md's rubric has no rows"
    exercises = []
    for row in ids:  # "A.2–A.5" stands for each exercise of the range
        prefix, first, last = row.split(".", 1)[0], row.split(".", 1)[1].split("–")[0], row.rsplit(".", 1)[1]
        exercises += [f"{prefix}.{n}" for n in range(int(first), int(last) + 1)]
    repeated = sorted({e for e in exercises if exercises.count(e) > 1})
    assert not repeated, f"rubric rows share an id: {repeated}"


def _stored_training_minutes() -> tuple[str, str]:
    """Chapter 7's stored minutes of training and of its training call (with the per-epoch BLEU)."""
    notebook = nbformat.read(ROOT / "chapters" / "07_training.ipynb", as_version=4)
    text = "".join(output.get("text", "") for cell in notebook.cells if cell.cell_type == "code"
                   for output in cell.outputs if output.get("output_type") == "stream")
    stored = re.search(r"([\d.]+) min of training in all; this call took ([\d.]+) min", text)
    assert stored, "chapter 7's stored output no longer says how long it trained"
    # a run trained before the chapter's call (by the command line's `train`): that call's minutes
    earlier = re.search(r"The epochs were trained before this call, with this recipe, in one call of ([\d.]+) min", text)
    return stored.group(1), earlier.group(1) if earlier else stored.group(2)


def test_the_guide_quotes_chapter_7s_stored_training_time():
    quoted = re.search(r"\(([\d.]+) minutes of training for the published outputs, ([\d.]+) with", GUIDE)
    assert quoted and quoted.groups() == _stored_training_minutes()


def test_the_cost_chapters_print_before_training_is_chapter_7s_stored_time():
    from transformer_lib.book import runs

    minutes, with_validation = _stored_training_minutes()
    assert (float(minutes), float(with_validation)) == (runs.MEASURED_CPU["minutes"], runs.MEASURED_CPU["with_validation"])
