"""No hint gives its solution away: in every chapter, the guidance a student edition shows beside an
exercise (the comments of the answer cell and the hint of each `# BEGIN SOLUTION` line, which becomes
the stub's message) holds no line of the solution, nor a long piece of one."""

import difflib
import json
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
CHAPTERS = sorted((ROOT / "chapters").glob("*.ipynb"))  # the appendix too


def _exercise_cells(path):
    return [cell for cell in json.loads(path.read_text())["cells"] if "exercise" in cell["metadata"].get("tags", [])]


def _hints_and_solution(source: str) -> tuple[list[str], list[str]]:
    """What the student edition shows as guidance (comments outside the solution, the BEGIN line's hint),
    and the solution's lines, stripped."""
    hints, solution, inside = [], [], False
    for line in source.splitlines():
        stripped = line.strip()
        if stripped.startswith("# BEGIN SOLUTION"):
            inside = True
            hints.append(stripped.partition("hint:")[2])
        elif stripped.startswith("# END SOLUTION"):
            inside = False
        elif inside and stripped:
            solution.append(stripped)
        elif stripped.startswith("#"):
            hints.append(stripped.lstrip("# "))
    return [hint for hint in hints if hint], solution


def _squeeze(text: str) -> str:
    return re.sub(r"\s+", "", text)


def _gives_away(hint: str, line: str) -> bool:
    """Whether `hint` holds solution `line`, or a piece of it that is code: a part of the hint (cut at
    semicolons) of 10 characters or more found in the line, the line found in the hint, a part nearly
    equal to the line, or 15 characters of the line's code in a row (spaces ignored; a name alone is a pointer)."""
    line = _squeeze(line)
    if len(line) < 12:  # `return x`, `else:`: too short to give anything away
        return False
    for part in (_squeeze(piece) for piece in [hint, *hint.split(";")]):
        if line in part or (len(part) >= 10 and part in line):
            return True
        matcher = difflib.SequenceMatcher(None, line, part, autojunk=False)
        block = matcher.find_longest_match()
        stretch = line[block.a:block.a + block.size]  # a long stretch of code, not just a name to start from
        if matcher.ratio() >= 0.75 or (len(stretch) >= 15 and re.search(r"[=()\[\]@*/+,]", stretch)):
            return True
    return False


@pytest.mark.parametrize("path", CHAPTERS, ids=lambda p: p.stem)
def test_no_hint_holds_a_line_of_its_solution(path):
    for cell in _exercise_cells(path):
        hints, solution = _hints_and_solution("".join(cell["source"]))
        given = [(hint, line) for hint in hints for line in solution if _gives_away(hint, line)]
        assert not given, f"{path.stem} {cell['id']}: the hint {given[0][0]!r} gives away {given[0][1]!r}"


@pytest.mark.parametrize("path", CHAPTERS, ids=lambda p: p.stem)
def test_the_student_edition_shows_no_line_of_a_solution(path):
    student = {cell["id"]: "".join(cell["source"]) for cell in _exercise_cells(ROOT / "student" / "chapters" / path.name)}
    for cell in _exercise_cells(path):
        _, solution = _hints_and_solution("".join(cell["source"]))
        shown = student[cell["id"]]
        given = [line for line in solution if _gives_away(shown, line) and _squeeze(line) in _squeeze(shown)]
        assert not given, f"student/{path.stem} {cell['id']} shows the solution line {given[0]!r}"


def test_the_hint_check_catches_a_hint_that_gives_a_solution_line_or_part_of_one():
    lines = ["scores = q @ k.T / np.sqrt(d)", "q, k, v = ops.matmul(x, self.w_q), ops.matmul(x, self.w_k), v"]
    assert _gives_away("q = x @ w_q; scores = q @ k.T", lines[0])
    assert _gives_away("q = ops.matmul(x, self.w_q), and the same for k and v", lines[1])
    assert not _gives_away("Q, K and V from x; the scaled scores; the mask; the softmax", lines[0])
    planted = "def f(q, k):\n    # BEGIN SOLUTION hint: scores = q @ k.T / np.sqrt(d)\n    scores = q @ k.T / np.sqrt(d)\n    # END SOLUTION\n"
    hints, solution = _hints_and_solution(planted)
    assert any(_gives_away(h, line) for h in hints for line in solution)  # the rule catches a planted hint
