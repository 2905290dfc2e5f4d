"""Keep the best epoch, average the last ones (§6.1), and save whichever validates better.

The paper does not keep its last weights: "For the base models, we used a single model obtained by
averaging the last 5 checkpoints" (§6.1). On a small corpus the last epoch is often not the best one
either: the model starts to memorise its training pairs. So `train` can write, beside its resumable
checkpoints, the model's weights of each epoch (the last `keep` of them) and a copy of the best
epoch's, judged by a validation score; `select_weights` then compares the last, the best and the
average of the last ones on the validation split and keeps the winner in the model.

Which score picks "best": BLEU of greedy translations of the validation split when a `score`
function is given (it is what we care about, and with the key/value cache it costs seconds), else
the validation loss. With label smoothing the loss keeps rising after the model has become
overconfident while its translations still improve, so the loss picks too early an epoch.
"""

from __future__ import annotations

import hashlib
import shutil
import warnings
from pathlib import Path

import h5py
import numpy as np

from transformer_lib.utils.checks import require_positive_int

WEIGHTS_DIR = "weights"  # in the checkpoint folder: one weights file per kept epoch, and the best one
BEST = "best.weights.h5"


def epoch_file(directory: Path, epoch: int) -> Path:
    return Path(directory) / WEIGHTS_DIR / f"epoch-{epoch:03d}.weights.h5"


def best_epoch(history: dict) -> int:
    """The epoch with the highest `val_score` if the history has scores, else the lowest `val_loss`."""
    if history.get("val_score"):
        values, sign = history["val_score"], 1.0
    elif history.get("val_loss"):
        values, sign = history["val_loss"], -1.0
    else:
        raise ValueError("No validation results in the history: give train a val_ds (and a score) to keep the best epoch.")
    return history["epoch"][int(np.argmax(sign * np.asarray(values)))]


def keep_epoch_weights(model, directory: Path, history: dict, keep: int) -> None:
    """Save this epoch's weights (the history's last epoch), delete those older than the newest `keep`,
    and copy them to `best.weights.h5` if this epoch is the best so far."""
    epoch = history["epoch"][-1]
    path = epoch_file(directory, epoch)
    path.parent.mkdir(parents=True, exist_ok=True)
    model.save_weights(path)
    for old in kept_epochs(directory)[:-keep]:
        epoch_file(directory, old).unlink()
    if best_epoch(history) == epoch:
        model.save_weights(path.parent / BEST)


def kept_epochs(directory: Path) -> list[int]:
    """The epochs whose weights are kept in `directory`, oldest first."""
    files = (Path(directory) / WEIGHTS_DIR).glob("epoch-*.weights.h5")
    return sorted(int(path.name.removeprefix("epoch-").removesuffix(".weights.h5")) for path in files)


def readable(path: Path) -> bool:
    """Whether the weights file `path` exists and every array in it reads back (not truncated)."""
    def read(name, item):
        if isinstance(item, h5py.Dataset):
            item[()]  # noqa: B018 (reading is the test)

    try:
        with h5py.File(path, "r") as file:
            file.visititems(read)
    except (OSError, KeyError, ValueError, RuntimeError):
        return False
    return True


def repair_kept_weights(model, directory: Path, history: dict) -> None:
    """Before a resumed run trains on, make sure the weights `select_weights` needs are intact.

    `model` holds the restored checkpoint's weights, those of the history's last epoch. A damaged
    kept file is removed, the last epoch's file is written again from the model and a lost
    `best.weights.h5` copied from the best epoch's file, each with a warning. If the best epoch's
    weights are lost with no copy, the run is refused with the remedy, before it trains.
    """
    directory, done = Path(directory), history["epoch"][-1]
    for epoch in kept_epochs(directory):
        if not readable(epoch_file(directory, epoch)):
            epoch_file(directory, epoch).unlink()
            warnings.warn(f"{epoch_file(directory, epoch)} was damaged; removed it (its epoch is left out of the "
                          "average).", stacklevel=3)  # the caller of train
    if not epoch_file(directory, done).is_file():
        epoch_file(directory, done).parent.mkdir(parents=True, exist_ok=True)
        model.save_weights(epoch_file(directory, done))
        warnings.warn(f"{epoch_file(directory, done)} was missing; wrote it again from the checkpoint of epoch {done}.",
                      stacklevel=3)
    best, winner = directory / WEIGHTS_DIR / BEST, best_epoch(history)
    if readable(best):
        return
    if not epoch_file(directory, winner).is_file():
        raise ValueError(
            f"{best} is missing or damaged and the best epoch ({winner}) has no other copy, so the run could not "
            f"choose its weights at the end. Restore {BEST} from a copy of the run, or start afresh "
            "(restart=True, --restart); with train, keep_weights=0 trains on without choosing."
        )
    shutil.copyfile(epoch_file(directory, winner), best)
    warnings.warn(f"{best} was missing or damaged; copied it again from epoch {winner}'s weights.", stacklevel=3)


def average_weights(model, paths: list[Path]) -> None:
    """Set `model`'s weights to the mean of the weights files `paths` (§6.1's checkpoint averaging).
    Only trainable weights are averaged; the others (e.g. dropout's random state) keep the last file's."""
    if not paths:
        raise ValueError("average_weights needs at least one weights file.")
    total = None
    for path in paths:
        try:
            model.load_weights(path)
        except (OSError, KeyError) as error:  # h5py: a lost file, a cut one, a group missing (not: another model)
            raise ValueError(f"{path} is missing or damaged. Run train with this checkpoint folder again: "
                             "it rewrites what can be recovered, or says what to restore.") from error
        values = [w.numpy().astype(np.float64) for w in model.trainable_weights]
        total = values if total is None else [t + v for t, v in zip(total, values)]
    for weight, summed in zip(model.trainable_weights, total):
        weight.assign((summed / len(paths)).astype(weight.dtype))


def select_weights(model, directory: Path, score, average_last: int = 5, verbose: bool = True) -> dict:
    """Compare the last epoch's weights (those in `model` now), the best epoch's and the average of the
    last `average_last` kept epochs by `score(model)` (higher is better); leave the winner in `model`.

    Returns:
        `{"scores": {candidate: score}, "chosen": candidate}`.
    """
    require_positive_int("average_last", average_last)
    directory = Path(directory)
    epochs = kept_epochs(directory)
    if not epochs:
        raise ValueError(f"No kept weights in {directory / WEIGHTS_DIR}: train with keep_weights >= 1 first.")
    candidates = {f"last (epoch {epochs[-1]})": [epoch_file(directory, epochs[-1])],
                  "best": [directory / WEIGHTS_DIR / BEST]}
    last = epochs[-average_last:]
    if len(last) > 1:
        candidates[f"average of epochs {last[0]}-{last[-1]}"] = [epoch_file(directory, e) for e in last]
    scores = {}
    for name, paths in candidates.items():
        average_weights(model, paths)
        scores[name] = round(float(score(model)), 2)
        if verbose:
            print(f"{name:>28}: {scores[name]:.2f}")
    chosen = max(scores, key=scores.get)
    average_weights(model, candidates[chosen])
    return {"scores": scores, "chosen": chosen}


def bleu_score(tokenizers, pairs, max_length: int = 64, beam_size: int = 1):
    """A `score(model)` function: sacreBLEU of the model's translations of `pairs` (greedy by default).

    It remembers what it translated, by the model's trainable weights: `score.evaluate(model)` gives
    `evaluate_bleu`'s whole result (the translations and reference streams too, for `paired_bootstrap`),
    and weights scored once are not translated again."""
    from transformer_lib.decoding.translator import Translator
    from transformer_lib.decoding.bleu import evaluate_bleu

    found = {}

    def evaluate(model) -> dict:
        weights = b"".join(np.ascontiguousarray(w.numpy()).tobytes() for w in model.trainable_weights)
        key = hashlib.sha256(weights).hexdigest()
        if key not in found:
            translator = Translator(model, *tokenizers, max_length=max_length)
            found[key] = evaluate_bleu(translator, pairs, beam_size=beam_size, verbose=False)
        return found[key]

    def score(model) -> float:
        return evaluate(model)["bleu"]

    score.evaluate = evaluate
    return score
