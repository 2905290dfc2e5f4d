"""`make grade` (tools/grade.py): a class's notebooks graded in one run, whatever they hold."""

from __future__ import annotations

import csv
import sys
from pathlib import Path

import nbformat
import pytest

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tools"))

import grade  # noqa: E402

CHAPTER = "05_multi_head_attention"  # three exercises whose checks take seconds
EXERCISES = ["split_heads", "merge_heads", "per_head_attention"]
LIMIT = 30


def _key():
    return nbformat.read(ROOT / "chapters" / f"{CHAPTER}.ipynb", as_version=4)


def _cells_after(notebook, tag: str) -> list:
    return [cell for cell in notebook.cells if tag in cell.metadata.get("tags", [])]


@pytest.fixture(scope="module")
def rows(tmp_path_factory) -> dict:
    folder = tmp_path_factory.mktemp("submissions")
    nbformat.write(_key(), folder / "solved.ipynb")
    (folder / "untouched.ipynb").write_bytes((ROOT / "student" / "chapters" / f"{CHAPTER}.ipynb").read_bytes())

    looping = _key()  # an endless loop in the second answer itself (it sleeps, leaving the CPU to other tests)
    _cells_after(looping, "exercise")[1].source = (
        "import time\n\ndef merge_heads(x):\n    return x\n\nwhile True:\n    time.sleep(0.5)\n")
    nbformat.write(looping, folder / "looping.ipynb")

    tampered = _key()  # the first check made to always pass, the third deleted: the key's checks run anyway
    _cells_after(tampered, "exercise")[0].source = "def split_heads(x, num_heads):\n    return x\n"
    checks = _cells_after(tampered, "check")
    checks[0].source = "print('Correct: trust me')"
    tampered.cells.remove(checks[2])
    nbformat.write(tampered, folder / "tampered.ipynb")

    crashing = _key()  # the first answer kills its kernel; the others must still be graded
    _cells_after(crashing, "exercise")[0].source = "import os\nos._exit(1)\n"
    nbformat.write(crashing, folder / "crashing.ipynb")

    (folder / "essay.ipynb").write_text("my answers are in the email")
    nbformat.write(nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell("print('hello')")]),
                   folder / "other_course.ipynb")

    out = folder.parent / "grades.csv"
    grade.main([str(folder), str(out), "--time-limit", str(LIMIT)])
    with out.open() as file:
        table = list(csv.DictReader(file))
    assert list(table[0]) == list(grade.COLUMNS)
    by_student = {}
    for row in table:
        by_student.setdefault(row["student"], []).append(row)
    return by_student


def _passed(rows) -> list[bool]:
    return [row["passed"] == "true" for row in rows]


def test_a_solved_chapter_passes_every_exercise(rows):
    assert [row["exercise"] for row in rows["solved"]] == EXERCISES
    assert {row["chapter"] for row in rows["solved"]} == {CHAPTER}
    assert _passed(rows["solved"]) == [True, True, True]
    assert all(row["message"].startswith("Correct:") for row in rows["solved"])


def test_an_untouched_student_chapter_passes_none(rows):
    assert _passed(rows["untouched"]) == [False, False, False]
    assert all("Not written yet" in row["message"] for row in rows["untouched"])


def test_an_endless_loop_fails_its_exercise_only(rows):
    assert _passed(rows["looping"]) == [True, False, True]
    assert f"time limit of {LIMIT} s" in rows["looping"][1]["message"]


def test_the_original_checks_run_on_a_tampered_notebook(rows):
    first, second, third = rows["tampered"]
    assert not _passed([first])[0] and "edited" in first["message"]
    assert "trust me" not in first["message"]
    assert _passed([second, third]) == [True, True]
    assert "deleted" in third["message"]


def test_a_kernel_killed_by_an_answer_fails_that_exercise_and_grading_goes_on(rows):
    assert _passed(rows["crashing"]) == [False, True, True]
    assert "killed its kernel" in rows["crashing"][0]["message"]


def test_files_that_are_not_course_notebooks_get_one_row_saying_so(rows):
    (essay,) = rows["essay"]
    assert essay["passed"] == "false" and "not a notebook" in essay["message"]
    (other,) = rows["other_course"]
    assert other["passed"] == "false" and "not one of the course's chapters" in other["message"]


def test_the_command_line_refuses_a_missing_folder(tmp_path, capsys):
    with pytest.raises(SystemExit) as stop:
        grade.main([str(tmp_path / "nowhere"), str(tmp_path / "grades.csv")])
    assert stop.value.code == 2
    assert "is not a folder" in capsys.readouterr().err
