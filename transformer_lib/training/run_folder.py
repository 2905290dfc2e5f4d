"""A training run's folder: the settings its checkpoints were trained with (`checkpoints/settings.json`),
compared before a run resumes there, and the record of a finished run (`training.json`), read
instead of training again.
"""

from __future__ import annotations

import shutil
import warnings
from pathlib import Path

from transformer_lib.export.saved_model import FILES
from transformer_lib.training.checkpoints import saved_checkpoints
from transformer_lib.utils.json_records import read_json, write_json

SETTINGS_FILE = "settings.json"  # in out/checkpoints: what the checkpoints were trained with
RECORD_FILE = "training.json"  # in out: the record of a finished run


def finished_record(out: Path, epochs: int) -> dict | None:
    """The record of the run in `out` if it has trained `epochs` epochs (or more) and saved its translator."""
    record = out / RECORD_FILE
    if not (record.is_file() and all((out / name).is_file() for name in FILES)):
        return None
    earlier = read_json(record, "delete it: the run then resumes from its checkpoints and writes its record again.")
    done = earlier["history"]["epoch"]
    return earlier if done and done[-1] >= epochs else None


def finished_message(out: Path, done: int, asked: int) -> str:
    """What a call on a finished run says: that there is nothing to train, and what to do instead."""
    fewer = f" (asked for {asked}: a finished run is not cut short)" if asked < done else ""
    return (f"Nothing to train: {out} holds a finished run of {done} epochs and its translator{fewer}. "
            "Ask for more epochs to train on, or choose another out (or restart=True, --restart) for a new run.")


def prepare_run(out: Path, settings: dict, restart: bool, added_later: dict | None = None) -> Path:
    """Compare a run's settings (its recipe checked them) with the run in `out` that a call would
    resume, before any long work; `restart` deletes that run instead. `added_later`: settings that
    runs recorded earlier lack, with the value those runs had (not a difference)."""
    checkpoints = out / "checkpoints"
    if restart:
        shutil.rmtree(checkpoints, ignore_errors=True)
        (out / RECORD_FILE).unlink(missing_ok=True)
    saved = checkpoints / SETTINGS_FILE
    if saved_checkpoints(checkpoints):  # found even without TensorFlow's index file
        before = {**(added_later or {}), **saved_settings(out, settings)}
        changed = [f"{name}={before.get(name)!r} before, {value!r} now" for name, value in settings.items()
                   if before.get(name) != value]
        if changed:
            raise ValueError(
                f"{out} holds a run trained with other settings ({'; '.join(changed)}); resuming would mix two runs. "
                "Resume with the same settings, choose another out, or pass restart=True (--restart) to delete "
                "that run and start afresh."
            )
    checkpoints.mkdir(parents=True, exist_ok=True)
    write_json(saved, settings, indent=2)
    return out


def saved_settings(out: Path, settings: dict) -> dict:
    """The settings the checkpoints in `out` were trained with: their settings file or, if that is
    lost, the run's record (a finished run's `training.json` holds them too). Without either the
    run cannot be checked, and resuming it is refused."""
    saved = out / "checkpoints" / SETTINGS_FILE
    remedy = "restore it from a copy of the run, or pass restart=True (--restart) to delete that run and start afresh."
    if saved.is_file():
        return read_json(saved, remedy)
    record = out / RECORD_FILE
    if not record.is_file():
        raise ValueError(
            f"{saved.parent} holds checkpoints but not {SETTINGS_FILE}, the settings they were trained with, and "
            f"{out} has no record ({RECORD_FILE}) that holds them: resuming could mix two runs. Restore "
            f"{SETTINGS_FILE} from a copy of the run, or pass restart=True (--restart) to delete that run and start afresh."
        )
    earlier = read_json(record, remedy)
    warnings.warn(f"{saved} is missing; the run's settings were read from its record {record}.", stacklevel=4)
    return {name: earlier[name] for name in settings if name in earlier}  # a missing one: compared as None
