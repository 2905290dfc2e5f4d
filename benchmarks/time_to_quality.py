"""Minutes of training until the validation BLEU first reaches 20: our recipe against the TF tutorial's.

    python -m benchmarks.time_to_quality [--minutes 60] [--target 20] [--out benchmarks/time_to_quality.json]

Both runs train the same model (the `small` preset: 4 layers, d_model 128, 8 heads, dff 512, which
is also the TensorFlow Transformer tutorial's size) on the same pairs (Tatoeba rus-eng, leak-free
training split, separate 8,000-piece vocabularies, sequences of at most 64 tokens) with the same
optimizer (Adam 0.9/0.98/1e-9, §5.3's schedule, warm-up 4,000 steps) and seed, one after the
other in one process. What differs is what the tutorial does differently:

- ours: batches of about 1,024 tokens of similar length (`make_batches`' bucketing), label smoothing 0.1;
- tutorial: `padded_batch` of 64 sentences in shuffled order (padded to the longest), no label smoothing.

After every epoch the whole validation split is translated greedily and scored with sacreBLEU; the
clock counts training (and the validation loss), not that scoring. A run stops when it reaches the
target or has trained `--minutes`. The record gives each run's curve and its minutes to the target
(None: not within the budget), and their ratio. It takes up to twice `--minutes` (two hours with
the defaults), more than `make bench`'s twenty minutes: `make bench` shows its last record, and
`make bench-quality` measures it again (then the whole bench).
"""

from __future__ import annotations

import argparse
import datetime
import json
import time
from pathlib import Path

from benchmarks import processor

DEFAULT_OUT = Path(__file__).resolve().parent / "time_to_quality.json"
RECIPES = {
    "ours": dict(batching=dict(batch_tokens=1024), label_smoothing=0.1),
    "TF tutorial": dict(batching=dict(batch_size=64, bucketing=False), label_smoothing=0.0),
    # one difference at a time (--recipes): which of the two makes the tutorial's recipe faster?
    "ours without label smoothing": dict(batching=dict(batch_tokens=1024), label_smoothing=0.0),
}
COMPARED = ("ours", "TF tutorial")  # what a run measures by default, and make bench's row
FULL = dict(corpus="tatoeba/rus-eng", preset="small", vocab_size=8000, max_length=64, warmup_steps=4000)
# --toy: the same code at toy sizes on the synthetic corpus, for the test suite (its numbers mean nothing)
TOY = dict(corpus="synthetic", preset="tiny", vocab_size=400, max_length=24, warmup_steps=50)


class _Reached(Exception):
    """Raised from the per-epoch score to end a run: the target or the time budget is reached."""


class TrainingClock:
    """The `score=` of `tl.train`: greedy BLEU after each epoch, on a clock that leaves the scoring out."""

    def __init__(self, bleu, target: float, budget_seconds: float):
        self.bleu, self.target, self.budget = bleu, target, budget_seconds
        self.seconds, self.curve, self.reached = 0.0, [], None
        self.started = time.perf_counter()

    def __call__(self, model) -> float:
        self.seconds += time.perf_counter() - self.started  # this epoch's training and validation loss
        score = float(self.bleu(model))
        self.curve.append({"epoch": len(self.curve) + 1, "minutes": round(self.seconds / 60, 2), "bleu": round(score, 2)})
        print(f"  {self.curve[-1]}", flush=True)  # progress of a run that takes up to an hour
        self.started = time.perf_counter()
        if score >= self.target:
            self.reached = self.seconds / 60
            raise _Reached
        if self.seconds >= self.budget:
            raise _Reached
        return score


def run_recipe(name: str, config: dict, target: float, minutes: float, seed: int = 0) -> dict:
    """Train one recipe until the target or the budget; returns its record."""
    import keras

    import transformer_lib as tl
    from transformer_lib.recipe import training_data
    from transformer_lib.selection import bleu_score

    recipe = RECIPES[name]
    keras.utils.set_random_seed(seed)
    val_pairs = tl.load_parallel_corpus(config["corpus"], "validation")
    batching = {"batch_tokens": None, **recipe["batching"]}  # the tutorial's recipe counts sentences instead
    tokenizers, train_ds, val_ds = training_data(config["corpus"], val_pairs, config["vocab_size"], False,
                                                 max_length=config["max_length"], seed=seed, verbose=False, **batching)
    model = tl.Transformer.from_preset(config["preset"], tokenizers[0].vocab_size, tokenizers[1].vocab_size,
                                       max_length=config["max_length"])
    clock = TrainingClock(bleu_score(tokenizers, val_pairs, config["max_length"]), target, minutes * 60)
    optimizer = tl.make_optimizer(model.hyperparameters["d_model"], config["warmup_steps"])
    try:
        tl.train(model, train_ds, val_ds, epochs=100_000, optimizer=optimizer,
                 label_smoothing=recipe["label_smoothing"], score=clock, verbose=0)
    except _Reached:
        pass
    print(f"{name}: {clock.curve[-1]}; target reached after "
          f"{'-' if clock.reached is None else f'{clock.reached:.1f}'} min", flush=True)
    return {"recipe": recipe, "updates_per_epoch": int(train_ds.cardinality()),
            "minutes_to_target": None if clock.reached is None else round(clock.reached, 2), "curve": clock.curve}


def compare(runs: dict, target: float, budget: float) -> str:
    """One line: which recipe reached the target first and how many times as fast as each other one
    (a lower bound for one that did not get there within the budget), or that none did."""
    reached = {name: run["minutes_to_target"] for name, run in runs.items() if run["minutes_to_target"] is not None}
    if not reached:
        who = "none reached" if len(runs) > 1 else f"{next(iter(runs))} did not reach"
        return f"{who} BLEU {target:g} within {budget:g} min"
    first = min(reached, key=reached.get)
    if len(runs) == 1:
        return f"{first} reached BLEU {target:g} in {reached[first]:.1f} min"
    parts = [f"{first} reached BLEU {target:g} first, in {reached[first]:.1f} min"]
    for name in runs:
        if name in reached and name != first:
            parts.append(f"{reached[name] / reached[first]:.2f}x as fast as {name}")
        elif name not in reached:
            parts.append(f"more than {budget / reached[first]:.2f}x as fast as {name} (not within {budget:g} min)")
    return "; ".join(parts)


def main(argv=None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--minutes", type=float, default=60.0, help="training budget of each recipe")
    parser.add_argument("--target", type=float, default=20.0, help="validation BLEU (greedy) to reach")
    parser.add_argument("--out", type=Path, default=DEFAULT_OUT)
    parser.add_argument("--toy", action="store_true", help="toy sizes on the synthetic corpus (for the tests)")
    parser.add_argument("--recipes", type=lambda text: [name.strip() for name in text.split(",")],
                        default=list(COMPARED), help=f"comma-separated, from: {', '.join(RECIPES)}")
    args = parser.parse_args(argv)
    unknown = [name for name in args.recipes if name not in RECIPES]
    if unknown:
        parser.error(f"unknown recipe(s) {', '.join(map(repr, unknown))}: choose from {', '.join(RECIPES)}")

    import tensorflow as tf

    config = TOY if args.toy else FULL
    started = time.perf_counter()
    runs = {name: run_recipe(name, config, args.target, args.minutes) for name in args.recipes}
    verdict = compare(runs, args.target, args.minutes)
    record = {"date": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
              "config": config, "target_bleu": args.target, "budget_minutes": args.minutes, "runs": runs,
              "verdict": verdict, "machine": processor(), "tensorflow": tf.__version__,
              "total_minutes": round((time.perf_counter() - started) / 60, 1), "toy": args.toy}
    args.out.write_text(json.dumps(record, indent=2) + "\n")
    print(verdict)
    return record


if __name__ == "__main__":
    main()
