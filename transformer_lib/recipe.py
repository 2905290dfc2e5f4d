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

from transformer_lib._checks import require_max_length, require_positive_int, require_rate
from transformer_lib.corpora import load_parallel_corpus
from transformer_lib.data import make_batches, train_tokenizers
from transformer_lib.decoding import Translator
from transformer_lib.export import FILES, save_translator
from transformer_lib.machine import describe_machine
from transformer_lib.model import Transformer, require_preset
from transformer_lib.objective import make_optimizer
from transformer_lib.selection import bleu_score, select_weights
from transformer_lib.splits import SCHEME
from transformer_lib.training import train


def train_translator(
    out: str | Path,
    corpus: str = "tatoeba/rus-eng",
    preset: str = "small",
    epochs: int = 70,
    vocab_size: int = 8000,
    joint_vocab: bool = False,
    batch_tokens: int = 1024,
    max_length: int = 64,
    warmup_steps: int | None = 4000,
    warmup_ratio: float = 0.1,
    dropout_rate: float | None = None,
    label_smoothing: float = 0.1,
    average_last: int = 5,
    norm_first: bool = False,
    xla: bool = False,
    seed: int = 0,
    restart: bool = False,
    verbose: int = 1,
) -> dict:
    """Train tokenizers and a `Transformer.from_preset(preset)` on `corpus`, and save the translator.

    The whole recipe of chapter 7 in one call, with the defaults its measurements chose (the row
    "paper" of its recipe study: the preset's dropout, warm-up 4,000 steps and label smoothing 0.1 as
    in the paper, and separate 8,000-piece vocabularies where the paper shared one); `joint_vocab=True` shares one vocabulary and the embeddings (§3.4), `warmup_steps=None`
    warms up for `warmup_ratio` of the run, `dropout_rate` overrides the preset's. Training uses the
    corpus's train split; its validation split is scored after every epoch (loss, and BLEU of greedy
    translations), and the saved translator is the last epoch's, the best epoch's or the average of
    the last `average_last` epochs' weights (§6.1), whichever gives the best beam-search BLEU on the
    validation split. Checkpoints go to `out/checkpoints` (a second call resumes there, and refuses if
    a setting that shapes the run differs, unless `restart=True` deletes the old run first), the
    translator to `out` (`load_translator(out)`), and a summary to `out/training.json`: the settings,
    the machine, the training time, the history of every epoch and the choice of weights.
    For mixed precision, set the Keras policy to "mixed_float16" before calling.
    """
    require_positive_int("average_last", average_last)
    settings = dict(corpus=corpus, splits=SCHEME, preset=preset, vocab_size=vocab_size, joint_vocab=joint_vocab,
                    batch_tokens=batch_tokens, max_length=max_length, warmup_steps=warmup_steps,
                    warmup_ratio=None if warmup_steps else warmup_ratio, dropout_rate=dropout_rate,
                    label_smoothing=label_smoothing, norm_first=norm_first, seed=seed,
                    precision=keras.mixed_precision.global_policy().name)
    out = _prepare_run(Path(out), settings, epochs, restart)
    finished = _finished_record(out, epochs)
    if finished is not None:
        return finished  # nothing left to train: neither tokenizers nor model are made again
    keras.utils.set_random_seed(seed)
    val_pairs = load_parallel_corpus(corpus, "validation")
    tokenizers, train_ds, val_ds = training_data(corpus, val_pairs, vocab_size, joint_vocab, batch_tokens, max_length, seed, verbose)
    sizes = {} if dropout_rate is None else {"dropout_rate": dropout_rate}
    model = Transformer.from_preset(preset, tokenizers[0].vocab_size, tokenizers[1].vocab_size, max_length=max_length,
                                    norm_first=norm_first, share_embeddings=joint_vocab, **sizes)
    steps = int(train_ds.cardinality()) * epochs
    warmup = warmup_steps or max(1, round(warmup_ratio * steps))
    if verbose:
        print(f"{corpus}: preset {preset}; {steps:,} steps, warm-up {warmup}; {describe_machine()}")
    start = time.perf_counter()
    history = train(model, train_ds, val_ds, epochs=epochs, optimizer=make_optimizer(model.hyperparameters["d_model"], warmup),
                    label_smoothing=label_smoothing, checkpoint_dir=out / "checkpoints", keep_weights=average_last,
                    score=bleu_score(tokenizers, val_pairs, max_length), jit_compile=xla, verbose=verbose)
    seconds = time.perf_counter() - start
    choice = select_weights(model, out / "checkpoints", bleu_score(tokenizers, val_pairs, max_length, beam_size=4),
                            average_last, verbose=bool(verbose))
    save_translator(Translator(model, *tokenizers, max_length=max_length), out)
    summary = {**settings, "epochs": epochs, "warmup": warmup, "train_seconds": round(sum(history["seconds"]), 1),
               "train_seconds_this_run": round(seconds, 1), "machine": describe_machine(), "history": history,
               "weights": choice}
    (out / "training.json").write_text(json.dumps(summary, indent=2) + "\n")
    if verbose:
        print(f"Saved the translator ({choice['chosen']}) to {out} after {seconds / 60:.1f} min of training.")
    return summary


def training_data(corpus, val_pairs, vocab_size, joint_vocab, batch_tokens, max_length, seed=0, verbose=True,
                  **batching):
    """Tokenizers trained on the corpus's train split, its training batches and the validation batches.

    `batching`: `make_batches`' other options, e.g. `batch_size=64, bucketing=False` (with
    `batch_tokens=None`) for the TensorFlow tutorial's plain `padded_batch`.
    """
    train_pairs = load_parallel_corpus(corpus, "train")
    tokenizers = train_tokenizers(train_pairs, vocab_size, joint=joint_vocab)
    batching = dict(batching, batch_tokens=batch_tokens, max_length=max_length, verbose=verbose)
    return (tokenizers, make_batches(train_pairs, tokenizers, seed=seed, **batching),
            make_batches(val_pairs, tokenizers, shuffle=False, **batching))


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
    for name in ("epochs", "vocab_size", "batch_tokens"):
        require_positive_int(name, epochs if name == "epochs" else settings[name])
    if settings["warmup_steps"] is not None:
        require_positive_int("warmup_steps", settings["warmup_steps"])
    else:
        require_rate("warmup_ratio", settings["warmup_ratio"])
    for name in ("dropout_rate", "label_smoothing"):
        if settings[name] is not None:
            require_rate(name, settings[name])
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
