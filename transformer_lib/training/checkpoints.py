"""Checkpoints of a training run: everything an exact resume needs, the history of every epoch,
and a resume that survives a damaged checkpoint."""

from __future__ import annotations

import errno
import warnings
from pathlib import Path

import tensorflow as tf

from transformer_lib.utils.json_records import read_json, write_json
from transformer_lib.training.selection import keep_epoch_weights


def make_checkpoint(model, optimizer, epoch: tf.Variable, iterator) -> tf.train.Checkpoint:
    """What a resumed run needs to continue exactly: weights, optimizer state (moments, step count),
    the epoch, dropout's random state and the data iterator's position (where TensorFlow can save
    it: not under MirroredStrategy and other multi-device strategies)."""
    # Keras keeps dropout's random state in seed-generator variables that tf.train.Checkpoint does
    # not find through the model; listing the non-trainable variables saves them too.
    state = dict(model=model, optimizer=optimizer, epoch=epoch, non_trainable=list(model.non_trainable_variables))
    try:
        return tf.train.Checkpoint(**state, iterator=iterator)
    except ValueError:  # a distributed iterator (MirroredStrategy, even on one device) cannot be saved
        return tf.train.Checkpoint(**state)


def resume(checkpoint: tf.train.Checkpoint, directory: Path, max_to_keep: int, empty_history: dict,
           verbose: int = 1) -> tuple[tf.train.CheckpointManager, dict]:
    """A manager that saves into `directory`, after restoring its newest intact checkpoint (if any);
    and the history of the epochs restored (`empty_history` when starting afresh)."""
    rebuild_missing_index(directory)
    manager = tf.train.CheckpointManager(checkpoint, str(directory), max_to_keep=max_to_keep)
    resumed = restore_newest_intact(checkpoint, manager)
    if not resumed:
        return manager, empty_history
    epochs_done = int(checkpoint.epoch.numpy())
    if verbose:
        print(f"Resumed from {Path(resumed).name}: {epochs_done} epoch(s) done.")
    return manager, read_history(directory, epochs_done, empty_history)


def save_epoch(manager: tf.train.CheckpointManager, model, history: dict, keep_weights: int = 0) -> None:
    """After an epoch: a checkpoint numbered by the epoch, the weights `selection` keeps (the last
    `keep_weights` epochs' and the best one's), and the history of every epoch so far."""
    directory = Path(manager.directory)
    try:
        manager.save(checkpoint_number=history["epoch"][-1])
        if keep_weights:
            keep_epoch_weights(model, directory, history, keep_weights)
        write_history(directory, history)
    except (OSError, tf.errors.OpError) as error:
        if not disk_full(error):
            raise
        raise OSError(f"No space left on the disk while saving epoch {history['epoch'][-1]} in {directory}. Free "
                      "some space and run the same training again: it resumes from the last checkpoint written "
                      "whole (a half-written one is skipped).") from None


def disk_full(error: Exception) -> bool:
    """Whether `error` (Python's, h5py's or TensorFlow's) says the disk is full."""
    return getattr(error, "errno", None) == errno.ENOSPC or "No space left on device" in str(error)


HISTORY_FILE = "history.json"  # beside the checkpoints: the history of every epoch they hold


def write_history(checkpoint_dir: Path, history: dict) -> None:
    """Replace the history file in one step, so a crash never leaves half of it."""
    write_json(checkpoint_dir / HISTORY_FILE, history)


def read_history(checkpoint_dir: Path, epochs_done: int, empty: dict) -> dict[str, list[float]]:
    """The history of the first `epochs_done` epochs saved beside the checkpoints (later entries
    belong to checkpoints that were not restored); `empty` if there is none."""
    path = checkpoint_dir / HISTORY_FILE
    if not path.is_file():
        return empty
    saved = read_json(path, "restore it from a copy of the run, or delete the checkpoint folder to start afresh "
                            "(its checkpoints' history is lost with it).")
    kept = sum(1 for e in saved["epoch"] if e <= epochs_done)
    missing = [name for name in empty if len(saved.get(name, [])) < kept]
    if missing:
        raise ValueError(f"The run in {checkpoint_dir} recorded no {', '.join(missing)} for its first {kept} epoch(s): "
                         "it was trained without that validation or score. Resume it as it was trained, or start "
                         "afresh in another checkpoint_dir.")
    return {name: saved[name][:kept] for name in empty}


INDEX_FILE = "checkpoint"  # TensorFlow's index of the checkpoints in a folder: which exist, which is newest


def saved_checkpoints(directory: Path) -> list[str]:
    """The checkpoints in `directory`, oldest first, found by their own files (`ckpt-N.index`), so
    they are found even when TensorFlow's index file is missing."""
    numbered = {}
    for index in Path(directory).glob("ckpt-*.index"):
        number = index.name.removeprefix("ckpt-").removesuffix(".index")
        if number.isdigit():
            numbered[int(number)] = str(index.with_suffix(""))
    return [numbered[number] for number in sorted(numbered)]


def rebuild_missing_index(directory: Path) -> None:
    """Write TensorFlow's index file again if it is missing (lost, or not copied) while checkpoints
    are there: without it the run would start afresh and overwrite them."""
    found = saved_checkpoints(directory)
    if not found or (Path(directory) / INDEX_FILE).is_file():
        return
    names = [Path(path).name for path in found]  # relative, so the folder can still be moved
    written = [Path(path + ".index").stat().st_mtime for path in found]  # without times the manager ignores them
    tf.compat.v1.train.update_checkpoint_state(str(directory), names[-1], all_model_checkpoint_paths=names,
                                               all_model_checkpoint_timestamps=written)
    warnings.warn(f"The index file {Path(directory) / INDEX_FILE} is missing; rebuilt it from {', '.join(names)}.",
                  stacklevel=4)  # the caller of train


def restore_newest_intact(checkpoint: tf.train.Checkpoint, manager: tf.train.CheckpointManager) -> str | None:
    """Restore the newest checkpoint that reads back whole and return its path (None if there is
    none). A damaged one (a crash or a full disk while writing it) is skipped with a warning, so a
    run resumes from the one before instead of failing."""
    for path in reversed(manager.checkpoints):
        try:
            checkpoint.restore(path).assert_existing_objects_matched()
        except (tf.errors.OpError, IndexError) as error:  # unreadable: truncated or garbled files
            warnings.warn(f"Checkpoint {path} is unreadable ({type(error).__name__}: {error}); "
                          "skipping it and resuming from the one before.", stacklevel=4)  # the caller of train
            continue
        except (ValueError, AssertionError) as error:  # readable, but made for other variables
            raise ValueError(
                f"Checkpoint {path} does not fit this model and optimizer ({error}). It was written by a run "
                "with other sizes or settings: use another checkpoint_dir, or delete this one to start afresh."
            ) from None
        return path
    if manager.checkpoints:
        raise ValueError(f"No checkpoint in {manager.directory} can be read back; delete the folder to start afresh.")
    return None
