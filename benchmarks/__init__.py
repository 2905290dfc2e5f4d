"""Speed and memory measurements for the book's performance appendix; ratios are measured side by
side in one run, never asserted as timings in tests.

The helpers every benchmark uses live here.
"""

from __future__ import annotations

import os
import time


def best_seconds(fn, repeats: int) -> tuple[float, object]:
    """The fastest of `repeats` timed calls of `fn()`, after one untimed call (tracing, XLA
    compilation), and the last call's result. Each call is timed until its result is computed:
    TensorFlow may return before the work is done, so every tensor in the result is read."""
    _wait(fn())
    best, result = float("inf"), None
    for _ in range(repeats):
        start = time.perf_counter()
        result = fn()
        _wait(result)
        best = min(best, time.perf_counter() - start)
    return best, result


def _wait(outputs) -> None:
    import tensorflow as tf

    for tensor in tf.nest.flatten(outputs, expand_composites=True):  # embedding gradients are IndexedSlices
        if hasattr(tensor, "numpy"):
            tensor.numpy()  # on a CPU this shares the tensor's memory: no copy


def processor() -> str:
    """The CPU's model name and its widest vector instructions (`transformer_lib.utils.machine_description.cpu_model`)."""
    from transformer_lib.utils.machine_description import cpu_model

    return cpu_model()


def load_average() -> list[float] | None:
    """The system's 1, 5 and 15-minute load averages (processes running or waiting for a core), where
    the OS reports them: other work on the machine moves absolute times."""
    try:
        return [round(x, 2) for x in os.getloadavg()]
    except (AttributeError, OSError):
        return None
