"""Helpers for the book's notebooks: one source of truth, and a quick mode for CI.

- `show_source(obj)` (source.py) displays the library's *current* source of a function or class,
  highlighted. Chapters explain code this way instead of pasting a copy, so prose and code cannot
  drift apart (the cells are checked by nbval: a changed library and a stale chapter fail CI).
- `QUICK` is True when the environment variable BOOK_QUICK=1 (set by `make test`): chapters then
  pick tiny sizes so the whole book executes in minutes. `pick(full, quick)` chooses a setting.
- `hide_tensorflow_notices()` keeps TensorFlow's C++ notices out of a cell's stored output.
- Running and refreshing the stored chapters is the maintainers' work, not the readers': `tools/notebooks/`
  (`make execute`, `make listings`, `python -m tools.notebooks --cell ID chapters/NN_x.ipynb`).

`runs` (runs.py) gives chapter 7's translator to the chapters after it: its training cost, measured
and estimated, said before a run starts; a copy kept on Google Drive; never a silent retraining.
`kept` (kept.py) runs each of a chapter's trainings once and keeps its result and weights in
`chapters/runs/`, so that a re-run of the chapter loads them (and says when they were trained).
`records` (records.py) reads the committed benchmark records a chapter shows, and groups chapter 9's
fine-tunings by the length of the pretraining they started from.

The subpackages hold the rest of the teaching material: `diagrams` (matplotlib drawings of the
architecture and of each chapter's idea), `figures` (interactive figures drawn in the browser; needs
altair, so it is not imported here) and `exercises` (the checks).
"""

from __future__ import annotations

import os

from transformer_lib.utils.quiet import hide_tensorflow_notices  # noqa: F401 (for notebooks)
from transformer_lib.book import kept  # noqa: F401 (chapter 9's trainings, run once and kept)
from transformer_lib.book import runs  # noqa: F401 (chapter 7's translator in later chapters)
from transformer_lib.book.source import show_source  # noqa: F401
from transformer_lib.utils.machine_description import describe_machine  # noqa: F401 (for notebooks)

QUICK = os.environ.get("BOOK_QUICK", "") not in ("", "0")


def pick(full, quick):
    """`full` normally, `quick` under BOOK_QUICK=1 (CI)."""
    return quick if QUICK else full


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
