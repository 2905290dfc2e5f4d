"""Saving a trained translator so that it reloads and translates identically.

A translator directory holds:
    model.keras       the Keras model (architecture, weights), `keras.saving.load_model`
    source.model      the source SentencePiece tokenizer
    target.model      the target SentencePiece tokenizer
    translator.json   max_length, the library version that wrote it, the tokenizers' sha256

`export_saved_model` writes a TensorFlow SavedModel instead, for serving without this library.
`train_translator` makes such a directory from a corpus in one call (the CLI's `train` command).
"""

from __future__ import annotations

import hashlib
import json
import shutil
import time
from pathlib import Path

import keras
import tensorflow as tf

import transformer_lib
from transformer_lib.data import load_parallel_corpus, make_batches, train_tokenizers
from transformer_lib.decoding import Translator, greedy_loop
from transformer_lib._checks import require_max_length, require_positive_int
from transformer_lib.model import PRESETS, Transformer
from transformer_lib.tokenizer import END_ID, PAD_ID, START_ID, SubwordTokenizer
from transformer_lib.training import make_optimizer, train

FILES = ("model.keras", "source.model", "target.model", "translator.json")


def save_translator(translator: Translator, directory: str | Path) -> Path:
    """Write the model, both tokenizers and the settings into `directory` (created if needed)."""
    directory = Path(directory)
    directory.mkdir(parents=True, exist_ok=True)
    translator.model.save(directory / "model.keras")
    translator.source_tokenizer.save(directory / "source.model")
    translator.target_tokenizer.save(directory / "target.model")
    settings = {"max_length": translator.max_length, "transformer_lib": transformer_lib.__version__,
                "source_sha256": _fingerprint(translator.source_tokenizer),
                "target_sha256": _fingerprint(translator.target_tokenizer)}
    (directory / "translator.json").write_text(json.dumps(settings, indent=2) + "\n")
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
        return Translator(model, tokenizers["source"], tokenizers["target"], max_length=settings["max_length"])
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


def train_translator(
    out: str | Path,
    corpus: str = "tatoeba/rus-eng",
    preset: str = "small",
    epochs: int = 30,
    vocab_size: int = 8000,
    joint_vocab: bool = False,
    batch_tokens: int = 1024,
    max_length: int = 64,
    warmup_steps: int = 4000,
    norm_first: bool = False,
    xla: bool = False,
    seed: int = 0,
    restart: bool = False,
    verbose: int = 1,
) -> dict:
    """Train tokenizers and a `Transformer.from_preset(preset)` on `corpus`, and save the translator.

    The whole recipe of chapter 7 in one call: the corpus's train split for training and its
    validation split for the per-epoch validation, checkpoints in `out/checkpoints` (a second call
    resumes there, and refuses if a setting that shapes the run differs, unless `restart=True`
    deletes the old run first), the translator in `out` (`load_translator(out)`), and a summary,
    also written to `out/training.json`: the settings, the machine, the training time and the
    history of every epoch, earlier runs' included.
    For mixed precision, set the Keras policy to "mixed_float16" before calling.
    """
    from transformer_lib.book import describe_machine

    settings = dict(corpus=corpus, preset=preset, vocab_size=vocab_size, joint_vocab=joint_vocab,
                    batch_tokens=batch_tokens, max_length=max_length, warmup_steps=warmup_steps,
                    norm_first=norm_first, seed=seed, precision=keras.mixed_precision.global_policy().name)
    out = _prepare_run(Path(out), settings, epochs, restart)
    keras.utils.set_random_seed(seed)
    train_pairs = load_parallel_corpus(corpus, "train")
    val_pairs = load_parallel_corpus(corpus, "validation")
    tokenizers = train_tokenizers(train_pairs, vocab_size, joint=joint_vocab)
    batching = dict(batch_tokens=batch_tokens, max_length=max_length, verbose=verbose)
    train_ds = make_batches(train_pairs, tokenizers, seed=seed, **batching)
    val_ds = make_batches(val_pairs, tokenizers, shuffle=False, **batching)
    model = Transformer.from_preset(preset, tokenizers[0].vocab_size, tokenizers[1].vocab_size, max_length=max_length,
                                    norm_first=norm_first, share_embeddings=joint_vocab)
    if verbose:
        print(f"{corpus}: {len(train_pairs):,} training pairs; preset {preset}; "
              f"{int(train_ds.cardinality()) * epochs:,} steps, warm-up {warmup_steps}; {describe_machine()}")
    start = time.perf_counter()
    history = train(model, train_ds, val_ds, epochs=epochs, optimizer=make_optimizer(model.hyperparameters["d_model"], warmup_steps),
                    checkpoint_dir=out / "checkpoints", jit_compile=xla, verbose=verbose)
    seconds = time.perf_counter() - start
    save_translator(Translator(model, *tokenizers, max_length=max_length), out)
    summary = {**settings, "epochs": epochs, "train_seconds": round(sum(history["seconds"]), 1),
               "train_seconds_this_run": round(seconds, 1), "machine": describe_machine(), "history": history}
    record = out / "training.json"
    if record.is_file():
        earlier = json.loads(record.read_text())
        if earlier.get("history", {}).get("epoch") == history["epoch"]:
            return earlier  # nothing new was trained: the record stays as it was
    record.write_text(json.dumps(summary, indent=2) + "\n")
    if verbose:
        print(f"Saved the translator to {out} after {seconds / 60:.1f} min of training.")
    return summary


SETTINGS_FILE = "settings.json"  # in out/checkpoints: what the checkpoints were trained with


def _prepare_run(out: Path, settings: dict, epochs: int, restart: bool) -> Path:
    """Check a training run's settings before any long work, and compare them with the run in
    `out` that a call would resume; `restart` deletes that run instead."""
    if settings["preset"] not in PRESETS:
        raise ValueError(f"Unknown preset {settings['preset']!r}; choose one of {sorted(PRESETS)}.")
    for name in ("epochs", "vocab_size", "batch_tokens", "warmup_steps"):
        require_positive_int(name, epochs if name == "epochs" else settings[name])
    require_max_length(settings["max_length"])
    if out.exists() and not out.is_dir():
        raise NotADirectoryError(f"out={out} is a file; the translator needs a directory. Choose another path.")
    checkpoints = out / "checkpoints"
    if restart:
        shutil.rmtree(checkpoints, ignore_errors=True)
        (out / "training.json").unlink(missing_ok=True)
    saved = checkpoints / SETTINGS_FILE
    if saved.is_file() and tf.train.latest_checkpoint(str(checkpoints)):
        before = json.loads(saved.read_text())
        changed = [f"{name}={before.get(name)!r} before, {value!r} now" for name, value in settings.items()
                   if before.get(name) != value]
        if changed:
            raise ValueError(
                f"{out} holds a run trained with other settings ({'; '.join(changed)}); resuming would mix two runs. "
                "Resume with the same settings, choose another out, or pass restart=True (--restart) to delete "
                "that run and start afresh."
            )
    checkpoints.mkdir(parents=True, exist_ok=True)
    saved.write_text(json.dumps(settings, indent=2) + "\n")
    return out


def export_saved_model(translator: Translator, directory: str | Path) -> Path:
    """A TensorFlow SavedModel that translates a batch of strings to strings, with no Python needed
    to serve it: tokenization runs in the graph (tensorflow-text's SentencePiece op, with the very
    same models), then greedy decoding with the key/value cache.

        reloaded = tf.saved_model.load(directory)
        reloaded.translate(tf.constant(["Я люблю читать книги."]))  # -> tf.string [batch]

    Its translations equal `translator(texts, beam_size=1)`.
    """
    module = _ServingModule(translator)
    directory = Path(directory)
    tf.saved_model.save(module, str(directory), signatures={"serving_default": module.translate})
    return directory


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
        blank = tf.strings.length(tf.strings.strip(texts)) == 0
        return tf.where(blank, "", self.target_tokenizer.detokenize(tokens))

