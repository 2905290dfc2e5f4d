"""Helpers for the book's notebooks: one source of truth, and a quick mode for CI.

- `show_source(obj)` displays the library's *current* source of a function or class, highlighted.
  Chapters explain code this way instead of pasting a copy, so prose and code cannot drift apart
  (the cells are checked by nbval: a changed library and a stale chapter fail CI).
- `QUICK` is True when the environment variable BOOK_QUICK=1 (set by `make test`): chapters then
  pick tiny sizes so the whole book executes in minutes. `pick(full, quick)` chooses a setting.
- `hide_tensorflow_notices()` keeps TensorFlow's C++ notices out of a cell's stored output.
- `refresh_listings(paths)` re-runs only the listing cells (`show_source(...)`) of stored chapters:
  a listing depends on the library's source alone, so a changed function does not force a re-run of
  a chapter that trains for an hour (`python -m transformer_lib.book --listings chapters/*.ipynb`).
- `refresh_diagrams(paths)` does the same for the diagram cells (only `*_diagram(...)` calls from
  `transformer_lib.diagrams` and `plt.show()`): they too depend on the library alone.
"""

from __future__ import annotations

import functools
import inspect
import os
import re

from transformer_lib._quiet import hide_tensorflow_notices  # noqa: F401 (for notebooks)
from transformer_lib.machine import describe_machine  # noqa: F401 (for notebooks)

QUICK = os.environ.get("BOOK_QUICK", "") not in ("", "0")


def pick(full, quick):
    """`full` normally, `quick` under BOOK_QUICK=1 (CI)."""
    return quick if QUICK else full


def show_source(obj):
    """The source of `obj` (a function, class or method of the library) as highlighted code."""
    from IPython.display import Code

    try:
        source = inspect.getsource(obj)
    except (TypeError, OSError) as error:
        raise TypeError(f"show_source needs a function, class or method defined in Python source, got {obj!r}.") from error
    return Code(inspect.cleandoc("\n" + source) if source.startswith(" ") else source, language="python")


def describe_run() -> str:
    """One line naming the mode, the hardware and the software, for the top of every chapter."""
    mode = "quick mode (BOOK_QUICK=1: tiny settings, as in CI)" if QUICK else "full settings"
    return f"Run with {mode} on {describe_machine()}."


def describe_environment() -> str:
    """Three lines for the first cell of a chapter that trains: the GPU (or what to do without one),
    and the TensorFlow and Keras versions."""
    import keras
    import tensorflow as tf

    gpus = tf.config.list_physical_devices("GPU")
    if gpus:
        name = tf.config.experimental.get_device_details(gpus[0]).get("device_name", gpus[0].name)
        device = f"GPU: {name}" + (f" and {len(gpus) - 1} more" if len(gpus) > 1 else "") + " (training runs on it)."
    else:
        device = ("GPU: none found, so training runs on the CPU, many times slower. "
                  "In Colab: Runtime > Change runtime type > a GPU, then run the chapter again.")
    return f"{device}\nTensorFlow {tf.__version__}\nKeras {keras.__version__}"


def execute(paths: list[str], timeout: int = 4 * 3600) -> None:
    """Run chapters top to bottom in a fresh kernel each and store their outputs (`make execute`).

    `timeout`: seconds one cell may take. Chapter 7's training is one cell: 52 minutes on a fast
    2-core CPU, about twice that on a slow one, so the limit only catches a cell that hangs.
    """
    import nbclient
    import nbformat

    for path in paths:
        notebook = nbformat.read(path, as_version=4)
        nbclient.NotebookClient(notebook, timeout=timeout, kernel_name="python3",
                                resources={"metadata": {"path": os.path.dirname(path) or "."}}).execute()
        _drop_live_widgets(notebook)
        for cell in notebook.cells:
            if cell.cell_type == "code":
                cell.outputs = settle_streams(cell.outputs)
        nbformat.write(notebook, path)
        print(f"executed {path}")


def settle_terminal_text(text: str) -> str:
    """What a terminal finally shows for `text`: a progress bar redraws its line with backspaces and
    carriage returns hundreds of times per epoch; the stored notebook keeps only the last state of
    each line."""
    return "\n".join(line.replace("\b", "").rsplit("\r", 1)[-1] for line in text.split("\n"))


def settle_streams(outputs: list) -> list:
    """Join each run of consecutive outputs to one stream (stdout or stderr), as a terminal would
    show them, keep only the final state of every redrawn line (`settle_terminal_text`), and name
    library files from the repository (`relative_library_paths`)."""
    settled = []
    for output in outputs:
        previous = settled[-1] if settled else None
        if (output.get("output_type") == "stream" and previous is not None
                and previous.get("output_type") == "stream" and previous["name"] == output["name"]):
            previous["text"] += output["text"]
        else:
            settled.append(output)
    for output in settled:
        if output.get("output_type") == "stream":
            output["text"] = relative_library_paths(settle_terminal_text(output["text"]))
    return settled


LIBRARY_ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))) + os.sep  # the folder holding transformer_lib


def relative_library_paths(text: str, root: str = LIBRARY_ROOT) -> str:
    """`text` with the library's files named from the repository (`transformer_lib/evaluation.py`):
    a warning's location then names no folder of the machine the chapter ran on."""
    return text.replace(root, "")


def _drop_live_widgets(notebook) -> None:
    """Widgets only work with a live kernel: the stored notebook keeps each interactive cell's
    static figure and drops the widget views (and their saved state), so the site needs no widget
    JavaScript and shows no placeholder."""
    widget = "application/vnd.jupyter.widget-view+json"
    for cell in notebook.cells:
        if cell.cell_type == "code":
            cell.outputs = [o for o in cell.outputs if widget not in o.get("data", {})]
    notebook.metadata.pop("widgets", None)


LISTING = re.compile(r"^(?:#[^\n]*\n)*show_source\((?P<target>tl(?:\.\w+)+)\)\s*$")


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
    """True for a cell that only draws the library's diagrams: imports from `transformer_lib.diagrams`,
    calls of `*_diagram(...)` (one line each), `plt.show()`, comments and blank lines."""
    lines = [line.strip() for line in source.splitlines() if line.strip() and not line.strip().startswith("#")]
    allowed = re.compile(r"from transformer_lib\.diagrams import [\w, ]+|(?:tl\.diagrams\.)?\w+_diagram\(.*\)|plt\.show\(\)")
    return any("_diagram(" in line for line in lines) and all(allowed.fullmatch(line) for line in lines)


def refresh_diagrams(paths: list[str], timeout: int = 600) -> int:
    """Run again every diagram cell (`is_diagram_cell`) of the chapters `paths` in a fresh kernel,
    after the chapter's imports cell (its second code cell), and store their new outputs with their
    execution counts; the other cells are left as they are. A diagram cell that never ran in the
    chapter's sequence (a new one) is refused: run the whole chapter. Returns how many cells changed."""
    import nbclient
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
        scratch = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(imports)]
                                           + [nbformat.v4.new_code_cell(cell.source) for cell in diagrams])
        nbclient.NotebookClient(scratch, timeout=timeout, kernel_name="python3",
                                resources={"metadata": {"path": os.path.dirname(path) or "."}}).execute()
        changed_here = 0
        for cell, fresh in zip(diagrams, scratch.cells[1:]):
            outputs = settle_streams(fresh.outputs)
            for output in outputs:
                if "execution_count" in output:
                    output["execution_count"] = cell.execution_count
            if cell.outputs != outputs:
                cell.outputs, changed_here = outputs, changed_here + 1
        if changed_here:
            nbformat.write(notebook, path)
            changed += changed_here
    return changed
