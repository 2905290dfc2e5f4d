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


def _exercises(path):
    """(answer, check) sources of every exercise of a chapter: an `exercise` cell and the `check` cell after it."""
    cells = [cell for cell in json.loads(path.read_text())["cells"] if cell["cell_type"] == "code"]
    return [("".join(answer["source"]), "".join(check["source"])) for answer, check in zip(cells, cells[1:])
            if "exercise" in answer["metadata"].get("tags", [])]


@pytest.mark.parametrize("number", range(1, 10))
def test_each_exercise_check_passes_on_the_solution_and_reports_the_stub_as_not_written(number, capsys):
    import keras
    import tensorflow as tf

    import transformer_lib as tl

    names = {"np": np, "tl": tl, "tf": tf, "keras": keras}  # what the chapters' import cells give
    (key,) = (ROOT / "chapters").glob(f"{number:02d}_*.ipynb")
    exercises = _exercises(key)
    assert len(exercises) >= 2
    for answer, check in exercises:
        scope = dict(names)
        exec(compile(answer, key.name, "exec"), scope)  # the key: its check passes
        exec(compile(check, key.name, "exec"), scope)
        assert "Correct" in capsys.readouterr().out
        stub, blocks = se.strip_solutions(answer, key.name)
        assert blocks >= 1
        scope = dict(names)
        exec(compile(stub, f"student {key.name}", "exec"), scope)  # defining the stub runs
        exec(compile(check, f"student {key.name}", "exec"), scope)  # and its check says so, without an error
        assert capsys.readouterr().out.startswith("Not written yet:")


@pytest.mark.parametrize("path", sorted(STUDENT.glob("*.ipynb")), ids=lambda p: p.name)
def test_a_student_chapter_s_check_cells_are_read_only_tagged_and_without_outputs(path):
    for cell in json.loads(path.read_text())["cells"]:
        if "check" in cell["metadata"].get("tags", []):
            assert cell["metadata"]["editable"] is False and cell["metadata"]["deletable"] is False
            assert cell["outputs"] == [] and cell["execution_count"] is None


def _notebook(*cells):
    """A small notebook as nbformat.read gives it; each cell (tags, source), code unless tagged 'markdown'."""
    built = []
    for index, (tags, text) in enumerate(cells):
        if tags == ["markdown"]:
            built.append({"cell_type": "markdown", "id": f"c{index}", "metadata": {}, "source": text})
            continue
        built.append({"cell_type": "code", "id": f"c{index}", "metadata": {"tags": tags}, "execution_count": index + 1,
                      "outputs": [{"output_type": "stream", "name": "stdout", "text": "Correct: yes.\n"}],
                      "source": text})
    return nbformat.reads(json.dumps({"cells": built, "metadata": {}, "nbformat": 4, "nbformat_minor": 5}),
                          as_version=4)


ANSWER = "def f(x):\n    # BEGIN SOLUTION\n    return 2 * x\n    # END SOLUTION"
CHECK = "from transformer_lib.exercises import check_f\n\ncheck_f(f)"


def test_a_check_cell_becomes_read_only_and_loses_its_outputs_but_keeps_its_tag():
    key = _notebook((["exercise", "hide-input"], ANSWER), (["check"], CHECK), ([], "print(1)"))
    answer, check, other = se.student_notebook(key, "here").cells
    assert "raise NotImplementedError(" in answer.source and answer.outputs == [] and answer.execution_count is None
    assert check.source == CHECK and check.metadata["tags"] == ["check"]
    assert check.metadata["editable"] is False and check.metadata["deletable"] is False
    assert check.outputs == [] and check.execution_count is None
    assert other.outputs == key.cells[2].outputs and "editable" not in other.metadata  # other cells untouched
    assert "editable" not in key.cells[1].metadata and key.cells[1].outputs  # the key is untouched


def test_a_check_cell_holding_a_solution_is_refused_with_the_place_named():
    key = _notebook((["exercise"], ANSWER), (["check"], ANSWER + "\n\n" + CHECK))
    with pytest.raises(ValueError, match="chapters/99_x.ipynb, cell 1: a 'check' cell holds a solution block"):
        se.student_notebook(key, "chapters/99_x.ipynb")


@pytest.mark.parametrize("after", [None, (["markdown"], "Now check it."), ([], CHECK), (["exercise"], ANSWER)],
                         ids=["last cell", "markdown", "untagged", "another exercise"])
def test_an_exercise_without_its_check_cell_right_after_it_is_refused(after):
    key = _notebook((["exercise"], ANSWER), *([after] if after else []), (["check"], CHECK))
    key.cells = key.cells[:-1] if after is None else key.cells
    with pytest.raises(ValueError, match=r"chapters/99_x.ipynb, cell 0: an 'exercise' cell must be followed by its "
                                         "'check' cell"):
        se.student_notebook(key, "chapters/99_x.ipynb")


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


def test_a_cell_using_the_answers_loses_the_outputs_it_got_from_the_key():
    key = _notebook((["exercise"], ANSWER), (["check"], CHECK), (["uses-exercises"], "print(f(2))"), ([], "print(1)"))
    uses, other = se.student_notebook(key, "here").cells[2:]
    assert key.cells[2].outputs and uses.outputs == [] and uses.execution_count is None
    assert uses.source == "print(f(2))" and other.outputs == key.cells[3].outputs
