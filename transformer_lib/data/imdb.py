"""The IMDB Large Movie Review dataset (aclImdb v1, Maas et al. 2011), for the side chapter.

50,000 labeled reviews, 25,000 for training and 25,000 for testing, half positive (rating >= 7)
and half negative (rating <= 4). `load_imdb` reads them straight from the tarball:
    - offline, from TRANSFORMER_BOOK_DATA/aclImdb/aclImdb_v1_text.tar.gz (the labeled reviews only,
      in the original layout), never downloading;
    - otherwise from the original archive, downloaded once with `keras.utils.get_file`.
Both are checked against pinned sha256 sums. The validation split is carved from the official
training split *by movie*: the archive's URL lists name the movie of every review (line i of
`urls_pos.txt` is positive review i), and the reviews of about 10% of the movies, chosen by a hash
of the movie's IMDb id, are the validation split. The official splits share no movie; a review-level
split would share nearly all of them (a movie has up to 30 reviews), so a model that memorised what
the training reviews say of a film would score too well on validation. The test split is never
touched for choices. `load_imdb(..., sample=True)` reads a 2,000-review sample instead (CI).

`make_review_batches` tokenizes once, truncates long reviews and groups reviews of similar length
(`batch_rows`); `review_windows` cuts every review into consecutive windows instead (all of the text,
for pretraining), `sampled_windows` a fixed random sample of them, padded, and `random_review_windows`
draws one stretch of every review at a random place each epoch; `balanced` draws a labelled subset with half of each label.
"""

from __future__ import annotations

import re

import numpy as np
import tensorflow as tf

from transformer_lib.data.imdb_archive import (  # noqa: F401 (LOCAL_ARCHIVE, movie_of, read_*: imdb.X in tests)
    LOCAL_ARCHIVE,
    archive_path,
    movie_of,
    read_archive,
    read_movies,
    read_sample,
    sample_path,
)
from transformer_lib.data.splits import hash_bucket, require_split
from transformer_lib.data.batching import bucket_by_length, ragged_rows
from transformer_lib.data.tokenizer import END_ID, START_ID, SubwordTokenizer

BATCH_TOKENS = 8192  # tokens per batch of reviews of similar length, by default
VALIDATION_PERCENT = 10  # of the official training split's movies
TRUNCATIONS = ("head", "head+tail")  # which tokens of a long review make_review_batches keeps
def load_imdb(split: str = "train", sample: bool = False) -> list[tuple[str, int]]:
    """(review text, label) pairs of one split; label 1 = positive, 0 = negative.

    Args:
        split: "train" (the official training reviews of about 90% of its movies), "validation" (those
            of the other movies) or "test" (the official test reviews, whose movies are others again).
        sample: read the 2,000-review sample (TRANSFORMER_BOOK_DATA only): 1,000 official training
            reviews (split by movie the same way) and 1,000 test reviews.

    The text is cleaned by `clean_review` (the reviews' `<br />` tags become line breaks).
    """
    require_split(split)
    reviews = read_sample(sample_path()) if sample else read_archive(archive_path())
    if split == "test":
        return [(clean_review(text), label) for part, _, label, text in reviews if part == "test"]
    movies = read_movies(archive_path())  # the sample's movies too: the archive lies beside it
    return [(clean_review(text), label) for part, review_id, label, text in reviews
            if part == "train" and _carved_split(movies[label, review_id]) == split]


def clean_review(text: str) -> str:
    """A review's HTML line breaks (`<br />`) as newlines, without control characters (a few
    reviews hold backspaces) or stray whitespace."""
    text = re.sub(r"[\x00-\x08\x0b-\x1f\x7f]", "", text)
    return re.sub(r"[ \t]*<br\s*/?>[ \t]*", "\n", text).strip()


def _carved_split(movie: str) -> str:
    """train or validation for the reviews of one movie of the official training split, by a hash
    of the movie's IMDb id: all reviews of a movie fall into the same split."""
    return "validation" if hash_bucket(movie) < VALIDATION_PERCENT else "train"


def train_review_tokenizer(reviews: list[tuple[str, int]], vocab_size: int = 8000) -> SubwordTokenizer:
    """A lower-cased BPE tokenizer learned from review texts (give it the training split only)."""
    return SubwordTokenizer.train([text for text, _ in reviews], vocab_size, lowercase=True)


def make_review_batches(
    reviews: list[tuple[str, int]],
    tokenizer: SubwordTokenizer,
    max_length: int = 256,
    batch_tokens: int | None = None,
    shuffle: bool = True,
    seed: int = 0,
    truncate: str = "head",
    reviews_per_batch: int | None = None,
) -> tf.data.Dataset:
    """Batches `(token_ids [batch, len], labels [batch])` for `model.fit`, 0 = padding.

    Every review becomes START, at most `max_length - 2` of its subword ids, END: longer reviews are
    truncated, never dropped. `truncate="head"` keeps their beginning; "head+tail" keeps the first
    and the last ids, half of the room each (Sun et al. 2019: reviewers often sum up at the end).
    Reviews of similar length share a batch of about `batch_tokens` tokens (8,192 by default), so little
    of it is padding; or, with `reviews_per_batch`, each batch holds that many reviews in random order,
    whatever their length (see `batch_rows`).
    """
    if not reviews:
        raise ValueError("make_review_batches needs at least one (text, label) review.")
    if max_length < 3:
        raise ValueError(f"max_length={max_length} leaves no room for a token between START and END; use >= 3.")
    if truncate not in TRUNCATIONS:
        raise ValueError(f"truncate={truncate!r} is not one of {TRUNCATIONS}: keep the head of a long review, or its "
                         "head and its tail.")
    ids = [[START_ID, *truncated(row, max_length - 2, truncate), END_ID]
           for row in tokenizer.encode([text for text, _ in reviews])]
    return batch_rows(ids, [label for _, label in reviews], max_length, batch_tokens, shuffle, seed, reviews_per_batch)


def batch_rows(rows: list[list[int]], labels: list[int], max_length: int, batch_tokens: int | None = None,
               shuffle: bool = True, seed: int = 0, rows_per_batch: int | None = None) -> tf.data.Dataset:
    """Batches `(token_ids [batch, len], labels [batch])` of token rows (each START ... END, at most
    `max_length` ids), padded with 0; `shuffle` draws the rows in a new order every epoch (`seed` fixes it).

    By default rows of similar length share a batch of about `batch_tokens` tokens (BATCH_TOKENS if
    None): little padding, fast. With `rows_per_batch`, every batch holds that many rows (the last one
    the rest) in the drawn order, whatever their length, padded to the longest of them: more padding,
    but every update sees a random mix of short and long reviews, as in the usual fine-tuning recipe
    (benchmarks/bert_finetune_protocol.json compares the two when labels are few).
    """
    if rows_per_batch is not None and (not isinstance(rows_per_batch, int) or rows_per_batch < 1):
        raise ValueError(f"rows_per_batch={rows_per_batch!r}: give a positive number of rows per batch, or None to "
                         "batch rows of similar length by batch_tokens.")
    if rows_per_batch is not None and batch_tokens is not None:
        raise ValueError(f"batch_rows got both batch_tokens={batch_tokens} and rows_per_batch={rows_per_batch}: a "
                         "batch is either about batch_tokens tokens of rows of similar length, or rows_per_batch "
                         "rows; give one.")
    if len(rows) != len(labels):
        raise ValueError(f"batch_rows got {len(rows)} rows but {len(labels)} labels: give one label per row.")
    longest = max((len(row) for row in rows), default=0)
    if not rows or longest > max_length:
        raise ValueError(f"batch_rows needs at least one row of at most max_length={max_length} ids (the "
                         f"longest has {longest}): truncate the rows first, or raise max_length.")
    dataset = tf.data.Dataset.from_tensor_slices((ragged_rows(rows), tf.constant(labels, tf.int32)))
    dataset = dataset.map(lambda x, y: (x, y))  # dense rows
    if shuffle:
        dataset = dataset.shuffle(len(rows), seed=seed, reshuffle_each_iteration=True)
    if rows_per_batch is None:
        dataset = bucket_by_length(dataset, [len(row) for row in rows], lambda x, y: tf.shape(x)[0], max_length,
                                   batch_tokens=batch_tokens or BATCH_TOKENS)
    else:
        dataset = dataset.padded_batch(rows_per_batch, padded_shapes=([None], []))
    return dataset.prefetch(tf.data.AUTOTUNE)


def review_windows(ids: list[list[int]], window: int) -> list[list[int]]:
    """Every review's subword ids cut into consecutive pieces of `window - 2`, each as a row START ...
    END of at most `window` ids: all of every review's text, in order, for pretraining (a review's
    last window may be shorter; an empty review gives no window)."""
    if window < 3:
        raise ValueError(f"window={window} leaves no room for a token between START and END; use >= 3.")
    room = window - 2
    return [[START_ID, *row[i:i + room], END_ID] for row in ids for i in range(0, len(row), room)]


def sampled_windows(ids: list[list[int]], window: int, count: int, seed: int = 0) -> np.ndarray:
    """`count` of the reviews' consecutive windows (`review_windows`), drawn at random with `seed` (all of
    them when there are fewer), as an int32 array `[count, window]` padded with 0: a language model's
    fixed sample of the text (`tl.next_token_pairs` turns it into inputs and targets)."""
    windows = review_windows(ids, window)
    chosen = np.random.default_rng(seed).permutation(len(windows))[:count]
    rows = np.zeros((len(chosen), window), np.int32)
    for row, index in zip(rows, chosen):
        row[: len(windows[index])] = windows[index]
    return rows


def random_review_windows(ids: list[list[int]], window: int, windows_per_batch: int, seed: int = 0) -> tf.data.Dataset:
    """Batches `(token_ids [batch, len], zeros [batch])` for pretraining: every epoch, one stretch of
    `window - 2` consecutive pieces of every review, starting at a random place (all of a shorter
    review), as START ... END, the reviews in a new random order, `windows_per_batch` a batch, padded
    with 0. Unlike `review_windows` (the same consecutive windows every epoch), each epoch shows the
    model other stretches of a long review; the labels are zeros (pretraining uses none).
    """
    if window < 3:
        raise ValueError(f"window={window} leaves no room for a token between START and END; use >= 3.")
    if not isinstance(windows_per_batch, int) or windows_per_batch < 1:
        raise ValueError(f"windows_per_batch={windows_per_batch!r}: give a positive number of windows per batch.")
    ids = [row for row in ids if row]  # an empty review has no stretch to give
    if not ids:
        raise ValueError("random_review_windows needs at least one review with a token in it.")
    room = window - 2

    def stretch(row, pair_seed):
        length = tf.shape(row)[0]
        start = tf.random.stateless_uniform([], pair_seed, 0, tf.maximum(length - room, 0) + 1, dtype=tf.int32)
        return tf.concat([[START_ID], row[start:start + room], [END_ID]], axis=0), 0

    rows = tf.data.Dataset.from_tensor_slices(ragged_rows(ids)).shuffle(len(ids), seed=seed,
                                                                         reshuffle_each_iteration=True)
    seeds = tf.data.Dataset.random(seed=seed, rerandomize_each_iteration=True).batch(2)  # a fresh start per window
    windows = tf.data.Dataset.zip(rows, seeds).map(stretch)
    return windows.padded_batch(windows_per_batch, padded_shapes=([None], [])).prefetch(tf.data.AUTOTUNE)


def balanced(reviews: list[tuple[str, int]], count: int, seed: int = 0) -> list[tuple[str, int]]:
    """`count` of `reviews`, half with each label, drawn at random with `seed` and kept in their
    order (all of them when `count >= len(reviews)`): a small labelled training set, as in a study of
    how many labels a model needs."""
    if count >= len(reviews):
        return list(reviews)
    if count < 2 or count % 2:
        raise ValueError(f"balanced(count={count}): give an even count of at least 2 (half of each label).")
    labels = np.array([label for _, label in reviews])
    rng = np.random.default_rng(seed)
    chosen = []
    for label in (0, 1):
        where = np.flatnonzero(labels == label)
        if len(where) < count // 2:
            raise ValueError(f"balanced(count={count}) needs {count // 2} reviews of label {label}; "
                             f"there are {len(where)}. Ask for fewer.")
        chosen.extend(rng.choice(where, count // 2, replace=False))
    return [reviews[i] for i in sorted(chosen)]


def truncated(ids: list[int], room: int, truncate: str = "head") -> list[int]:
    """At most `room` of `ids`: the first ones ("head"), or the first `room - room // 2` and the last
    `room // 2` ("head+tail")."""
    if len(ids) <= room or truncate == "head":
        return ids[:room]
    tail = room // 2
    return ids[: room - tail] + (ids[-tail:] if tail else [])
