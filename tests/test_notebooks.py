"""tools/notebooks, the maintainers' machinery for the stored chapters: `refresh_exercises` (`make exercises`)
re-runs a chapter's exercise cells after its setup and imports cells, in a fresh kernel in the chapter's
folder, and stores only their outputs; `refresh_cell` (`--cell ID`) one cell after every code cell before it.
Checked on tiny synthetic chapters, so no real chapter has to run."""

import json
from pathlib import Path
import subprocess
import sys

import nbformat
import pytest

import tools.notebooks as book

ROOT = Path(__file__).resolve().parent.parent  # `python -m tools.notebooks` runs from the repository's root


def stream(text: str) -> dict:
    return nbformat.v4.new_output("stream", name="stdout", text=text)


def code(source: str, count: int | None, outputs=(), tags=()) -> dict:
    cell = nbformat.v4.new_code_cell(source, execution_count=count, outputs=list(outputs))
    if tags:
        cell.metadata["tags"] = list(tags)
    return cell


def write_chapter(tmp_path, exercise="def double(x):\n    return 2 * x"):
    """A chapter in tmp_path/chapters/: setup, imports, an untagged cell, an exercise, a check, and a
    check that never ran; every stored output is stale."""
    cells = [
        nbformat.v4.new_markdown_cell("# A toy chapter"),
        code("SETUP = 'set up'\nprint('setup ran')", 1, [stream("stale setup\n")], tags=["setup"]),
        code("import os", 2),
        code("print('untagged ran')", 3, [stream("left as it was\n")]),
        code(exercise, 4, [stream("stale exercise\n")], tags=["exercise"]),
        code("print(SETUP, double(3), os.path.basename(os.getcwd()))", 5, [stream("stale check\n")], tags=["check"]),
        code("double(5)", None, tags=["check", "hide-input"]),
    ]
    path = tmp_path / "chapters" / "toy.ipynb"
    path.parent.mkdir()
    nbformat.write(nbformat.v4.new_notebook(cells=cells), path)
    return path


@pytest.fixture(scope="module")
def refreshed(tmp_path_factory):
    """A synthetic chapter before and after one refresh, and what a second refresh changed."""
    path = write_chapter(tmp_path_factory.mktemp("refresh"))
    before = nbformat.read(path, as_version=4)
    changed = book.refresh_exercises([str(path)])
    after = nbformat.read(path, as_version=4)
    return before, after, changed, book.refresh_exercises([str(path)])


def test_exercise_and_check_cells_get_fresh_outputs_run_after_setup_and_imports_in_the_chapters_folder(refreshed):
    _, after, changed, _ = refreshed
    exercise, check, new_check = after.cells[4:]
    assert exercise.outputs == []  # a definition prints nothing: the stale output is gone
    assert check.outputs == [stream("set up 6 chapters\n")]  # SETUP, os and cwd come from the setup cells
    assert new_check.outputs[0]["data"]["text/plain"] == "10"
    assert changed == 3


def test_every_other_cell_is_left_as_it_was(refreshed):
    before, after, _, _ = refreshed
    for index in range(4):  # the markdown, setup, imports and untagged cells
        assert after.cells[index] == before.cells[index]
    assert after.cells[3].outputs == [stream("left as it was\n")]


def test_cells_keep_their_counts_and_a_new_cell_follows_the_one_before_it(refreshed):
    _, after, _, _ = refreshed
    assert [cell.execution_count for cell in after.cells[1:]] == [1, 2, 3, 4, 5, 6]
    assert after.cells[6].outputs[0]["execution_count"] == 6


def test_a_second_refresh_changes_nothing(refreshed):
    assert refreshed[3] == 0


def test_a_failing_exercise_names_the_chapter_and_the_cell_and_stores_nothing(tmp_path):
    path = write_chapter(tmp_path, exercise="def double(x):\n    raise NotImplementedError('write double')")
    stored = path.read_text()
    with pytest.raises(RuntimeError, match=r"toy\.ipynb: cell 6 of 7 \(In \[5\], tags \['check'\], starting "
                                           r"'print\(SETUP, double\(3\)") as raised:  # the first check to call it
        book.refresh_exercises([str(path)])
    assert "NotImplementedError" in str(raised.value.__cause__)  # nbclient's own report, with the traceback
    assert path.read_text() == stored


def test_the_command_line_refreshes_exercises(tmp_path):
    path = write_chapter(tmp_path)
    out = subprocess.run([sys.executable, "-m", "tools.notebooks", "--exercises", str(path)],
                         capture_output=True, text=True, timeout=300, cwd=ROOT)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "3 exercise cell(s) refreshed."
    assert json.loads(path.read_text())["cells"][6]["execution_count"] == 6


def write_run_chapter(tmp_path, figure_count=4):
    """A chapter whose third cell 'trains' (writes a record to disk, printing as it goes) and whose
    fourth draws from that record; every stored output is stale."""
    cells = [
        code("RECORD = 'record.txt'", 1, [stream("stale setup\n")], tags=["setup"]),
        code("import os", 2),
        code("if not os.path.exists(RECORD):\n    open(RECORD, 'w').write('7')\nprint('trained in full')", 3,
             [stream("the real run's log\n")]),
        code("print('drawn from', open(RECORD).read())", figure_count, [stream("a figure too wide\n")]),
        code("print('after')", 5, [stream("left as it was\n")]),
    ]
    for index, cell in enumerate(cells):
        cell["id"] = f"cell-{index}"
    path = tmp_path / "chapters" / "run.ipynb"
    path.parent.mkdir()
    nbformat.write(nbformat.v4.new_notebook(cells=cells), path)
    return path


def test_refresh_cell_runs_every_cell_before_it_and_stores_its_outputs_alone(tmp_path):
    path = write_run_chapter(tmp_path)
    before = nbformat.read(path, as_version=4)
    assert book.refresh_cell(str(path), "cell-3") == 1
    after = nbformat.read(path, as_version=4)
    assert after.cells[3].outputs == [stream("drawn from 7\n")]  # the record the cell before it wrote
    assert (path.parent / "record.txt").read_text() == "7"  # in the chapter's folder
    assert [after.cells[i] for i in (0, 1, 2, 4)] == [before.cells[i] for i in (0, 1, 2, 4)]
    assert after.cells[3].execution_count == 4
    assert book.refresh_cell(str(path), "cell-3") == 0  # the same outputs again


def test_refresh_cell_refuses_an_unknown_id_and_a_cell_that_never_ran(tmp_path):
    path = write_run_chapter(tmp_path, figure_count=None)
    stored = path.read_text()
    with pytest.raises(ValueError, match=r"no code cell with id 'cell-9'; its code cells' ids: cell-0, cell-1"):
        book.refresh_cell(str(path), "cell-9")
    with pytest.raises(ValueError, match="cell 'cell-3' never ran with the chapter; run the whole chapter"):
        book.refresh_cell(str(path), "cell-3")
    assert path.read_text() == stored


def test_the_command_line_refreshes_one_cell(tmp_path):
    path = write_run_chapter(tmp_path)
    out = subprocess.run([sys.executable, "-m", "tools.notebooks", "--cell", "cell-3", str(path)],
                         capture_output=True, text=True, timeout=300, cwd=ROOT)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == f"cell cell-3 of {path}: new outputs stored."
    wrong = subprocess.run([sys.executable, "-m", "tools.notebooks", "--cell", str(path)],
                           capture_output=True, text=True, timeout=300, cwd=ROOT)
    assert wrong.returncode == 2 and "--cell takes a cell id and one notebook file" in wrong.stderr


def test_the_librarys_old_command_says_where_the_tool_is(tmp_path):
    out = subprocess.run([sys.executable, "-m", "transformer_lib.book", "--cell", "cell-3", "chapter.ipynb"],
                         capture_output=True, text=True, timeout=300, cwd=tmp_path)
    assert out.returncode == 1 and "python -m tools.notebooks --cell cell-3 chapter.ipynb" in out.stderr
