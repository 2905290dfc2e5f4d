"""Pinned files that load anywhere: read from the offline folder named by ``TRANSFORMER_BOOK_DATA``
when it is set (nothing is downloaded then), downloaded once into the Keras cache otherwise, and
checked against their sha256 either way."""

from __future__ import annotations

import hashlib
import os
import urllib.error
import urllib.request
from pathlib import Path

DATA_ENV = "TRANSFORMER_BOOK_DATA"


class CorpusUnavailableError(RuntimeError):
    """A corpus could not be read or fetched; the message names the cause and the alternatives."""


class ChecksumError(ValueError):
    """A file's sha256 is not the pinned one: it is damaged or a different version."""


def local_data_dir() -> Path | None:
    """The offline data folder named by TRANSFORMER_BOOK_DATA, or None when it is not set."""
    root = os.environ.get(DATA_ENV)
    if not root:
        return None
    root = Path(root).expanduser()
    if not root.is_dir():
        raise CorpusUnavailableError(f"{DATA_ENV}={root} is not a folder. Point it at the data folder or unset it.")
    return root


def fetch_file(folder: str, relative_path: str, base_url: str, sha256: str) -> Path:
    """One pinned file, `folder/relative_path` offline or `base_url/relative_path` online: from
    TRANSFORMER_BOOK_DATA if set (never downloading), else from the Keras cache, downloading it once.
    Either way its sha256 is checked."""
    url = f"{base_url}/{relative_path}"
    root = local_data_dir()
    if root is not None:
        return local_file(root, f"{folder}/{relative_path}", sha256,
                          remedy=f"Copy the file there (from {url}) or unset {DATA_ENV} to download it.")
    subfolder, filename = f"{folder}/{relative_path}".rsplit("/", 1)
    return download(filename, url, sha256, f"datasets/transformer_book/{subfolder}",
                    offline_hint=f"a folder holding {folder}/{relative_path}")


def local_file(root: Path, relative_path: str, sha256: str, remedy: str) -> Path:
    """`root/relative_path` (root: TRANSFORMER_BOOK_DATA), checked against `sha256`; if it is
    missing, an error that ends with `remedy` (what to do instead)."""
    path = root / relative_path
    if not path.is_file():
        raise CorpusUnavailableError(
            f"{DATA_ENV} is set, so nothing is downloaded, but {relative_path} is not in it. {remedy}"
        )
    verify_sha256(path, sha256)
    return path


def download(filename: str, url: str, sha256: str, cache_subdir: str, offline_hint: str) -> Path:
    """`url` in the Keras cache, downloaded once and checked against `sha256` (by Keras, and again
    here: a cache or a download layer that skips the check cannot hand over another file). A
    failure names the offline alternative: TRANSFORMER_BOOK_DATA pointing at `offline_hint`."""
    import keras  # only needed for downloads

    try:
        path = Path(keras.utils.get_file(filename, origin=url, file_hash=sha256, hash_algorithm="sha256",
                                         cache_subdir=cache_subdir))
    except Exception as error:  # network failures come in many types
        raise CorpusUnavailableError(
            f"Could not download {url} ({type(error).__name__}: {error}). Check the connection, or set "
            f"{DATA_ENV} to {offline_hint}."
        ) from error
    verify_sha256(path, sha256)
    return path


def verify_sha256(path: Path, expected: str) -> None:
    """Raise ChecksumError unless the file's sha256 is `expected`."""
    actual = hashlib.sha256(path.read_bytes()).hexdigest()
    if actual != expected:
        raise ChecksumError(
            f"{path.name} has sha256 {actual}, expected {expected}: the file is damaged or another version. "
            f"Delete it and download it again, or restore the original copy."
        )




def unreachable(url: str, timeout: float = 5.0) -> str | None:
    """Why `url` cannot be fetched right now (a short message), or None if it answers."""
    try:
        with urllib.request.urlopen(urllib.request.Request(url, method="HEAD"), timeout=timeout):
            return None
    except urllib.error.HTTPError as error:
        return f"HTTP {error.code}"
    except (urllib.error.URLError, OSError) as error:
        return str(getattr(error, "reason", error))
