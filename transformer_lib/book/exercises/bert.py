"""Checks for chapter 9: max pooling with the padding mask, BERT's masking by whole words, and nucleus sampling."""

from __future__ import annotations

import numpy as np

from transformer_lib.book.exercises._core import call_answer, compare, exercise
from transformer_lib.data.tokenizer import END_ID


@exercise("masked max pooling", "padding never wins the maximum, even where every real value is negative.")
def check_masked_max(fn) -> None:
    """Exercise (chapter 9): `fn(x, token_ids)` is the largest value of `x` `[batch, len, d]` in each of
    its `d` dimensions over the real positions (ids not 0), `[batch, d]`: max pooling with the mask.

    The encoder's outputs at padding are not zeros: here they are larger than every real value, and one
    review's real values are all negative, so that neither padding nor a zero standing in for it can win.
    """
    rng = np.random.default_rng(0)
    for ids in ([[1, 7, 2, 0, 0], [1, 9, 8, 6, 2]], [[1, 5, 6, 2, 0, 0, 0]]):
        ids = np.array(ids)
        real = (ids != 0)[..., None]
        x = rng.normal(size=(*ids.shape, 3)).astype("float32")
        x = np.where(real, x, 5.0 + np.abs(x))  # padding: larger than any real value
        x[0] = np.where(real[0], -1.0 - np.abs(x[0]), x[0])  # the first review: every real value negative
        expected = np.where(real, x, -np.inf).max(axis=1)
        yours = call_answer("masked max", fn, [], x.copy(), ids.copy())
        compare("masked max", yours, expected, f"token_ids={ids.tolist()}",
                hints=[(x.max(axis=1), "a padding position won: the maximum must be over the real tokens only."),
                       (np.where((ids > END_ID)[..., None], x, -np.inf).max(axis=1), "START and END were left "
                        "out: they are real tokens here (only padding, id 0, is not), as in tl.masked_mean."),
                       ((x * real).max(axis=1), "padding became 0 (multiplied by the mask, or set to 0), and 0 "
                        "beats a review whose values are all negative: padding must be below every real value.")])


@exercise("whole-word masking", "words are chosen whole, 15% of them, each masked, replaced or kept as one.")
def check_whole_word_masking(fn) -> None:
    """Exercise (chapter 9): `fn(token_ids, word_start, mask_id, rng)` is BERT's masking by words: 15% of
    the words are chosen (a word: a piece with `word_start` True and the pieces after it up to the next
    word start or special token); every piece of a chosen word gets its original id as label; of the
    chosen words 80% have all their pieces replaced by `mask_id`, 10% all by random real tokens, 10% stay.
    Returns `(inputs, labels)`, labels 0 where nothing was chosen.

    Masking is random, so the check tests the rules that hold for every word, then the shares on a
    large batch: of about 30,000 words 15% chosen (standard error 0.002, allowed 0.02), and of the
    about 4,500 chosen 80% masked (0.006, allowed 0.03) and 10% unchanged (0.0045, allowed 0.02: a
    word replaced piece by piece, some pieces kept, is not unchanged).
    """
    rng = np.random.default_rng(0)
    mask_id, rows, length = 500, 2000, 60
    ids = np.zeros((rows, length), np.int32)
    starts = np.zeros((rows, length), bool)
    for row, n in enumerate(rng.integers(4, length + 1, size=rows)):
        ids[row, :n] = [1, *rng.integers(END_ID + 1, mask_id, size=n - 2), 2]
        starts[row, 1:n - 1] = rng.random(n - 2) < 0.5  # about two pieces a word
        starts[row, 1] = True  # the first piece of a review begins a word
    answer = call_answer("whole-word masking", fn, [], ids.copy(), starts.copy(), mask_id, np.random.default_rng(1))
    inputs, labels = (np.asarray(part) for part in answer)
    if inputs.shape != ids.shape or labels.shape != ids.shape:
        raise AssertionError(f"whole-word masking: inputs {inputs.shape} and labels {labels.shape}, expected both "
                             f"{ids.shape}.")
    chosen, special = labels != 0, ids <= END_ID
    # Each piece's word: the position of the word's first piece (special tokens are words of their own).
    positions = np.broadcast_to(np.arange(length), ids.shape)
    word = np.maximum.accumulate(np.where(starts | special, positions, 0), axis=1)
    first_of_word = np.take_along_axis(chosen, word, axis=1)
    masked = inputs == mask_id
    rules = [
        (chosen & special, "a padding, START or END position was chosen; only real tokens (ids above END) may be"),
        (chosen & (labels != ids), "a label is not the original id of its position"),
        (~chosen & (inputs != ids), "a position that was not chosen changed; only chosen ones may"),
        (chosen & ((inputs <= END_ID) | (inputs > mask_id)), "a chosen position holds neither the mask id nor a real token"),
        (~special & (chosen != first_of_word), "a word was chosen only in part: choose words, then every piece of a "
                                               "chosen word"),
        (chosen & (masked != np.take_along_axis(masked, word, axis=1)), "a chosen word was masked only in part: what "
                                                                        "happens to a chosen word is decided once, for all its pieces"),
    ]
    for broken, message in rules:
        if broken.any():
            row, position = (int(i) for i in np.argwhere(broken)[0])
            raise AssertionError(f"whole-word masking: {message} (row {row}, position {position}: id "
                                 f"{ids[row, position]}, input {inputs[row, position]}, label {labels[row, position]}).")
    words = starts & ~special  # one entry per word: its first piece
    chosen_words = words & chosen
    kept = np.ones(ids.shape, bool)  # at a chosen word's first piece: whether all its pieces kept their ids
    np.logical_and.at(kept, (np.nonzero(chosen)[0], word[chosen]), inputs[chosen] == ids[chosen])
    shares = {"chosen words / words": (chosen_words.sum() / words.sum(), 0.15, 0.02),  # (yours, expected, allowed)
              "masked words / chosen words": (masked[chosen_words].mean(), 0.8, 0.03),
              "unchanged words / chosen words": (kept[chosen_words].mean(), 0.1, 0.02)}
    for name, (yours, expected, allowed) in shares.items():
        if abs(yours - expected) > allowed:
            raise AssertionError(f"whole-word masking: {name} is {yours:.3f}, expected {expected} (15% of the words "
                                 "chosen; of those 80% masked, 10% random, 10% kept).")


@exercise("nucleus sampling", "only the nucleus is ever drawn, each of its tokens as often as its probability says.")
def check_nucleus_sampling(fn) -> None:
    """Exercise (chapter 9): `fn(logits, p, rng)` draws one token id from the nucleus of `logits` `[vocab]`:
    the fewest most likely tokens whose probabilities add up to at least `p` (Holtzman et al. 2020),
    each drawn in proportion to its probability, with `rng` (a NumPy Generator).

    Sampling is random, so the check draws many times and compares how often each token comes with
    its share of the nucleus (at 4,000 draws a share's standard error is under 0.008; 0.035 is > 4 of them).
    """
    probabilities = np.array([0.15, 0.5, 0.05, 0.3])  # token 1 most likely, then 3, 0, 2
    logits = np.log(probabilities) + 7.0  # logits, not probabilities: only their differences matter
    draws = 4000
    for p, nucleus in ((0.4, [1]), (0.75, [1, 3]), (0.9, [1, 3, 0]), (1.0, [1, 3, 0, 2])):
        rng = np.random.default_rng(int(100 * p))
        tokens = np.array([int(call_answer("nucleus sampling", fn, [], logits.copy(), p, rng)) for _ in range(draws)])
        outside = sorted(set(tokens.tolist()) - set(nucleus))
        if outside:
            raise AssertionError(f"nucleus sampling: at p={p} token {outside[0]} was drawn, but the nucleus is tokens "
                                 f"{nucleus} (probabilities {probabilities.round(2).tolist()}): sort the tokens from "
                                 "the most likely down and keep only as many as it takes to reach p.")
        missing = [token for token in nucleus if token not in tokens]
        if missing:
            raise AssertionError(f"nucleus sampling: at p={p} token {missing[0]} was never drawn in {draws} draws, but "
                                 f"it belongs to the nucleus {nucleus}: the token whose probability carries the sum "
                                 "up to p (or past it) is kept too.")
        expected = probabilities[nucleus] / probabilities[nucleus].sum()
        shares = np.array([(tokens == token).mean() for token in nucleus])
        if np.abs(shares - expected).max() > 0.035:
            raise AssertionError(f"nucleus sampling: at p={p} tokens {nucleus} were drawn with shares "
                                 f"{shares.round(3).tolist()}, expected {expected.round(3).tolist()}: draw in "
                                 "proportion to the probabilities, renormalised over the nucleus.")
