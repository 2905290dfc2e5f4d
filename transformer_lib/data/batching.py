"""The tf.data pipeline that turns sentence pairs into batches, and the tokenizers it needs.

Pipeline (`make_batches`): tokenize once, add start/end, drop what is longer than `max_length`
(and say how many), shuffle with a seed, bucket by length so batches carry little padding, shuffle
the batches (so that the buckets' part-filled last batches do not all come at the end of an
epoch, in rising length: section 7 of the performance appendix measures what that costs), and yield
``((source_ids, target_in), target_out)`` for `model.fit`. The pairs come from
`corpora.load_parallel_corpus`.
"""

from __future__ import annotations

import bisect
import math
import random
from collections import Counter
from collections.abc import Sequence

import numpy as np
import tensorflow as tf

from transformer_lib.utils.checks import require_growth, require_max_length, require_positive_int, require_sampling_alpha
from transformer_lib.data.tokenizer import PAD_ID, SubwordTokenizer


def train_tokenizers(
    pairs: Sequence[tuple[str, str]], vocab_size: int = 8000, joint: bool = False, lowercase: bool = False
) -> tuple[SubwordTokenizer, SubwordTokenizer]:
    """(source, target) tokenizers trained on the pairs (use the training split only).

    With `joint=True` one tokenizer is trained on both languages and returned twice: the shared
    vocabulary that `Transformer(share_embeddings=True)` needs.
    """
    if joint:
        tokenizer = SubwordTokenizer.train([s for pair in pairs for s in pair], vocab_size, lowercase)
        return tokenizer, tokenizer
    return (
        SubwordTokenizer.train([s for s, _ in pairs], vocab_size, lowercase),
        SubwordTokenizer.train([t for _, t in pairs], vocab_size, lowercase),
    )


def default_bucket_boundaries(max_length: int, growth: float = 1.1) -> list[int]:
    """Bucket upper bounds 3, 4, ..., each `growth` times the last (at least 1 more), up to max_length."""
    require_growth("bucket_growth", growth)
    bounds, b = [], 3
    while b <= max_length:
        bounds.append(b)
        b = max(b + 1, int(b * growth))
    return bounds


def make_batches(
    pairs,
    tokenizers: SubwordTokenizer | tuple[SubwordTokenizer, SubwordTokenizer],
    batch_size: int | None = None,
    batch_tokens: int | None = None,
    max_length: int = 64,
    bucketing: bool = True,
    shuffle: bool = True,
    seed: int = 0,
    verbose: bool = True,
    bucket_growth: float = 1.1,
    shuffle_batches: bool = True,
    sampling_alpha: float | None = None,
    segmentations: int = 16,
) -> tf.data.Dataset:
    """Tokenized, filtered, bucketed, shuffled batches ready for `model.fit`.

    Args:
        pairs: (source, target) strings: a list, or a `tf.data.Dataset` of string pairs.
        tokenizers: `(source_tokenizer, target_tokenizer)`, or one joint tokenizer.
        batch_size: sentences per batch; or
        batch_tokens: about this many tokens per batch (short sentences give bigger batches).
        max_length: longest sequence kept, in tokens, start and end included; longer pairs are
            dropped and counted.
        bucketing: group sentences of similar length (`bucket_by_sequence_length`); False gives
            the plain `padded_batch` of the TensorFlow tutorial, for comparison.
        shuffle: shuffle the pairs (again each epoch) before batching; `seed` fixes the order.
        verbose: print how many pairs were kept and dropped.
        bucket_growth: each bucket's upper length bound is this many times the last one's.
        shuffle_batches: shuffle the batches of each epoch after bucketing (with `shuffle`), so that
            the buckets' last, part-filled batches do not all come at the end of the epoch.
        sampling_alpha: subword regularization for training (BPE-dropout, `SubwordTokenizer.encode`):
            each pair is segmented `segmentations` times in advance, each merge skipped with
            probability `sampling_alpha`, and every time the pair is drawn one of them is picked at
            random. A segmentation longer than `max_length` is replaced by the fixed one; a pair
            stays in the bucket of its fixed length (a batch may hold a few more tokens than
            `batch_tokens`). None (default): the fixed segmentation, every epoch.

    Returns:
        A dataset of `((source_ids, target_in), target_out)`, int32 `[batch, len]`, 0 = padding;
        target_in = START + sentence, target_out = sentence + END.
    """
    if (batch_size is None) == (batch_tokens is None):
        raise ValueError("Give exactly one of batch_size (sentences per batch) or batch_tokens (tokens per batch).")
    if batch_tokens is None:
        require_positive_int("batch_size", batch_size)
    else:
        require_positive_int("batch_tokens", batch_tokens)
    require_max_length(max_length)
    kept, texts = _encode_and_filter(pairs, tokenizers, max_length, verbose)
    if sampling_alpha is None:
        dataset = tf.data.Dataset.from_tensor_slices((ragged_rows([s for s, _ in kept]), ragged_rows([t for _, t in kept])))
        dataset = dataset.map(_dense_rows)  # elements: (source_ids [len_s], target_ids [len_t])
        if shuffle:
            dataset = dataset.shuffle(len(kept), seed=seed, reshuffle_each_iteration=True)
        length_fn = _pair_length
    else:
        dataset = sampled_rows(kept, texts, tokenizers, sampling_alpha, segmentations, max_length, shuffle, seed)
        length_fn = _fixed_length  # elements: (source_ids, target_ids, length of the fixed segmentation)

    if bucketing:
        dataset = bucket_by_length(dataset, [max(len(s), len(t)) for s, t in kept], length_fn, max_length,
                                   batch_size, batch_tokens, bucket_growth)
        if shuffle and shuffle_batches:  # the whole epoch's batches in the buffer: a full shuffle
            dataset = dataset.shuffle(int(dataset.cardinality()), seed=seed + 1, reshuffle_each_iteration=True)
    else:
        size = batch_size or max(1, batch_tokens // max_length)
        dataset = dataset.padded_batch(size)
        dataset = dataset.apply(tf.data.experimental.assert_cardinality(math.ceil(len(kept) / size)))
    if sampling_alpha is not None:
        dataset = dataset.map(lambda source, target, length: (source, target))
    return dataset.map(_teacher_forcing, num_parallel_calls=tf.data.AUTOTUNE).prefetch(tf.data.AUTOTUNE)


def sampled_rows(kept, texts, tokenizers, alpha: float, segmentations: int, max_length: int, shuffle: bool,
                 seed: int) -> tf.data.Dataset:
    """The kept pairs, each time drawn in one of `segmentations` sampled segmentations (`make_batches`'
    `sampling_alpha`): elements `(source_ids, target_ids, fixed_length)`, the last for bucketing.

    The draws come from `tf.data.Dataset.random`, so they differ every epoch and a training
    iterator can still be checkpointed (a Python function in the pipeline could not be)."""
    require_sampling_alpha(alpha)
    require_positive_int("segmentations", segmentations)
    source_tokenizer, target_tokenizer = tokenizers if isinstance(tokenizers, tuple) else (tokenizers, tokenizers)
    seeds = random.Random(seed)  # one seed per segmentation and side: the same `seed`, the same draws
    sampled = [(source_tokenizer.encode([s for s, _ in texts], True, alpha, seeds.randrange(2**31)),
                target_tokenizer.encode([t for _, t in texts], True, alpha, seeds.randrange(2**31)))
               for _ in range(segmentations)]
    fits = lambda ids, fixed: ids if len(ids) <= max_length else fixed
    # row i * segmentations + k: pair i in its k-th segmentation
    sources = ragged_rows([fits(sampled[k][0][i], s) for i, (s, _) in enumerate(kept) for k in range(segmentations)])
    targets = ragged_rows([fits(sampled[k][1][i], t) for i, (_, t) in enumerate(kept) for k in range(segmentations)])
    lengths = tf.constant([max(len(s), len(t)) for s, t in kept], tf.int32)

    def pick(index, draw):
        row = index * segmentations + draw % segmentations
        return sources[row], targets[row], tf.gather(lengths, index)

    indices = tf.data.Dataset.range(len(kept))
    if shuffle:
        indices = indices.shuffle(len(kept), seed=seed, reshuffle_each_iteration=True)
    draws = tf.data.Dataset.random(seed=seed + 2, rerandomize_each_iteration=True)
    return tf.data.Dataset.zip(indices, draws).map(pick)


def _encode_and_filter(pairs, tokenizers, max_length: int, verbose: bool) -> tuple[list, list]:
    """Token ids (START ... END) of each pair, without the pairs that are too long or have an empty
    side; and the kept pairs' texts."""
    source_tokenizer, target_tokenizer = tokenizers if isinstance(tokenizers, tuple) else (tokenizers, tokenizers)
    if isinstance(pairs, tf.data.Dataset):
        pairs = [(s.decode("utf-8"), t.decode("utf-8")) for s, t in pairs.as_numpy_iterator()]
    sources = source_tokenizer.encode([s for s, _ in pairs], add_start_end=True)
    targets = target_tokenizer.encode([t for _, t in pairs], add_start_end=True)
    too_long = sum(1 for s, t in zip(sources, targets) if max(len(s), len(t)) > max_length)
    kept = [(s, t, pair) for s, t, pair in zip(sources, targets, pairs) if 2 < len(s) <= max_length and 2 < len(t) <= max_length]
    empty = len(pairs) - too_long - len(kept)  # only START and END on a side: nothing to translate
    if verbose:
        print(
            f"make_batches: kept {len(kept):,} of {len(pairs):,} pairs; dropped {too_long:,} longer than "
            f"max_length={max_length} tokens and {empty:,} with an empty side."
        )
    if not kept:
        raise ValueError(f"No pair left after filtering (max_length={max_length}); raise max_length or check the data.")
    return [(s, t) for s, t, _ in kept], [pair for _, _, pair in kept]


def bucket_by_length(dataset: tf.data.Dataset, lengths: list[int], length_fn, max_length: int,
                     batch_size: int | None = None, batch_tokens: int | None = None,
                     growth: float = 1.1) -> tf.data.Dataset:
    """Batch `dataset` so that elements of similar length (`length_fn(*element)`, up to
    `max_length`) share a batch: `batch_size` elements, or about `batch_tokens` tokens, per batch.

    `lengths` (the same lengths, in Python) lets the number of batches be counted and declared, so
    Keras shows a full progress bar.
    """
    boundaries = default_bucket_boundaries(max_length, growth)
    uppers = [*boundaries, max_length + 1]  # lengths in bucket i are < uppers[i]
    sizes = [batch_size or max(1, batch_tokens // (upper - 1)) for upper in uppers]
    dataset = dataset.bucket_by_sequence_length(element_length_func=length_fn, bucket_boundaries=boundaries,
                                                bucket_batch_sizes=sizes)
    per_bucket = Counter(bisect.bisect_right(boundaries, length) for length in lengths)
    num_batches = sum(math.ceil(count / sizes[bucket]) for bucket, count in per_bucket.items())
    return dataset.apply(tf.data.experimental.assert_cardinality(num_batches))


def ragged_rows(sequences: list[list[int]]) -> tf.RaggedTensor:
    """Token id lists of different lengths as one RaggedTensor (one row each)."""
    lengths = np.fromiter((len(s) for s in sequences), dtype=np.int64, count=len(sequences))
    flat = np.fromiter((i for s in sequences for i in s), dtype=np.int32, count=int(lengths.sum()))
    return tf.RaggedTensor.from_row_lengths(flat, lengths)


def _pair_length(source, target):
    return tf.maximum(tf.shape(source)[0], tf.shape(target)[0])


def _fixed_length(source, target, length):
    return length


def _dense_rows(source, target):
    """Rows sliced from a RaggedTensor arrive as (rank-0-ragged) RaggedTensors; passing them through
    a map turns them into ordinary 1-D Tensors, which `padded_batch` and bucketing need."""
    return source, target


def _teacher_forcing(source, target):
    """The decoder reads target[:-1] (starting with START) and predicts target[1:] (ending with END)."""
    return (source, target[:, :-1]), target[:, 1:]


def padding_fraction(dataset: tf.data.Dataset) -> float:
    """The share of padding among all token positions (source and target_out) of a batched dataset."""
    pads = total = 0
    for (source, _), target_out in dataset.as_numpy_iterator():
        pads += int((source == PAD_ID).sum() + (target_out == PAD_ID).sum())
        total += source.size + target_out.size
    return pads / total if total else 0.0
