"""Train / validation / test splits that do not leak.

Tatoeba has many translations of one sentence and many paraphrases with one translation: "Я не знаю."
and "Не знаю." both become "I don't know.". Splitting by the source sentence alone puts such a target
in training and in the test split at once, and the test score then rewards memory. So pairs are
grouped first: two pairs that share a source sentence or a target sentence (after whitespace is
normalised) belong to one group, and so do the groups they chain together (the connected components
of the graph whose nodes are sentences and whose edges are pairs). Each group goes, whole, to the
split that a hash of its smallest source sentence picks: the same split on every machine, whatever the
order of the pairs. (A pair that shares nothing with another is split by its own source sentence.)
"""

from __future__ import annotations

import hashlib

SPLITS = ("train", "validation", "test")
SCHEME = "connected components"  # recorded with a training run: a run split another way is not resumed
SPLIT_PERCENT = {"train": 90, "validation": 5, "test": 5}


def require_split(split: str) -> None:
    """Raise a ValueError naming the splits unless `split` is one of them."""
    if split not in SPLITS:
        raise ValueError(f"Unknown split {split!r}; choose one of {SPLITS}.")


def hash_bucket(key: str) -> int:
    """A number in 0..99 fixed by the text of `key` (its sha256): the same on every machine and run."""
    return int.from_bytes(hashlib.sha256(key.encode("utf-8")).digest()[:8], "big") % 100


def split_of_key(key: str) -> str:
    """The split a group with this key belongs to, by `hash_bucket` and SPLIT_PERCENT (90/5/5)."""
    bucket = hash_bucket(key)
    if bucket < SPLIT_PERCENT["train"]:
        return "train"
    return "validation" if bucket < SPLIT_PERCENT["train"] + SPLIT_PERCENT["validation"] else "test"


def normalize(text: str) -> str:
    """The form sentences are compared in: runs of whitespace as one space, none at the ends."""
    return " ".join(text.split())


def connected_groups(pairs: list[tuple[str, str]]) -> list[str]:
    """For each pair, the key of its group: the smallest source sentence (normalised) of the connected
    component that links pairs sharing a source or a target sentence."""
    parent: dict[str, str] = {}

    def root(node: str) -> str:
        parent.setdefault(node, node)
        while parent[node] != node:
            parent[node] = parent[parent[node]]  # path halving keeps the trees flat
            node = parent[node]
        return node

    nodes = [("source:" + normalize(source), "target:" + normalize(target)) for source, target in pairs]
    for source, target in nodes:
        a, b = root(source), root(target)
        if a != b:
            parent[max(a, b)] = min(a, b)  # the smaller sentence becomes the root: an order-free key
    # Every component holds a source node, and "source:" sorts before "target:": its root is its smallest source.
    return [root(source).removeprefix("source:") for source, _ in nodes]


def split_pairs(pairs: list[tuple[str, str]], split: str) -> list[tuple[str, str]]:
    """The pairs of `pairs` in `split`, their order kept; no sentence of either side is in two splits."""
    require_split(split)
    return [pair for pair, key in zip(pairs, connected_groups(pairs)) if split_of_key(key) == split]


def with_extra_training_pairs(pairs: list[tuple[str, str]], extra: list[tuple[str, str]], split: str):
    """`pairs`' own `split` (as `split_pairs` gives it, order kept) and, for "train", also every pair of `extra`
    that no chain of shared sentences, over both lists and both sides, links to a validation or test pair
    of `pairs`; such an extra pair is in no split. So `pairs`' held-out splits stay exactly as they are."""
    require_split(split)
    own = [split_of_key(key) for key in connected_groups(pairs)]
    chosen = [pair for pair, its_split in zip(pairs, own) if its_split == split]
    if split == "train":
        keys = connected_groups(pairs + extra)
        held_out = {key for key, its_split in zip(keys, own) if its_split != "train"}
        chosen += [pair for pair, key in zip(extra, keys[len(pairs):]) if key not in held_out]
    return chosen
