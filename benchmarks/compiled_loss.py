"""How much of a training step the loss costs, plain or compiled by XLA (`tl.training.loop.compiled_loss`).

Chapter 7's recipe (`tl.Recipe()`) on its own training batches: the same model takes turns of
`--steps` updates with each loss (`masked_loss` as plain TensorFlow ops, or the same function under
`tf.function(jit_compile=True)`), `--rounds` times, so that both see the same machine load. Before
timing, each variant has met every batch shape once (XLA compiles once per shape; the seconds that
costs are reported apart). Also: the loss alone (forward and gradient) on one batch's logits, and
the largest difference between the two losses' values and gradients.

    python -m benchmarks.compiled_loss            # writes benchmarks/compiled_loss.json
"""

from __future__ import annotations

import argparse
import datetime
import json
import statistics
import time
from pathlib import Path

import keras
import numpy as np
import tensorflow as tf

import transformer_lib as tl
from transformer_lib.training import loop as training
from transformer_lib.training.objective import masked_loss
from transformer_lib.training.recipe import Recipe, training_data
from transformer_lib.utils.machine_description import describe_machine

OUT = Path(__file__).with_name("compiled_loss.json")


def step_function(model, optimizer, loss, label_smoothing):
    """`tl.train_step` as a graph, tracing with `loss` in the place of `training.compiled_loss`."""
    def traced(batch):
        kept, training.compiled_loss = training.compiled_loss, loss
        try:
            return training.train_step(model, optimizer, batch, label_smoothing)
        finally:
            training.compiled_loss = kept
    function = tf.function(traced, reduce_retracing=True)
    return function


def loss_alone(loss, logits, labels, label_smoothing, repeats: int = 30):
    """Milliseconds for the loss and its gradient with respect to `logits`, and their values."""
    @tf.function
    def both(logits):
        with tf.GradientTape() as tape:
            tape.watch(logits)
            value = loss(labels, logits, label_smoothing)
        return value, tape.gradient(value, logits)
    both(logits)
    start = time.perf_counter()
    for _ in range(repeats):
        value, gradient = both(logits)
    return (time.perf_counter() - start) / repeats * 1000, float(value), gradient.numpy()


def main(argv=None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--steps", type=int, default=60, help="updates per turn")
    parser.add_argument("--rounds", type=int, default=4, help="turns of each variant")
    parser.add_argument("--out", type=Path, default=OUT)
    args = parser.parse_args(argv)

    recipe = Recipe()
    keras.utils.set_random_seed(recipe.seed)
    val_pairs = tl.load_parallel_corpus(recipe.corpus, "validation")
    tokenizers, train_ds, _ = training_data(recipe, val_pairs, verbose=False)
    batches = list(train_ds)  # one epoch: every batch shape of the run
    model = recipe.model(tokenizers)
    optimizer = recipe.optimizer(model.config.d_model, len(batches) * recipe.epochs)
    variants = {"plain": masked_loss, "compiled": training.compiled_loss}
    steps = {name: step_function(model, optimizer, loss, recipe.label_smoothing) for name, loss in variants.items()}

    first_pass = {}
    for name, step in steps.items():  # every shape traced (and, compiled, built by XLA) before timing
        start = time.perf_counter()
        for batch in batches:
            step(batch)
        first_pass[name] = time.perf_counter() - start

    per_step = {name: [] for name in steps}
    for round_ in range(args.rounds):
        for name, step in steps.items():
            chosen = [batches[(round_ * args.steps + i) % len(batches)] for i in range(args.steps)]
            start = time.perf_counter()
            for batch in chosen:
                float(step(batch)[0])
            per_step[name].append((time.perf_counter() - start) / args.steps * 1000)

    (source, target_in), target_out = max(batches, key=lambda b: int(tf.size(b[1])))
    logits = model((source, target_in), training=False)
    alone = {name: loss_alone(loss, logits, target_out, recipe.label_smoothing) for name, loss in variants.items()}
    ms = {name: statistics.median(values) for name, values in per_step.items()}
    record = {
        "what": "one training step of chapter 7's recipe with the plain and the XLA-compiled masked_loss, "
                "turn by turn on the same model and batches",
        "command": "python -m benchmarks.compiled_loss",
        "date": datetime.date.today().isoformat(),
        "machine": describe_machine(),
        "threads": "TensorFlow's default (all cores)",
        "batches_per_epoch": len(batches),
        "batch_shapes": len({(tuple(b[0][0].shape), tuple(b[0][1].shape)) for b in batches}),
        "first_epoch_seconds_with_tracing": {name: round(value, 1) for name, value in first_pass.items()},
        "ms_per_step_each_round": {name: [round(v, 1) for v in values] for name, values in per_step.items()},
        "ms_per_step_median": {name: round(value, 1) for name, value in ms.items()},
        "step_time_ratio_compiled_over_plain": round(ms["compiled"] / ms["plain"], 3),
        "loss_alone": {"logits_shape": list(logits.shape),
                       **{f"{name}_ms": round(alone[name][0], 1) for name in variants},
                       "value_difference": abs(alone["plain"][1] - alone["compiled"][1]),
                       "largest_gradient_difference": float(np.max(np.abs(alone["plain"][2] - alone["compiled"][2])))},
    }
    args.out.write_text(json.dumps(record, indent=1) + "\n")
    print(json.dumps(record, indent=1))
    return record


if __name__ == "__main__":
    main()
