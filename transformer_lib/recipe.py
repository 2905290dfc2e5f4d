"""The whole recipe of chapter 7 in one call: corpus -> tokenizers -> batches -> model -> training
-> a saved translator (`train_translator`, the CLI's `train`).

A run lives in one directory: `checkpoints/` (with the settings it was trained with), the
translator's files (`export.save_translator`) and `training.json`, the record of every epoch.
"""

from __future__ import annotations

import json
import shutil
import time
from pathlib import Path

import keras
import tensorflow as tf

from transformer_lib._checks import require_max_length, require_positive_int
from transformer_lib.corpora import load_parallel_corpus
from transformer_lib.data import make_batches, train_tokenizers
from transformer_lib.decoding import Translator
from transformer_lib.export import FILES, save_translator
from transformer_lib.machine import describe_machine
from transformer_lib.model import Transformer, require_preset
from transformer_lib.splits import SCHEME
from transformer_lib.training import make_optimizer, train


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
    settings = dict(corpus=corpus, splits=SCHEME, preset=preset, vocab_size=vocab_size, joint_vocab=joint_vocab,
                    batch_tokens=batch_tokens, max_length=max_length, warmup_steps=warmup_steps,
                    norm_first=norm_first, seed=seed, precision=keras.mixed_precision.global_policy().name)
    out = _prepare_run(Path(out), settings, epochs, restart)
    finished = _finished_record(out, epochs)
    if finished is not None:
        return finished  # nothing left to train: neither tokenizers nor model are made again
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
    (out / "training.json").write_text(json.dumps(summary, indent=2) + "\n")
    if verbose:
        print(f"Saved the translator to {out} after {seconds / 60:.1f} min of training.")
    return summary


SETTINGS_FILE = "settings.json"  # in out/checkpoints: what the checkpoints were trained with


def _finished_record(out: Path, epochs: int) -> dict | None:
    """The record of the run in `out` if it has trained `epochs` epochs (or more) and saved its translator."""
    record = out / "training.json"
    if not (record.is_file() and all((out / name).is_file() for name in FILES)):
        return None
    earlier = json.loads(record.read_text())
    done = earlier["history"]["epoch"]
    return earlier if done and done[-1] >= epochs else None


def _prepare_run(out: Path, settings: dict, epochs: int, restart: bool) -> Path:
    """Check a training run's settings before any long work, and compare them with the run in
    `out` that a call would resume; `restart` deletes that run instead."""
    require_preset(settings["preset"])
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
