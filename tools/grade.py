"""Grade a class's notebooks: each exercise's original check, run on each student's answer.

    python tools/grade.py SUBMISSIONS GRADES.csv [--time-limit 120]
    (or: make grade SUBMISSIONS=folder GRADES=grades.csv)

SUBMISSIONS is a folder of the students' chapters, one file per student and chapter; the student is
the file's stem (`ana.ipynb`, or `ana-05.ipynb` for several chapters each). For each file this

1. finds its chapter: the key chapter (`chapters/`) whose cells it shares the most of (cells keep
   their ids in Jupyter and Colab) or, failing that, whose checks it calls;
2. runs, in a fresh kernel in a scratch folder, the key's setup and imports cells, then for each
   exercise in the key's order the student's answer cell (the cell with the key answer's id, else
   the student's n-th cell tagged `exercise`) and then the key's check cell, not the student's
   copy of it, each cell within `--time-limit` seconds;
3. writes one CSV row per exercise: `student`, `chapter`, `exercise` (the check's name without
   `check_`), `passed` (true when the check printed "Correct"), `message` (what the check said, or
   what went wrong: the answer's error, "not written yet", the time limit, a deleted or edited
   check cell, a missing answer cell).

A file that is not a notebook, or not one of the course's chapters, gets one row that says so. An
answer that runs past the time limit or kills its kernel fails that exercise; a fresh kernel runs
the setup and the answers before it again, and grading goes on. Nothing a submission does stops the
run. Grading runs the students' code: run it where that is safe (a container, a throwaway VM).
"""

from __future__ import annotations

import argparse
import contextlib
import csv
import dataclasses
import json
import re
import subprocess
import sys
import tempfile
from pathlib import Path

import nbformat

from student_edition import _tags  # the tags that mark exercise and check cells, read as the student edition reads them

ROOT = Path(__file__).resolve().parent.parent
KEY = ROOT / "chapters"
COLUMNS = ("student", "chapter", "exercise", "passed", "message")
CHECK_CALL = re.compile(r"^(check_\w+)\(", re.M)
SETUP_LIMIT = 600  # seconds for the key's setup and imports cells (TensorFlow's import, a Colab install)


@dataclasses.dataclass
class Exercise:
    """One exercise of a key chapter: its answer cell's id and its check cell (id and source)."""

    name: str
    answer_id: str
    check_id: str
    check: str


@dataclasses.dataclass
class Chapter:
    name: str
    setup: list[str]  # the key's first two code cells: setup and imports
    exercises: list[Exercise]
    cell_ids: set[str]


def key_chapter(path: Path) -> Chapter:
    """The exercises of one key chapter, in its order."""
    notebook = nbformat.read(path, as_version=4)
    code = [cell for cell in notebook.cells if cell.cell_type == "code"]
    exercises = []
    for index, cell in enumerate(notebook.cells):
        if "check" in _tags(cell):
            answer = notebook.cells[index - 1]
            call = CHECK_CALL.search(cell.source)
            if call is None or "exercise" not in _tags(answer):
                raise ValueError(f"{path.name}: check cell {index + 1} calls no check_... or follows no exercise cell")
            exercises.append(Exercise(call[1].removeprefix("check_"), answer.get("id", ""), cell.get("id", ""),
                                      cell.source))
    return Chapter(path.stem, [cell.source for cell in code[:2]], exercises,
                   {cell.get("id") for cell in notebook.cells if cell.get("id")})


def key_chapters(key: Path = KEY) -> list[Chapter]:
    """Every key chapter that has exercises."""
    chapters = [key_chapter(path) for path in sorted(key.glob("*.ipynb"))]
    return [chapter for chapter in chapters if chapter.exercises]


def find_chapter(notebook, chapters: list[Chapter]) -> Chapter | None:
    """The chapter `notebook` is a copy of: most shared cell ids, else most checks called; None if none."""
    ids = {cell.get("id") for cell in notebook.cells}
    shared = {chapter.name: len(ids & chapter.cell_ids) for chapter in chapters}
    calls = set(CHECK_CALL.findall("\n".join(cell.source for cell in notebook.cells if cell.cell_type == "code")))
    called = {chapter.name: len(calls & {f"check_{e.name}" for e in chapter.exercises}) for chapter in chapters}
    best = max(chapters, key=lambda chapter: (shared[chapter.name], called[chapter.name]), default=None)
    if best is None or (shared[best.name] < 2 and called[best.name] == 0):
        return None
    return best


def _answer_cell(notebook, exercise: Exercise, position: int):
    """The student's answer to `exercise`: the cell with the key's id, else the position-th exercise cell."""
    by_id = [cell for cell in notebook.cells if cell.get("id") == exercise.answer_id and cell.cell_type == "code"]
    if by_id:
        return by_id[0]
    tagged = [cell for cell in notebook.cells if cell.cell_type == "code" and "exercise" in _tags(cell)]
    return tagged[position] if position < len(tagged) else None


def _check_note(notebook, exercise: Exercise) -> str:
    """What the student did to the check cell, if anything (the key's check runs in any case)."""
    mine = [cell for cell in notebook.cells if cell.get("id") == exercise.check_id]
    if not mine:
        calls = [cell for cell in notebook.cells if cell.cell_type == "code"
                 and f"check_{exercise.name}(" in cell.source and "exercise" not in _tags(cell)]
        if not calls:
            return "the check cell was deleted (the original check was run)"
        mine = calls
    if mine[0].source.strip() != exercise.check.strip():
        return "the check cell was edited (the original check was run)"
    return ""


class Kernel:
    """A fresh IPython kernel in a scratch folder that runs one cell at a time within a time limit,
    and starts again (re-running `replay`) after a cell that ran too long or killed it."""

    def __init__(self, folder: str):
        self.folder, self.client, self._running = folder, None, contextlib.ExitStack()

    def start(self, replay: list[str]) -> None:
        import nbclient

        self.stop()
        self.client = nbclient.NotebookClient(nbformat.v4.new_notebook(), kernel_name="python3", allow_errors=True,
                                              resources={"metadata": {"path": self.folder}})
        # the kernel's own log (and a killed kernel's complaints) stay out of the grading output
        self._running.enter_context(self.client.setup_kernel(stderr=subprocess.DEVNULL))
        for source in replay:
            self.run(source, SETUP_LIMIT)

    def stop(self) -> None:
        try:
            self._running.close()
        except Exception:  # noqa: BLE001 - a kernel that died or hangs is cleaned up by nbclient anyway
            pass
        self._running = contextlib.ExitStack()

    def run(self, source: str, limit: float):
        """Run `source`; returns (outputs, problem): problem is None, "time limit" or "kernel died"."""
        from nbclient.exceptions import CellTimeoutError, DeadKernelError

        cell = nbformat.v4.new_code_cell(source)
        self.client.nb.cells = [cell]
        self.client.timeout = int(limit)
        try:
            self.client.execute_cell(cell, 0)
        except CellTimeoutError:
            return cell.outputs, "time limit"
        except DeadKernelError:
            return cell.outputs, "kernel died"
        return cell.outputs, None


def _text(outputs) -> str:
    return "".join(output.get("text", "") for output in outputs if output.get("output_type") == "stream")


def _error(outputs) -> str | None:
    for output in outputs:
        if output.get("output_type") == "error":
            return f"{output.get('ename')}: {output.get('evalue')}".strip()
    return None


def _short(text: str, limit: int = 300) -> str:
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 3] + "..."


def grade_notebook(student: str, notebook, chapter: Chapter, limit: float, folder: str) -> list[dict]:
    """One row per exercise of `chapter` for one student's notebook."""
    rows, replay = [], list(chapter.setup)
    kernel = Kernel(folder)
    try:
        kernel.start(replay)
        for position, exercise in enumerate(chapter.exercises):
            notes = [note for note in [_check_note(notebook, exercise)] if note]
            answer = _answer_cell(notebook, exercise, position)
            if answer is None:
                notes.insert(0, "the answer cell is missing")
            else:
                outputs, problem = kernel.run(answer.source, limit)
                if problem is not None:
                    rows.append(_row(student, chapter, exercise, False, [
                        f"the answer cell ran past the time limit of {limit:g} s (an endless loop?)"
                        if problem == "time limit" else "the answer cell killed its kernel"] + notes))
                    kernel.start(replay)
                    continue
                raised = _error(outputs)
                if raised and "NotImplementedError" not in raised:
                    notes.insert(0, f"the answer cell raised {_short(raised, 200)}")
                replay.append(answer.source)
            outputs, problem = kernel.run(exercise.check, limit)
            said, raised = _text(outputs).strip(), _error(outputs)
            last = said.splitlines()[-1] if said else ""
            passed = problem is None and raised is None and last.startswith("Correct:")
            if problem is not None:
                result = (f"the check ran past the time limit of {limit:g} s with this answer (an endless loop?)"
                          if problem == "time limit" else "the check killed its kernel with this answer")
                kernel.start(replay)
            elif raised:
                result = raised
            else:
                result = last or "the check printed nothing"
            rows.append(_row(student, chapter, exercise, passed, notes + [result]))
    finally:
        kernel.stop()
    return rows


def _row(student: str, chapter: Chapter | None, exercise: Exercise | None, passed: bool, messages) -> dict:
    return {"student": student, "chapter": chapter.name if chapter else "", "exercise": exercise.name if exercise else "",
            "passed": "true" if passed else "false", "message": _short("; ".join(m for m in messages if m), 500)}


def grade_file(path: Path, chapters: list[Chapter], limit: float, folder: str) -> list[dict]:
    """The rows of one submitted file; a file that is not a course notebook gets one row saying so."""
    student = path.stem
    try:
        notebook = nbformat.read(path, as_version=4)
    except (OSError, UnicodeDecodeError, json.JSONDecodeError, nbformat.reader.NotJSONError, ValueError) as error:
        return [_row(student, None, None, False, [f"{path.name} is not a notebook (.ipynb): {error}"])]
    chapter = find_chapter(notebook, chapters)
    if chapter is None:
        return [_row(student, None, None, False, [
            f"{path.name} is not one of the course's chapters: none of its cells or check calls are a chapter's"])]
    return grade_notebook(student, notebook, chapter, limit, folder)


def grade(submissions: Path, grades: Path, limit: float = 120.0, key: Path = KEY) -> list[dict]:
    """Grade every file in `submissions` (hidden files aside) and write `grades` (CSV); returns its rows."""
    chapters = key_chapters(key)
    files = sorted(path for path in submissions.iterdir() if path.is_file() and not path.name.startswith("."))
    rows = []
    with tempfile.TemporaryDirectory(prefix="grading-") as folder:
        for path in files:
            file_rows = grade_file(path, chapters, limit, folder)
            passed = sum(row["passed"] == "true" for row in file_rows)
            print(f"{path.name}: {file_rows[0]['chapter'] or '-'}, {passed} of {len(file_rows)} passed", flush=True)
            rows += file_rows
    with grades.open("w", newline="") as out:
        writer = csv.DictWriter(out, fieldnames=COLUMNS)
        writer.writeheader()
        writer.writerows(rows)
    return rows


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("submissions", type=Path, help="folder of the students' notebooks")
    parser.add_argument("grades", type=Path, help="CSV file to write")
    parser.add_argument("--time-limit", type=float, default=120.0,
                        help="seconds each answer cell and each check may run (default 120)")
    args = parser.parse_args(argv)
    if not args.submissions.is_dir():
        parser.error(f"SUBMISSIONS {args.submissions} is not a folder: give the folder holding the students' .ipynb")
    if args.time_limit <= 0:
        parser.error(f"--time-limit must be positive, not {args.time_limit:g}")
    if not args.grades.parent.is_dir():
        parser.error(f"GRADES {args.grades}: the folder {args.grades.parent} does not exist")
    rows = grade(args.submissions, args.grades, args.time_limit)
    students = len({row["student"] for row in rows})
    print(f"{len(rows)} row(s) for {students} student(s) written to {args.grades}.")


if __name__ == "__main__":
    main(sys.argv[1:])
