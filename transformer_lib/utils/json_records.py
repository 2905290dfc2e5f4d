"""The JSON records of a run (`training.json`, `checkpoints/settings.json`, `checkpoints/history.json`):
written whole or not at all, and a damaged one named with what to do about it."""

from __future__ import annotations

import json
import os
import tempfile
from pathlib import Path


def write_json(path: str | Path, data, indent: int | None = None) -> None:
    """Write `data` to `path` in one step: serialised first, written to a temporary file beside it,
    then renamed over it, so a crash or a full disk leaves the old file whole, never half of one."""
    path = Path(path)
    text = json.dumps(data, indent=indent) + "\n"  # an object JSON cannot hold fails here, before any file is touched
    handle, temporary = tempfile.mkstemp(dir=path.parent, prefix=path.name + ".", suffix=".partial")
    try:
        with os.fdopen(handle, "w") as file:
            file.write(text)
        os.chmod(temporary, 0o644)  # readable as a file written the usual way (mkstemp makes it private)
        os.replace(temporary, path)
    except BaseException:
        os.unlink(temporary)
        raise


def read_json(path: str | Path, remedy: str):
    """The data in `path`; a damaged file raises a ValueError that names it and says `remedy`."""
    try:
        return json.loads(Path(path).read_text())
    except (json.JSONDecodeError, UnicodeDecodeError) as error:
        raise ValueError(f"{path} is damaged (not valid JSON: {error}); {remedy}") from None
