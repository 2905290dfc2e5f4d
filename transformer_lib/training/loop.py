"""Training as in §5.3-5.4: Adam with the warm-up schedule, label smoothing, a masked loss
(the objective itself, backend-neutral, is in `objective.py`).

    lrate = d_model^-0.5 * min(step_num^-0.5, step_num * warmup_steps^-1.5)        (§5.3)

`train` is a small custom loop rather than `model.fit`, because it must do three things `fit`
does not: checkpoint the *data iterator* with the model and optimizer (so a resumed run sees
exactly the batches an uninterrupted one would), average the loss over the real tokens of the
global batch under any `tf.distribute` strategy, and scale the loss under mixed precision.
"""

from __future__ import annotations

import time
from pathlib import Path

import keras
import tensorflow as tf
from keras import ops

from transformer_lib.utils.checks import check_token_ids, require_positive_int
from transformer_lib.training.checkpoints import make_checkpoint, resume, save_epoch
from transformer_lib.training.objective import make_optimizer, masked_accuracy, masked_loss, real_tokens
from transformer_lib.training.run_lock import run_lock
from transformer_lib.training.selection import repair_kept_weights


# `masked_loss` compiled by XLA (`jit_compile=True`): its passes over the (batch, len, vocab) logits
# (log-softmax, the label's entry, the mean, and their gradients) fuse into a few loops, and a step of
# chapter 7's recipe takes ~11% less time on a CPU (`benchmarks/compiled_loss.json`). Only the loss:
# XLA compiles once per batch shape, ~0.5 s for the loss but ~7 s for the whole step (benchmarks/results.json).
_xla_loss = tf.function(masked_loss, jit_compile=True, reduce_retracing=True)


def compiled_loss(labels, logits, label_smoothing: float = 0.1, tokens=None):
    """`masked_loss`, compiled by XLA. Its labels are checked first where their values are known (an
    eager call): inside XLA nothing could refuse an id outside the vocabulary."""
    check_token_ids("labels", labels, logits.shape[-1])
    return _xla_loss(labels, logits, label_smoothing, tokens)


def train_step(model, optimizer, batch, label_smoothing: float = 0.1, tokens=None):
    """One update of §5.3-5.4: teacher-forced forward pass, masked label-smoothed loss, Adam.

    Args:
        batch: `((source_ids, target_in), target_out)`, one batch of `make_batches`.
        tokens: how many real target tokens the loss is averaged over: this batch's by default; under
            a `tf.distribute` strategy the global batch's, so that the replicas' losses add up to its mean.

    Returns:
        `(loss, accuracy)` of the batch, float32 scalars.
    """
    (source, target_in), target_out = batch
    with tf.GradientTape() as tape:
        logits = model((source, target_in), training=True)  # (batch, tgt_len, vocab): predicts target_out
        loss = compiled_loss(target_out, logits, label_smoothing, tokens)  # padding never counts
        scaled = optimizer.scale_loss(loss)  # mixed precision: scaled up so float16 gradients survive
    gradients = tape.gradient(scaled, model.trainable_variables)
    optimizer.apply_gradients(zip(gradients, model.trainable_variables))
    return loss, masked_accuracy(target_out, logits, tokens)


def evaluate_step(model, batch, label_smoothing: float = 0.1, tokens=None):
    """`train_step` without the update (and without dropout): the batch's `(loss, accuracy)`."""
    (source, target_in), target_out = batch
    logits = model((source, target_in), training=False)
    return compiled_loss(target_out, logits, label_smoothing, tokens), masked_accuracy(target_out, logits, tokens)


def train(
    model: keras.Model,
    train_ds: tf.data.Dataset,
    val_ds: tf.data.Dataset | None = None,
    epochs: int = 10,
    optimizer: keras.optimizers.Optimizer | None = None,
    label_smoothing: float = 0.1,
    checkpoint_dir: str | Path | None = None,
    max_to_keep: int = 3,
    keep_weights: int = 0,
    score=None,
    strategy: tf.distribute.Strategy | None = None,
    jit_compile: bool = False,
    verbose: int = 1,
) -> dict[str, list[float]]:
    """Train `model` with `train_step` for `epochs`, resuming from `checkpoint_dir` if it holds a run.

    Args:
        model: a `Transformer`. Under a strategy, create it inside `strategy.scope()`. For mixed
            precision, call `keras.mixed_precision.set_global_policy("mixed_float16")` before
            creating it; `train` then scales the loss.
        train_ds, val_ds: `((source_ids, target_in), target_out)` batches with a known length.
        epochs: total epochs, counting those done before a resume.
        optimizer: default `make_optimizer(d_model)` (Adam and the §5.3 schedule); under a
            strategy, create it inside `strategy.scope()`.
        label_smoothing: eps_ls of §5.4.
        checkpoint_dir: a checkpoint after every epoch (the last `max_to_keep` kept); a later
            call with the same folder resumes exactly (see `checkpoints.make_checkpoint`), from the
            newest checkpoint that reads back whole. One run at a time: a second `train` into the
            folder while this one works there is refused (`run_lock`).
        keep_weights: keep the weights of the last `keep_weights` epochs and of the best one in
            `checkpoint_dir/weights`, for `selection.select_weights`.
        score: `score(model) -> float`, higher is better (e.g. `selection.bleu_score`): after each
            validation, `val_score` in the history; it defines "best" (default: lowest `val_loss`).
        strategy: a `tf.distribute` strategy; default: the current one, so the same call runs on
            a CPU, several GPUs (`MirroredStrategy`), several hosts or a TPU.
        jit_compile: compile the training step with XLA.
        verbose: 1 shows a progress bar per epoch (for a terminal or a notebook), 2 one line per
            epoch (`epoch_line`, for a log file), 0 nothing.

    Returns:
        History as data, for plotting: lists `epoch`, `loss`, `accuracy`, `seconds`, with `val_ds`
        `val_loss`, `val_accuracy` (and `val_score`), one entry per epoch, earlier runs' included
        when it resumes (kept in `checkpoint_dir/history.json`).
    """
    require_positive_int("epochs", epochs)
    if keep_weights:
        require_positive_int("keep_weights", keep_weights)
    if (keep_weights or score is not None) and (val_ds is None or (keep_weights and checkpoint_dir is None)):
        raise ValueError("keep_weights and score judge epochs on val_ds (and keep_weights writes into "
                         "checkpoint_dir): give those too, or leave keep_weights and score out.")
    steps = _known_length(train_ds)
    with run_lock(checkpoint_dir):  # None: a run that saves nothing locks nothing
        strategy = strategy or tf.distribute.get_strategy()
        optimizer = _prepared_optimizer(model, optimizer, strategy)
        epoch, iterator, checkpoint = _training_state(model, optimizer, train_ds, strategy)
        validation = ("val_loss", "val_accuracy", *(("val_score",) if score else ())) if val_ds is not None else ()
        history = {name: [] for name in ("epoch", "loss", "accuracy", "seconds", *validation)}
        manager = None
        if checkpoint_dir is not None:
            manager, history = resume(checkpoint, Path(checkpoint_dir), max_to_keep, history, verbose)
            if keep_weights and history["epoch"]:  # resumed: what select_weights will need must be intact
                repair_kept_weights(model, Path(checkpoint_dir), history)
            if verbose == 2:  # the log of a resumed run begins with the epochs done before, as they were
                for i, number in enumerate(history["epoch"]):
                    results = {name: values[i] for name, values in history.items() if name != "epoch"}
                    print(epoch_line(number, epochs, steps, results) + "  (before this call)")
        val_batches = None if val_ds is None else strategy.experimental_distribute_dataset(val_ds)  # for every epoch
        update, evaluate = _distributed_steps(model, optimizer, strategy, label_smoothing, jit_compile, val_batches)
        while int(epoch.numpy()) < epochs:
            if verbose == 1:
                print(f"Epoch {int(epoch.numpy()) + 1}/{epochs}")
            results = _one_epoch(update, evaluate, iterator, steps, val_batches, verbose == 1)
            if "val_score" in history:
                results["val_score"] = float(score(model))
                if verbose == 1:
                    print(f"  val_score {results['val_score']:.2f}")
            if verbose == 2:
                print(epoch_line(int(epoch.numpy()) + 1, epochs, steps, results), flush=True)
            for name, value in {"epoch": int(epoch.numpy()) + 1, **results}.items():
                history[name].append(value)
            epoch.assign_add(1)
            if manager is not None:
                save_epoch(manager, model, history, keep_weights)
        return history


def _training_state(model, optimizer, train_ds, strategy):
    """The epoch counter, the data iterator and a checkpoint of everything, under `strategy`."""
    with strategy.scope():
        epoch = tf.Variable(0, dtype=tf.int64, trainable=False, name="epoch")
        iterator = iter(strategy.experimental_distribute_dataset(train_ds.repeat()))
        _build(model, optimizer, train_ds)
        return epoch, iterator, make_checkpoint(model, optimizer, epoch, iterator)


def epoch_line(number: int, epochs: int, steps: int, results: dict[str, float]) -> str:
    """One epoch's results on one line of plain text: what `verbose=2` prints."""
    values = "  ".join(f"{name} {value:.4f}" if "score" not in name else f"{name} {value:.2f}"
                       for name, value in results.items() if name != "seconds")
    return f"Epoch {number}/{epochs}: {steps} updates in {results['seconds']:.0f} s  {values}"


def _one_epoch(update, evaluate, iterator, steps: int, val_batches, verbose: int) -> dict[str, float]:
    """`steps` updates with a progress bar, then the validation: this epoch's entries of the history
    (means over batches, each batch weighted equally)."""
    start = time.perf_counter()
    progress = keras.utils.Progbar(steps, verbose=verbose, stateful_metrics=["loss", "accuracy"])
    loss_sum, accuracy_sum = 0.0, 0.0
    for step in range(steps):
        loss, accuracy = update(iterator)
        loss_sum, accuracy_sum = loss_sum + float(loss), accuracy_sum + float(accuracy)
        progress.update(step + 1, [("loss", loss_sum / (step + 1)), ("accuracy", accuracy_sum / (step + 1))])
    results = {"loss": loss_sum / steps, "accuracy": accuracy_sum / steps}
    if val_batches is not None:
        results.update(zip(("val_loss", "val_accuracy"), evaluate_loss(val_batches, evaluate)))
        if verbose:
            print(f"  val_loss {results['val_loss']:.4f}  val_accuracy {results['val_accuracy']:.4f}")
    return {**results, "seconds": time.perf_counter() - start}


def _known_length(dataset: tf.data.Dataset) -> int:
    steps = int(dataset.cardinality())
    if steps <= 0:
        raise ValueError(
            "train_ds must have a known, finite number of batches (make_batches declares it); "
            "use dataset.apply(tf.data.experimental.assert_cardinality(n)) for a dataset of your own."
        )
    return steps


def _prepared_optimizer(model, optimizer, strategy):
    """The optimizer to use: the default one if none is given, wrapped for loss scaling under mixed precision."""
    if optimizer is not None and getattr(optimizer, "_distribution_strategy", strategy) is not strategy:
        raise ValueError("Create the optimizer inside `with strategy.scope():`, like the model.")
    with strategy.scope():
        optimizer = optimizer or make_optimizer(model.config.d_model)
        if model.dtype_policy.name == "mixed_float16" and not isinstance(optimizer, keras.optimizers.LossScaleOptimizer):
            optimizer = keras.optimizers.LossScaleOptimizer(optimizer)
    return optimizer


def _distributed_steps(model, optimizer, strategy, label_smoothing, jit_compile, val_batches=None):
    """`train_step` and `evaluate_step` run on every replica of `strategy`, as TensorFlow graphs
    (`jit_compile`: each replica's step compiled by XLA). They return the global batch's loss and accuracy.
    The evaluation graph is traced once, for `val_batches` (the validation set, distributed) of any shape."""
    def replica_update(batch, tokens):
        return train_step(model, optimizer, batch, label_smoothing, tokens)

    def replica_evaluation(batch, tokens):
        return evaluate_step(model, batch, label_smoothing, tokens)

    if jit_compile:
        replica_update = tf.function(replica_update, jit_compile=True, reduce_retracing=True)
        replica_evaluation = tf.function(replica_evaluation, jit_compile=True, reduce_retracing=True)

    def on_replicas(step, batch):
        real = strategy.run(lambda b: ops.sum(real_tokens(b[1])), args=(batch,))
        tokens = strategy.reduce("sum", real, axis=None)  # real target tokens in the global batch
        loss, accuracy = strategy.run(step, args=(batch, tokens))
        return strategy.reduce("sum", loss, axis=None), strategy.reduce("sum", accuracy, axis=None)

    update = tf.function(lambda iterator: on_replicas(replica_update, next(iterator)), reduce_retracing=True)
    any_batch = None if val_batches is None else [val_batches.element_spec]
    evaluate = tf.function(lambda batch: on_replicas(replica_evaluation, batch), input_signature=any_batch,
                           reduce_retracing=True)
    return update, evaluate


def evaluate_loss(batches, evaluate) -> tuple[float, float]:
    """Mean loss and accuracy over `batches`, a dataset distributed by the strategy (each batch weighted equally)."""
    losses, accuracies = [], []
    for batch in batches:
        loss, accuracy = evaluate(batch)
        losses.append(float(loss))
        accuracies.append(float(accuracy))
    return sum(losses) / len(losses), sum(accuracies) / len(accuracies)


def _build(model: keras.Model, optimizer: keras.optimizers.Optimizer, dataset: tf.data.Dataset) -> None:
    """Create the model's and the optimizer's variables before a checkpoint is restored into them.

    One batch is read whether or not the model is built: a shuffled dataset draws a new order each time
    it is read, so the run's order of batches does not depend on whether the caller built the model."""
    (source, target_in), _ = next(iter(dataset.take(1)))
    if not model.built:
        model((source[:1], target_in[:1]), training=False)
    optimizer.build(model.trainable_variables)

