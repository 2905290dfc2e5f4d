"""Every benchmark in one run: one table on the terminal, every number in benchmarks/results.json.

    python -m benchmarks [--out benchmarks/results.json] [--toy]      (or: make bench)

Measured side by side in one process, so that the *ratios* mean something on a shared machine
(absolute times there are noise):

1. training throughput, ours against the keras-hub peer fed the TensorFlow tutorial's way, end to
   end and model only, at d_model 128 and 512 (`benchmarks.throughput`);
2. padding: the share of padding in padded_batch batches and in our bucketed ones (`benchmarks.padding`);
3. decoding: key/value cache against re-running the decoder, and beam search (beam 4) against
   greedy (`benchmarks.decode_speed`);
4. distance to the limit: the float32 matmul peak and the share of it a training step of the base
   model reaches (`benchmarks.limit`);
5. peak resident memory of that training step (`benchmarks.memory`);
6. time to quality: minutes of training until the validation BLEU first reaches 20, our recipe
   against the TensorFlow tutorial's (`benchmarks.time_to_quality`). It takes up to two hours, so
   `make bench` shows its last record (`benchmarks/time_to_quality.json`, with its own date and
   machine) and `--time-to-quality` measures it again in this run (`make bench-quality`).

`--toy` runs the same code at toy sizes on the synthetic corpus in a minute or two (the test
suite does this, so the harness cannot rot); its numbers mean nothing.
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import platform
import sys
import time
from pathlib import Path

from benchmarks.time_to_quality import COMPARED  # the two recipes of make bench's time-to-quality row

DEFAULT_OUT = Path(__file__).resolve().parent / "results.json"

# The real run: Tatoeba rus-eng on a 2-core CPU in under 20 minutes. Layer counts are cut where a
# full-depth model would not fit that budget; each size is stated with its result.
FULL = {
    "corpus": "tatoeba/rus-eng",
    "vocab_size": 8000,
    "max_length": 64,
    "batch_tokens": 2048,  # ours: about this many tokens per bucketed batch
    "batch_size": 64,  # the peer: sentences per padded batch, as in the TensorFlow tutorial
    "ours_jit": False,  # our best end-to-end setting on a CPU: XLA compiles every new batch shape,
                        # which a short run cannot pay back (the model-only rows measure both)
    "throughput": [
        {"sizes": dict(num_layers=4, d_model=128, num_heads=8, dff=512, dropout_rate=0.1),
         "real_tokens": 12_000, "model_only_batches": 4},
        {"sizes": dict(num_layers=2, d_model=512, num_heads=8, dff=2048, dropout_rate=0.1),
         "real_tokens": 4_000, "model_only_batches": 2, "model_only_xla": False},  # XLA: see the base step
    ],
    "decode": {"preset": "small", "batch": 8, "lengths": [16, 32, 64], "vocab_size": 8000, "beam_length": 32},
    "limit": {"preset": "base", "batch": 64, "length": 32, "vocab_size": 8000, "matmul_n": 4096, "repeats": 3},
}

# The same code at toy sizes, for the test suite.
TOY = {
    "corpus": "synthetic/small",
    "vocab_size": 300,
    "max_length": 24,
    "batch_tokens": 256,
    "batch_size": 16,
    "ours_jit": False,
    "throughput": [
        {"sizes": dict(num_layers=1, d_model=16, num_heads=2, dff=32, dropout_rate=0.1),
         "real_tokens": 200, "model_only_batches": 2},
    ],
    "decode": {"preset": "tiny", "batch": 2, "lengths": [4], "vocab_size": 50, "beam_length": 4},
    "limit": {"preset": "tiny", "batch": 2, "length": 8, "vocab_size": 50, "matmul_n": 128, "repeats": 1},
}


def versions() -> dict:
    import keras
    import keras_hub
    import numpy
    import tensorflow as tf

    return {"python": platform.python_version(), "tensorflow": tf.__version__, "keras": keras.__version__,
            "keras_hub": keras_hub.__version__, "numpy": numpy.__version__}


def run(config: dict, log=print, quality: str = "stored") -> dict:
    """Run every benchmark with `config` (FULL or TOY) and return all the numbers. `quality`: "stored"
    adds the last time-to-quality record, "measure" measures it again, "none" leaves it out."""
    import transformer_lib as tl
    from benchmarks import decode_speed, limit, load_average, memory, padding, processor, throughput, time_to_quality
    from transformer_lib.utils.machine_description import describe_machine

    started = time.perf_counter()
    sections = {}  # seconds per section, to see where the run's time goes
    results = {"date": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
               "machine": describe_machine(), "processor": processor(), "cpu_count": os.cpu_count(),
               "load_average_at_start": load_average(),
               "versions": versions(), "config": config}

    def section(name: str) -> None:
        sections[name] = time.perf_counter()
        log(name)

    section(f"padding: {config['corpus']}")
    pairs = tl.load_parallel_corpus(config["corpus"], "train")  # read and tokenized once, for every section
    tokenizers = tl.train_tokenizers(pairs, vocab_size=config["vocab_size"])
    results["padding"] = padding.measure(config["corpus"], config["batch_size"], config["batch_tokens"],
                                         config["vocab_size"], config["max_length"], pairs, tokenizers)

    results["throughput"] = []
    for entry in config["throughput"]:
        section(f"training throughput: {entry['sizes']}, {entry['real_tokens']:,} real target tokens")
        results["throughput"].append(throughput.measure(
            pairs, tokenizers, entry["sizes"], entry["real_tokens"], config["batch_tokens"], config["batch_size"],
            config["max_length"], entry["model_only_batches"], config["ours_jit"],
            model_only_xla=entry.get("model_only_xla", True)))

    decode = config["decode"]
    section(f"decoding: preset {decode['preset']}")
    results["decode"] = {
        "kv_cache": decode_speed.measure(decode["preset"], decode["batch"], decode["lengths"], decode["vocab_size"]),
        "beam": decode_speed.measure_beam(decode["preset"], decode["batch"], decode["beam_length"], 4,
                                          decode["vocab_size"]),
    }

    spec = config["limit"]
    section(f"distance to the limit: matmul peak, then a {spec['preset']} training step")
    results["limit"] = limit.measure(spec["preset"], spec["batch"], spec["length"], spec["vocab_size"],
                                     config["ours_jit"], spec["matmul_n"], spec["repeats"])
    section("peak memory (a fresh process)")
    results["memory"] = memory.measure(spec["preset"], spec["batch"], spec["length"], spec["vocab_size"],
                                       config["ours_jit"])

    if quality == "measure":
        section("time to quality: our recipe and the TF tutorial's, until validation BLEU 20 (up to two hours)")
        results["time_to_quality"] = time_to_quality.main([])
    elif quality == "stored" and time_to_quality.DEFAULT_OUT.is_file():
        results["time_to_quality"] = {**json.loads(time_to_quality.DEFAULT_OUT.read_text()), "measured_separately": True}

    section("end")
    results["load_average_at_end"] = load_average()
    names = list(sections)
    results["section_seconds"] = {name: sections[after] - sections[name] for name, after in zip(names, names[1:])}
    results["ratios"] = ratios(results)
    results["table"] = format_table(results)
    results["seconds"] = time.perf_counter() - started
    return results


def ratios(results: dict) -> dict:
    """Every headline ratio in one flat dict (higher = better for ours, except the `beam_cost`s)."""
    out = {}
    for entry in results["throughput"]:
        d = entry["sizes"]["d_model"]
        out[f"training_d{d}_end_to_end"] = entry["end_to_end_ratio"]
        out[f"training_d{d}_model_only_no_xla"] = entry["model_only"]["ratio_no_xla"]
        if "ratio_xla" in entry["model_only"]:
            out[f"training_d{d}_model_only_xla"] = entry["model_only"]["ratio_xla"]
    pad = results["padding"]
    out["padding_fraction_padded_batch_over_bucketing"] = pad["padded_batch"] / pad["bucketing"]
    longest = results["decode"]["kv_cache"][-1]
    out[f"kv_cache_speedup_at_{longest['length']}_tokens"] = longest["speedup"]
    out[f"kv_cache_xla_speedup_at_{longest['length']}_tokens"] = longest["speedup_xla"]
    out["beam_cost"] = results["decode"]["beam"]["beam_cost"]
    out["beam_cost_xla"] = results["decode"]["beam"]["beam_cost_xla"]
    out["fraction_of_matmul_peak"] = results["limit"]["fraction_of_peak"]
    quality = results.get("time_to_quality")
    if quality:
        ours, theirs = (quality["runs"][name]["minutes_to_target"] for name in COMPARED)
        if ours is not None:  # the tutorial's recipe not within its budget: the budget bounds the ratio from below
            out["time_to_quality_tutorial_over_ours"] = (theirs or quality["budget_minutes"]) / ours
        for target in quality.get("targets", [])[1:]:  # a higher target the runs went on to (--then)
            ours, theirs = (quality["runs"][name]["minutes_to"][f"{target:g}"] for name in COMPARED)
            if ours is not None:
                out[f"time_to_quality_bleu_{target:g}_tutorial_over_ours"] = (theirs or quality["budget_minutes"]) / ours
    return out


def format_table(results: dict) -> str:
    """The one table `make bench` prints (also stored in results.json under "table")."""
    rows = []

    def row(name, ours, other, ratio):
        rows.append((name, ours, other, ratio))

    for entry in results["throughput"]:
        s = entry["sizes"]
        label = f"train d_model {s['d_model']} ({s['num_layers']}+{s['num_layers']} layers)"
        row(f"{label}, end to end", f"{entry['ours']['tokens_per_s']:,.0f} tok/s",
            f"{entry['peer']['tokens_per_s']:,.0f} tok/s", f"{entry['end_to_end_ratio']:.2f}x")
        tps = entry["model_only"]["tokens_per_s"]
        for mode, key in (("no XLA", "no_xla"), ("XLA", "xla")):
            if f"ratio_{key}" not in entry["model_only"]:
                continue
            row(f"  model only, same padded batches, {mode}", f"{tps[f'ours_{key}']:,.0f} tok/s",
                f"{tps[f'peer_{key}']:,.0f} tok/s", f"{entry['model_only'][f'ratio_{key}']:.2f}x")
    pad = results["padding"]
    row("padding share of batch tokens", f"{pad['bucketing']:.1%}", f"{pad['padded_batch']:.1%}",
        f"{pad['padded_batch'] / pad['bucketing']:.1f}x less")
    for r in results["decode"]["kv_cache"]:
        row(f"greedy decode {r['length']} tokens, KV cache vs re-run", f"{r['cached_tokens_per_s']:,.0f} tok/s",
            f"{r['full_tokens_per_s']:,.0f} tok/s", f"{r['speedup']:.1f}x")
        row("  KV cache compiled with XLA vs re-run", f"{r['cached_xla_tokens_per_s']:,.0f} tok/s",
            f"{r['full_tokens_per_s']:,.0f} tok/s", f"{r['speedup_xla']:.1f}x")
    beam = results["decode"]["beam"]
    for mode, suffix in (("", ""), (", XLA", "_xla")):
        row(f"beam {beam['beam_size']} vs greedy, {beam['max_length']} tokens{mode} (ms/sentence)",
            f"{beam[f'beam_seconds_per_sentence{suffix}'] * 1e3:.1f}",
            f"{beam[f'greedy_seconds_per_sentence{suffix}'] * 1e3:.1f}", f"{beam[f'beam_cost{suffix}']:.1f}x cost")
    lim = results["limit"]
    row(f"float32 matmul peak ({lim['peak']['n']}x{lim['peak']['n']})", "", f"{lim['peak']['peak_flops_per_s'] / 1e9:.1f} GFLOP/s", "")
    row(f"{lim['preset']} training step, {lim['batch']}x{lim['length']} tokens", f"{lim['achieved_flops_per_s'] / 1e9:.1f} GFLOP/s",
        f"{lim['peak']['peak_flops_per_s'] / 1e9:.1f} GFLOP/s", f"{lim['fraction_of_peak']:.0%} of peak")
    other = lim["other_step_seconds"]
    row(f"  same step, jit_compile={other['jit_compile']}", f"{lim['flops']['step'] / other['step'] / 1e9:.1f} GFLOP/s",
        "", f"{other['fraction_of_peak']:.0%} of peak")
    sec = lim["seconds"]
    row("  step: forward / backward / Adam (s)", f"{sec['forward']:.2f} / {lim['parts']['backward_seconds']:.2f} / "
        f"{sec['optimizer']:.2f}", "", "")
    row("  vocabulary part (projection + loss), share of step", f"{lim['parts']['vocabulary_share_of_step']:.0%} of time",
        f"{lim['parts']['vocabulary_share_of_flops']:.0%} of FLOPs", "")
    mem = results["memory"]
    row(f"peak RSS, {mem['preset']} training step", f"{mem['peak_rss_bytes'] / 2**20:,.0f} MiB",
        f"{mem['training_state_bytes'] / 2**20:,.0f} MiB (16 B/param)", "")

    quality = results.get("time_to_quality")
    if quality:
        row(*time_to_quality_row(quality))

    header = ("benchmark", "ours", "peer / reference", "ratio")
    widths = [max(len(r[i]) for r in [header, *rows]) for i in range(4)]
    line = lambda r: "  ".join([r[0].ljust(widths[0]), *(c.rjust(w) for c, w in zip(r[1:], widths[1:]))]).rstrip()
    return "\n".join([line(header), "  ".join("-" * w for w in widths), *(line(r) for r in rows)])


def time_to_quality_row(quality: dict) -> tuple[str, str, str, str]:
    """The table's row for a time-to-quality record: minutes of ours, of the TF tutorial's recipe, and
    how many times sooner ours got there (a lower bound when the tutorial's did not within its budget;
    "later" when the tutorial's got there first)."""
    budget = quality["budget_minutes"]
    ours, theirs = (quality["runs"][name]["minutes_to_target"] for name in COMPARED)
    shown = [f"{m:.1f} min" if m is not None else f"not in {budget:g} min" for m in (ours, theirs)]
    if ours is None:
        ratio = ""
    elif theirs is None:
        ratio = f"> {budget / ours:.1f}x sooner"
    elif theirs >= ours:
        ratio = f"{theirs / ours:.2f}x sooner"
    else:  # the tutorial's recipe got there first
        ratio = f"{ours / theirs:.2f}x later"
    date = f", measured {quality['date'][:10]}" if quality.get("measured_separately") and "date" in quality else ""
    return (f"minutes of training to validation BLEU {quality['target_bleu']:g} vs TF tutorial recipe{date}",
            *shown, ratio)


def with_stored_quality(path: Path) -> dict:
    """The results in `path` with the last time-to-quality record in place of the one they had: the
    ratio and the table's row follow; nothing else is measured or changed."""
    from benchmarks import time_to_quality

    results = json.loads(path.read_text())
    results["time_to_quality"] = {**json.loads(time_to_quality.DEFAULT_OUT.read_text()), "measured_separately": True}
    results["ratios"] = {name: value for name, value in results["ratios"].items() if not name.startswith("time_to_quality")}
    results["ratios"].update({name: value for name, value in ratios(results).items() if name.startswith("time_to_quality")})
    results["table"] = format_table(results)
    path.write_text(json.dumps(results, indent=2) + "\n")
    print(results["table"])
    return results


def main(argv: list[str] | None = None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=DEFAULT_OUT, help="where to write the results (JSON)")
    parser.add_argument("--toy", action="store_true", help="toy sizes on the synthetic corpus (tests)")
    parser.add_argument("--time-to-quality", action="store_true",
                        help="measure the time to quality again in this run (up to two hours more)")
    parser.add_argument("--quality-from-record", action="store_true",
                        help="measure nothing: give --out's results the last time-to-quality record (row and ratio)")
    args = parser.parse_args(argv)
    if args.quality_from_record:
        return with_stored_quality(args.out)
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
    import tensorflow as tf

    tf.get_logger().setLevel("ERROR")  # each measurement builds its own step function, on purpose: no retracing notes
    quality = "measure" if args.time_to_quality else ("none" if args.toy else "stored")
    if args.toy and args.time_to_quality:
        parser.error("--time-to-quality has no toy size here: run `python -m benchmarks.time_to_quality --toy`")
    results = run(TOY if args.toy else FULL, log=lambda text: print(f"[bench] {text}", file=sys.stderr, flush=True),
                  quality=quality)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(results, indent=2) + "\n")
    print(f"Benchmarks on {results['machine']} ({results['processor']}), {results['date']}")
    print(results["table"])
    print(f"{results['seconds'] / 60:.1f} minutes; every number is in {args.out}")
    return results


if __name__ == "__main__":
    main()
