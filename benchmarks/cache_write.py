"""How the decoder writes a new position into its key/value cache: `kv_cache.write_slots` (a gather
and a select, which also exports to ONNX for the page's translator) against `ops.slice_update`
(which TensorFlow lowers to an XLA op that tf2onnx cannot convert). Greedy decoding of the same
random model and sources, as a graph and compiled with XLA; both ways must give the same tokens.

    python -m benchmarks.cache_write [--preset small] [--batch 8] [--lengths 32 64] [--repeats 10]

Ratio > 1: write_slots is slower. Written to benchmarks/cache_write.json with the machine and date.
"""

from __future__ import annotations

import argparse
import datetime
import json
from pathlib import Path

import numpy as np
from keras import ops

import transformer_lib.layers.kv_cache as kv_cache
from benchmarks import best_seconds, processor
from benchmarks.decode_speed import _random_model_and_sources
from transformer_lib.decoding.search import greedy_decode

OUT = Path(__file__).resolve().parent / "cache_write.json"


def slice_update_write(cache, offset, new):
    """The cache write before `write_slots`: one dynamic slice update."""
    return ops.slice_update(cache, (0, 0, offset, 0), new)


WAYS = {"write_slots": kv_cache.write_slots, "slice_update": slice_update_write}


def measure(preset="small", batch=8, lengths=(32, 64), repeats=5, vocab_size=8000, seed=0) -> list[dict]:
    rows = []
    for length in lengths:
        for jit in (False, True):
            timings, outputs = {}, {}
            for name, write in WAYS.items():
                model, sources = _random_model_and_sources(preset, batch, vocab_size, 16, seed)  # fresh: no traced loop
                kv_cache.write_slots = write
                try:
                    timings[name], outputs[name] = best_seconds(
                        lambda: greedy_decode(model, sources, length, jit_compile=jit), repeats)
                finally:
                    kv_cache.write_slots = WAYS["write_slots"]
            if not np.array_equal(outputs["write_slots"], outputs["slice_update"]):
                raise AssertionError(f"the two cache writes decode differently (length {length}, XLA {jit})")
            rows.append({"length": length, "xla": jit, "write_slots_s": round(timings["write_slots"], 4),
                         "slice_update_s": round(timings["slice_update"], 4),
                         "ratio": round(timings["write_slots"] / timings["slice_update"], 3)})
    return rows


def main(argv=None) -> dict:
    from transformer_lib.utils.machine_description import describe_machine

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--preset", default="small")
    parser.add_argument("--batch", type=int, default=8)
    parser.add_argument("--lengths", type=int, nargs="+", default=[32, 64])
    parser.add_argument("--repeats", type=int, default=10)
    parser.add_argument("--out", type=Path, default=OUT)
    args = parser.parse_args(argv)
    rows = measure(args.preset, args.batch, args.lengths, args.repeats)
    record = {"what": __doc__.split("\n\n")[0], "command": "python -m benchmarks.cache_write",
              "date": datetime.date.today().isoformat(), "machine": describe_machine(), "cpu": processor(),
              "preset": args.preset, "batch": args.batch, "rows": rows}
    args.out.write_text(json.dumps(record, indent=1) + "\n")
    for row in rows:
        print(f"length {row['length']:>3} {'XLA  ' if row['xla'] else 'graph'}: write_slots {row['write_slots_s']:.3f} s, "
              f"slice_update {row['slice_update_s']:.3f} s, ratio {row['ratio']:.2f}")
    return record


if __name__ == "__main__":
    main()
