"""Checks for chapters 1, 2 and 4: the data, the positional encoding and the masks (NumPy exercises)."""

from __future__ import annotations

import numpy as np

from transformer_lib.book.exercises._core import call_answer, compare, exercise
from transformer_lib.layers.masks import decoder_mask, look_ahead_mask, padding_mask
from transformer_lib.layers.positional_encoding import positional_encoding


def _batch_padding(lengths, batch_size: int, sort: bool = False, whole: bool = False, drop_last: bool = False):
    """The padding share of `lengths` cut into batches of `batch_size` in the given order (float64),
    or what three slips compute: sorting first, one rectangle for all, the last short batch left out."""
    lengths = sorted(lengths) if sort else list(lengths)
    if whole:
        return 1 - sum(lengths) / (max(lengths) * len(lengths))
    batches = [lengths[start:start + batch_size] for start in range(0, len(lengths), batch_size)]
    if drop_last and len(batches) > 1 and len(batches[-1]) < batch_size:
        batches = batches[:-1]
    pads = sum(max(batch) * len(batch) - sum(batch) for batch in batches)
    return pads / sum(max(batch) * len(batch) for batch in batches)


BATCH_PADDING_CASES = [([3, 5, 2, 7, 4], 2), ([9, 1, 8, 2, 7, 3, 6, 4], 4), ([4, 4, 4], 3), ([6, 2, 5], 1),
                       ([12, 3, 3, 11, 4, 10, 2, 9, 5], 3)]


@exercise("the padding share of a batching", "that share of every rectangle is computation spent on padding.")
def check_batch_padding_share(fn) -> None:
    """Exercise (chapter 1): `fn(lengths, batch_size)` cuts the sentence lengths into batches of
    `batch_size` in the order given (the last batch may be smaller), pads each batch to its longest
    sentence and returns the share of padding among all the positions of all the batches."""
    from transformer_lib.data.batching import make_batches, padding_fraction

    for lengths, batch_size in BATCH_PADDING_CASES:
        expected = _batch_padding(lengths, batch_size)
        yours = call_answer("batch padding share", fn, [padding_fraction, make_batches], list(lengths), batch_size)
        hints = [(1 - expected, "you computed the share of real tokens; the question is the share of padding."),
                 (_batch_padding(lengths, batch_size, sort=True),
                  "you sorted the lengths: keep the order given (the caller sorts or shuffles them)."),
                 (_batch_padding(lengths, batch_size, whole=True),
                  "each batch is padded to its own longest sentence, not to the longest of all."),
                 (_batch_padding(lengths, batch_size, drop_last=True),
                  "the last batch, smaller than batch_size, counts too.")]
        compare("batch padding share", yours, expected, f"lengths={lengths}, batch_size={batch_size}",
                hints=[(value, message) for value, message in hints if not np.isclose(value, expected)])


def _partition(labels) -> set[frozenset[int]]:
    """The groups of positions that share a label, whatever the labels are."""
    groups: dict = {}
    for position, label in enumerate(labels):
        groups.setdefault(label, set()).add(position)
    return {frozenset(group) for group in groups.values()}


GROUP_CASES = [
    [("Я не знаю.", "I don't know."), ("Не знаю.", "I don't know."), ("Привет!", "Hi!")],
    [("a", "x"), ("b", "y"), ("b", "x"), ("c", "z"), ("d", "z"), ("e", "w")],  # a-x-b-y chain; c-z-d; e alone
    [("Он  здесь.", "He is here."), ("Он здесь.", "He's here."), ("Она здесь.", "He's here. ")],  # spaces differ
    [("one", "same"), ("two", "other"), ("three", "same"), ("two", "more")],
]


@exercise("grouping the pairs", "those groups can go to different splits without one sentence in two of them.")
def check_group_pairs(fn) -> None:
    """Exercise (chapter 1): `fn(pairs)` gives each pair a group label; pairs that share a source or a
    target sentence (whitespace normalised), directly or through a chain of pairs, share a label."""
    from transformer_lib.data.splits import connected_groups

    for pairs in GROUP_CASES[1:] + GROUP_CASES[:1]:  # the chain first: it needs more than one pass
        yours = list(call_answer("group pairs", fn, [connected_groups], list(pairs)))
        if len(yours) != len(pairs):
            raise AssertionError(f"group pairs: {len(yours)} labels for {len(pairs)} pairs {pairs}; give one label per pair.")
        expected = _partition(connected_groups(pairs))
        if _partition(yours) != expected:
            wrong = sorted(sorted(group) for group in _partition(yours) - expected)[0]
            raise AssertionError(
                f"group pairs: for {pairs} you put the pairs at positions {wrong} in one group; the groups "
                f"should be {sorted(sorted(group) for group in expected)} (pairs sharing a normalised source or "
                "target sentence, and every pair linked to them through such a chain)."
            )


def _reference_encoding(length: int, depth: int) -> np.ndarray:
    """§3.5 in float64, written from the paper: sines at even dimensions, cosines at odd ones."""
    angles = np.arange(length)[:, None] / 10000 ** (2 * (np.arange(depth) // 2) / depth)[None, :]
    return np.where(np.arange(depth) % 2 == 0, np.sin(angles), np.cos(angles))


@exercise("the positional encoding", "PE(pos, 2i) = sin(pos / 10000^(2i/d)), PE(pos, 2i+1) = cos(pos / 10000^(2i/d)).")
def check_positional_encoding(fn) -> None:
    """Exercise (chapter 2): `fn(length, depth)` in NumPy is §3.5's encoding, sines at even dimensions."""
    for length, depth in [(10, 8), (50, 64), (4, 2)]:
        expected = _reference_encoding(length, depth)
        swapped = expected.reshape(length, -1, 2)[..., ::-1].reshape(length, depth)
        angles_i = np.arange(length)[:, None] / 10000 ** (np.arange(depth) / depth)[None, :]
        yours = call_answer("positional encoding", fn, [positional_encoding], length, depth)
        compare("positional encoding", yours, expected, f"length={length}, depth={depth}",
                hints=[(swapped, "sines and cosines are swapped: sines go to the even dimensions 2i."),
                       (np.where(np.arange(depth) % 2 == 0, np.sin(angles_i), np.cos(angles_i)),
                        "the exponent must be 2i/d for both dimensions 2i and 2i+1 (a pair shares its frequency).")])


@exercise("the concatenated encoding", "the same numbers as the interleaved encoding, with the dimensions reordered.")
def check_concatenated_encoding(fn) -> None:
    """Exercise (chapter 2): `fn(length, depth)` puts all sines first, then all cosines."""
    for length, depth in [(50, 16), (5, 4), (7, 32)]:
        interleaved = _reference_encoding(length, depth)
        expected = np.concatenate([interleaved[:, 0::2], interleaved[:, 1::2]], axis=1)
        compare("concatenated encoding", fn(length, depth), expected, f"length={length}, depth={depth}",
                hints=[(interleaved, "this is the interleaved encoding: put every sine first, then every cosine.")])


def _mask_hints(expected, blocks_self, transposed) -> list:
    return [(1 - expected, "the polarity is reversed: in this book 1.0 means *blocked* (Keras's boolean masks "
                           "mean the opposite)."),
            (blocks_self, "a position must see itself: block only the keys *after* the query (np.triu with k=1)."),
            (transposed, "this blocks the past instead of the future: row = query, column = key.")]


@exercise("the look-ahead mask", "position i sees positions 0..i, and 1.0 marks the ones it may not see.")
def check_look_ahead_mask(fn) -> None:
    """Exercise (chapter 4): `fn(size)` blocks (1.0) every key after the query's own position."""
    for size in (5, 2, 1):  # a real case first: size 1 hides most mistakes
        expected = np.triu(np.ones((size, size)), k=1)
        yours = call_answer("look-ahead mask", fn, [look_ahead_mask, decoder_mask], size)
        compare("look-ahead mask", yours, expected, f"size={size}",
                hints=_mask_hints(expected, np.triu(np.ones((size, size))), expected.T))


@exercise("the combined mask", "a key is blocked when it is in the future or when it is padding.")
def check_combined_mask(fn) -> None:
    """Exercise (chapter 4): `fn(target_ids)` combines the look-ahead and padding masks."""
    for ids in ([[1, 2, 3, 4], [7, 8, 0, 0]], [[5, 6, 0]]):
        ids = np.array(ids)
        future = np.triu(np.ones((ids.shape[1], ids.shape[1])), k=1)
        padding = (ids == 0).astype(float)[:, None, None, :]
        expected = np.maximum(future, padding)
        yours = call_answer("combined mask", fn, [decoder_mask], ids.copy())
        compare("combined mask", yours, expected, f"target_ids={ids.tolist()}",
                hints=[(np.broadcast_to(future, expected.shape), "padding keys are not blocked: add the padding mask."),
                       (np.broadcast_to(padding, expected.shape), "future keys are not blocked: add the look-ahead mask."),
                       (future + padding, "a key both in the future and padding gets 2: combine with a maximum."),
                       (1 - expected, "the polarity is reversed: 1.0 means blocked.")])
