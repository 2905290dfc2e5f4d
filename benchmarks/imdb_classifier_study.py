"""Which settings make chapter 9's review classifier better? Its settings, one change at a time.

    python -m benchmarks.imdb_classifier_study [--epochs 4] [--workers 2] [--only ROW,ROW] [--out FILE]

Row "center" is chapter 9's classifier with the study's starting settings: SentencePiece with 8,000 pieces
trained on the training reviews, the first 256 tokens of a review, 2 encoder layers of width 64
(4 heads, dff 256), dropout 0.1, masked mean pooling, Adam at 1e-3 with gradients clipped to norm 1,
batches of about 8,192 tokens. Every other row changes one of those choices: the review length and
which part of a long review is kept, the vocabulary, the model's size, dropout, the learning rate.
Every row trains `--epochs` epochs with the same seed and is scored on the *validation* reviews
(those of movies held out of the official training split, `load_imdb("validation")`) after every
epoch; the test reviews play no part. The record names the machine, the date, each row's
accuracy per epoch, its best epoch and its seconds per epoch. Chapter 9 shows the table.
"""

from __future__ import annotations

import datetime
import json
import time
from pathlib import Path

from benchmarks import processor
from benchmarks.studies import run_rows, save_record, study_main

DEFAULT_OUT = Path(__file__).resolve().parent / "imdb_classifier_study.json"

CENTER = dict(vocab_size=8000, max_length=256, truncate="head", num_layers=2, d_model=64, num_heads=4, dff=256,
              dropout_rate=0.1, learning_rate=1e-3, batch_tokens=8192, seed=0)
# name: (what changes, the change to CENTER)
RUNS = {
    "center": ("chapter 9's first classifier, as its settings give it (no change)", {}),
    "512 tokens": ("the first 510 pieces of a review instead of 254", dict(max_length=512)),
    "512 head+tail": ("512 tokens, the first and the last 255 pieces of a long review",
                      dict(max_length=512, truncate="head+tail")),
    "256 head+tail": ("256 tokens, the first and the last 127 pieces of a long review", dict(truncate="head+tail")),
    "vocab 16k": ("16,000 pieces instead of 8,000", dict(vocab_size=16000)),
    "vocab 4k": ("4,000 pieces instead of 8,000", dict(vocab_size=4000)),
    "dropout 0.3": ("dropout 0.3 instead of 0.1", dict(dropout_rate=0.3)),
    "lr 3e-4": ("Adam at 3e-4 instead of 1e-3", dict(learning_rate=3e-4)),
    "width 128": ("width 128 (dff 512) instead of 64", dict(d_model=128, dff=512)),
    "1 layer": ("1 layer instead of 2", dict(num_layers=1)),
}
# --toy: the same code at toy sizes on the 2,000-review sample, for the test suite (its numbers mean nothing)
TOY = dict(vocab_size=500, max_length=64, num_layers=1, d_model=16, num_heads=2, dff=32, batch_tokens=2048)


def row_settings(name: str, toy: bool = False) -> dict:
    """Row `name`'s settings: CENTER with its change (at toy sizes, the length and vocabulary kept small)."""
    settings = {**CENTER, **RUNS[name][1]}
    if toy:
        settings = {**settings, **TOY, **{k: v for k, v in RUNS[name][1].items() if k in ("truncate", "dropout_rate")}}
    return settings


def run_one(name: str, epochs: int, threads: int, toy: bool = False) -> dict:
    """Train and score one row of the study; returns its record."""
    import tensorflow as tf

    tf.config.threading.set_intra_op_parallelism_threads(threads)
    tf.config.threading.set_inter_op_parallelism_threads(threads)
    import keras

    import transformer_lib as tl

    settings = row_settings(name, toy)
    keras.utils.set_random_seed(settings["seed"])
    reviews = {split: tl.load_imdb(split, sample=toy) for split in ("train", "validation")}
    tokenizer = tl.data.imdb.train_review_tokenizer(reviews["train"], settings["vocab_size"])
    batching = dict(max_length=settings["max_length"], batch_tokens=settings["batch_tokens"], truncate=settings["truncate"])
    train_ds = tl.make_review_batches(reviews["train"], tokenizer, seed=settings["seed"], **batching)
    val_ds = tl.make_review_batches(reviews["validation"], tokenizer, shuffle=False, **batching)
    sizes = {key: settings[key] for key in ("num_layers", "d_model", "num_heads", "dff", "dropout_rate", "max_length")}
    model = tl.TransformerClassifier(tokenizer.vocab_size, **sizes)
    model.compile(optimizer=keras.optimizers.Adam(settings["learning_rate"], clipnorm=1.0), metrics=["accuracy"],
                  loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True))
    seconds = []

    class Timer(keras.callbacks.Callback):
        def on_epoch_begin(self, epoch, logs=None):
            self.start = time.perf_counter()

        def on_epoch_end(self, epoch, logs=None):
            seconds.append(time.perf_counter() - self.start)  # the epoch with its validation pass

    history = model.fit(train_ds, validation_data=val_ds, epochs=epochs, verbose=0, shuffle=False, callbacks=[Timer()])
    accuracy = [round(float(a), 4) for a in history.history["val_accuracy"]]
    best = max(range(epochs), key=lambda e: accuracy[e])
    return {"name": name, "change": RUNS[name][0], "settings": settings, "training_reviews": len(reviews["train"]),
            "validation_reviews": len(reviews["validation"]), "parameters": model.count_params(),
            "val_accuracy": accuracy, "best_val_accuracy": accuracy[best], "best_epoch": best + 1,
            "train_accuracy": [round(float(a), 4) for a in history.history["accuracy"]],
            "seconds_per_epoch": round(sum(seconds) / epochs, 1), "minutes": round(sum(seconds) / 60, 2),
            "threads": threads}


def run_all(names: list[str], epochs: int, workers: int, out: Path, toy: bool = False) -> dict:
    """Run the rows `workers` at a time, each in its own process; write the table to `out` after each."""
    start = time.perf_counter()
    rows, failed = run_rows("benchmarks.imdb_classifier_study", names, epochs, workers, toy,
                            lambda rows, failed: write(out, epochs, workers, start, rows, failed),
                            lambda row: f"best val accuracy {row['best_val_accuracy']:.4f} at epoch {row['best_epoch']}"
                                        f"  ({row['minutes']:.1f} min)")
    return write(out, epochs, workers, start, rows, failed)


def write(out: Path, epochs: int, workers: int, start: float, rows: dict, failed: dict) -> dict:
    """The table so far, written to `out` (after every finished row). Rows already in `out` from an
    earlier call with the same epochs are kept unless run again."""
    from transformer_lib.utils.machine_description import describe_machine

    earlier = json.loads(out.read_text()) if out.is_file() else {}
    kept = {row["name"]: row for row in earlier.get("rows", []) if earlier.get("epochs") == epochs}
    rows = {**kept, **rows}
    result = {"what": __doc__.split("\n\n")[0],
              "command": f"python -m benchmarks.imdb_classifier_study --epochs {epochs} --out benchmarks/{out.name}",
              "epochs": epochs, "workers": workers, "date": datetime.date.today().isoformat(),
              "machine": describe_machine(), "cpu": processor(),
              "minutes_this_call": round((time.perf_counter() - start) / 60, 1), "center": CENTER,
              "rows": [rows[n] for n in RUNS if n in rows], "failed": failed,
              "not_run": [n for n in RUNS if n not in rows and n not in failed]}
    return save_record(out, result)


def main(argv=None) -> dict | None:
    return study_main(argv, __doc__, RUNS, DEFAULT_OUT, run_one, run_all)


if __name__ == "__main__":
    main()
