"""Re-running only some cells of stored chapters, when what they show depends on the library alone: a
changed function need not force a re-run of a chapter that trains for an hour.

- `refresh_listings` re-runs the listing cells (`show_source(tl....)`), in this process (`make listings`);
- `refresh_diagrams` the diagram cells (`is_diagram_cell`), in a fresh kernel (`make diagrams`);
- `refresh_exercises` the exercise cells (tagged exercise, check or uses-exercises), in a fresh
  kernel after the chapter's setup and imports cells (`make exercises`);
- `refresh_cell` one cell that shows what earlier cells left on disk (a figure of a finished run),
  after every code cell before it, whose own outputs are left as they are (`--cell ID`).
"""

from __future__ import annotations

import functools
import os
import re

from tools.notebooks.run import settle_streams
from transformer_lib.book.source import show_source

LISTING = re.compile(r"^(?:#[^\n]*\n)*show_source\((?P<target>tl(?:\.\w+)+)\)\s*$")
DIAGRAM_LINE = re.compile(r"from transformer_lib\.(?:book\.)?diagrams import [\w, ]+"
                          r"|(?:tl\.(?:book\.)?diagrams\.)?\w+_diagram\(.*\)|plt\.show\(\)")
EXERCISE_TAGS = frozenset({"exercise", "check", "uses-exercises"})


def refresh_listings(paths: list[str]) -> int:
    """Run again, in this process, every cell that is only `show_source(tl....)` (comment lines
    allowed) and store its output in place of the old one, with the cell's execution count; the
    other cells and outputs are left as they are. Returns how many listings changed."""
    import nbformat
    from IPython.core.interactiveshell import InteractiveShell

    import transformer_lib as tl

    formatter = InteractiveShell.instance().display_formatter
    changed = 0
    for path in paths:
        notebook, changed_here = nbformat.read(path, as_version=4), 0
        for cell in notebook.cells:
            match = LISTING.match(cell.source) if cell.cell_type == "code" else None
            if match is None:
                continue
            target = functools.reduce(getattr, match["target"].split(".")[1:], tl)  # tl.a.b -> the object
            data, metadata = formatter.format(show_source(target))
            output = nbformat.v4.new_output("execute_result", data=data, metadata=metadata,
                                            execution_count=cell.execution_count)
            if cell.outputs != [output]:
                cell.outputs, changed_here = [output], changed_here + 1
        if changed_here:
            nbformat.write(notebook, path)
            changed += changed_here
    return changed


def is_diagram_cell(source: str) -> bool:
    """True for a cell that only draws the library's diagrams: imports from `transformer_lib.book.diagrams`
    (or the old `transformer_lib.diagrams`), calls of `*_diagram(...)` (one line each, `tl.book.diagrams.`
    or `tl.diagrams.` in front allowed), `plt.show()`, comments and blank lines."""
    lines = [line.strip() for line in source.splitlines() if line.strip() and not line.strip().startswith("#")]
    return any("_diagram(" in line for line in lines) and all(DIAGRAM_LINE.fullmatch(line) for line in lines)


def _scratch_notebook(path: str, sources: list[str], timeout: int):
    """A scratch notebook of `sources`, one code cell each, and the client whose `execute()` runs it in
    a fresh kernel in the folder of the chapter `path`, as the chapter itself runs (nbclient raises at
    the first cell that fails, the scratch cells keeping the outputs they got)."""
    import nbclient
    import nbformat

    scratch = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(source) for source in sources])
    client = nbclient.NotebookClient(scratch, timeout=timeout, kernel_name="python3",
                                     resources={"metadata": {"path": os.path.dirname(path) or "."}})
    return scratch, client


def _store_outputs(cells, fresh_cells) -> list:
    """Put each fresh cell's outputs (settled) in place of its cell's, with that cell's execution
    count; returns the cells whose outputs changed."""
    changed = []
    for cell, fresh in zip(cells, fresh_cells):
        outputs = settle_streams(fresh.outputs)
        for output in outputs:
            if "execution_count" in output:
                output["execution_count"] = cell.execution_count
        if cell.outputs != outputs:
            cell.outputs = outputs
            changed.append(cell)
    return changed


def refresh_diagrams(paths: list[str], timeout: int = 600) -> int:
    """Run again every diagram cell (`is_diagram_cell`) of the chapters `paths` in a fresh kernel,
    after the chapter's imports cell (its second code cell), and store their new outputs with their
    execution counts; the other cells are left as they are. A diagram cell that never ran in the
    chapter's sequence (a new one) is refused: run the whole chapter. Returns how many cells changed."""
    import nbformat

    changed = 0
    for path in paths:
        notebook = nbformat.read(path, as_version=4)
        code = [cell for cell in notebook.cells if cell.cell_type == "code"]
        diagrams = [cell for cell in code if is_diagram_cell(cell.source)]
        if not diagrams:
            continue
        new = [cell.source.splitlines()[-2] for cell in diagrams if cell.execution_count is None]
        if new:
            raise ValueError(f"{path}: diagram cell(s) {new} never ran with the chapter, so they have no place in its "
                             "sequence of cells; run the whole chapter (make execute) instead.")
        imports = code[1].source if len(code) > 1 and code[1] not in diagrams else "import matplotlib.pyplot as plt"
        scratch, client = _scratch_notebook(path, [imports] + [cell.source for cell in diagrams], timeout)
        client.execute()
        changed_here = len(_store_outputs(diagrams, scratch.cells[1:]))
        if changed_here:
            nbformat.write(notebook, path)
            changed += changed_here
    return changed


def _number_new_cells(code: list, chosen: list) -> list:
    """Give each chosen cell that never ran (execution count None) the count of the code cell before
    it plus one, so that the chapter's numbering keeps increasing; returns the cells numbered."""
    chosen_ids, last, numbered = {id(cell) for cell in chosen}, 0, []
    for cell in code:
        if cell.execution_count is None and id(cell) in chosen_ids:
            cell.execution_count = last + 1
            numbered.append(cell)
        if cell.execution_count is not None:
            last = cell.execution_count
    return numbered


def _failed_cell_message(path: str, notebook, cells: list, scratch) -> str:
    """Which cell of the chapter `path` raised (the first scratch cell holding an error), named by its
    place in the notebook and its first line."""
    failed = next((cell for cell, fresh in zip(cells, scratch.cells)
                   if any(output.get("output_type") == "error" for output in fresh.outputs)), None)
    if failed is None:
        return f"{path}: a cell raised an error while its exercises were refreshed"
    place = next(i for i, cell in enumerate(notebook.cells) if cell is failed) + 1
    first_line = (failed.source.strip().splitlines() or [""])[0]
    return (f"{path}: cell {place} of {len(notebook.cells)} (In [{failed.execution_count or ' '}], tags "
            f"{failed.metadata.get('tags', [])}, starting {first_line!r}) raised an error, so no output of this "
            "chapter was stored")


def refresh_exercises(paths: list[str], timeout: int = 600) -> int:
    """Run again the exercise cells of the chapters `paths` and store their new outputs in place.

    For each chapter, a fresh kernel in the chapter's folder runs its setup cell (the first code
    cell), its imports cell (the second), then every code cell tagged exercise, check or
    uses-exercises, in the notebook's order. The tagged cells get their new outputs (settled as
    `settle_streams` does) and keep their execution counts; a tagged cell that never ran gets the
    count of the code cell before it plus one. Every other cell, the setup and imports cells included,
    is left as it is. The kernels inherit this environment, BOOK_QUICK included.

    Raises RuntimeError naming the chapter and the cell when a cell raises (nothing of that chapter
    is stored). Returns how many cells changed.
    """
    import nbformat
    from nbclient.exceptions import CellExecutionError

    changed = 0
    for path in paths:
        notebook = nbformat.read(path, as_version=4)
        code = [cell for cell in notebook.cells if cell.cell_type == "code"]
        tagged = [cell for cell in code if EXERCISE_TAGS & set(cell.metadata.get("tags", []))]
        if not tagged:
            continue
        cells = [cell for cell in code[:2] if all(cell is not t for t in tagged)] + tagged
        scratch, client = _scratch_notebook(path, [cell.source for cell in cells], timeout)
        try:
            client.execute()
        except CellExecutionError as error:
            raise RuntimeError(_failed_cell_message(path, notebook, cells, scratch)) from error
        numbered = _number_new_cells(code, tagged)
        fresh = scratch.cells[len(cells) - len(tagged):]  # the tagged cells ran last, in order
        changed_cells = {id(cell) for cell in numbered + _store_outputs(tagged, fresh)}
        if changed_cells:
            nbformat.write(notebook, path)
            changed += len(changed_cells)
    return changed


def refresh_cell(path: str, cell_id: str, timeout: int = 1800) -> int:
    """Run the chapter `path` again in a fresh kernel, from its first code cell through the cell whose
    id is `cell_id`, and store the new outputs of that cell alone (with its execution count); every
    other cell keeps its stored outputs. Meant for a cell that draws what the cells before it leave on
    disk: chapter 7's curves of a finished run, whose training cell then resumes a complete run and
    trains nothing (the cells before still run in full, so a run that is not finished would train).
    The kernel inherits this environment: run it without BOOK_QUICK, as the stored chapter ran.

    Raises ValueError for an id the chapter lacks or a cell that never ran with the chapter, and
    RuntimeError naming the cell when a cell raises (nothing is stored). Returns 1 if the cell's
    outputs changed, else 0.
    """
    import nbformat
    from nbclient.exceptions import CellExecutionError

    notebook = nbformat.read(path, as_version=4)
    code = [cell for cell in notebook.cells if cell.cell_type == "code"]
    place = next((i for i, cell in enumerate(code) if cell.get("id") == cell_id), None)
    if place is None:
        raise ValueError(f"{path} has no code cell with id {cell_id!r}; its code cells' ids: "
                         f"{', '.join(str(cell.get('id')) for cell in code)}")
    if code[place].execution_count is None:
        raise ValueError(f"{path}: cell {cell_id!r} never ran with the chapter; run the whole chapter instead.")
    cells = code[: place + 1]
    scratch, client = _scratch_notebook(path, [cell.source for cell in cells], timeout)
    try:
        client.execute()
    except CellExecutionError as error:
        raise RuntimeError(_failed_cell_message(path, notebook, cells, scratch)) from error
    if not _store_outputs(cells[-1:], scratch.cells[-1:]):
        return 0
    nbformat.write(notebook, path)
    return 1
