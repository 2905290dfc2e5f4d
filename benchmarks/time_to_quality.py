"""Minutes of training until the validation BLEU first reaches 20: our recipe against the TF tutorial's.

    python -m benchmarks.time_to_quality [--minutes 60] [--target 20] [--then 25] [--recipes ours,"TF tutorial"]
                                         [--out benchmarks/time_to_quality.json]

Every recipe is a change to the library's default recipe as it was when the record was made
(`transformer_lib.Recipe()` with `studies.BEFORE_42`: issue #42 later changed the corpus, the epochs,
dropout, label smoothing and the average, not the batches or the schedule this study compares), "ours",
named in `RECIPES`; all train the same model (the `small` preset: 4 layers, d_model 128, 8 heads,
dff 512, which is also the TensorFlow Transformer tutorial's size) on the same pairs (Tatoeba
rus-eng, leak-free training split, separate 8,000-piece vocabularies, sequences of at most 64
tokens) with Adam (0.9/0.98/1e-9) and §5.3's schedule, from the same seed, one after the other in
one process. What the TF tutorial does differently: `padded_batch` of 64 sentences in shuffled
order (padded to the longest), no label smoothing, the paper's warm-up of 4,000 updates. The
ablation of issue #29 (`recipe_ablation.json`) ran the rows that change ours as it was before
(`BEFORE`) one setting at a time.

After every epoch the whole validation split is translated greedily and scored with sacreBLEU; the
clock counts training (and the validation loss), not that scoring. A run stops when it has reached
the target (and `--then`, a higher one, if given) or has trained `--minutes`. The record gives each
run's recipe, updates per epoch, padding share, curve and minutes to each target (None: not within
the budget), and the verdict. The default comparison takes about 35 minutes (34 in the last record), more than `make bench`'s
twenty minutes: `make bench` shows its last record, `make bench-quality` measures it again (then
the whole bench), and `python -m benchmarks --quality-from-record` puts the last record's row and
ratio into `benchmarks/results.json` without measuring anything else.
"""

from __future__ import annotations

import argparse
import datetime
import json
import time
from pathlib import Path

from benchmarks import processor
from benchmarks.studies import BEFORE_42

DEFAULT_OUT = Path(__file__).resolve().parent / "time_to_quality.json"
# Ours before issue #29 (the settings the ablation changes, pinned, so its rows keep their meaning
# when the defaults change): ~1,024-token bucketed batches in the order bucketing gives them, the
# paper's warm-up of 4,000 updates and its peak, label smoothing 0.1, post-LN.
BEFORE = dict(batch_tokens=1024, batch_size=None, bucketing=True, bucket_growth=1.1, shuffle_batches=False,
              warmup_steps=4000, peak_rate=None, label_smoothing=0.1, norm_first=False)
# Each recipe: its changes to `transformer_lib.Recipe()` (the library's default recipe, "ours").
RECIPES = {
    "ours": {},
    "TF tutorial": dict(BEFORE, batch_size=64, batch_tokens=None, bucketing=False, label_smoothing=0.0),
    "ours before #29": BEFORE,
    # one difference at a time (--recipes): which of the two makes the tutorial's recipe faster?
    "ours without label smoothing": dict(BEFORE, label_smoothing=0.0),
    # the ablation of #29: ours before it, one change at a time
    "shuffled batches": dict(BEFORE, shuffle_batches=True),
    "shuffled batches + 64 sentences": dict(BEFORE, shuffle_batches=True, batch_size=64, batch_tokens=None),
    "shuffled batches + wider buckets": dict(BEFORE, shuffle_batches=True, bucket_growth=1.3),
    "shuffled batches + 512 tokens": dict(BEFORE, shuffle_batches=True, batch_tokens=512),
    "shuffled batches + 256 tokens": dict(BEFORE, shuffle_batches=True, batch_tokens=256),
    "shuffled batches + 512 tokens + no label smoothing": dict(BEFORE, shuffle_batches=True, batch_tokens=512,
                                                               label_smoothing=0.0),
    "shuffled batches + 512 tokens + warm-up 1000 at peak 0.0014": dict(BEFORE, shuffle_batches=True, batch_tokens=512,
                                                                         warmup_steps=1000, peak_rate=0.0014),
    "shuffled batches + warm-up 1000": dict(BEFORE, shuffle_batches=True, warmup_steps=1000),
    "shuffled batches + warm-up 1000 at peak 0.0014": dict(BEFORE, shuffle_batches=True, warmup_steps=1000,
                                                           peak_rate=0.0014),
    "shuffled batches + pre-LN": dict(BEFORE, shuffle_batches=True, norm_first=True),
    # the winner, today's default: a short warm-up to a high peak, which pre-LN trains through
    "shuffled batches + pre-LN + warm-up 1000": dict(BEFORE, shuffle_batches=True, norm_first=True, warmup_steps=1000),
}
COMPARED = ("ours", "TF tutorial")  # what a run measures by default, and make bench's row
# The size all compare at is the default recipe's (Tatoeba rus-eng, `small`, 8,000 pieces, 64 tokens);
# --toy: the same code at toy sizes on the synthetic corpus, for the test suite (its numbers mean nothing).
TOY = dict(corpus="synthetic/small", preset="tiny", vocab_size=400, max_length=24, warmup_steps=50)


class _Reached(Exception):
    """Raised from the per-epoch score to end a run: the last target or the time budget is reached."""


class TrainingClock:
    """The `score=` of `tl.train`: greedy BLEU after each epoch, on a clock that leaves the scoring
    out. `reached[target]`: the minutes of training when the BLEU first reached that target."""

    def __init__(self, bleu, targets, budget_seconds: float):
        self.bleu, self.targets, self.budget = bleu, sorted(targets), budget_seconds
        self.seconds, self.curve, self.reached = 0.0, [], {}
        self.started = time.perf_counter()

    def __call__(self, model) -> float:
        self.seconds += time.perf_counter() - self.started  # this epoch's training and validation loss
        score = float(self.bleu(model))
        self.curve.append({"epoch": len(self.curve) + 1, "minutes": round(self.seconds / 60, 2), "bleu": round(score, 2)})
        print(f"  {self.curve[-1]}", flush=True)  # progress of a run that takes up to an hour
        self.started = time.perf_counter()
        for target in self.targets:
            if score >= target and target not in self.reached:
                self.reached[target] = self.seconds / 60
        if len(self.reached) == len(self.targets) or self.seconds >= self.budget:
            raise _Reached
        return score


def make_recipe(name: str, toy: bool = False):
    """The named recipe as a `transformer_lib.Recipe` (at toy size with `toy`)."""
    from transformer_lib.training.recipe import Recipe

    # the defaults of its record's time (before #42), the row's changes, toy sizes win
    return Recipe().replace(**{**BEFORE_42, **RECIPES[name], **(TOY if toy else {})})


def run_recipe(name: str, targets, minutes: float, toy: bool = False) -> dict:
    """Train one recipe until its BLEU reaches every target or the budget is spent; returns its record."""
    import keras

    import transformer_lib as tl
    from transformer_lib.training.recipe import training_data
    from transformer_lib.training.selection import bleu_score

    recipe = make_recipe(name, toy)
    keras.utils.set_random_seed(recipe.seed)
    val_pairs = tl.load_parallel_corpus(recipe.corpus, "validation")
    tokenizers, train_ds, val_ds = training_data(recipe, val_pairs, verbose=False)
    model = recipe.model(tokenizers)
    clock = TrainingClock(bleu_score(tokenizers, val_pairs, recipe.max_length), targets, minutes * 60)
    updates = int(train_ds.cardinality())
    optimizer = recipe.optimizer(model.config.d_model, updates * recipe.epochs)
    try:
        tl.train(model, train_ds, val_ds, epochs=100_000, optimizer=optimizer,
                 label_smoothing=recipe.label_smoothing, score=clock, verbose=0)
    except _Reached:
        pass
    first = clock.reached.get(min(targets))
    print(f"{name}: {clock.curve[-1]}; BLEU {min(targets):g} after {'-' if first is None else f'{first:.1f}'} min",
          flush=True)
    return {"changes": RECIPES[name], "recipe": recipe.to_dict(), "updates_per_epoch": updates,
            "padding": round(tl.padding_fraction(train_ds.take(updates)), 4),
            "minutes_to_target": None if first is None else round(first, 2),
            "minutes_to": {f"{target:g}": None if target not in clock.reached else round(clock.reached[target], 2)
                           for target in targets},
            "curve": clock.curve}


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
    parser.add_argument("--then", type=float, default=None,
                        help="a second, higher BLEU to go on to (within the budget), e.g. 25")
    parser.add_argument("--out", type=Path, default=DEFAULT_OUT)
    parser.add_argument("--toy", action="store_true", help="toy sizes on the synthetic corpus (for the tests)")
    parser.add_argument("--recipes", type=lambda text: [name.strip() for name in text.split(",")],
                        default=list(COMPARED), help=f"comma-separated, from: {', '.join(RECIPES)}")
    args = parser.parse_args(argv)
    unknown = [name for name in args.recipes if name not in RECIPES]
    if unknown:
        parser.error(f"unknown recipe(s) {', '.join(map(repr, unknown))}: choose from {', '.join(RECIPES)}")
    if args.then is not None and args.then <= args.target:
        parser.error(f"--then {args.then:g} must be higher than --target {args.target:g}")

    import tensorflow as tf

    targets = [args.target] + ([] if args.then is None else [args.then])
    started = time.perf_counter()
    runs = {name: run_recipe(name, targets, args.minutes, args.toy) for name in args.recipes}
    verdict = compare(runs, args.target, args.minutes)
    record = {"date": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
              "default_recipe": make_recipe("ours", args.toy).to_dict(), "target_bleu": args.target,
              "targets": targets, "budget_minutes": args.minutes, "runs": runs,
              "verdict": verdict, "machine": processor(), "tensorflow": tf.__version__,
              "total_minutes": round((time.perf_counter() - started) / 60, 1), "toy": args.toy}
    args.out.write_text(json.dumps(record, indent=2) + "\n")
    print(verdict)
    return record


if __name__ == "__main__":
    main()
