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
for pretraining), and `random_review_windows` draws one stretch of every review at a random place
each epoch; `balanced` draws a labelled subset with half of each label.
"""

from __future__ import annotations

import functools
import json
import re
import tarfile
import zlib
from collections import Counter
from pathlib import Path

import numpy as np
import tensorflow as tf

from transformer_lib.downloads import CorpusUnavailableError, download, local_data_dir, local_file
from transformer_lib.splits import hash_bucket, require_split
from transformer_lib.data import bucket_by_length, ragged_rows
from transformer_lib.tokenizer import END_ID, START_ID, SubwordTokenizer

IMDB_URL = "http://ai.stanford.edu/~amaas/data/sentiment/aclImdb_v1.tar.gz"
IMDB_SHA256 = "c40f74a18d3b61f90feba1e17730e0d38e8b97c05fde7008942e91923d1658fe"
LOCAL_ARCHIVE = ("aclImdb/aclImdb_v1_text.tar.gz", "f6ef6e1130f1a14f91181bd9ca6a188ed4aa5ae3de5b6751f5e700da1adea76a")
LOCAL_SAMPLE = ("aclImdb/imdb_sample_2000.jsonl", "202fcc9bb2dca37635c3508484e096c092939c55c3d8d4a48e5a1c84d0bf8f27")
BATCH_TOKENS = 8192  # tokens per batch of reviews of similar length, by default
VALIDATION_PERCENT = 10  # of the official training split's movies
LABELS = {"neg": 0, "pos": 1}
TRUNCATIONS = ("head", "head+tail")  # which tokens of a long review make_review_batches keeps
_REVIEW_PATH = re.compile(r"aclImdb/(train|test)/(pos|neg)/(\d+)_(\d+)\.txt$")
_URLS_PATH = re.compile(r"aclImdb/train/urls_(pos|neg)\.txt$")
_MOVIE = re.compile(r"/title/(tt\d+)/")


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
    reviews = _read_sample(_sample_path()) if sample else _read_archive(_archive_path())
    if split == "test":
        return [(clean_review(text), label) for part, _, label, text in reviews if part == "test"]
    movies = _read_movies(_archive_path())  # the sample's movies too: the archive lies beside it
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


def movie_of(url: str) -> str:
    """The IMDb id ("tt0453418") in a review's URL (".../title/tt0453418/usercomments"), else the URL."""
    match = _MOVIE.search(url)
    return match.group(1) if match else url.strip()


def _archive_path() -> Path:
    root = local_data_dir()
    if root is not None:
        return local_file(root, *LOCAL_ARCHIVE,
                          remedy=f"Copy it there, or unset TRANSFORMER_BOOK_DATA to download {IMDB_URL}.")
    return download("aclImdb_v1.tar.gz", IMDB_URL, IMDB_SHA256, "datasets/transformer_book",
                    offline_hint=f"a folder holding {LOCAL_ARCHIVE[0]}")


def _sample_path() -> Path:
    root = local_data_dir()
    if root is None:
        raise CorpusUnavailableError(
            f"The 2,000-review sample is only read from TRANSFORMER_BOOK_DATA/{LOCAL_SAMPLE[0]}; set "
            "TRANSFORMER_BOOK_DATA, or use load_imdb(split) for the full dataset (downloaded once)."
        )
    return local_file(root, *LOCAL_SAMPLE, remedy="Copy it there from the course's data folder, or call "
                      "load_imdb(split) without sample=True for the full dataset.")


READ_ERRORS = (tarfile.TarError, EOFError, zlib.error, OSError)


def _damaged(path: Path, error: Exception) -> CorpusUnavailableError:
    return CorpusUnavailableError(f"{path} is truncated or damaged ({type(error).__name__}: {error}). Delete it and "
                                  f"download {IMDB_URL} again (or restore the original copy).")


@functools.cache
def _read_archive(path: Path) -> list[tuple[str, int, int, str]]:
    """(official split, review id, label, raw text) of every labeled review in an aclImdb tarball."""
    reviews = []
    try:
        with tarfile.open(path, "r:gz") as archive:
            for member in archive:
                match = _REVIEW_PATH.search(member.name)
                if match is None or not member.isfile():
                    continue  # README, vocabulary, URL lists, the unlabeled `unsup` reviews
                part, label, review_id, _ = match.groups()
                text = archive.extractfile(member).read().decode("utf-8")
                reviews.append((part, int(review_id), LABELS[label], text))
    except READ_ERRORS as error:
        raise _damaged(path, error) from error
    counts = Counter((part, label) for part, _, label, _ in reviews)
    if sorted(counts.values()) != [12_500] * 4:
        raise CorpusUnavailableError(
            f"{path} does not hold the 4 x 12,500 labeled reviews of aclImdb v1 (found {dict(counts)}): "
            "it is incomplete or another dataset. Download the original archive again."
        )
    return sorted(reviews)


@functools.cache
def _read_movies(path: Path) -> dict[tuple[int, int], str]:
    """{(label, review id): movie} for the official training reviews, from the archive's URL lists
    (near its start, so only they are read)."""
    movies = {}
    try:
        with tarfile.open(path, "r:gz") as archive:
            for member in archive:
                match = _URLS_PATH.search(member.name)
                if match:
                    lines = archive.extractfile(member).read().decode("utf-8").splitlines()
                    movies.update({(LABELS[match.group(1)], i): movie_of(url) for i, url in enumerate(lines)})
                if len(movies) == 25_000:
                    return movies
    except READ_ERRORS as error:
        raise _damaged(path, error) from error
    raise CorpusUnavailableError(
        f"{path} lacks the URL lists aclImdb/train/urls_pos.txt and urls_neg.txt (12,500 lines each), which "
        f"name each training review's movie (found {len(movies):,} lines). Download the original archive again."
    )


@functools.cache
def _read_sample(path: Path) -> list[tuple[str, int, int, str]]:
    with path.open(encoding="utf-8") as lines:
        rows = [json.loads(line) for line in lines]
    return [(row["split"], int(row["id"]), int(row["label"]), row["text"]) for row in rows]


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
