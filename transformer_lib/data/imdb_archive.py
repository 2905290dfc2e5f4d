"""Reading the IMDB reviews (aclImdb v1, Maas et al. 2011) from their files: the original tarball
(offline from TRANSFORMER_BOOK_DATA, or downloaded once), checked against pinned sha256 sums, its
URL lists (the movie of each training review) and the 2,000-review sample. `imdb.load_imdb` splits them.
"""

from __future__ import annotations

import functools
import json
import re
import tarfile
import zlib
from collections import Counter
from pathlib import Path

from transformer_lib.data.downloads import CorpusUnavailableError, download, local_data_dir, local_file

IMDB_URL = "http://ai.stanford.edu/~amaas/data/sentiment/aclImdb_v1.tar.gz"
IMDB_SHA256 = "c40f74a18d3b61f90feba1e17730e0d38e8b97c05fde7008942e91923d1658fe"
LOCAL_ARCHIVE = ("aclImdb/aclImdb_v1_text.tar.gz", "f6ef6e1130f1a14f91181bd9ca6a188ed4aa5ae3de5b6751f5e700da1adea76a")
LOCAL_SAMPLE = ("aclImdb/imdb_sample_2000.jsonl", "202fcc9bb2dca37635c3508484e096c092939c55c3d8d4a48e5a1c84d0bf8f27")
LABELS = {"neg": 0, "pos": 1}
_REVIEW_PATH = re.compile(r"aclImdb/(train|test)/(pos|neg)/(\d+)_(\d+)\.txt$")
_URLS_PATH = re.compile(r"aclImdb/train/urls_(pos|neg)\.txt$")
_MOVIE = re.compile(r"/title/(tt\d+)/")


def movie_of(url: str) -> str:
    """The IMDb id ("tt0453418") in a review's URL (".../title/tt0453418/usercomments"), else the URL."""
    match = _MOVIE.search(url)
    return match.group(1) if match else url.strip()


def archive_path() -> Path:
    root = local_data_dir()
    if root is not None:
        return local_file(root, *LOCAL_ARCHIVE,
                          remedy=f"Copy it there, or unset TRANSFORMER_BOOK_DATA to download {IMDB_URL}.")
    return download("aclImdb_v1.tar.gz", IMDB_URL, IMDB_SHA256, "datasets/transformer_book",
                    offline_hint=f"a folder holding {LOCAL_ARCHIVE[0]}")


def sample_path() -> Path:
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
def read_archive(path: Path) -> list[tuple[str, int, int, str]]:
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
def read_movies(path: Path) -> dict[tuple[int, int], str]:
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
def read_sample(path: Path) -> list[tuple[str, int, int, str]]:
    with path.open(encoding="utf-8") as lines:
        rows = [json.loads(line) for line in lines]
    return [(row["split"], int(row["id"]), int(row["label"]), row["text"]) for row in rows]
