"""Checks for chapter 9: the masked mean of a classifier, BERT's masking in NumPy, and nucleus sampling."""

from __future__ import annotations

import numpy as np

from transformer_lib.book.exercises._core import call_answer, compare, exercise
from transformer_lib.tokenizer import END_ID


@exercise("the masked mean", "padding neither counts in the sum nor in the number of positions.")
def check_masked_mean(fn) -> None:
    """Exercise (chapter 9): `fn(x, token_ids)` averages `x` `[batch, len, d]` over the non-padding positions."""
    from transformer_lib.classifier import masked_mean

    rng = np.random.default_rng(0)
    for ids in ([[4, 0, 0, 0], [9, 8, 7, 6]], [[5, 6, 7, 0, 0]]):
        ids = np.array(ids)
        x = rng.normal(size=(*ids.shape, 3)).astype("float32")
        real = (ids != 0)[..., None]
        expected = (x * real).sum(axis=1) / real.sum(axis=1)
        yours = call_answer("masked mean", fn, [masked_mean], x.copy(), ids.copy())
        compare("masked mean", yours, expected, f"token_ids={ids.tolist()}",
                hints=[(x.mean(axis=1), "the padding positions count: average over the real tokens only."),
                       ((x * real).sum(axis=1) / ids.shape[1], "the sum leaves padding out, but you divide by the "
                        "whole length: divide by the number of real tokens.")])


@exercise("BERT's masking", "15% of the real tokens chosen, 80/10/10 masked, random, kept; labels only where chosen.")
def check_bert_masking(fn) -> None:
    """Exercise (chapter 9): `fn(token_ids, mask_id, rng)` is BERT's masking in NumPy: 15% of the real
    tokens (ids above END) chosen; of those 80% become `mask_id`, 10% a random real token, 10% stay.
    Returns `(inputs, labels)`: labels hold the original id where chosen, 0 elsewhere.

    Masking is random, so the check compares shares on a large batch with those of the library's
    `bert.mask_tokens` on the same batch, and checks the rules that hold for every token.
    """
    from transformer_lib.bert import mask_tokens

    rng = np.random.default_rng(0)
    mask_id, rows, length = 500, 2000, 60  # ~9,000 chosen: shares within 0.03 at 5 sigma
    lengths = rng.integers(3, length + 1, size=rows)
    ids = np.zeros((rows, length), np.int32)
    for row, n in enumerate(lengths):
        ids[row, :n] = [1, *rng.integers(END_ID + 1, mask_id, size=n - 2), 2]
    answer = call_answer("BERT masking", fn, [mask_tokens], ids.copy(), mask_id, np.random.default_rng(1))
    inputs, labels = (np.asarray(part) for part in answer)
    if inputs.shape != ids.shape or labels.shape != ids.shape:
        raise AssertionError(f"BERT masking: inputs {inputs.shape} and labels {labels.shape}, expected both {ids.shape}.")
    chosen = labels != 0
    special = ids <= END_ID
    rules = [
        (chosen & special, "a padding, START or END position was chosen; only real tokens (ids above END) may be"),
        (chosen & (labels != ids), "a label is not the original id of its position"),
        (~chosen & (inputs != ids), "a position that was not chosen changed; only chosen ones may"),
        (chosen & ((inputs <= END_ID) | (inputs > mask_id)), "a chosen position holds neither the mask id nor a real token"),
    ]
    for broken, message in rules:
        if broken.any():
            row, position = (int(i) for i in np.argwhere(broken)[0])
            raise AssertionError(f"BERT masking: {message} (row {row}, position {position}: id {ids[row, position]}, "
                                 f"input {inputs[row, position]}, label {labels[row, position]}).")
    real = ~special
    expected_inputs, expected_labels = (np.asarray(part) for part in mask_tokens(ids, mask_id, seed=[3, 4]))
    reference = expected_labels != 0

    def shares(inputs, chosen):
        return {"chosen / real tokens": chosen[real].mean(), "mask id / chosen": (inputs[chosen] == mask_id).mean(),
                "unchanged / chosen": (inputs[chosen] == ids[chosen]).mean()}

    yours_shares, library_shares = shares(inputs, chosen), shares(expected_inputs, reference)
    for name, yours in yours_shares.items():
        expected = library_shares[name]
        if abs(yours - expected) > 0.03:
            raise AssertionError(f"BERT masking: {name} is {yours:.3f}; the library gives {expected:.3f} "
                                 "(15% chosen; of those 80% masked, 10% random, 10% kept).")


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
