"""Checks for chapter 9: the masked mean of a classifier, and BERT's masking in NumPy."""

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
