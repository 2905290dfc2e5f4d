"""What helps a translator trained on little everyday data? Chapter 7's recipe, one change at a time.

    python -m benchmarks.small_data_study [--epochs 8] [--workers 2] [--only ROW,ROW] [--out FILE]

Row "center" is chapter 7's recipe (dropout 0.2) trained on Tatoeba plus the SMARTool learner
sentences (`tatoeba+smartool/rus-eng`); "Tatoeba only" takes the added data away, and every other
row changes one more choice of the center: subword sampling (BPE-dropout) during training, the
vocabulary size, one joint vocabulary with shared embeddings, dropout, label smoothing, the
model's depth and width. Every row trains `--epochs` epochs with the same seed and the same
warm-up (1,000 updates; the schedule does not depend on the run's length, so a row is the start
of a longer run with that change) and is scored on the Tatoeba *validation* split, never the test
split: greedy BLEU after every epoch (the curve, to see where a row is heading), then sacreBLEU and
chrF with beam search (beam 4, alpha 0.6) on the last epoch's weights. Runs go `--workers` at a
time, each on (cores / workers) threads; the record names the machine, the date, the minutes and
seconds per epoch of each row, and the rows not run. Chapter 7 shows the table.

Eight epochs rank what learns fast, not what ends best (the regularizers start slower), so the leaders
ran again over 20 epochs into their own record (`--epochs 20 --out benchmarks/small_data_study_20.json`),
with the second stage's rows: one change at a time on top of the first stage's cheaper vocabulary
(4k). A record keeps the rows of earlier calls with the same number of epochs.
"""

from __future__ import annotations

import datetime
import json
import time
from pathlib import Path

from benchmarks import processor
from benchmarks.studies import BEFORE_42, run_rows, save_record, study_main, train_and_score
from transformer_lib.training.recipe import Recipe

DEFAULT_OUT = Path(__file__).resolve().parent / "small_data_study.json"

# chapter 7's recipe when the study was made (its defaults since changed to the study's winners)
CHAPTER7 = Recipe(**{**BEFORE_42, "dropout_rate": 0.2, "average_last": 10})
CENTER = CHAPTER7.replace(corpus="tatoeba+smartool/rus-eng")
# name: (what changes, the change to CENTER, the change to the small preset's sizes)
RUNS = {
    "center": ("chapter 7's recipe on Tatoeba + SMARTool (26,943 pairs)", {}, {}),
    "Tatoeba only": ("chapter 7's recipe on Tatoeba alone (17,475 pairs): no SMARTool",
                     dict(corpus="tatoeba/rus-eng"), {}),
    "sampling 0.1": ("subword sampling: BPE-dropout 0.1 on the training sentences", dict(sampling_alpha=0.1), {}),
    "vocab 4k": ("4,000 pieces per language instead of 8,000", dict(vocab_size=4000), {}),
    "joint 8k": ("one joint vocabulary of 8,000 pieces, shared embeddings", dict(joint_vocab=True), {}),
    "dropout 0.3": ("dropout 0.3 instead of 0.2", dict(dropout_rate=0.3), {}),
    "attention dropout 0.1": ("dropout 0.1 on the attention weights as well", dict(attention_dropout=0.1), {}),
    "activation dropout 0.1": ("dropout 0.1 on the feed-forward's inner activations as well",
                               dict(activation_dropout=0.1), {}),
    "smoothing 0.2": ("label smoothing 0.2 instead of 0.1", dict(label_smoothing=0.2), {}),
    "6 layers": ("6 layers instead of 4 (width 128)", {}, dict(num_layers=6)),
    "width 256": ("3 layers of width 256 (dff 1024) instead of 4 of 128", {}, dict(num_layers=3, d_model=256, dff=1024)),
    # the second stage: changes on top of the leader of the first (vocab 4k)
    "4k + sampling 0.1": ("vocab 4k, and subword sampling 0.1", dict(vocab_size=4000, sampling_alpha=0.1), {}),
    "4k + smoothing 0.2": ("vocab 4k, and label smoothing 0.2", dict(vocab_size=4000, label_smoothing=0.2), {}),
    "4k + attention dropout 0.1": ("vocab 4k, and attention dropout 0.1", dict(vocab_size=4000, attention_dropout=0.1), {}),
}
# --toy: the same code at toy sizes on the synthetic corpus, for the test suite (its numbers mean nothing)
TOY = (dict(corpus="synthetic/small", vocab_size=400, warmup_steps=20), dict(num_layers=1, d_model=32, num_heads=2, dff=64))


def row_recipe(name: str, toy: bool = False) -> tuple[Recipe, dict]:
    """Row `name`'s recipe and its changes to the preset's model sizes."""
    _, changes, sizes = RUNS[name]
    recipe = CENTER.replace(**changes)
    if toy:  # toy sizes and corpus, the row's other change kept
        recipe = recipe.replace(**{**TOY[0], **{k: v for k, v in changes.items() if k not in ("corpus", "vocab_size")}})
        sizes = {**TOY[1], **{k: v for k, v in sizes.items() if k == "num_layers"}}
    return recipe, sizes


def run_one(name: str, epochs: int, threads: int, toy: bool = False) -> dict:
    """Train and score one row of the study; returns its record."""
    recipe, sizes = row_recipe(name, toy)
    return train_and_score(name, RUNS[name][0], recipe, sizes, epochs, threads)


def run_all(names: list[str], epochs: int, workers: int, out: Path, toy: bool = False) -> dict:
    """Run the rows `workers` at a time, in the order asked, each in its own process; write the
    table to `out` after each."""
    start = time.perf_counter()
    rows, failed = run_rows("benchmarks.small_data_study", names, epochs, workers, toy,
                            lambda rows, failed: write(out, epochs, workers, start, rows, failed),
                            lambda row: f"val beam BLEU {row['val_beam_bleu']:5.2f}  ({row['minutes']:.1f} min)")
    return write(out, epochs, workers, start, rows, failed)


def write(out: Path, epochs: int, workers: int, start: float, rows: dict, failed: dict, earlier: dict | None = None) -> dict:
    """The table so far, written to `out` (after every finished row, so a crash loses no result).
    Rows already in `out` from an earlier call with the same epochs are kept unless run again."""
    from transformer_lib.utils.machine_description import describe_machine

    if earlier is None and out.is_file():
        earlier = json.loads(out.read_text())
    # rows of an earlier call name its machine and date (older rows did not: the record's header did)
    kept = {row["name"]: {"cpu": earlier.get("cpu"), "date": earlier.get("date"), **row}
            for row in (earlier or {}).get("rows", []) if (earlier or {}).get("epochs") == epochs}
    rows = {**kept, **rows}
    result = {"what": __doc__.split("\n\n")[0], "command": f"python -m benchmarks.small_data_study --epochs {epochs} --out benchmarks/{out.name}", "epochs": epochs,
              "workers": workers, "date": datetime.date.today().isoformat(), "machine": describe_machine(),
              "cpu": processor(), "minutes_this_call": round((time.perf_counter() - start) / 60, 1),
              "center": CENTER.to_dict(), "rows": [rows[n] for n in RUNS if n in rows],
              "failed": failed, "not_run": [n for n in planned(epochs) if n not in rows and n not in failed]}
    return save_record(out, result)


def planned(epochs: int) -> list[str]:
    """The rows of the stage run at `epochs`: every first-stage row at 8 epochs (or fewer); at more, the
    second stage, the centre and the 4k leader with the changes on top of it."""
    if epochs <= 8:
        return [name for name in RUNS if not name.startswith("4k + ")]
    return ["center", "vocab 4k"] + [name for name in RUNS if name.startswith("4k + ")]


def main(argv=None) -> dict | None:
    return study_main(argv, __doc__, RUNS, DEFAULT_OUT, run_one, run_all)


if __name__ == "__main__":
    main()
