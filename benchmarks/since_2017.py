"""What each change since 2017 is worth on chapter 9's language model, all else equal (the chapter "Since 2017").

    python -m benchmarks.since_2017 [--quick | --toy] [--seeds 0 1] [--variants 2017 2024 ...] [--out FILE]

Every variant is `tl.ModernLanguageModel` with chapter 9's sizes (2 layers, width 128, 4 heads, dff 512),
trained on the same windows of IMDB training reviews (128 tokens, 6,000 windows, 2 epochs, 32 windows an
update, warm-up 200 to a peak of 2e-3, gradients clipped to norm 1), from the same seed:

- "2017": the paper's block (post-LN, LayerNorm, sinusoids added once, ReLU, multi-head attention);
- each change alone on that block: "pre-LN", "RMSNorm", "rotary", "SwiGLU", "GQA (2 of 4 heads)";
- "2024": all of them together (pre-LN with RMSNorm, rotary, SwiGLU, grouped-query attention).

For each: the validation perplexity (2,000 windows of validation reviews, split by movie), the parameters,
the training speed in real tokens per second, and the bytes one generated token adds to the key/value
cache; and for "2017" and "2024" a greedy continuation of the same prompt. A second seed runs every
variant again (`--seeds`): the chapter says which differences stay larger than the seeds' spread.
`--quick` is the chapter's quick mode (the 2,000-review sample, small sizes: minutes); `--toy` smaller still,
for the tests. The record names the machine and the settings.
"""

from __future__ import annotations

import argparse
import datetime
import json
import time
from pathlib import Path

import keras
import numpy as np

import transformer_lib as tl
from transformer_lib.utils.machine_description import describe_machine

DEFAULT_OUT = Path(__file__).resolve().parent.parent / "chapters" / "results" / "since_2017.json"
VARIANTS = {
    "2017": {},
    "pre-LN": dict(norm_first=True),
    "RMSNorm": dict(rms_norm=True),
    "rotary": dict(rotary=True),
    "SwiGLU": dict(swiglu=True),
    "GQA": dict(num_kv_heads=2),
    "2024": dict(norm_first=True, rms_norm=True, rotary=True, swiglu=True, num_kv_heads=2),
}
FULL = dict(sample=False, vocab_size=8000, window=128, windows=6000, validation_windows=2000, epochs=2,
            num_layers=2, d_model=128, num_heads=4, dff=512, batch_size=32, peak_rate=2e-3, warmup=200,
            prompt="This movie was", new_tokens=30)
QUICK = dict(FULL, sample=True, vocab_size=1000, window=64, windows=400, validation_windows=200, epochs=1,
             d_model=32, dff=64, warmup=20, new_tokens=12)
TOY = dict(QUICK, windows=64, validation_windows=32, window=32, d_model=16, dff=32, new_tokens=4)


def windows(tokenizer, reviews, settings: dict, count: int, seed: int):
    """`(inputs, targets)`: `count` windows of the reviews' ids (`tl.data.imdb.review_windows`), drawn with
    `seed`, padded to the window and shifted by one (`tl.next_token_pairs`)."""
    rows_of_ids = tl.data.imdb.review_windows(tokenizer.encode([text for text, _ in reviews]), settings["window"])
    chosen = np.random.default_rng(seed).permutation(len(rows_of_ids))[:count]
    rows = np.zeros((len(chosen), settings["window"]), np.int32)
    for row, index in zip(rows, chosen):
        row[: len(rows_of_ids[index])] = rows_of_ids[index]
    return tl.next_token_pairs(rows)


def data(settings: dict):
    """The tokenizer and the training and validation windows every variant trains and is scored on."""
    train = tl.load_imdb("train", sample=settings["sample"])
    tokenizer = tl.data.imdb.train_review_tokenizer(train, settings["vocab_size"])
    validation = tl.load_imdb("validation", sample=settings["sample"])
    return (tokenizer, windows(tokenizer, train, settings, settings["windows"], seed=0),
            windows(tokenizer, validation, settings, settings["validation_windows"], seed=1))


def train_one(name: str, seed: int, settings: dict, tokenizer, train, validation) -> tuple[dict, object]:
    """One variant from one seed: its row of the table, and the trained model."""
    keras.utils.set_random_seed(seed)
    model = tl.ModernLanguageModel(tokenizer.vocab_size, settings["num_layers"], settings["d_model"],
                                   settings["num_heads"], settings["dff"], dropout_rate=0.1,
                                   max_length=settings["window"], **VARIANTS[name])
    schedule = tl.TransformerSchedule(settings["d_model"], settings["warmup"], peak_rate=settings["peak_rate"])
    model.compile(optimizer=keras.optimizers.Adam(schedule, clipnorm=1.0), loss=tl.MaskedLoss(label_smoothing=0.0))
    model(train[0][:1])  # built: its parameters can be counted
    start = time.perf_counter()
    model.fit(*train, batch_size=settings["batch_size"], epochs=settings["epochs"], shuffle=True, verbose=0)
    seconds = time.perf_counter() - start
    tokens = int((train[1] != 0).sum()) * settings["epochs"]
    return {"variant": name, "switches": VARIANTS[name], "seed": seed,
            "val_perplexity": round(tl.perplexity(model, validation), 2),
            "parameters": int(model.count_params()), "tokens_per_second": round(tokens / seconds),
            "cache_bytes_per_token": model.cache_bytes_per_token(), "train_minutes": round(seconds / 60, 2)}, model


def run(settings: dict = FULL, seeds=(0, 1), variants=tuple(VARIANTS), verbose: bool = True) -> dict:
    """Every variant from every seed on the same data; the record (see the module's docstring)."""
    start = time.perf_counter()
    tokenizer, train, validation = data(settings)
    rows, samples = [], {}
    prompt = tokenizer.encode([settings["prompt"]], add_start_end=True)[0][:-1]  # START and the prompt, no END
    for seed in seeds:
        for name in variants:
            row, model = train_one(name, seed, settings, tokenizer, train, validation)
            rows.append(row)
            if verbose:
                print(f"{name:8s} seed {seed}: validation perplexity {row['val_perplexity']:8.2f}, "
                      f"{row['parameters']:,} parameters, {row['tokens_per_second']:,} tokens/s, "
                      f"{row['cache_bytes_per_token']:,} cache bytes per token ({row['train_minutes']} min)")
            if seed == seeds[0] and name in ("2017", "2024"):
                new = tl.generate(model, prompt, settings["new_tokens"], temperature=0)
                samples[name] = tokenizer.decode([prompt[1:] + new])[0]
    return {"what": __doc__.split("\n\n")[0], "date": datetime.date.today().isoformat(), "machine": describe_machine(),
            "settings": settings, "seeds": list(seeds), "rows": rows, "greedy_samples": samples,
            "minutes": round((time.perf_counter() - start) / 60, 1)}


def main(argv=None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    size = parser.add_mutually_exclusive_group()
    size.add_argument("--quick", action="store_true", help="the chapter's quick mode (the 2,000-review sample)")
    size.add_argument("--toy", action="store_true", help="the smallest run (for the tests; its numbers mean nothing)")
    parser.add_argument("--seeds", type=int, nargs="+", default=[0, 1])
    parser.add_argument("--variants", nargs="+", choices=list(VARIANTS), default=list(VARIANTS))
    parser.add_argument("--out", type=Path, default=None, help=f"where to write the record (default: {DEFAULT_OUT})")
    args = parser.parse_args(argv)
    settings = TOY if args.toy else QUICK if args.quick else FULL
    record = run(settings, tuple(args.seeds), tuple(args.variants))
    out = args.out or DEFAULT_OUT
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(record, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
    print(f"written to {out}")
    return record


if __name__ == "__main__":
    main()
