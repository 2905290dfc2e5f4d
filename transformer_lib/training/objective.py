"""The training objective of §5.3-5.4, in `keras.ops` only, so it runs on any Keras backend.

- `TransformerSchedule` and `make_optimizer`: Adam with the paper's warm-up-then-decay learning rate.
- `masked_loss` / `MaskedLoss`: label-smoothed cross-entropy over the real (non-padding) tokens.
- `masked_accuracy`: the share of real tokens predicted right.

`training` (the loop, on TensorFlow) uses them; `benchmarks/gpu_run.py` uses them on JAX.
"""

from __future__ import annotations

import math

import keras
from keras import ops
import numpy as np

from transformer_lib.utils.checks import check_token_ids, require_learning_rate, require_positive_int, require_rate
from transformer_lib.data.tokenizer import PAD_ID


@keras.saving.register_keras_serializable(package="transformer_lib")
class TransformerSchedule(keras.optimizers.schedules.LearningRateSchedule):
    """The learning rate of §5.3: linear warm-up for `warmup_steps`, then decay as 1/sqrt(step).

    Keras calls a schedule with the number of updates done so far (0 for the first update); the
    paper counts from 1. So the n-th update uses the paper's step_num = n: `schedule(n - 1)`.
    The peak, at step_num = warmup_steps, is (d_model * warmup_steps)^-0.5: a longer warm-up also
    means a lower peak. `peak_rate` sets the peak on its own (the same shape, scaled): the rate is
    then peak_rate * min(step_num / warmup_steps, (warmup_steps / step_num)^0.5).
    """

    def __init__(self, d_model: int, warmup_steps: int = 4000, peak_rate: float | None = None):
        require_positive_int("d_model", d_model)
        require_positive_int("warmup_steps", warmup_steps)
        if peak_rate is not None:
            require_learning_rate("peak_rate", peak_rate)
        self.d_model = d_model
        self.warmup_steps = warmup_steps
        self.peak_rate = peak_rate

    def __call__(self, step):
        step_num = ops.cast(step, "float32") + 1.0
        decay = ops.rsqrt(step_num)
        warmup = step_num * self.warmup_steps**-1.5
        peak = self.peak_rate or (self.d_model * self.warmup_steps) ** -0.5  # reached at step_num = warmup_steps
        return peak * self.warmup_steps**0.5 * ops.minimum(decay, warmup)

    def get_config(self):
        return {"d_model": self.d_model, "warmup_steps": self.warmup_steps, "peak_rate": self.peak_rate}


def make_optimizer(d_model: int, warmup_steps: int = 4000, peak_rate: float | None = None) -> keras.optimizers.Adam:
    """Adam with beta_1 = 0.9, beta_2 = 0.98, epsilon = 1e-9 and the §5.3 schedule (`peak_rate`:
    its peak set on its own instead of by d_model and warmup_steps)."""
    schedule = TransformerSchedule(d_model, warmup_steps, peak_rate)
    return keras.optimizers.Adam(schedule, beta_1=0.9, beta_2=0.98, epsilon=1e-9)


def masked_loss(labels, logits, label_smoothing: float = 0.1, tokens=None):
    """Cross-entropy averaged over the non-padding tokens, with label smoothing (§5.4, eps_ls = 0.1).

    The smoothed target puts 1 - eps on the right token and spreads eps evenly over all V tokens
    (Keras's convention), so loss = (1 - eps) * (-log p[label]) + eps * mean_v(-log p[v]).

    Args:
        labels: int `[batch, len]`, 0 = padding (ignored).
        logits: `[batch, len, vocab]`.
        tokens: how many real tokens to average over; default: those of `labels` (under a
            `tf.distribute` strategy, the global batch's, so the replicas' losses add up to its mean).

    Returns:
        A float32 scalar.
    """
    per_token, mask = _per_token_loss(labels, logits, label_smoothing)
    return ops.sum(per_token * mask) / ops.maximum(ops.sum(mask) if tokens is None else tokens, 1.0)


def real_tokens(labels):
    """1.0 at every real (non-padding) position of `labels`, 0.0 at padding: `[batch, len]` float32."""
    return ops.cast(ops.not_equal(labels, PAD_ID), "float32")


def _per_token_loss(labels, logits, label_smoothing):
    check_token_ids("labels", labels, logits.shape[-1])
    labels = ops.cast(labels, "int32")
    mask = real_tokens(labels)
    log_probs = ops.log_softmax(ops.cast(logits, "float32"), axis=-1)  # (batch, len, vocab)
    nll = -ops.take_along_axis(log_probs, labels[..., None], axis=-1)[..., 0]  # (batch, len)
    uniform = -ops.mean(log_probs, axis=-1)  # cross-entropy against the uniform distribution
    return (1.0 - label_smoothing) * nll + label_smoothing * uniform, mask


def masked_accuracy(labels, logits, tokens=None):
    """Share of non-padding positions where the most likely token is the label (`tokens` as in `masked_loss`)."""
    hits, mask = _hits(labels, logits)
    return ops.sum(hits) / ops.maximum(ops.sum(mask) if tokens is None else tokens, 1.0)


def _hits(labels, logits):
    """1.0 where the most likely token is the label (0 at padding), and the non-padding mask."""
    labels = ops.cast(labels, "int32")
    mask = real_tokens(labels)
    return ops.cast(ops.equal(ops.cast(ops.argmax(logits, axis=-1), "int32"), labels), "float32") * mask, mask


@keras.saving.register_keras_serializable(package="transformer_lib")
class MaskedLoss(keras.losses.Loss):
    """`masked_loss` as a Keras loss, for `model.compile(loss=MaskedLoss())`."""

    def __init__(self, label_smoothing: float = 0.1, name: str = "masked_loss", **kwargs):
        super().__init__(name=name, **kwargs)
        require_rate("label_smoothing", label_smoothing)
        self.label_smoothing = label_smoothing

    def call(self, y_true, y_pred):
        # Keras's Loss.__call__ has already converted y_true to the loss's float dtype: back to ids.
        return masked_loss(ops.cast(y_true, "int32"), y_pred, self.label_smoothing)

    def get_config(self):
        return {**super().get_config(), "label_smoothing": self.label_smoothing}


def perplexity(model, pairs, batch_size: int = 64) -> float:
    """exp(the mean cross-entropy per real target token) over `(inputs, targets)` (`next_token_pairs`):
    how many tokens, in effect, the model hesitates between at each step (the vocabulary size for a
    model that knows nothing, 1 for one that is always sure and right)."""
    inputs, targets = pairs
    total, tokens = 0.0, 0.0
    for start in range(0, len(inputs), batch_size):
        x, y = inputs[start: start + batch_size], targets[start: start + batch_size]
        count = float(np.sum(np.asarray(y) != PAD_ID))
        total += float(masked_loss(y, model(x, training=False), label_smoothing=0.0)) * count
        tokens += count
    if tokens == 0:
        raise ValueError("perplexity needs at least one real (non-padding) target token.")
    return math.exp(total / tokens)
