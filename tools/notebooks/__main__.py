"""`python -m tools.notebooks [--listings | --diagrams | --exercises] chapters/*.ipynb`, or
`--cell ID chapter.ipynb` (see the package's docstring): no option runs the whole chapters."""

import sys
from pathlib import Path

from tools.notebooks import execute, refresh_cell, refresh_diagrams, refresh_exercises, refresh_listings

USAGE = """usage: python -m tools.notebooks [--listings | --diagrams | --exercises] NOTEBOOK.ipynb ...
       python -m tools.notebooks --cell ID NOTEBOOK.ipynb

  (no option)    run each chapter top to bottom in a fresh kernel and store its outputs
  --listings     re-run only the show_source(...) listing cells
  --diagrams     re-run only the diagram cells
  --exercises    re-run only the exercise and check cells
  --cell ID      run the chapter through cell ID in a fresh kernel; store that cell's outputs only
                 (a figure of a finished run, drawn again without training again)"""
MODES = {"--listings": ("listing", refresh_listings), "--diagrams": ("diagram", refresh_diagrams),
         "--exercises": ("exercise", refresh_exercises)}


def main(argv: list[str]) -> int:
    cell_id = None
    if argv[:1] == ["--cell"]:
        cell_id, argv = (argv[1] if len(argv) > 1 else ""), argv[2:]
    mode, paths = (argv[0], argv[1:]) if argv[:1] and argv[0] in MODES else (None, argv)
    options = [arg for arg in paths if arg.startswith("-")]
    if "-h" in options or "--help" in options:
        print(USAGE)
        return 0
    problems = [f"unknown option {arg}" for arg in options]
    problems += [f"{arg} is not a notebook file (.ipynb)" for arg in paths
                 if not arg.startswith("-") and (Path(arg).suffix != ".ipynb" or not Path(arg).is_file())]
    if not paths:
        problems.append("no notebook given")
    if cell_id is not None and (not cell_id or cell_id.startswith("-") or mode is not None or len(paths) != 1):
        problems.append("--cell takes a cell id and one notebook file (.ipynb), and no other option")
    if problems:
        print("\n".join(f"error: {problem}" for problem in problems) + "\n\n" + USAGE, file=sys.stderr)
        return 2
    if cell_id is not None:
        return _refresh_one_cell(cell_id, paths[0])
    if mode is None:
        execute(paths)
    else:
        kind, refresh = MODES[mode]
        print(f"{refresh(paths)} {kind} cell(s) refreshed.")
    return 0


def _refresh_one_cell(cell_id: str, path: str) -> int:
    try:
        changed = refresh_cell(path, cell_id)
    except ValueError as error:  # no such cell, or one that never ran
        print(f"error: {error}", file=sys.stderr)
        return 2
    print(f"cell {cell_id} of {path}: " + ("new outputs stored." if changed else "outputs unchanged."))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
