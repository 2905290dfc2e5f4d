"""Parallel corpora that load anywhere: `load_parallel_corpus(name, split)`.

- ``"tatoeba/rus-eng"`` (the book's default) and ``"tatoeba/por-eng"``: the Tatoeba Translation
  Challenge test sets v2021-08-07 (Tiedemann 2020), 19,425 and 13,222 human-translated pairs of
  everyday sentences. They are published as *test* sets; this course trains on 90% of them, which
  is fine for learning and says nothing about the challenge's leaderboard. Files are pinned to one
  commit of Helsinki-NLP/OPUS-MT-testsets and checked against their sha256.
- ``"ted_hrlr/ru_to_en"`` and the other TFDS ``ted_hrlr_translate`` pairs, through `tfds.load`, as the
  seed articles did. Its host no longer serves the archive; when it cannot be reached you get one
  clear error within seconds instead of minutes of retries.
- ``"newstest/rus-eng"``: the WMT news test sets 2012-2020 Russian-English (27,810 distinct pairs of
  newspaper sentences, about 20 words each), from the same pinned commit of OPUS-MT-testsets. Also
  published as test sets: say so wherever a score of a model trained on them is reported.
- ``"tatoeba+newstest/rus-eng"``: both Russian-English corpora together. Its splits keep both
  corpora's held-out pairs held out: the pairs are grouped over the union (a news sentence that is
  also a Tatoeba sentence joins their groups), and a group goes to the most held-out split any of its
  pairs has in its own corpus (test before validation before train). So a model trained on it never
  sees a sentence of Tatoeba's (or the news sets') validation or test split.
- ``"smartool/rus-eng"``: the example sentences of SMARTool, written for English-speaking learners
  of Russian (Janda et al., "Data used by SMARTool for English-speaking learners of Russian",
  DataverseNO, doi:10.18710/QNAPNE, CC BY 4.0): 9,468 distinct everyday pairs at levels A1 to B2,
  pinned to one commit of a GitHub copy and checked against their sha256. Split 90/5/5 like the others.
- ``"tatoeba+smartool/rus-eng"``: Tatoeba with the SMARTool pairs added to its *training* split. Its
  validation and test splits are exactly Tatoeba's, so its scores compare with those of a model
  trained on Tatoeba alone. A SMARTool pair is trained on unless a chain of shared sentences (the
  grouping of `transformer_lib.data.splits`, over both corpora) links it to a Tatoeba validation or test
  pair; such a pair is left out of every split. None is today (6 SMARTool pairs share a sentence with
  Tatoeba, all with training pairs): 17,475 + 9,468 = 26,943 training pairs.
- ``"tatoeba+smartool+bt/rus-eng"``: that corpus with the back-translated pairs (`back_translations.py`: everyday
  English sentences of the Tatoeba Portuguese-English set, put into Russian by an English -> Russian model) added
  to its training split by the same rule: its validation and test splits are exactly Tatoeba's.
- ``"<corpus>/eng-rus"`` for each Russian -> English corpus above: the same pairs of each split, swapped (English ->
  Russian, the reverse model that back-translation needs), so that both directions hold out the same sentences.
- ``"synthetic"``: numbers from 0 to 9,999 written in Russian words -> the same number in English
  words, generated in code (`synthetic.py`): a real (tiny) translation task with no data to fetch.
- ``"synthetic/small"``: every seventh of those numbers (1,429 pairs; every last digit still occurs),
  split the same way: for runs that must take seconds (toy benchmarks, tests of training mechanics).

Offline copies: when the environment variable ``TRANSFORMER_BOOK_DATA`` is set, files are read from
there (same layout as the downloads), checked against the same sha256, and nothing is downloaded.
"""

from __future__ import annotations

import csv
from importlib import resources
from pathlib import Path

import tensorflow as tf

from transformer_lib.data.downloads import (  # noqa: F401 (DATA_ENV and the errors are part of this module's API)
    DATA_ENV, ChecksumError, CorpusUnavailableError, fetch_file, local_data_dir, unreachable, verify_sha256,
)
from transformer_lib.data.back_translations import read_back_translations
from transformer_lib.data.splits import (
    SPLITS, connected_groups, normalize, require_split, split_of_key, split_pairs, with_extra_training_pairs,
)
from transformer_lib.data.synthetic import synthetic_pairs
from transformer_lib.data.ted import TED_PAIRS, ted_pairs

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

OPUS_MT_TESTSETS_URL = f"https://raw.githubusercontent.com/Helsinki-NLP/OPUS-MT-testsets/{TATOEBA_COMMIT}"
NEWSTEST_DIR = "wmt_newstest_rus_eng"
COMBINED = "tatoeba+newstest/rus-eng"
SMARTOOL_COMMIT = "c20223c008c278c9399d8442f52948fae9c82c1c"
SMARTOOL_URL = f"https://raw.githubusercontent.com/bjoernbuth/data-rus-eng/{SMARTOOL_COMMIT}"
SMARTOOL_DIR = "smartool_rus_eng"
SMARTOOL_SHA256 = {  # the four level files, A1 to B2 (the offline folder's README gives their bytes and lines)
    "SMARTool_data_A1.csv": "84fc670664b34b4ee682da2270b49a08174aebb18acfc78645147e790c84bcd4",
    "SMARTool_data_A2.csv": "cf3068c98505f9dcbefaf18fd8419ee294e491325dc6fd22a5fb48b9a7c37183",
    "SMARTool_data_B1.csv": "b0e5ecd4fe7e1f3cb31d95e1704b601fcb6fa3c679a0c9a9fc23b7876618fbcd",
    "SMARTool_data_B2.csv": "5532cdbf5e92bdc5fae099d22318677aed7e940334988233dee1f15ec51db94c",
}
SMARTOOL_COLUMNS = ("Target language example sentence", "User language translation")  # Russian, English
SMARTOOL_NO_SENTENCE = ("", "_")  # what a SMARTool cell holds when a row has no example sentence
TATOEBA_SMARTOOL = "tatoeba+smartool/rus-eng"
BACK_TRANSLATED = "tatoeba+smartool+bt/rus-eng"
REVERSED = "/eng-rus"  # "<corpus>/eng-rus": the Russian -> English corpus's pairs of each split, swapped
SYNTHETIC_SMALL = "synthetic/small"
SYNTHETIC_SMALL_STRIDE = 7  # every 7th number: 1,429 pairs, every last digit among them
RUSSIAN_ENGLISH = ("tatoeba/rus-eng", "newstest/rus-eng", COMBINED, "smartool/rus-eng", TATOEBA_SMARTOOL, BACK_TRANSLATED)
CORPORA = (*TATOEBA_PAIRS, *RUSSIAN_ENGLISH[1:], *(name.replace("/rus-eng", REVERSED) for name in RUSSIAN_ENGLISH),
           *(f"ted_hrlr/{p}" for p in TED_PAIRS), "synthetic", SYNTHETIC_SMALL)


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
        split: "train", "validation" or "test". Tatoeba, the news sets, SMARTool and "synthetic" are split
            about 90/5/5 without leaks: pairs that share a source or a target sentence always fall
            into one split (`transformer_lib.data.splits`).
        as_dataset: return a `tf.data.Dataset` of (source, target) string pairs instead of a list.
        data_dir: TFDS corpora only: the TFDS `data_dir`.
        download: TFDS corpora only: allow TFDS to download and prepare the data.

    Returns:
        A list of `(source, target)` Python strings, or a `tf.data.Dataset` of string pairs.
    """
    require_split(split)
    if name.endswith(REVERSED) and name.replace(REVERSED, "/rus-eng") in RUSSIAN_ENGLISH:
        pairs = [(target, source) for source, target in load_parallel_corpus(name.replace(REVERSED, "/rus-eng"), split)]
    elif name.startswith("tatoeba/"):
        pairs = split_pairs(_tatoeba_pairs(name), split)
    elif name == "newstest/rus-eng":
        pairs = split_pairs(_newstest_pairs(), split)
    elif name == COMBINED:
        pairs = _combined_split(split)
    elif name == "smartool/rus-eng":
        pairs = split_pairs(_smartool_pairs(), split)
    elif name == TATOEBA_SMARTOOL:
        pairs = _tatoeba_smartool_split(split)
    elif name == BACK_TRANSLATED:
        pairs = _back_translated_split(split)
    elif name.startswith("ted_hrlr/"):
        pairs = ted_pairs(name, split, data_dir, download)
    elif name == "synthetic":
        pairs = split_pairs(synthetic_pairs(), split)
    elif name == SYNTHETIC_SMALL:
        pairs = split_pairs(synthetic_pairs()[::SYNTHETIC_SMALL_STRIDE], split)
    else:
        raise ValueError(f"Unknown corpus {name!r}; choose one of {CORPORA}.")
    if not as_dataset:
        return pairs
    sources, targets = zip(*pairs) if pairs else ((), ())
    return tf.data.Dataset.from_tensor_slices((list(sources), list(targets)))


def _tatoeba_pairs(name: str) -> list[tuple[str, str]]:
    if name not in TATOEBA_PAIRS:
        raise ValueError(f"Unknown corpus {name!r}; choose one of {CORPORA}.")
    folder, source_lang = TATOEBA_PAIRS[name]
    files = [f"{folder}/tatoeba-test-v2021-08-07.{language}" for language in (source_lang, "eng")]
    return _aligned(name, *(fetch_file(TATOEBA_DIR, path, TATOEBA_URL, TATOEBA_SHA256[path]) for path in files))


def _newstest_pairs() -> list[tuple[str, str]]:
    """Every year's pairs, each distinct pair once (some sentences recur across years)."""
    # sha256sum of every file, shipped with the package (eng-rus: the 2019 and 2020 sets, whose sentences differ)
    listing = resources.files(__package__).joinpath("newstest.sha256").read_text(encoding="utf-8")
    checksums = {path: sha for sha, path in map(str.split, listing.splitlines())}
    pairs = {}
    for russian in (path for path in checksums if path.endswith(".rus")):
        files = [fetch_file(NEWSTEST_DIR, path, OPUS_MT_TESTSETS_URL, checksums[path])
                 for path in (russian, russian.removesuffix(".rus") + ".eng")]
        for source, target in _aligned(russian.removesuffix(".rus"), *files):
            pairs.setdefault((normalize(source), normalize(target)), (source, target))
    return list(pairs.values())


def _combined_split(split: str) -> list[tuple[str, str]]:
    """Tatoeba's and the news sets' pairs of `split` in the combined corpus (see the module's docstring)."""
    pairs, own_splits = [], []
    for corpus in (_tatoeba_pairs("tatoeba/rus-eng"), _newstest_pairs()):
        pairs += corpus
        own_splits += [split_of_key(key) for key in connected_groups(corpus)]  # as the corpus alone splits it
    keys = connected_groups(pairs)
    group_split: dict[str, str] = {}
    for key, own in zip(keys, own_splits):  # SPLITS runs from train to test: the later, the more held out
        group_split[key] = max(group_split.get(key, "train"), own, key=SPLITS.index)
    return [pair for pair, key in zip(pairs, keys) if group_split[key] == split]


def _smartool_pairs() -> list[tuple[str, str]]:
    """Every distinct (Russian, English) example pair of the four levels, A1 first, whitespace
    normalised. A row without both sentences is not a pair: 53 of the 9,525 rows have an empty
    cell or the dataset's placeholder "_" instead; of the 9,472 others, 4 repeat a pair (an example
    of two words) and are kept once: 9,468 pairs."""
    pairs: dict[tuple[str, str], None] = {}  # a dict keeps the first occurrence's place
    for name, sha256 in SMARTOOL_SHA256.items():
        path = fetch_file(SMARTOOL_DIR, name, SMARTOOL_URL, sha256)
        with path.open(encoding="utf-8", newline="") as file:
            reader = csv.DictReader(file)
            missing = [column for column in SMARTOOL_COLUMNS if column not in (reader.fieldnames or ())]
            if missing:
                raise CorpusUnavailableError(f"{name} has no column {missing[0]!r}: it is not a SMARTool level file.")
            for row in reader:
                source, target = (normalize(row[column]) for column in SMARTOOL_COLUMNS)
                if source not in SMARTOOL_NO_SENTENCE and target not in SMARTOOL_NO_SENTENCE:
                    pairs[(source, target)] = None
    return list(pairs)


def _tatoeba_smartool_split(split: str) -> list[tuple[str, str]]:
    """Tatoeba's own `split`, and for training also every SMARTool pair that no chain of shared
    sentences links to a Tatoeba validation or test pair (see the module's docstring)."""
    return with_extra_training_pairs(_tatoeba_pairs("tatoeba/rus-eng"), _smartool_pairs(), split)


def _back_translated_split(split: str) -> list[tuple[str, str]]:
    """`TATOEBA_SMARTOOL`'s `split`, and for training also the back-translated pairs, by the same rule: a
    synthetic pair linked through either side to a Tatoeba validation or test pair is in no split."""
    extra = _smartool_pairs() + read_back_translations()
    return with_extra_training_pairs(_tatoeba_pairs("tatoeba/rus-eng"), extra, split)


def monolingual_english() -> list[str]:
    """The English sentences of the Tatoeba Portuguese-English test set, each once, in order: everyday English
    without a Russian side, for back-translation (`tl.back_translate`)."""
    return list(dict.fromkeys(normalize(english) for _, english in _tatoeba_pairs("tatoeba/por-eng")))


def _aligned(name: str, source_file, target_file) -> list[tuple[str, str]]:
    sources, targets = _read_lines(source_file), _read_lines(target_file)
    if len(sources) != len(targets):
        raise CorpusUnavailableError(f"{name}: {len(sources)} source lines but {len(targets)} target lines.")
    return list(zip(sources, targets))


def _read_lines(path: Path) -> list[str]:
    return path.read_text(encoding="utf-8").rstrip("\n").split("\n")
