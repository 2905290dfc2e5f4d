"""Which recipe suits 17,000 short sentence pairs? Short runs, one choice changed at a time.

    python -m benchmarks.recipe_study [--workers 2] [--epochs 8] [--out benchmarks/recipe_study.json]

Every run is the first 8 epochs of a 40-epoch run (its warm-up of 1,000 steps is 10% of 40 epochs
of about 240 updates), with the same seed, on the Tatoeba rus-eng training split, scored on its
*validation* split (never the test split): sacreBLEU with beam search (beam 4, alpha 0.6), plus the
validation loss of each epoch. Row "center" is the recipe under test; every other row changes one
choice of it ("paper" sets back the paper's dropout, warm-up and smoothing, with separate
vocabularies: chapter 7's first recipe).
"+ news" trains on Tatoeba and the WMT news sets together for as many updates as "center" makes, so
it costs about the same minutes. Runs go `--workers` at a time, each on (cores / workers) threads;
the record names the machine and the minutes of each run, and lists the rows that did not finish.
Chapter 7 renders the table. Not part of `make bench`: it takes about an hour on a 2-core CPU.
"""

from __future__ import annotations

import time
from pathlib import Path

from benchmarks import processor
from benchmarks.studies import BEFORE_42, run_rows, save_record, study_main
from transformer_lib.training.recipe import Recipe

DEFAULT_OUT = Path(__file__).resolve().parent / "recipe_study.json"

# The recipe under test, as changes to the library's tl.Recipe: the small preset (4 layers of width 128),
# batches left in bucketing's order and post-LN, as when its record was made (#27; shuffled batches and
# pre-LN came with #29).
CENTER = Recipe(**{**BEFORE_42, "dropout_rate": 0.3}, joint_vocab=True, vocab_size=4000, warmup_steps=1000,
                shuffle_batches=False, norm_first=False)
PAPER = dict(joint_vocab=False, vocab_size=8000, dropout_rate=0.1, warmup_steps=4000)
# name: (what changes, the change to CENTER, the change to the small preset's sizes)
RUNS = {
    "paper": ("the paper's dropout 0.1, warm-up 4000 and smoothing; separate 8k vocabularies", PAPER, {}),
    "center": ("joint 4k vocabulary + shared embeddings, dropout 0.3, warm-up 1,000", {}, {}),
    "separate": ("separate 4k vocabularies, no sharing", dict(joint_vocab=False), {}),
    "joint 2k": ("joint vocabulary of 2,000 pieces", dict(vocab_size=2000), {}),
    "joint 8k": ("joint vocabulary of 8,000 pieces", dict(vocab_size=8000), {}),
    "dropout 0.1": ("dropout 0.1", dict(dropout_rate=0.1), {}),
    "warm-up 4000": ("warm-up 4,000 steps (the paper's)", dict(warmup_steps=4000), {}),
    "smoothing 0.2": ("label smoothing 0.2", dict(label_smoothing=0.2), {}),
    "wide": ("3 layers of width 256 (dff 1024) instead of 4 of 128", {}, dict(num_layers=3, d_model=256, dff=1024)),
    "+ news": ("Tatoeba + WMT news, same number of updates", dict(corpus="tatoeba+newstest/rus-eng"), {}),
}
# --toy: the same code at toy sizes on the synthetic corpus, for the test suite (its numbers mean nothing)
TOY = (dict(corpus="synthetic/small", vocab_size=400, warmup_steps=20), dict(num_layers=1, d_model=32, num_heads=2, dff=64))
SLOW_FIRST = ["wide", "+ news", "paper", "joint 8k"]  # long runs start first, so the workers end together


def row_recipe(name: str, toy: bool = False) -> tuple[Recipe, dict]:
    """Row `name`'s recipe and its changes to the preset's model sizes."""
    _, changes, sizes = RUNS[name]
    recipe = CENTER.replace(**changes)
    if toy:  # toy sizes, but the row's own change kept (the toy corpus replaces "+ news"'s)
        recipe = recipe.replace(**{**TOY[0], **{k: v for k, v in changes.items() if k != "corpus"}})
        sizes = {**TOY[1], **sizes}
    return recipe, sizes


def run_one(name: str, epochs: int, threads: int, toy: bool = False) -> dict:
    """Train and score one row of the study; returns its record."""
    import tensorflow as tf

    tf.config.threading.set_intra_op_parallelism_threads(threads)
    tf.config.threading.set_inter_op_parallelism_threads(threads)
    import keras

    import transformer_lib as tl
    from transformer_lib.training.recipe import training_data

    recipe, sizes = row_recipe(name, toy)
    center, _ = row_recipe("center", toy)
    keras.utils.set_random_seed(center.seed)
    val_pairs = tl.load_parallel_corpus(center.corpus, "validation")
    tokenizers, train_ds, val_ds = training_data(recipe, val_pairs, verbose=False)
    steps = center_steps(center, epochs) if recipe.corpus != center.corpus else int(train_ds.cardinality()) * epochs
    if recipe.corpus != center.corpus:  # same updates as "center": one pass over part of the bigger corpus
        train_ds = train_ds.repeat().take(steps).apply(tf.data.experimental.assert_cardinality(steps))
        epochs = 1
    model = recipe.model(tokenizers, **sizes)
    start = time.perf_counter()
    history = tl.train(model, train_ds, val_ds, epochs=epochs,
                       optimizer=recipe.optimizer(model.config, steps),
                       label_smoothing=recipe.label_smoothing, verbose=0)
    train_minutes = (time.perf_counter() - start) / 60
    score = tl.evaluate_bleu(tl.Translator(model, *tokenizers, max_length=recipe.max_length), val_pairs, verbose=False)
    shape = model.config.pick("num_layers", "d_model", "num_heads", "dff", "dropout_rate")  # the sizes it trained at
    return {"name": name, "change": RUNS[name][0], "recipe": {**recipe.to_dict(), **shape}, "updates": steps,
            "warmup_steps": recipe.warmup(steps), "parameters": tl.count_parameters(model),
            "val_bleu": round(score["bleu"], 2), "val_chrf": round(score["chrf"], 2),
            "val_loss": [round(v, 4) for v in history["val_loss"]],
            "train_minutes": round(train_minutes, 2), "minutes": round((time.perf_counter() - start) / 60, 2),
            "threads": threads, "bleu_signature": score["bleu_signature"]}


def center_steps(center: Recipe, epochs: int) -> int:
    """How many updates "center" makes in `epochs` epochs (its batches per epoch, times epochs)."""
    import transformer_lib as tl

    pairs = tl.load_parallel_corpus(center.corpus, "train")
    tokenizers = tl.train_tokenizers(pairs, center.vocab_size, joint=center.joint_vocab)
    return int(tl.make_batches(pairs, tokenizers, verbose=False, **center.batching()).cardinality()) * epochs


def run_all(names: list[str], epochs: int, workers: int, out: Path, toy: bool = False) -> dict:
    """Run the rows `workers` at a time, each in its own process; write the table to `out`."""
    order = [n for n in SLOW_FIRST if n in names] + [n for n in names if n not in SLOW_FIRST]
    start = time.perf_counter()
    rows, _ = run_rows("benchmarks.recipe_study", order, epochs, workers, toy,
                       lambda rows, failed: _write(out, epochs, workers, start, rows),
                       lambda row: f"val BLEU {row['val_bleu']:5.2f}  ({row['minutes']:.1f} min)")
    return _write(out, epochs, workers, start, rows)


def _write(out: Path, epochs: int, workers: int, start: float, rows: dict) -> dict:
    """The table so far, written to `out` (after every finished row, so a crash loses no result)."""
    from transformer_lib.utils.machine_description import describe_machine

    result = {"what": __doc__.split("\n\n")[0], "epochs": epochs, "workers": workers,
              "machine": describe_machine(), "cpu": processor(), "total_minutes": round((time.perf_counter() - start) / 60, 1),
              "center": CENTER.to_dict(), "rows": [rows[n] for n in RUNS if n in rows], "missing": [n for n in RUNS if n not in rows]}
    return save_record(out, result)


def main(argv=None) -> dict | None:
    return study_main(argv, __doc__, RUNS, DEFAULT_OUT, run_one, run_all)


if __name__ == "__main__":
    main()
