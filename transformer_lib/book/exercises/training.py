"""Checks for chapter 7: the learning rate of §5.3, one training step (with gradient accumulation
over several batches, and plain), and the step as a Keras model's `train_step`, so that `model.fit`
runs it."""

from __future__ import annotations

import keras
import numpy as np

from transformer_lib.book.exercises._core import call_answer, compare, exercise


PLAIN_RATE = 0.5  # the training-step checks use plain gradient descent: every difference in a gradient shows


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
    from transformer_lib.training.objective import TransformerSchedule

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
    from transformer_lib.models.transformer import Transformer

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

    from transformer_lib.training.objective import masked_loss

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
        compare(f"{name}: weight {variable.path} after the update", mine, theirs, "one update of plain gradient descent")


@exercise("train_step for model.fit", "model.fit runs your step: the same loss and weights as tl.train_step.")
def check_fit_step(cls) -> None:
    """Exercise (chapter 7): `cls` is a subclass of `tl.Transformer` whose `train_step(self, data)`
    makes one update on `data = ((source, target_in), target_out)` and returns `{"loss": loss}`, so
    that `model.fit(dataset)` trains with it. The check compiles it with plain gradient descent: Adam's
    first step moves every weight by about the learning rate, whatever the size of its gradient, so
    float noise in a gradient that should be zero (the attention keys' bias) would show as a
    difference."""
    import tensorflow as tf

    from transformer_lib.training.loop import train_step

    if getattr(cls, "train_step", None) is keras.Model.train_step:
        raise AssertionError("train_step for model.fit: the class does not override train_step(self, data).")
    (model, reference), weights, batch = _tiny_models(cls)
    hints = loss_hints(reference, batch)
    model.compile(optimizer=keras.optimizers.SGD(PLAIN_RATE), jit_compile=False)
    dataset = tf.data.Dataset.from_tensors(batch)
    record = BatchLogs()  # each batch's logs as train_step returned them (the epoch's come from compiled metrics)
    call_answer("train_step for model.fit", model.fit, [train_step], dataset, epochs=1, verbose=0,
                callbacks=[record], shuffle=False)
    logs = record.logs
    if not logs or "loss" not in logs[0]:
        raise AssertionError("train_step for model.fit: return a dict with the batch's loss: {'loss': loss}.")
    expected, _ = train_step(reference, keras.optimizers.SGD(PLAIN_RATE), batch)
    _compare_updates("train_step for model.fit", model, reference, weights, logs[0]["loss"], expected, hints)


def _uneven_batches():
    """Two batches of different lengths and different numbers of real target tokens (7 and 3), and
    the same pairs joined into one batch, padded to the longer lengths."""
    first = ((np.array([[1, 5, 6, 7, 2], [1, 8, 2, 0, 0]], np.int32),
              np.array([[1, 9, 10, 11], [1, 12, 0, 0]], np.int32)),
             np.array([[9, 10, 11, 2], [12, 2, 0, 0]], np.int32))
    second = ((np.array([[1, 13, 14, 15, 16, 17, 2]], np.int32), np.array([[1, 18, 19]], np.int32)),
              np.array([[18, 19, 2]], np.int32))

    def joined(part, width):
        return np.concatenate([np.pad(a, ((0, 0), (0, width - a.shape[1]))) for a in part])

    (s1, t1), o1 = first
    (s2, t2), o2 = second
    together = ((joined([s1, s2], 7), joined([t1, t2], 4)), joined([o1, o2], 4))
    return [first, second], together


def _update(model, batches, tokens_of):
    """One SGD update from the gradients of every batch's loss; `tokens_of(target_out)` is the count
    that batch's loss is averaged over. Returns the sum of the batches' losses."""
    import tensorflow as tf

    from transformer_lib.training.objective import masked_loss

    total, summed = 0.0, None
    for (source, target_in), target_out in batches:
        with tf.GradientTape() as tape:
            loss = masked_loss(target_out, model((source, target_in), training=True), tokens=tokens_of(target_out))
        gradients = [tf.convert_to_tensor(g) for g in tape.gradient(loss, model.trainable_variables)]
        summed = gradients if summed is None else [a + b for a, b in zip(summed, gradients)]
        total += float(loss)
    keras.optimizers.SGD(PLAIN_RATE).apply_gradients(zip(summed, model.trainable_variables))
    return total



@exercise("gradient accumulation", "one update from both batches, the same loss and weights as tl.train_step on "
          "all their pairs together.")
def check_accumulated_step(fn) -> None:
    """Exercise (chapter 7): `fn(model, optimizer, batches)` makes ONE update from the gradients of
    every batch of the list `batches` and returns the loss: the update and the loss of one
    `train_step` on all their pairs joined into one batch (the mean over the real tokens of all of them).

    It runs your step on two batches with 7 and 3 real target tokens, with plain gradient descent
    (so that a differently weighted gradient shows in the weights; Adam's first step hides the
    gradient's size), beside `train_step` on the joined batch and beside the common slips.
    """
    from transformer_lib.training.objective import real_tokens
    from transformer_lib.training.loop import train_step

    (model, reference, slip), weights, _ = _tiny_models(count=3)
    batches, together = _uneven_batches()
    optimizer = keras.optimizers.SGD(PLAIN_RATE)
    yours = call_answer("gradient accumulation", fn, [train_step], model, optimizer, list(batches))
    if yours is None:
        raise AssertionError("gradient accumulation: your function returned None; return the loss of all the batches.")
    expected, _ = train_step(reference, keras.optimizers.SGD(PLAIN_RATE), together)
    mean_of_means = _update(slip, batches, lambda target_out: len(batches) * float(np.sum(real_tokens(target_out))))
    context = "2 batches with 7 and 3 real target tokens, plain gradient descent"
    if all(np.array_equal(w, v) for w, v in zip(weights, model.get_weights())):
        raise AssertionError("gradient accumulation: no weight changed. Add up the batches' gradients and call "
                             "optimizer.apply_gradients once.")
    if int(optimizer.iterations) > 1:
        raise AssertionError(f"gradient accumulation: the weights changed {int(optimizer.iterations)} times, once per "
                             "batch: add up the batches' gradients and apply them once, after the last batch.")
    for variable, start, mine, theirs, averaged in zip(model.weights, weights, model.get_weights(),
                                                       reference.get_weights(), slip.get_weights()):
        compare(f"gradient accumulation: weight {variable.path} after the update", mine, theirs, context, [
            (averaged, "the update follows the mean of the two batches' mean losses, which gives the 3 tokens of the "
                       "short batch as much weight as the 7 of the other; every real token should count the same."),
            (2 * averaged - start, "the update follows the sum of the batches' mean losses, which gives the 3 tokens "
                                   "of the short batch as much weight as the 7 of the other; every real token should "
                                   "count the same.")])
    compare("gradient accumulation: the loss", np.asarray(yours, dtype=float), np.float64(expected), context, [
        (mean_of_means, "the loss is the mean of the two batches' mean losses; the batches hold different numbers of "
                        "real tokens, so average over the real tokens of all the batches together."),
        (2 * mean_of_means, "the loss is the sum of the batches' mean losses; average over the real tokens of all "
                            "the batches together.")])
