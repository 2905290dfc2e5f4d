"""What the tests of the exercise checks share: answers written independently of the library (from the paper,
NumPy and keras.ops), each with switches for the slips a student makes; the fresh 'kernel' a test starts in;
and what a check says when an answer calls the library's own implementation.

A test module imports the ones it uses (`from answers import Greedy, fresh_results`): importing the fixture
`fresh_results` makes it apply to every test of that module."""

import keras
import numpy as np
import pytest
from keras import ops

import transformer_lib as tl
from transformer_lib.book.exercises import _core
from transformer_lib.data.tokenizer import END_ID, PAD_ID, START_ID

LIBRARY = "library's own implementation"


@pytest.fixture(autouse=True)
def fresh_results(monkeypatch):
    """Each test starts in a 'kernel' where no exercise has been solved yet."""
    monkeypatch.setattr(_core, "RESULTS", {})


def not_written(*args, **kwargs):
    raise NotImplementedError("hint")


# ---------------------------------------------------------------------------------------------
# Chapter 3: attention


def attention(q, k, v, mask=None, divisor="sqrt", axis=-1, polarity=1, use_mask=True):
    """Eq. 1 in NumPy. The slips: the scores divided by d_k (divisor="d_k") or not at all (divisor=None), the
    softmax over the queries (axis=-2), the mask's polarity reversed (polarity=-1), the mask ignored."""
    scores = q @ k.T
    if divisor is not None:
        scores = scores / (np.sqrt(k.shape[-1]) if divisor == "sqrt" else k.shape[-1])
    if mask is not None and use_mask:
        scores = scores + (mask if polarity > 0 else 1 - mask) * -1e9
    weights = np.exp(scores - scores.max(axis=axis, keepdims=True))
    return weights / weights.sum(axis=axis, keepdims=True) @ v


def causal(x, w_q, w_k, w_v, k=1, transpose=False, **slips):
    """Causal self-attention over one sequence in NumPy. The slips: a position blocked from itself too (k=0),
    the past blocked instead of the future (transpose=True), and those of `attention`."""
    blocked = np.triu(np.ones((len(x), len(x))), k=k)
    return attention(x @ w_q, x @ w_k, x @ w_v, blocked.T if transpose else blocked, **slips)


class SelfAttention(keras.layers.Layer):
    """One head of self-attention with its own projections (Eq. 1 on x W_q, x W_k, x W_v). A subclass makes a
    slip of `attention` by changing the class attributes."""

    divisor, axis, polarity, use_mask = "sqrt", -1, 1.0, True

    def __init__(self, d_k, **kwargs):
        super().__init__(**kwargs)
        self.d_k = d_k

    def build(self, x_shape):
        self.w_q, self.w_k, self.w_v = (self.add_weight(shape=(x_shape[-1], self.d_k), name=name)
                                        for name in ("w_q", "w_k", "w_v"))

    def call(self, x, attention_mask=None):
        q, k, v = ops.matmul(x, self.w_q), ops.matmul(x, self.w_k), ops.matmul(x, self.w_v)
        scores = ops.matmul(q, ops.swapaxes(k, -1, -2))  # (batch, T, S)
        if self.divisor is not None:
            scores = scores / (self.d_k**0.5 if self.divisor == "sqrt" else float(self.d_k))
        if attention_mask is not None and self.use_mask:
            mask = ops.cast(attention_mask, scores.dtype)
            scores = scores - 1e9 * (mask if self.polarity > 0 else 1.0 - mask)
        return ops.matmul(ops.softmax(scores, axis=self.axis), v)


# ---------------------------------------------------------------------------------------------
# Chapter 5: heads


class MultiHeadOfTheLibrary(keras.layers.Layer):
    """A layer that wraps the library's `MultiHeadAttention`: what a check of the heads must refuse."""

    def __init__(self, d_model, num_heads, **kwargs):
        super().__init__(**kwargs)
        self.inner = tl.MultiHeadAttention(d_model, num_heads)

    def call(self, query, key, value, attention_mask=None):
        return self.inner(query, key, value, mask=attention_mask)


# ---------------------------------------------------------------------------------------------
# Chapter 8: greedy decoding with the cache, and its slips


class Greedy(keras.Model):
    """Greedy decoding with the key/value cache, one new position per step, END kept out of the first
    `min_length` tokens. The slips: `shift` moves the minimum length, `cached=False` runs the whole prefix
    through the model at every step, `stop=False` goes on after END, `forbid=False` lets PAD and START out."""

    shift, cached, stop, forbid = 0, True, True, True

    def __init__(self, transformer, max_length, min_length=0, **kwargs):
        super().__init__(**kwargs)
        self.transformer, self.max_length, self.min_length = transformer, max_length, min_length

    def call(self, source_ids):
        model, batch = self.transformer, source_ids.shape[0]
        caches, source = model.decoder.start_cache(model.encoder(source_ids, training=False), source_ids,
                                                   self.max_length)
        prefix = np.full((batch, 1), START_ID, np.int32)
        finished, out = np.zeros(batch, bool), []
        for step in range(self.max_length):
            if self.cached:
                x, caches = model.decoder.step(prefix[:, -1:], step, caches, source)
                logits = np.array(model.project(x)[:, -1], dtype=float)
            else:
                logits = np.array(model((source_ids, prefix), training=False)[:, -1], dtype=float)
            if self.forbid:
                logits[:, [PAD_ID, START_ID]] = -np.inf
            if step < self.min_length + self.shift:
                logits[:, END_ID] = -np.inf
            chosen = logits.argmax(-1).astype(np.int32)
            if self.stop:
                chosen = np.where(finished, PAD_ID, chosen)
            out.append(chosen)
            prefix = np.concatenate([prefix, chosen[:, None]], axis=1)
            finished |= chosen == END_ID
            if self.stop and finished.all():
                break
        return np.stack(out, axis=1)


class GreedyIgnoringMinLength(Greedy):
    def call(self, source_ids):
        self.min_length = 0
        return super().call(source_ids)


class GreedyOneLonger(Greedy):
    shift = 1


class GreedyOneShorter(Greedy):
    shift = -1


class GreedyWithoutCache(Greedy):
    cached = False


class GreedyGoingOnAfterEnd(Greedy):
    stop = False


class GreedyGeneratingPadding(Greedy):
    forbid = False


class GreedyOfTheLibrary(Greedy):
    def call(self, source_ids):
        return tl.greedy_decode(self.transformer, source_ids, self.max_length)


class GreedyStub(Greedy):
    def call(self, source_ids):
        raise NotImplementedError("hint")


def rotary(x, offset, base=10_000.0, pairs="adjacent", turn=1, step=2):
    """The rotary embedding of `x` `[length, d]`: each pair as a complex number a + ib, times e^(i t theta), a
    rotation by t theta, t = offset + row. Slips: pairs (i, i + d/2) (`pairs="halves"`), the other way round
    (`turn=-1`), theta = base^(-i/d) (`step=1`)."""
    x = np.asarray(x, float)
    d = x.shape[1]
    theta = base ** (-step * np.arange(d // 2) / d)
    first, second = (x[:, 0::2], x[:, 1::2]) if pairs == "adjacent" else (x[:, : d // 2], x[:, d // 2:])
    z = (first + 1j * second) * np.exp(turn * 1j * (offset + np.arange(len(x)))[:, None] * theta)
    out = np.empty_like(x)
    if pairs == "adjacent":
        out[:, 0::2], out[:, 1::2] = z.real, z.imag
    else:
        out[:, : d // 2], out[:, d // 2:] = z.real, z.imag
    return out
