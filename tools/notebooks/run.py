"""Running whole chapters (`make execute`) and settling their outputs the way a terminal would show
them, so that what is stored names no machine's folders and keeps no redrawn progress bar."""

from __future__ import annotations

import importlib.util
import os


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


# the folder holding transformer_lib (found without importing it, which would load TensorFlow)
LIBRARY_ROOT = os.path.dirname(os.path.dirname(importlib.util.find_spec("transformer_lib").origin)) + os.sep


def relative_library_paths(text: str, root: str = LIBRARY_ROOT) -> str:
    """`text` with the library's files named from the repository (`transformer_lib/decoding/bleu.py`):
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
