"""Keep TensorFlow's C++ chatter out of notebooks, and nothing else.

TensorFlow's C++ runtime prints a few notices when it loads (the oneDNN notice, "could not find
cuda drivers" on a machine without a GPU, ...) straight to the process's stderr, before
TF_CPP_MIN_LOG_LEVEL can take effect; Jupyter then stores them in the first cell's output. While
TensorFlow loads, stderr goes to a temporary file; afterwards every line that is not one of those
known notices is written back, so real errors and warnings still show. A few such notices come
later, when a graph first runs (`transformer_lib.book.hide_tensorflow_notices` for notebooks).
"""

from __future__ import annotations

import contextlib
import os
import re
import sys
import tempfile

START_UP_NOISE = re.compile(
    r"All log messages before absl::InitializeLog\(\) is called"
    r"|oneDNN custom operations are on"
    r"|Could not find cuda drivers on your machine"
    r"|failed call to cuInit"
    r"|This TensorFlow binary is optimized to use available CPU instructions"
    r"|rebuild TensorFlow with the appropriate compiler flags"
    r"|oneDNN supports DT_INT(?:32|64) only on platforms with AVX-512"  # at run time, harmless: it falls back
)


@contextlib.contextmanager
def hide_tensorflow_notices():
    """While the block runs, drop TensorFlow's known C++ notices from stderr; keep all else."""
    stderr_fd = 2  # the C++ runtime writes to file descriptor 2, whatever sys.stderr is (Jupyter pipes it)
    try:
        saved = os.dup(stderr_fd)
    except OSError:  # no file descriptor 2 at all: nothing to filter
        yield
        return
    sys.stderr.flush()
    with tempfile.TemporaryFile(mode="w+b") as captured:
        os.dup2(captured.fileno(), stderr_fd)
        try:
            yield
        finally:
            sys.stderr.flush()
            os.dup2(saved, stderr_fd)
            os.close(saved)
            captured.seek(0)
            kept = [line for line in captured.read().decode(errors="replace").splitlines(keepends=True)
                    if not START_UP_NOISE.search(line)]
            if kept:
                sys.stderr.write("".join(kept))
