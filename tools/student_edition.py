"""The student edition: every chapter with its solutions taken out.

    python tools/student_edition.py            (or: make student)

The chapters in `chapters/` are the instructor's key. In them, solution code sits between a
`# BEGIN SOLUTION` line and an `# END SOLUTION` line (nbgrader's convention; the BEGIN line may
carry a hint: `# BEGIN SOLUTION hint: start from the formula`), and the answers to questions are
dropdown admonitions whose title starts with "Solution". Each exercise is two code cells: its
answer (tagged `exercise`: the definition, with the solution block), then its check (tagged
`check`: only `from transformer_lib.exercises import check_x` and `check_x(answer)`), so a grader
can run the original checks on a student's answers. This writes `student/chapters/` with the
same notebooks, except that

- each solution block becomes `raise NotImplementedError(...)` (with the hint) at its indentation,
  which the check reports as not written yet;
- the cells that held a solution, the check cells and the cells that use the answers (tagged
  `uses-exercises`, such as chapter 6's first run) lose their stored outputs: they came from the key;
- the check cells are read-only (`editable: false`, `deletable: false` in their metadata, as
  nbgrader marks its read-only cells) and keep their `check` tag, so a grader finds them;
- the solution admonitions are gone (a markdown cell left empty is dropped).

A check cell holding a solution block, or an `exercise` cell without a `check` cell right after it,
is refused (ValueError naming the chapter and the cell). Everything else, stored outputs included,
stays, so the student edition reads like the book. `tests/test_student_edition.py` regenerates it
and fails when the committed copy is stale.
"""

from __future__ import annotations

import argparse
import copy
import re
import sys
from pathlib import Path

import nbformat

ROOT = Path(__file__).resolve().parent.parent
BEGIN = re.compile(r"^(?P<indent>[ \t]*)# BEGIN SOLUTION(?:\s+hint:\s*(?P<hint>.*))?$")
END = re.compile(r"^[ \t]*# END SOLUTION$")
SOLUTION_ADMONITION = re.compile(r"^```\{admonition\} Solutions?\b.*?^```[ \t]*\n?", re.M | re.S)
DEFAULT_HINT = "Your code here: write this part (see the exercise above); the check below says when it is right."


def strip_solutions(code: str, where: str) -> tuple[str, int]:
    """`code` with every solution block replaced by a stub; the number of blocks replaced."""
    lines, out, blocks = code.split("\n"), [], 0
    i = 0
    while i < len(lines):
        begin = BEGIN.match(lines[i])
        if begin is None:
            if END.match(lines[i]):
                raise ValueError(f"{where}: '# END SOLUTION' without a '# BEGIN SOLUTION' before it.")
            out.append(lines[i])
            i += 1
            continue
        end = next((j for j in range(i + 1, len(lines)) if END.match(lines[j]) or BEGIN.match(lines[j])), None)
        if end is None or BEGIN.match(lines[end]):
            raise ValueError(f"{where}: '# BEGIN SOLUTION' on line {i + 1} has no '# END SOLUTION' after it.")
        hint = (begin.group("hint") or DEFAULT_HINT).strip()
        out.append(f"{begin.group('indent')}raise NotImplementedError({hint!r})")
        blocks += 1
        i = end + 1
    return "\n".join(out), blocks


def _tags(cell) -> list[str]:
    return cell.get("metadata", {}).get("tags", [])


def student_notebook(notebook, where: str):
    """A copy of `notebook` (an `nbformat` notebook) without its solutions."""
    notebook = copy.deepcopy(notebook)
    cells = []
    for index, cell in enumerate(notebook.cells):
        if cell.cell_type == "code":
            place = f"{where}, cell {index}"
            if "exercise" in _tags(cell):
                following = notebook.cells[index + 1] if index + 1 < len(notebook.cells) else None
                if following is None or following.cell_type != "code" or "check" not in _tags(following):
                    raise ValueError(f"{place}: an 'exercise' cell must be followed by its 'check' cell "
                                     "(only the check's import and call), so a grader can run the check alone.")
            cell.source, blocks = strip_solutions(cell.source, place)
            if "check" in _tags(cell):
                if blocks:
                    raise ValueError(f"{place}: a 'check' cell holds a solution block; the answer belongs in the "
                                     "'exercise' cell before it, the check cell only runs the check.")
                cell.metadata.update(editable=False, deletable=False)  # read-only in Jupyter, as in nbgrader
            if blocks or {"check", "uses-exercises"} & set(_tags(cell)):  # outputs that came from the key's answers
                cell.outputs, cell.execution_count = [], None
        elif cell.cell_type == "markdown":
            stripped = SOLUTION_ADMONITION.sub("", cell.source).strip("\n")
            if stripped != cell.source.strip("\n"):
                if not stripped.strip():
                    continue
                cell.source = stripped
        cells.append(cell)
    notebook.cells = cells
    return notebook


def chapters(root: Path = ROOT) -> list[Path]:
    """Every notebook of chapters/: the numbered chapters, then the appendix (appendix_performance.ipynb)."""
    return sorted((root / "chapters").glob("*.ipynb"))


def build(root: Path = ROOT, out: Path | None = None) -> list[Path]:
    """Write the student edition of every chapter to `out` (default: root/student/chapters)."""
    out = out or root / "student" / "chapters"
    out.mkdir(parents=True, exist_ok=True)
    written = []
    for path in chapters(root):
        target = out / path.name
        nbformat.write(student_notebook(nbformat.read(path, as_version=4), str(path.relative_to(root))), target)
        written.append(target)
    stale = sorted(set(out.glob("*.ipynb")) - set(written))
    for path in stale:  # a chapter renamed or removed
        path.unlink()
    return written


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.parse_args(argv)
    try:
        written = build()
    except ValueError as error:
        parser.exit(2, f"error: {error}\n")
    print(f"Student edition: {len(written)} chapter(s) written to student/chapters/.")


if __name__ == "__main__":
    main(sys.argv[1:])
