"""Chapter 7's translator for the chapters after it: what training it costs, and where a copy is kept.

- `training_cost(recipe)` says before a run starts how long chapter 7's training takes: measured on
  a 2-core CPU (the published run), and on a Colab T4 GPU (an estimate until someone measures it).
- `chapter_7_translator(run_dir, recipe, saved=..., train=...)` loads the translator chapter 7 saved
  in `run_dir`; without it, it loads a copy saved elsewhere (`saved`, such as a Google Drive folder),
  trains one now only when `train=True` (saying first what that costs), and otherwise stops with a
  message that offers both choices: a chapter never retrains silently.
- `save_copy(run_dir, folder)` copies a finished run to `folder` (in Colab: a folder on Google Drive,
  which outlives the runtime), and `drive_folder()` mounts Drive and names the course's folder on it.
"""

from __future__ import annotations

import shutil
from pathlib import Path

# Chapter 7's published run of its recipe (`tl.Recipe()`: the `small` preset, 29 epochs on Tatoeba + SMARTool):
# minutes of training on the machine it names, and the wall time of the training call with the validation
# BLEU after every epoch. tests/test_instructors.py checks them against chapter 7's stored output.
MEASURED_CPU = {"minutes": 38.1, "with_validation": 41.2, "machine": "a 2-core AMD EPYC CPU", "epochs": 29,
                "preset": "small"}
# Not measured: our estimate for a Colab T4 (about 8 TFLOP/s in float32; the small model's ~10,500
# updates at ~36 GFLOP each, per-step overheads and 29 greedy validation passes), to be replaced
# by a measurement.
T4_ESTIMATE_MINUTES = (8, 12)
DRIVE_ROOT = Path("/content/drive")
DRIVE_FOLDER = DRIVE_ROOT / "MyDrive" / "attention-step-by-step" / "runs"


def training_cost(recipe) -> str:
    """One line: what training `recipe` (chapter 7's, at full size) costs on a CPU and on a T4."""
    if recipe.preset != MEASURED_CPU["preset"]:
        return f"Training the {recipe.preset} preset for {recipe.epochs} epoch(s): no timing is recorded for it."
    scale = recipe.epochs / MEASURED_CPU["epochs"]
    low, high = (round(minutes * scale) for minutes in T4_ESTIMATE_MINUTES)
    return (f"Training takes about {MEASURED_CPU['with_validation'] * scale:.0f} min on {MEASURED_CPU['machine']} "
            f"(measured: chapter 7's published run, {MEASURED_CPU['minutes'] * scale:.0f} min of it training), "
            f"and about {low}-{high} min on a Colab T4 GPU (an estimate, not yet measured).")


def _is_run(folder: Path) -> bool:
    """A finished run: its record and the translator's files (`export.FILES`), as `train_translator` leaves them."""
    from transformer_lib.export.saved_model import FILES

    return all((folder / name).is_file() for name in ("training.json", *FILES))


def chapter_7_translator(run_dir, recipe, saved=None, train: bool = False):
    """The translator chapter 7 trained with `recipe`, from `run_dir`, else from the copy in `saved`;
    trained now into `run_dir` only with `train=True`. Returns `(translator, run folder)`.

    Raises RuntimeError, saying what each choice costs, when there is no run and `train` is False.
    """
    from transformer_lib.export.saved_model import load_translator
    from transformer_lib.training.recipe import train_translator

    run_dir = Path(run_dir)
    for folder in [run_dir] + ([Path(saved)] if saved else []):
        if _is_run(folder):
            print(f"Chapter 7's translator, from {folder}.")
            return load_translator(folder), folder
    if saved and not Path(saved).is_dir():
        raise RuntimeError(f"SAVED_TRANSLATOR = {str(saved)!r} is not a folder. Give the folder chapter 7 saved its "
                           f"translator to (it holds training.json), or set SAVED_TRANSLATOR = None.")
    if saved:
        raise RuntimeError(f"{saved} holds no saved translator (training.json and the translator's files): give the "
                           "folder chapter 7 copied its run to (its Google Drive cell prints it).")
    if not train:
        raise RuntimeError(
            f"No translator of chapter 7 in {run_dir} (chapter 7 has not run in this folder or runtime). Choose one, "
            f"then run this cell again:\n"
            f"  - train it now: set TRAIN_IF_MISSING = True. {training_cost(recipe)}\n"
            f"  - load the copy chapter 7 saved: set SAVED_TRANSLATOR to its folder (in Colab, chapter 7 saves it to "
            f"Google Drive, {DRIVE_FOLDER / run_dir.name}; mount Drive first with drive_folder()).")
    print(f"No translator of chapter 7 in {run_dir}: training one now with chapter 7's recipe, as asked "
          f"(TRAIN_IF_MISSING). {training_cost(recipe)}")
    train_translator(run_dir, recipe)
    return load_translator(run_dir), run_dir


def drive_folder() -> Path:
    """Mount Google Drive (in Colab; it asks for permission once) and return the course's runs folder on it."""
    from google.colab import drive  # only in Colab

    if not (DRIVE_ROOT / "MyDrive").is_dir():
        drive.mount(str(DRIVE_ROOT))
    DRIVE_FOLDER.mkdir(parents=True, exist_ok=True)
    return DRIVE_FOLDER


def save_copy(run_dir, folder) -> Path:
    """Copy the finished run in `run_dir` to `folder`/<its name>, replacing an older copy; returns the copy."""
    run_dir = Path(run_dir)
    if not _is_run(run_dir):
        raise RuntimeError(f"{run_dir} holds no finished run (training.json and the translator's files): train it first.")
    target = Path(folder) / run_dir.name
    if target.exists():
        shutil.rmtree(target)
    shutil.copytree(run_dir, target, ignore=shutil.ignore_patterns("checkpoints", ".lock"))  # the translator, not the resume state
    return target
