"""One training run per directory: `run_lock(directory)` holds an exclusive lock on
`directory/.lock` while a run works there, so a second run into the same directory is refused at
once instead of mixing its checkpoints with the first one's.

The lock is the operating system's (`fcntl.flock`): it dies with its process, so the lock file of
a run that crashed is simply taken over; a run that ends removes the file (before releasing it). The file holds the holder's process id and command, for
the message a refused run prints. (Windows has no `fcntl`: there, runs are not locked.)
"""

from __future__ import annotations

import contextlib
import os
import sys
from pathlib import Path

try:
    import fcntl
except ImportError:  # Windows
    fcntl = None

LOCK_FILE = ".lock"


class RunInUseError(RuntimeError):
    """Another process is training into this directory."""


@contextlib.contextmanager
def run_lock(directory: str | Path | None):
    """Hold `directory`'s lock for the `with` block (creating the directory); raise `RunInUseError`
    at once if another run holds it. Released at the end of the block, also on an error.
    `directory=None` (a run that saves nothing) locks nothing."""
    if directory is None:
        yield
        return
    path = Path(directory) / LOCK_FILE
    path.parent.mkdir(parents=True, exist_ok=True)
    if fcntl is None:
        yield
        return
    handle = _locked(path, directory)
    try:
        handle.write(f"{os.getpid()}\n{' '.join(sys.argv)}\n")
        handle.flush()
        yield
    finally:
        path.unlink(missing_ok=True)  # removed while still held: a finished run leaves no lock file
        handle.close()  # releases the lock


def _locked(path: Path, directory):
    """`path` opened and locked by this process (an empty file), or RunInUseError."""
    while True:
        handle = open(path, "a+")
        try:
            fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            handle.close()
            raise RunInUseError(_refusal(directory, path)) from None
        try:
            same = os.stat(path).st_ino == os.fstat(handle.fileno()).st_ino
        except FileNotFoundError:
            same = False
        if same:
            handle.truncate(0)  # a dead holder's pid and command, if any, are replaced by ours
            return handle
        handle.close()  # the holder removed the file just as we opened it: lock the new one


def _refusal(directory, path: Path) -> str:
    pid, _, command = path.read_text().partition("\n")
    holder = f"pid {pid or 'unknown'}: {command.strip() or 'command unknown'}"
    return (f"{directory} is in use by another training run ({holder}). Two runs in one directory would "
            "overwrite each other's checkpoints: wait for it to finish (or stop it), or train into another directory.")
