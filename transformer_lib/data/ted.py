"""The TFDS `ted_hrlr_translate` pairs (Qi et al. 2018), as the seed articles loaded them: `load_parallel_corpus`'s
"ted_hrlr/..." names. Offline, from TRANSFORMER_BOOK_DATA/ted_hrlr_translate_<pair>/tfds (a TFDS data_dir); online,
through `tfds.load`, with one clear error within seconds when the archive's host does not answer.
"""

from __future__ import annotations

from transformer_lib.data.downloads import DATA_ENV, CorpusUnavailableError, local_data_dir, unreachable, verify_sha256

TED_PAIRS = ("az_to_en", "aztr_to_en", "be_to_en", "begl_to_en", "es_to_pt", "fr_to_pt", "gl_to_en",
             "gl_to_pt", "he_to_pt", "it_to_pt", "pt_to_en", "ru_to_en", "ru_to_pt", "tr_to_en")
TED_URL = "http://www.phontron.com/data/qi18naacl-dataset.tar.gz"  # what TFDS downloads
# Local TFDS copies whose files we know (TRANSFORMER_BOOK_DATA/ted_hrlr_translate_<pair>/tfds/...).
TED_LOCAL_SHA256 = {
    ("pt_to_en", "test"): "9b91c39b65609ada6f4f4e5e1a0ed5889651a9dbdcb06d0d8bedf5d6a661749d",
    ("pt_to_en", "validation"): "568848605b2232071a4203bc15581cde8d6c969f5fb3d4785681976cdd70ad95",
}


def ted_pairs(name: str, split: str, data_dir, download: bool) -> list[tuple[str, str]]:
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
    builder, prepared = quiet_builder(f"ted_hrlr_translate/{pair}", data_dir)
    if not prepared:
        if not download:
            raise CorpusUnavailableError(
                f"ted_hrlr_translate/{pair} is not prepared in {builder.data_dir} and download=False. {alternatives}"
            )
        reason = unreachable(TED_URL)
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


def quiet_builder(name: str, data_dir):
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
