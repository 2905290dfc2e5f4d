"""What the studies of recipes share (`recipe_study`, `small_data_study`): each row of a study is
a training run in its own process (`python -m MODULE --run ROW`), `workers` at a time, each on
(cores / workers) threads; a row that fails is reported and the others go on."""

from __future__ import annotations

import argparse
import datetime
import json
import os
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

from benchmarks import processor


# The library's defaults before issue #42 made chapter 7's recipe `tl.Recipe()` (Tatoeba + SMARTool,
# dropout 0.2, label smoothing 0.2; now 29 epochs, the last five averaged). The studies recorded
# before it pin these, so that their rows keep the meaning they had when they were measured.
BEFORE_42 = dict(corpus="tatoeba/rus-eng", epochs=60, dropout_rate=None, label_smoothing=0.1, average_last=5)


def run_rows(module: str, names: list[str], epochs: int, workers: int, toy: bool,
             finished: Callable[[dict, dict], None], summary: Callable[[dict], str]) -> tuple[dict, dict]:
    """Run the rows `names` in this order; after each row, print `summary(row)` and call
    `finished(rows, failed)` (to write the record so far). Returns `(rows, failed)` by name."""
    threads = max(1, (os.cpu_count() or 1) // workers)
    waiting, running, rows, failed = list(names), {}, {}, {}
    while waiting or running:
        while waiting and len(running) < workers:
            name = waiting.pop(0)
            command = [sys.executable, "-m", module, "--run", name, "--epochs", str(epochs),
                       "--threads", str(threads), *(["--toy"] if toy else [])]
            running[name] = subprocess.Popen(command, stdout=subprocess.PIPE, text=True)
        time.sleep(1 if toy else 5)
        for name, process in list(running.items()):
            if process.poll() is None:
                continue
            output = process.communicate()[0]
            del running[name]
            if process.returncode != 0:  # the other rows go on; this one is reported, not hidden
                failed[name] = f"exit {process.returncode}"
                print(f"{name:>14}: FAILED (exit {process.returncode}); its traceback is above", flush=True)
                continue
            rows[name] = json.loads(output.strip().splitlines()[-1])
            print(f"{name:>14}: {summary(rows[name])}", flush=True)
            finished(rows, failed)
    return rows, failed


def study_main(argv, doc: str, runs: dict, default_out: Path, run_one, run_all):
    """The command line of a study: `--run ROW` (a worker: one row, its record printed as JSON),
    or the rows of `--only` (default: all) run and written to `--out`."""
    parser = argparse.ArgumentParser(description=doc.split("\n\n")[0])
    parser.add_argument("--run", choices=list(runs), help="run one row and print its record (used by the workers)")
    parser.add_argument("--only", help="comma-separated rows to run (default: all)")
    parser.add_argument("--epochs", type=int, default=8)
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--out", type=Path, default=default_out)
    parser.add_argument("--toy", action="store_true", help="toy sizes on the synthetic corpus (for the tests)")
    args = parser.parse_args(argv)
    if args.run:
        print(json.dumps(run_one(args.run, args.epochs, args.threads, args.toy)))
        return None
    names = args.only.split(",") if args.only else list(runs)
    unknown = sorted(set(names) - set(runs))
    if unknown:
        parser.error(f"unknown rows {unknown}; choose from {list(runs)}")
    return run_all(names, args.epochs, args.workers, args.out, args.toy)


def train_and_score(name: str, change: str, recipe, sizes: dict, epochs: int, threads: int) -> dict:
    """Row `name` of a study: `recipe` (with `sizes`, changes to its preset's model sizes) trained `epochs` epochs on
    `threads` threads and scored on its corpus's validation split (greedy BLEU every epoch, then beam BLEU and
    chrF with beam 4, alpha 0.6); its record."""
    import tensorflow as tf

    tf.config.threading.set_intra_op_parallelism_threads(threads)
    tf.config.threading.set_inter_op_parallelism_threads(threads)
    import keras

    import transformer_lib as tl
    from transformer_lib.training.recipe import training_data

    keras.utils.set_random_seed(recipe.seed)
    val_pairs = tl.load_parallel_corpus(recipe.corpus, "validation")  # Tatoeba's, in every row
    tokenizers, train_ds, val_ds = training_data(recipe, val_pairs, verbose=False)
    steps = int(train_ds.cardinality()) * epochs
    model = recipe.model(tokenizers, **sizes)
    start = time.perf_counter()
    history = tl.train(model, train_ds, val_ds, epochs=epochs,
                       optimizer=recipe.optimizer(model.config, steps),
                       label_smoothing=recipe.label_smoothing, verbose=0,
                       score=tl.training.selection.bleu_score(tokenizers, val_pairs, recipe.max_length))
    minutes = (time.perf_counter() - start) / 60
    score = tl.evaluate_bleu(tl.Translator(model, *tokenizers, max_length=recipe.max_length), val_pairs,
                             beam_size=4, alpha=0.6, verbose=False)
    shape = model.config.pick("num_layers", "d_model", "num_heads", "dff", "dropout_rate")  # the sizes it trained at
    return {"name": name, "change": change, "recipe": {**recipe.to_dict(), **shape},
            "training_pairs": len(tl.load_parallel_corpus(recipe.corpus, "train")), "updates": steps,
            "parameters": tl.count_parameters(model),
            "val_beam_bleu": round(score["bleu"], 2), "val_beam_chrf": round(score["chrf"], 2),
            "val_greedy_bleu": [round(v, 2) for v in history["val_score"]],
            "val_loss": [round(v, 4) for v in history["val_loss"]],
            "seconds_per_epoch": round(sum(history["seconds"]) / epochs, 1),
            "train_minutes": round(sum(history["seconds"]) / 60, 2), "minutes": round((time.perf_counter() - start) / 60, 2),
            "minutes_with_validation": round(minutes, 2), "threads": threads, "bleu_signature": score["bleu_signature"],
            "cpu": processor(), "date": datetime.date.today().isoformat()}  # a record's rows may come from several calls


def save_record(out: Path, record: dict) -> dict:
    """Write a study's `record` to `out` as readable JSON (Russian text as it is) and return it."""
    out.write_text(json.dumps(record, indent=1, ensure_ascii=False) + "\n")
    return record
