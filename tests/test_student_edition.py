"""The student edition (tools/student_edition.py): no solutions in it, and never stale."""

import json
import sys
from pathlib import Path

import nbformat
import numpy as np
import pytest

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tools"))

import student_edition as se  # noqa: E402

STUDENT = ROOT / "student" / "chapters"


def _code_cells(path):
    return ["".join(cell["source"]) for cell in json.loads(path.read_text())["cells"] if cell["cell_type"] == "code"]


def test_the_committed_student_edition_is_what_make_student_writes(tmp_path):
    written = se.build(ROOT, tmp_path)
    assert sorted(p.name for p in STUDENT.glob("*.ipynb")) == sorted(p.name for p in written), (
        "student/chapters does not list the same chapters: run `make student` and commit the result")
    stale = [p.name for p in written if (STUDENT / p.name).read_text() != p.read_text()]
    assert not stale, f"student/chapters is stale for {stale}: run `make student` and commit the result"


@pytest.mark.parametrize("path", sorted(STUDENT.glob("*.ipynb")), ids=lambda p: p.name)
def test_a_student_chapter_holds_no_solution(path):
    notebook = json.loads(path.read_text())
    text = path.read_text()
    assert "BEGIN SOLUTION" not in text and "END SOLUTION" not in text
    assert "{admonition} Solution" not in text
    for cell in notebook["cells"]:
        if cell["cell_type"] == "code" and "raise NotImplementedError(" in "".join(cell["source"]):
            assert cell["outputs"] == [] and cell["execution_count"] is None


def test_chapters_1_to_9_have_two_exercises_to_write():
    for number in range(1, 10):
        (path,) = STUDENT.glob(f"{number:02d}_*.ipynb")
        stubs = sum("raise NotImplementedError(" in code for code in _code_cells(path))
        assert stubs >= 2, f"{path.name}: {stubs} exercise(s) to write"


@pytest.mark.parametrize("number", range(1, 10))
def test_each_exercise_check_fails_on_the_stub_and_passes_on_the_solution(number, capsys):
    import keras
    import tensorflow as tf

    import transformer_lib as tl

    names = {"np": np, "tl": tl, "tf": tf, "keras": keras}  # what the chapters' import cells give
    (key,) = (ROOT / "chapters").glob(f"{number:02d}_*.ipynb")
    for code in _code_cells(key):
        if "# BEGIN SOLUTION" not in code:
            continue
        exec(compile(code, key.name, "exec"), dict(names))  # the key: its check passes
        assert "Correct" in capsys.readouterr().out
        stub, blocks = se.strip_solutions(code, key.name)
        assert blocks >= 1
        with pytest.raises(NotImplementedError):
            exec(compile(stub, f"student {key.name}", "exec"), dict(names))


def test_a_solution_block_becomes_a_stub_with_its_hint_at_its_indentation():
    code = "def f(x):\n    # BEGIN SOLUTION hint: double it\n    y = 2 * x\n    return y\n    # END SOLUTION\n\nf(1)"
    stub, blocks = se.strip_solutions(code, "here")
    assert blocks == 1
    assert stub == "def f(x):\n    raise NotImplementedError('double it')\n\nf(1)"
    plain, _ = se.strip_solutions("x = 1\n# BEGIN SOLUTION\nx = 2\n# END SOLUTION", "here")
    assert plain == f"x = 1\nraise NotImplementedError({se.DEFAULT_HINT!r})"


@pytest.mark.parametrize("code, message", [
    ("# BEGIN SOLUTION\nx = 1", "has no '# END SOLUTION'"),
    ("# BEGIN SOLUTION\n# BEGIN SOLUTION\nx = 1\n# END SOLUTION", "has no '# END SOLUTION'"),
    ("x = 1\n# END SOLUTION", "without a '# BEGIN SOLUTION'"),
])
def test_unbalanced_markers_are_refused_with_the_place_named(code, message):
    with pytest.raises(ValueError, match=message) as caught:
        se.strip_solutions(code, "chapters/99_x.ipynb, cell 3")
    assert "chapters/99_x.ipynb, cell 3" in str(caught.value)


def test_solution_admonitions_go_and_an_emptied_cell_is_dropped():
    notebook = {"cells": [
        {"cell_type": "markdown", "id": "a", "metadata": {}, "source": ["```{admonition} Solution to exercise 2\n", ":class: dropdown\n",
                                                             "Because.\n", "```\n"]},
        {"cell_type": "markdown", "id": "b", "metadata": {}, "source": ["Keep me.\n", "\n", "```{admonition} Solutions to 1 and 2\n",
                                                             ":class: dropdown\n", "Both.\n", "```\n"]},
        {"cell_type": "markdown", "id": "c", "metadata": {}, "source": ["```{admonition} A tip\n", "Stays.\n", "```"]},
        {"cell_type": "code", "id": "d", "metadata": {}, "execution_count": 3, "outputs": [{"output_type": "stream", "text": ["1"]}],
         "source": ["x = 1\n", "print(x)"]},
    ], "metadata": {}, "nbformat": 4, "nbformat_minor": 5}
    notebook = nbformat.reads(json.dumps(notebook), as_version=4)  # as nbformat.read gives it
    student = se.student_notebook(notebook, "here")
    assert ["".join(cell["source"]) for cell in student["cells"]] == [
        "Keep me.", "```{admonition} A tip\nStays.\n```", "x = 1\nprint(x)"]
    assert student["cells"][-1]["outputs"] == notebook["cells"][-1]["outputs"]  # no solution: outputs kept
    assert "".join(notebook["cells"][0]["source"]).startswith("```{admonition} Solution")  # the key is untouched
