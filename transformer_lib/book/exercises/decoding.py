"""Checks for chapter 8: the length penalty, one step of beam search that never repeats a pair of tokens,
and greedy decoding with the key/value cache and a minimum length, written as a Keras model."""

from __future__ import annotations

import numpy as np

from transformer_lib.book.exercises._core import call_answer, compare, exercise
from transformer_lib.data.tokenizer import END_ID, PAD_ID, START_ID


@exercise("the length penalty", "lp = ((5 + length) / 6) ** alpha; alpha = 0 turns it off.")
def check_length_penalty(fn) -> None:
    """Exercise (chapter 8): `fn(length, alpha)` is the GNMT length penalty used to rank beams."""
    from transformer_lib.decoding.search import length_penalty

    for length in (12, 5, 1, 40):
        for alpha in (0.6, 1.0, 0.0):
            expected = ((5 + length) / 6) ** alpha
            yours = call_answer("length penalty", fn, [length_penalty], length, alpha)
            compare("length penalty", yours, expected, f"length={length}, alpha={alpha}",
                    hints=[((length / 6) ** alpha, "the 5 is missing: lp = ((5 + |Y|) / 6) ** alpha."),
                           (((5 + length) / 6) * alpha, "alpha is an exponent, not a factor.")])


def _no_repeat_totals(prefixes, scores, log_probs, ban="own pairs") -> np.ndarray:
    """The `[k, V]` totals of every extension, -inf where it is banned. `ban` names the rule:
    "own pairs" (the right one: a pair of tokens its own beam already holds), or the slips
    "any beam's pairs" and "used tokens" (every token the beam already holds)."""
    totals = scores[:, None] + log_probs
    for b, prefix in enumerate(prefixes):
        if ban == "used tokens":
            totals[b, prefix] = -np.inf
            continue
        for holder in (prefixes if ban == "any beam's pairs" else [prefix]):
            follows = holder[1:][holder[:-1] == prefix[-1]]  # tokens that came after the beam's last token
            totals[b, follows] = -np.inf
    return totals


def _best(totals, k):
    flat = totals.reshape(-1)
    best = np.argsort(-flat, kind="stable")[:k]  # candidate b * V + t: beam b, token t
    return best // totals.shape[1], best % totals.shape[1], flat[best]


@exercise("one step of beam search that never repeats a pair of tokens",
          "the k best extensions of all beams together, none repeating a pair its own beam already holds.")
def check_beam_step(fn) -> None:
    """Exercise (chapter 8): `fn(prefixes, scores, log_probs, k)` keeps the `k` best of the k x V
    extensions, leaving out every extension that would repeat a pair of neighbouring tokens (a
    bigram) its own beam already holds.

    `prefixes` `[k, t]` are the beams' tokens so far (START first), `scores` `[k]` their total
    log-probabilities, `log_probs` `[k, V]` the next token's. Returns `(beams, tokens, new_scores)`,
    each `[k]`, best first: which beam each survivor extends, with which token, and its new total.
    """
    rng = np.random.default_rng(0)
    for k, vocab, length in [(3, 10, 7), (2, 9, 5), (4, 12, 9)]:
        words = np.arange(4, 8)  # a small alphabet, so that pairs repeat; the rest of V is rarely likely
        prefixes = np.concatenate([np.full((k, 1), START_ID), rng.choice(words, size=(k, length - 1))], axis=1)
        scores = -rng.uniform(0, 3, size=k)
        logits = rng.normal(size=(k, vocab)) + 3.0 * np.isin(np.arange(vocab), words)
        log_probs = logits - np.log(np.exp(logits).sum(axis=1, keepdims=True))
        expected = _best(_no_repeat_totals(prefixes, scores, log_probs), k)
        beams, tokens, new_scores = (np.asarray(part) for part in
                                     fn(prefixes.copy(), scores.copy(), log_probs.copy(), k))
        context = f"k={k}, V={vocab}, prefixes={prefixes.tolist()}"
        plain = scores[:, None] + log_probs
        compare("beam step: the new scores", new_scores, expected[2], context, hints=[
            (_best(plain, k)[2], "an extension repeats a pair of tokens its own beam already holds: leave out "
                                 "every token that already came right after the beam's last token."),
            (_best(_no_repeat_totals(prefixes, scores, log_probs, "used tokens"), k)[2],
             "you left out every token the beam already holds; leave out only those that would repeat a pair "
             "(the tokens that already came right after the beam's last token)."),
            (_best(_no_repeat_totals(prefixes, scores, log_probs, "any beam's pairs"), k)[2],
             "you left out pairs that another beam holds; each beam has its own history."),
            (_best(_no_repeat_totals(prefixes, 0 * scores, log_probs), k)[2],
             "the beams' scores so far are not added to the next token's log-probabilities."),
            (np.sort(_no_repeat_totals(prefixes, scores, log_probs).max(axis=1))[::-1],
             "you kept the best extension of each beam; keep the k best of all k x V."),
        ])
        compare("beam step: the beams extended", beams, expected[0], context)
        compare("beam step: the tokens", tokens, expected[1], context)


def reference_greedy(model, source_ids, max_length, stop=True, forbid=True, min_length=0):
    """Greedy decoding without a cache, written out: the whole prefix through the model at every
    step; END is not allowed among the first `min_length` tokens. `stop=False` and `forbid=False`
    show what two common slips produce."""
    batch = source_ids.shape[0]
    tokens = np.full((batch, 1), START_ID, np.int32)
    finished = np.zeros(batch, bool)
    for step in range(max_length):
        logits = np.asarray(model((source_ids, tokens), training=False))[:, -1].astype(float)
        if forbid:
            logits[:, [PAD_ID, START_ID]] = -np.inf
        if step < min_length:
            logits[:, END_ID] = -np.inf
        next_ids = logits.argmax(-1).astype(np.int32)
        if stop:
            next_ids = np.where(finished, PAD_ID, next_ids)
        tokens = np.concatenate([tokens, next_ids[:, None]], axis=1)
        finished |= next_ids == END_ID
        if stop and finished.all():
            break
    return tokens[:, 1:]


def _padded(ids, width) -> np.ndarray:
    ids = np.asarray(ids)
    if ids.ndim != 2:
        raise AssertionError(f"greedy translator: the output should be int ids [batch, length], got shape {ids.shape}.")
    out = np.zeros((ids.shape[0], width), np.int64)
    out[:, : min(width, ids.shape[1])] = ids[:, :width]
    return out


def _random_model(seed: int, scale: float):
    """A tiny Transformer with random weights (unit norms, no biases) whose greedy translations vary:
    the seeds used stop at END in some rows and not in others."""
    from transformer_lib.models.transformer import Transformer

    model = Transformer(num_layers=2, d_model=16, num_heads=2, dff=32, input_vocab_size=30, target_vocab_size=12,
                        dropout_rate=0.0)
    source = np.array([[START_ID, 5, 6, 7, END_ID], [START_ID, 9, END_ID, 0, 0], [START_ID, 11, 12, END_ID, 0]], np.int32)
    model((source, source[:, :2] % 12))
    rng = np.random.default_rng(seed)
    weights = []
    for variable, value in zip(model.weights, model.get_weights()):
        if "gamma" in variable.path or "beta" in variable.path or "bias" in variable.path:
            weights.append(np.full_like(value, 1.0 if "gamma" in variable.path else 0.0))
        else:
            weights.append(rng.normal(scale=scale / np.sqrt(value.shape[0]), size=value.shape).astype("float32"))
    model.set_weights(weights)
    return model, source


CASES = ((10, 1.0, 2), (5, 0.3, 3), (1, 1.0, 0), (6, 0.3, 4))  # (seed, scale, min_length): END comes early in some


@exercise("the greedy translator", "your model decodes greedily with the key/value cache, and END waits for "
          "min_length tokens.")
def check_greedy_translator(cls) -> None:
    """Exercise (chapter 8): `cls(transformer, max_length, min_length)` is a Keras model whose
    `call(source_ids)` returns the greedy translation ids `[batch, <= max_length]` (no START; END, then
    padding 0) in which END never comes among the first `min_length` tokens, using
    `transformer.encoder`, `transformer.decoder.start_cache`, `transformer.decoder.step` and
    `transformer.project`: one new position per step, never the whole prefix again."""
    from transformer_lib.decoding import search as decoding
    from transformer_lib.decoding.translator import Translator

    forbidden = [decoding.greedy_decode, decoding.greedy_loop, decoding.beam_search, Translator]
    for seed, scale, min_length in CASES:
        model, source = _random_model(seed, scale)
        expected = reference_greedy(model, source, 8, min_length=min_length)
        context = (f"a random tiny model (seed {seed}, scale {scale}) on a batch of 3 sources, 2 of them padded, "
                   f"max_length=8, min_length={min_length}")
        yours = call_answer("greedy translator", lambda: cls(model, 8, min_length)(source), forbidden)
        compare("greedy translator", _padded(yours, 8), _padded(expected, 8), context,
                _greedy_slips(model, source, min_length))
    _require_cache(cls, *_random_model(1, 1.0))


def _greedy_slips(model, source, min_length):
    """(what a slip decodes, its hint), each decoded only when `compare` asks for it (a wrong answer)."""
    slips = [(dict(stop=False, min_length=min_length),
              "a row goes on after its END: once a row has produced END, it gets padding (0)."),
             (dict(forbid=False, min_length=min_length),
              "padding (0) and START must never be generated: give them -inf before the argmax."),
             (dict(), f"END came among the first {min_length} tokens: it may not be chosen before min_length tokens."),
             (dict(min_length=min_length + 1),
              f"off by one: END may be token number {min_length + 1}, right after min_length={min_length} tokens."),
             (dict(min_length=min_length - 1),
              f"off by one: END may not be among the first {min_length} tokens (steps 0 to {min_length - 1}).")]
    for options, hint in slips:
        yield _padded(reference_greedy(model, source, 8, **options), 8), hint


def _require_cache(cls, model, source) -> None:
    """The answer must decode step by step with the cache, not run the whole model on a prefix."""
    calls = []
    original = type(model).call

    def counting(self, *args, **kwargs):
        calls.append(1)
        return original(self, *args, **kwargs)

    type(model).call = counting
    try:
        cls(model, 8, 2)(source)
    finally:
        type(model).call = original
    if calls:
        raise AssertionError("greedy translator: the answer runs the whole model on the prefix at every step; use "
                             "the cache: transformer.decoder.start_cache once, then transformer.decoder.step for "
                             "one new position per step, and transformer.project for its logits.")
