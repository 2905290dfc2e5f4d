"""Saving a trained translator so that it reloads and translates identically.

A translator directory holds:
    model.keras       the Keras model (architecture, weights), `keras.saving.load_model`
    source.model      the source SentencePiece tokenizer
    target.model      the target SentencePiece tokenizer
    translator.json   max_length, the library version that wrote it, the tokenizers' sha256

`export_saved_model` writes a TensorFlow SavedModel instead, for serving without this library.
`recipe.train_translator` makes such a directory from a corpus in one call (the CLI's `train` command).
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import keras
import tensorflow as tf

from transformer_lib.utils.checks import require_max_length
from transformer_lib._version import __version__
from transformer_lib.decoding.search import greedy_loop
from transformer_lib.decoding.translator import Translator
from transformer_lib.utils.json_records import write_json
from transformer_lib.data.tokenizer import END_ID, PAD_ID, START_ID, SubwordTokenizer

FILES = ("model.keras", "source.model", "target.model", "translator.json")


def save_translator(translator: Translator, directory: str | Path) -> Path:
    """Write the model, both tokenizers and the settings into `directory` (created if needed)."""
    directory = Path(directory)
    directory.mkdir(parents=True, exist_ok=True)
    translator.model.save(directory / "model.keras")
    translator.source_tokenizer.save(directory / "source.model")
    translator.target_tokenizer.save(directory / "target.model")
    settings = {"max_length": translator.max_length, "alpha": translator.alpha, "transformer_lib": __version__,
                "source_sha256": _fingerprint(translator.source_tokenizer),
                "target_sha256": _fingerprint(translator.target_tokenizer)}
    write_json(directory / "translator.json", settings, indent=2)  # whole or not at all
    return directory


def load_translator(directory: str | Path) -> Translator:
    """The `Translator` saved by `save_translator`, after checking that its files belong together."""
    directory = Path(directory)
    missing = [name for name in FILES if not (directory / name).is_file()]
    if missing:
        raise FileNotFoundError(
            f"{directory} is not a saved translator: {', '.join(missing)} missing. "
            "Create one with save_translator or `python -m transformer_lib train --out DIR`."
        )
    settings = _read_settings(directory / "translator.json")
    tokenizers = {side: SubwordTokenizer.load(directory / f"{side}.model") for side in ("source", "target")}
    for side, other in (("source", "target"), ("target", "source")):
        expected = settings.get(f"{side}_sha256")  # absent in translators saved by earlier versions
        if expected and _fingerprint(tokenizers[side]) != expected:
            swapped = _fingerprint(tokenizers[side]) == settings.get(f"{other}_sha256")
            raise ValueError(
                f"{directory / f'{side}.model'} is not the {side} tokenizer this translator was saved with"
                + (f" (it is the {other} tokenizer: the two files look swapped)" if swapped else "")
                + ". Restore the files that save_translator wrote together."
            )
    try:
        model = keras.saving.load_model(directory / "model.keras")
    except Exception as error:  # Keras reports a damaged archive in many ways, some misleading ("File not found")
        raise ValueError(
            f"{directory / 'model.keras'} cannot be loaded ({type(error).__name__}: {error}). The file is damaged "
            "or truncated, or was written by an incompatible version: save the translator again."
        ) from error
    try:
        return Translator(model, tokenizers["source"], tokenizers["target"], max_length=settings["max_length"],
                          alpha=settings.get("alpha", 0.6))  # absent in translators saved by earlier versions
    except ValueError as error:
        raise ValueError(f"{directory} does not hold a consistent translator: {error}") from None


def _fingerprint(tokenizer: SubwordTokenizer) -> str:
    return hashlib.sha256(tokenizer.model_proto).hexdigest()


def _read_settings(path: Path) -> dict:
    """translator.json as a dict with at least `max_length`; a clear error for anything else."""
    try:
        settings = json.loads(path.read_text(encoding="utf-8"))
    except (json.JSONDecodeError, UnicodeDecodeError) as error:
        raise ValueError(f"{path} is not valid JSON ({error}); restore the file that save_translator wrote.") from None
    if not isinstance(settings, dict) or "max_length" not in settings:
        raise ValueError(f"{path} lacks the required key 'max_length'; restore the file that save_translator wrote.")
    try:
        require_max_length(settings["max_length"])
    except ValueError as error:
        raise ValueError(f"{path}: {error} Restore the file that save_translator wrote.") from None
    return settings


def export_saved_model(translator: Translator, directory: str | Path) -> Path:
    """A TensorFlow SavedModel that translates a batch of strings to strings, with no Python needed
    to serve it: tokenization runs in the graph (tensorflow-text's SentencePiece op, with the very
    same models), then greedy decoding with the key/value cache.

        import tensorflow_text  # registers the SentencePiece op: without it loading fails with
                                # "Op type not registered 'SentencepieceOp'"
        reloaded = tf.saved_model.load(directory)
        reloaded.translate(tf.constant(["Я люблю читать книги."]))  # -> tf.string [batch]

    Its translations equal `translator(texts, beam_size=1)`.
    """
    module = _ServingModule(translator)
    directory = Path(directory)
    tf.saved_model.save(module, str(directory), signatures={"serving_default": module.translate})
    return directory


# What Python's str.strip removes, as an RE2 class (RE2's \s is ASCII only): the Unicode separators
# (\p{Z}: no-break, ideographic, em spaces, line and paragraph separators), the ASCII blanks with
# the vertical tab, the information separators and NEL. tests/test_faults.py compares it with str.strip
# on every code point.
UNICODE_BLANKS = r"[\p{Z}\t\n\x0b\x0c\r\x1c-\x1f\x85]*"


def is_blank(texts):
    """bool `[batch]`: which strings `Translator` leaves untranslated (`not text.strip()`)."""
    return tf.strings.regex_full_match(texts, UNICODE_BLANKS)


class _ServingModule(tf.Module):
    def __init__(self, translator: Translator):
        import tensorflow_text  # the SentencePiece op; needs the full `tensorflow` wheel

        super().__init__()
        self.model = translator.model
        self.max_length = translator.max_length
        # Distinct names matter: two SentencePiece resources of the same name share one model once
        # the SavedModel is loaded again.
        self.source_tokenizer = tensorflow_text.SentencepieceTokenizer(
            model=translator.source_tokenizer.model_proto, name="source_sentencepiece"
        )
        self.target_tokenizer = tensorflow_text.SentencepieceTokenizer(
            model=translator.target_tokenizer.model_proto, name="target_sentencepiece"
        )

    @tf.function(input_signature=[tf.TensorSpec([None], tf.string, name="texts")])
    def translate(self, texts):
        pieces = self.source_tokenizer.tokenize(texts)[:, : self.max_length - 2]  # ragged (batch, len)
        batch = tf.shape(texts)[0]
        start = tf.fill([batch, 1], START_ID)
        end = tf.fill([batch, 1], END_ID)
        source = tf.concat([start, tf.cast(pieces, tf.int32), end], axis=1).to_tensor(PAD_ID)
        tokens = greedy_loop(self.model, source, self.max_length)
        tokens = tf.RaggedTensor.from_tensor(tokens, padding=PAD_ID)
        tokens = tf.ragged.boolean_mask(tokens, tokens != END_ID)
        return tf.where(is_blank(texts), "", self.target_tokenizer.detokenize(tokens))

