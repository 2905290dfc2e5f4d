"""Checks for chapter 7: the learning rate of §5.3, one training step, and the step as a Keras
model's `train_step`, so that `model.fit` runs it."""

from __future__ import annotations

import keras
import numpy as np

from transformer_lib.book.exercises._core import call_answer, compare, exercise


class BatchLogs(keras.callbacks.Callback):
    """Keeps the logs of every training batch."""

    def __init__(self):
        super().__init__()
        self.logs: list[dict] = []

    def on_train_batch_end(self, batch, logs=None):
        self.logs.append(dict(logs or {}))


def reference_rate(step_num, d_model, warmup_steps):
    """§5.3 in float64, step_num counted from 1 as in the paper."""
    step_num = np.asarray(step_num, dtype=float)
    return d_model**-0.5 * np.minimum(step_num**-0.5, step_num * warmup_steps**-1.5)


@exercise("the learning rate", "a linear warm-up to (d_model * warmup_steps)^-0.5, then decay as 1/sqrt(step).")
def check_schedule(fn) -> None:
    """Exercise (chapter 7): `fn(step_num, d_model, warmup_steps)` is the §5.3 learning rate (step_num from 1)."""
    from transformer_lib.objective import TransformerSchedule

    for d_model, warmup in [(512, 4000), (128, 1000)]:
        steps = np.array([1, 2, 3, warmup // 2, warmup, warmup + 1, 10 * warmup])
        try:
            yours = [call_answer("learning rate", fn, [TransformerSchedule], int(step), d_model, warmup) for step in steps]
        except ZeroDivisionError as error:
            raise AssertionError(f"learning rate: at step_num=1 your function divides by zero ({error}): off by one? "
                                 "step_num already counts from 1, as in the paper.") from error
        expected = reference_rate(steps, d_model, warmup)
        hints = [(reference_rate(steps + 1, d_model, warmup), "off by one: step_num counts from 1, as in the paper "
                  "(the first update uses step_num = 1)."),
                 (reference_rate(steps - 1 + 1e-12, d_model, warmup), "off by one: step_num is already counted from 1."),
                 (d_model**-0.5 * np.minimum(steps**-0.5, steps * warmup**-0.5),
                  "the warm-up term is step_num * warmup_steps^-1.5 (power -1.5, not -0.5).")]
        compare("learning rate", np.array(yours, dtype=float), expected,
                f"steps {steps.tolist()}, d_model={d_model}, warmup_steps={warmup}", hints, rtol=1e-5)


def _tiny_models(cls=None, count=2):
    """`count` tiny Transformers with the same random weights and no dropout (the first of class `cls`)."""
    from transformer_lib.model import Transformer

    rng = np.random.default_rng(0)
    source = np.array([[1, 5, 6, 7, 2], [1, 8, 2, 0, 0]], np.int32)
    target = np.array([[1, 9, 10, 11, 2], [1, 12, 2, 0, 0]], np.int32)
    batch = ((source, target[:, :-1]), target[:, 1:])
    sizes = dict(num_layers=1, d_model=16, num_heads=2, dff=32, input_vocab_size=20, target_vocab_size=20,
                 dropout_rate=0.0)
    models = [((cls or Transformer) if i == 0 else Transformer)(**sizes) for i in range(count)]
    for model in models:
        model(batch[0])
    weights = [rng.normal(scale=0.1, size=w.shape).astype("float32") for w in models[0].get_weights()]
    for model in models:
        model.set_weights(weights)
    return models, weights, batch


def loss_hints(model, batch) -> list:
    """What two common slips give as the loss of `batch` (computed before any update)."""
    import keras

    from transformer_lib.objective import masked_loss

    (source, target_in), target_out = batch
    logits = model((source, target_in), training=False)
    every = keras.losses.CategoricalCrossentropy(from_logits=True, label_smoothing=0.1)(
        keras.ops.one_hot(target_out, logits.shape[-1]), logits)
    return [(float(masked_loss(target_out, logits, label_smoothing=0.0)),
             "the loss has no label smoothing: tl.masked_loss(target_out, logits) smooths with 0.1 by default."),
            (float(every), "the padding positions count in the loss: use tl.masked_loss, which leaves them out.")]


def _compare_updates(name, model, reference, weights, loss, expected_loss, hints) -> None:
    compare(f"{name}: the loss", float(np.asarray(loss)), float(expected_loss),
            "a batch of 2 pairs, 3 of the 10 target positions padding", hints)
    if all(np.array_equal(w, v) for w, v in zip(weights, model.get_weights())):
        raise AssertionError(f"{name}: no weight changed. Take the gradients with the tape and call "
                             "optimizer.apply_gradients(zip(gradients, model.trainable_variables)).")
    for variable, mine, theirs in zip(model.weights, model.get_weights(), reference.get_weights()):
        compare(f"{name}: weight {variable.path} after the update", mine, theirs, "one update of Adam with the §5.3 schedule")


@exercise("the training step", "the same loss and the same weights after the update as tl.train_step.")
def check_train_step(fn) -> None:
    """Exercise (chapter 7): `fn(model, optimizer, batch)` makes one update and returns the batch's loss.

    It runs beside the library's `train_step` on two copies of one tiny model (no dropout, so both
    see the same forward pass), on a batch with padding, and compares the loss and every weight after
    the update.
    """
    from transformer_lib.objective import make_optimizer
    from transformer_lib.training import train_step

    (model, reference), weights, batch = _tiny_models()
    hints = loss_hints(reference, batch)
    yours = call_answer("train step", fn, [train_step], model, make_optimizer(16, 10), batch)
    if yours is None:
        raise AssertionError("train step: your function returned None; return the loss of the batch.")
    expected, _ = train_step(reference, make_optimizer(16, 10), batch)
    _compare_updates("train step", model, reference, weights, yours, expected, hints)


@exercise("train_step for model.fit", "model.fit runs your step: the same loss and weights as tl.train_step.")
def check_fit_step(cls) -> None:
    """Exercise (chapter 7): `cls` is a subclass of `tl.Transformer` whose `train_step(self, data)`
    makes one update on `data = ((source, target_in), target_out)` and returns `{"loss": loss}`, so
    that `model.fit(dataset)` trains with it."""
    import tensorflow as tf

    from transformer_lib.objective import make_optimizer
    from transformer_lib.training import train_step

    if getattr(cls, "train_step", None) is keras.Model.train_step:
        raise AssertionError("train_step for model.fit: the class does not override train_step(self, data).")
    (model, reference), weights, batch = _tiny_models(cls)
    hints = loss_hints(reference, batch)
    model.compile(optimizer=make_optimizer(16, 10), jit_compile=False)
    dataset = tf.data.Dataset.from_tensors(batch)
    record = BatchLogs()  # each batch's logs as train_step returned them (the epoch's come from compiled metrics)
    call_answer("train_step for model.fit", model.fit, [train_step], dataset, epochs=1, verbose=0,
                callbacks=[record], shuffle=False)
    logs = record.logs
    if not logs or "loss" not in logs[0]:
        raise AssertionError("train_step for model.fit: return a dict with the batch's loss: {'loss': loss}.")
    expected, _ = train_step(reference, make_optimizer(16, 10), batch)
    _compare_updates("train_step for model.fit", model, reference, weights, logs[0]["loss"], expected, hints)
