"""What the studies of recipes share (`recipe_study`, `small_data_study`): each row of a study is
a training run in its own process (`python -m MODULE --run ROW`), `workers` at a time, each on
(cores / workers) threads; a row that fails is reported and the others go on."""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path


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


def save_record(out: Path, record: dict) -> dict:
    """Write a study's `record` to `out` as readable JSON (Russian text as it is) and return it."""
    out.write_text(json.dumps(record, indent=1, ensure_ascii=False) + "\n")
    return record
