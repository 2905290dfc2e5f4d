"""What each change since 2017 is worth on chapter 9's language model, all else equal (the chapter "Since 2017").

    python -m benchmarks.since_2017 [--quick | --toy] [--seeds 0 1] [--variants 2017 2024 ...] [--windows N] [--out FILE]

The chapter "Since 2017" runs the same study in its cells (`tl.training.since_2017`) and writes
`chapters/results/since_2017.json`; this command runs it outside the book. Every variant is
`tl.ModernLanguageModel` with chapter 9's sizes (2 layers, width 128, 4 heads, dff 512), trained on the same
windows of IMDB training reviews (128 tokens, 5,000 windows, or `--windows`, 2 epochs, 32 windows an update,
warm-up 200 to a peak of 2e-3, gradients clipped to norm 1), from the same seed:

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

import transformer_lib as tl
from transformer_lib.training import since_2017 as study
from transformer_lib.utils.machine_description import describe_machine

DEFAULT_OUT = Path(__file__).resolve().parent / "since_2017.json"
VARIANTS, FULL, QUICK, TOY = study.VARIANTS, study.FULL, study.QUICK, study.TOY


def run(settings: dict = FULL, seeds=(0, 1), variants=tuple(VARIANTS), verbose: bool = True) -> dict:
    """Every variant from every seed on the same data; the record (see the module's docstring)."""
    start = time.perf_counter()
    tokenizer, train, validation = study.study_data(settings)
    rows, samples = [], {}
    prompt = tokenizer.encode([settings["prompt"]], add_start_end=True)[0][:-1]  # START and the prompt, no END
    for seed in seeds:
        for name in variants:
            row, model = study.train_variant(name, seed, settings, tokenizer.vocab_size, train, validation)
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
    parser.add_argument("--windows", type=int, default=None, help="training windows (default: the size's own)")
    parser.add_argument("--out", type=Path, default=None, help=f"where to write the record (default: {DEFAULT_OUT})")
    args = parser.parse_args(argv)
    settings = TOY if args.toy else QUICK if args.quick else FULL
    settings = settings if args.windows is None else dict(settings, windows=args.windows)
    record = run(settings, tuple(args.seeds), tuple(args.variants))
    out = args.out or DEFAULT_OUT
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(record, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
    print(f"written to {out}")
    return record


if __name__ == "__main__":
    main()
