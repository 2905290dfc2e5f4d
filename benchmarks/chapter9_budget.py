"""What chapter 9's parts cost on this machine: training and reading speed of each model it trains,
in tokens per second, so that the chapter's training time can be planned from measurements.

    python -m benchmarks.chapter9_budget [--seconds 40] [--precisions float32,mixed_bfloat16] [--threads N] [--out FILE] [--toy]

Each part runs the library's own model on random token ids of the chapter's shapes (speed does not
depend on what the tokens say) for about `--seconds` after a warm-up of a few steps, and reports
tokens (padding included: the rows are full) per second:

- `mlm`: `MaskedLanguageModel` (2 layers, width 128, pre-LN), windows of 256 tokens, 16 per update,
  60% of the tokens to predict (the masking the screens chose);
- `classifier_train`: `TransformerClassifier` of the same size, reviews of 256 tokens, 32 per update;
- `classifier_read`: the same model predicting, 64 reviews per call (validation and test accuracy);
- `lm_train`: `LanguageModel` of the same size, texts of 128 tokens, 32 per update (its output layer
  scores the whole vocabulary at every position).

Every part is timed in each `--precisions` policy (Keras mixed precision: `mixed_bfloat16` computes in
bfloat16 and keeps float32 weights; on a CPU with AMX or AVX-512 BF16 it can be much faster, on others
slower). `--threads 1` measures one worker of two that share the machine (run two at once: the sum of
their speeds is what two parallel fine-tunings would get). The record names the machine. `--toy` runs
the same code on a model of width 16 with 64-token rows and 1,000 pieces (for the tests; its speeds mean
nothing).
"""

from __future__ import annotations

import argparse
import datetime
import json
import sys
import time
from pathlib import Path

import keras
import numpy as np
import tensorflow as tf

import transformer_lib as tl
from transformer_lib.utils.machine_description import describe_machine

DEFAULT_OUT = Path(__file__).resolve().parent / "chapter9_budget.json"
FULL = dict(vocab=8001,  # 8,000 pieces and the mask token
            size=dict(num_layers=2, d_model=128, num_heads=4, dff=512, norm_first=True), length=256, warmup=3)
TOY = dict(vocab=1001, size=dict(num_layers=1, d_model=16, num_heads=2, dff=32, norm_first=True), length=64, warmup=1)


def timed(step, tokens_per_step: int, seconds: float, warmup: int = 3) -> float:
    """Tokens per second of `step()` over about `seconds`, after `warmup` calls."""
    for _ in range(warmup):
        step()
    calls, start = 0, time.perf_counter()
    while time.perf_counter() - start < seconds:
        step()
        calls += 1
    return tokens_per_step * calls / (time.perf_counter() - start)


def compiled(model, loss):
    model.compile(optimizer=keras.optimizers.Adam(1e-3), loss=loss, jit_compile=False)
    return model


def parts(rng: np.random.Generator, seconds: float, config: dict = FULL) -> dict:
    crossentropy = keras.losses.SparseCategoricalCrossentropy(from_logits=True)
    vocab, size, length, warmup = config["vocab"], config["size"], config["length"], config["warmup"]
    speeds = {}

    windows = rng.integers(3, vocab - 1, (16, length)).astype("int32")
    batches = tl.models.bert.make_mlm_batches(tf.data.Dataset.from_tensors(windows).repeat(), vocab - 1, rate=0.6)
    mlm = compiled(tl.MaskedLanguageModel(vocab, max_length=length, **size), crossentropy)
    iterator = iter(batches)
    speeds["mlm"] = timed(lambda: mlm.train_on_batch(*next(iterator)), windows.size, seconds, warmup)

    reviews, labels = rng.integers(3, vocab - 1, (32, length)).astype("int32"), rng.integers(0, 2, 32).astype("int32")
    classifier = compiled(tl.TransformerClassifier(vocab, activation="gelu", max_length=length, **size), crossentropy)
    speeds["classifier_train"] = timed(lambda: classifier.train_on_batch(reviews, labels), reviews.size, seconds, warmup)
    wide = rng.integers(3, vocab - 1, (64, length)).astype("int32")
    speeds["classifier_read"] = timed(lambda: classifier.predict_on_batch(wide), wide.size, seconds, warmup)

    texts = rng.integers(3, vocab - 1, (32, length // 2 + 1)).astype("int32")
    inputs, targets = tl.models.language_model.next_token_pairs(texts)
    lm = tl.LanguageModel(vocab, max_length=length, **{k: v for k, v in size.items() if k != "norm_first"})
    lm.compile(optimizer=keras.optimizers.Adam(1e-3), loss=tl.MaskedLoss(label_smoothing=0.0), jit_compile=False)
    speeds["lm_train"] = timed(lambda: lm.train_on_batch(inputs, targets), inputs.size, seconds, warmup)
    return {name: round(value) for name, value in speeds.items()}


def main(argv=None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--seconds", type=float, default=40.0)
    parser.add_argument("--precisions", default="float32,mixed_bfloat16")
    parser.add_argument("--threads", type=int, default=0, help="TensorFlow's threads per operation (0: its default)")
    parser.add_argument("--out", type=Path, default=DEFAULT_OUT)
    parser.add_argument("--toy", action="store_true", help="toy sizes (for the tests; the speeds mean nothing)")
    args = parser.parse_args(argv)
    if args.threads:
        tf.config.threading.set_intra_op_parallelism_threads(args.threads)
        tf.config.threading.set_inter_op_parallelism_threads(args.threads)
    record = {"what": __doc__.split("\n\n")[0], "date": datetime.date.today().isoformat(), "machine": describe_machine(),
              "command": "python -m benchmarks.chapter9_budget " + " ".join(sys.argv[1:] if argv is None else argv),
              "threads": args.threads or "default", "tokens_per_second": {}}
    for precision in args.precisions.split(","):
        keras.mixed_precision.set_global_policy(precision)
        keras.utils.set_random_seed(0)
        record["tokens_per_second"][precision] = parts(np.random.default_rng(0), args.seconds, TOY if args.toy else FULL)
        print(precision, record["tokens_per_second"][precision], flush=True)
    keras.mixed_precision.set_global_policy("float32")
    args.out.write_text(json.dumps(record, indent=1) + "\n")
    return record


if __name__ == "__main__":
    main()
