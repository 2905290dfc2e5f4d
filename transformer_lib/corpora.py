"""Parallel corpora that load anywhere: `load_parallel_corpus(name, split)`.

- ``"tatoeba/rus-eng"`` (the book's default) and ``"tatoeba/por-eng"``: the Tatoeba Translation
  Challenge test sets v2021-08-07 (Tiedemann 2020), 19,425 and 13,222 human-translated pairs of
  everyday sentences. They are published as *test* sets; this course trains on 90% of them, which
  is fine for learning and says nothing about the challenge's leaderboard. Files are pinned to one
  commit of Helsinki-NLP/OPUS-MT-testsets and checked against their sha256.
- ``"ted_hrlr/ru_to_en"`` and the other TFDS ``ted_hrlr_translate`` pairs, through `tfds.load`, as the
  seed articles did. Its host no longer serves the archive; when it cannot be reached you get one
  clear error within seconds instead of minutes of retries.
- ``"synthetic"``: numbers from 0 to 9,999 written in Russian words -> the same number in English
  words, generated in code (`synthetic.py`): a real (tiny) translation task with no data to fetch.

Offline copies: when the environment variable ``TRANSFORMER_BOOK_DATA`` is set, files are read from
there (same layout as the downloads), checked against the same sha256, and nothing is downloaded.
"""

from __future__ import annotations

import hashlib
import os
import urllib.error
import urllib.request
from pathlib import Path

import tensorflow as tf

from transformer_lib.synthetic import synthetic_pairs

DATA_ENV = "TRANSFORMER_BOOK_DATA"
SPLITS = ("train", "validation", "test")
SPLIT_PERCENT = {"train": 90, "validation": 5, "test": 5}

TATOEBA_COMMIT = "ac0f19c0be3cb4e0d9450fcb2d7a9847c4bdd180"
TATOEBA_URL = (
    f"https://raw.githubusercontent.com/Helsinki-NLP/OPUS-MT-testsets/{TATOEBA_COMMIT}"
    "/datasets/helsinki_nlp/tatoeba/testsets"
)
TATOEBA_DIR = "tatoeba_test_v2021-08-07"
TATOEBA_PAIRS = {"tatoeba/rus-eng": ("eng-rus", "rus"), "tatoeba/por-eng": ("eng-por", "por")}  # name: (folder, source)
TATOEBA_SHA256 = {
    "eng-rus/tatoeba-test-v2021-08-07.eng": "3d89c0281402c08dd6f8158301bf44586997b7f76070269c9ee4097c4f10fcb2",
    "eng-rus/tatoeba-test-v2021-08-07.rus": "643d0d8beedac2add8b8a6523bacdbbb349e438e0139eb5ef9b4cc0f63660cd5",
    "eng-por/tatoeba-test-v2021-08-07.eng": "e6e3bdd486f121fe4876439d92bf52cdc6faab7cdf816888360465bc61f11fab",
    "eng-por/tatoeba-test-v2021-08-07.por": "8a5148ff3b5515cb4948e9b17621bed646851c13ad1d217c2e4ab6e3ac081389",
}

TED_PAIRS = ("az_to_en", "aztr_to_en", "be_to_en", "begl_to_en", "es_to_pt", "fr_to_pt", "gl_to_en",
             "gl_to_pt", "he_to_pt", "it_to_pt", "pt_to_en", "ru_to_en", "ru_to_pt", "tr_to_en")
TED_URL = "http://www.phontron.com/data/qi18naacl-dataset.tar.gz"  # what TFDS downloads
# Local TFDS copies whose files we know (TRANSFORMER_BOOK_DATA/ted_hrlr_translate_<pair>/tfds/...).
TED_LOCAL_SHA256 = {
    ("pt_to_en", "test"): "9b91c39b65609ada6f4f4e5e1a0ed5889651a9dbdcb06d0d8bedf5d6a661749d",
    ("pt_to_en", "validation"): "568848605b2232071a4203bc15581cde8d6c969f5fb3d4785681976cdd70ad95",
}

CORPORA = (*TATOEBA_PAIRS, *(f"ted_hrlr/{p}" for p in TED_PAIRS), "synthetic")


class CorpusUnavailableError(RuntimeError):
    """A corpus could not be read or fetched; the message names the cause and the alternatives."""


class ChecksumError(ValueError):
    """A file's sha256 is not the pinned one: it is damaged or a different version."""



def load_parallel_corpus(
    name: str = "tatoeba/rus-eng",
    split: str = "train",
    as_dataset: bool = False,
    data_dir: str | Path | None = None,
    download: bool = True,
):
    """Aligned (source, target) sentence pairs of one split of a corpus.

    Args:
        name: one of `CORPORA`; "tatoeba/rus-eng" is Russian -> English.
        split: "train", "validation" or "test". Tatoeba and "synthetic" are split 90/5/5 by a hash
            of the *source* sentence, so a sentence with several reference translations stays in
            one split.
        as_dataset: return a `tf.data.Dataset` of (source, target) string pairs instead of a list.
        data_dir: TFDS corpora only: the TFDS `data_dir`.
        download: TFDS corpora only: allow TFDS to download and prepare the data.

    Returns:
        A list of `(source, target)` Python strings, or a `tf.data.Dataset` of string pairs.
    """
    require_split(split)
    if name.startswith("tatoeba/"):
        pairs = _split(_tatoeba_pairs(name), split)
    elif name.startswith("ted_hrlr/"):
        pairs = _ted_pairs(name, split, data_dir, download)
    elif name == "synthetic":
        pairs = _split(synthetic_pairs(), split)
    else:
        raise ValueError(f"Unknown corpus {name!r}; choose one of {CORPORA}.")
    if not as_dataset:
        return pairs
    sources, targets = zip(*pairs) if pairs else ((), ())
    return tf.data.Dataset.from_tensor_slices((list(sources), list(targets)))


def require_split(split: str) -> None:
    """Raise a ValueError naming the splits unless `split` is one of them."""
    if split not in SPLITS:
        raise ValueError(f"Unknown split {split!r}; choose one of {SPLITS}.")


def hash_bucket(key: str) -> int:
    """A number in 0..99 fixed by the text of `key` (its sha256): the same on every machine and run."""
    return int.from_bytes(hashlib.sha256(key.encode("utf-8")).digest()[:8], "big") % 100


def split_of(source: str) -> str:
    """The split a source sentence belongs to: a hash of its text, so it never changes."""
    bucket = hash_bucket(source)
    if bucket < SPLIT_PERCENT["train"]:
        return "train"
    return "validation" if bucket < SPLIT_PERCENT["train"] + SPLIT_PERCENT["validation"] else "test"


def _split(pairs: list[tuple[str, str]], split: str) -> list[tuple[str, str]]:
    return [pair for pair in pairs if split_of(pair[0]) == split]


def _tatoeba_pairs(name: str) -> list[tuple[str, str]]:
    if name not in TATOEBA_PAIRS:
        raise ValueError(f"Unknown corpus {name!r}; choose one of {CORPORA}.")
    folder, source_lang = TATOEBA_PAIRS[name]
    sources = _read_lines(fetch_file(f"{folder}/tatoeba-test-v2021-08-07.{source_lang}"))
    targets = _read_lines(fetch_file(f"{folder}/tatoeba-test-v2021-08-07.eng"))
    if len(sources) != len(targets):
        raise CorpusUnavailableError(f"{name}: {len(sources)} source lines but {len(targets)} target lines.")
    return list(zip(sources, targets))


def _read_lines(path: Path) -> list[str]:
    return path.read_text(encoding="utf-8").rstrip("\n").split("\n")


def local_data_dir() -> Path | None:
    """The offline data folder named by TRANSFORMER_BOOK_DATA, or None when it is not set."""
    root = os.environ.get(DATA_ENV)
    if not root:
        return None
    root = Path(root).expanduser()
    if not root.is_dir():
        raise CorpusUnavailableError(f"{DATA_ENV}={root} is not a folder. Point it at the data folder or unset it.")
    return root


def fetch_file(relative_path: str) -> Path:
    """One pinned Tatoeba file: from TRANSFORMER_BOOK_DATA if set (never downloading), else from the
    Keras cache, downloading it once. Either way its sha256 is checked."""
    sha256 = TATOEBA_SHA256[relative_path]
    url = f"{TATOEBA_URL}/{relative_path}"
    root = local_data_dir()
    if root is not None:
        return local_file(root, f"{TATOEBA_DIR}/{relative_path}", sha256,
                          remedy=f"Copy the file there (from {url}) or unset {DATA_ENV} to download it.")
    folder, filename = f"{TATOEBA_DIR}/{relative_path}".rsplit("/", 1)
    return download(filename, url, sha256, f"datasets/transformer_book/{folder}",
                    offline_hint=f"a folder holding {TATOEBA_DIR}/{relative_path}")


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


def _ted_pairs(name: str, split: str, data_dir, download: bool) -> list[tuple[str, str]]:
    import tensorflow_datasets as tfds

    pair = name.removeprefix("ted_hrlr/")
    if pair not in TED_PAIRS:
        raise ValueError(f"Unknown corpus {name!r}; the ted_hrlr pairs are {TED_PAIRS}.")
    alternatives = (
        f"Alternatives: set {DATA_ENV} to a folder holding ted_hrlr_translate_{pair}/tfds (a TFDS data_dir), "
        f"pass data_dir= to a prepared copy, or use the book's default corpus, load_parallel_corpus('tatoeba/rus-eng')."
    )
    root = local_data_dir()
    if data_dir is None and root is not None:  # the offline copy, never downloading
        data_dir, download = root / f"ted_hrlr_translate_{pair}" / "tfds", False
        if not data_dir.is_dir():
            raise CorpusUnavailableError(f"{DATA_ENV} is set but has no ted_hrlr_translate_{pair}/tfds. {alternatives}")
        version = data_dir / "ted_hrlr_translate" / pair / "1.0.0"
        record = version / f"ted_hrlr_translate-{split}.tfrecord-00000-of-00001"
        if not record.is_file():
            present = sorted(p.name.split("-")[1].split(".")[0] for p in version.glob("ted_hrlr_translate-*.tfrecord-*"))
            raise CorpusUnavailableError(
                f"The offline copy of ted_hrlr_translate/{pair} in {data_dir} has no '{split}' split "
                f"(it holds: {', '.join(present) or 'none'}). Load one of those splits. {alternatives}"
            )
        if (pair, split) in TED_LOCAL_SHA256:
            verify_sha256(record, TED_LOCAL_SHA256[(pair, split)])
    builder, prepared = _quiet_builder(f"ted_hrlr_translate/{pair}", data_dir)
    if not prepared:
        if not download:
            raise CorpusUnavailableError(
                f"ted_hrlr_translate/{pair} is not prepared in {builder.data_dir} and download=False. {alternatives}"
            )
        reason = _unreachable(TED_URL)
        if reason:
            raise CorpusUnavailableError(
                f"Cannot download ted_hrlr_translate/{pair}: its host does not answer ({TED_URL}: {reason}); "
                f"TFDS would retry for minutes. {alternatives}"
            )
    try:
        dataset = tfds.load(
            f"ted_hrlr_translate/{pair}", split=split, as_supervised=True, data_dir=data_dir, download=download
        )
    except Exception as error:
        raise CorpusUnavailableError(
            f"tfds.load('ted_hrlr_translate/{pair}', split='{split}') failed: {type(error).__name__}: {error}. "
            f"{alternatives}"
        ) from error
    return [(s.decode("utf-8"), t.decode("utf-8")) for s, t in dataset.as_numpy_iterator()]


def _quiet_builder(name: str, data_dir):
    """`tfds.builder` and whether its data is prepared, without the warning TFDS logs for a data_dir
    that lacks the dataset (the caller explains that case itself, with the alternatives)."""
    import logging

    import tensorflow_datasets as tfds

    logger = logging.getLogger("absl")
    level = logger.level
    logger.setLevel(logging.ERROR)
    try:
        builder = tfds.builder(name, data_dir=data_dir)
        return builder, builder.is_prepared()
    finally:
        logger.setLevel(level)


def _unreachable(url: str, timeout: float = 5.0) -> str | None:
    """Why `url` cannot be fetched right now (a short message), or None if it answers."""
    try:
        with urllib.request.urlopen(urllib.request.Request(url, method="HEAD"), timeout=timeout):
            return None
    except urllib.error.HTTPError as error:
        return f"HTTP {error.code}"
    except (urllib.error.URLError, OSError) as error:
        return str(getattr(error, "reason", error))
