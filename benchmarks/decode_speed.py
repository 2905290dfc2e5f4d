"""Greedy decoding with the key/value cache vs re-running the decoder over the whole prefix.

    python -m benchmarks.decode_speed [--preset small] [--batch 8] [--lengths 16 32 64]

Random weights are enough: the work per step does not depend on what the weights say. Both ways
must produce the same tokens (checked), so the ratio compares equal work. Each way runs once to
trace its functions before it is timed.
"""

from __future__ import annotations

import argparse
import time

import keras
import numpy as np

import transformer_lib as tl
from transformer_lib.decoding import greedy_decode


def measure(preset: str = "small", batch: int = 8, lengths=(16, 32, 64), vocab_size: int = 8000,
            source_length: int = 16, seed: int = 0) -> list[dict]:
    keras.utils.set_random_seed(seed)
    model = tl.Transformer.from_preset(preset, vocab_size, vocab_size, dropout_rate=0.0)
    sources = np.random.default_rng(seed).integers(3, vocab_size, size=(batch, source_length)).astype(np.int32)
    rows = []
    for length in lengths:
        timings, outputs = {}, {}
        for use_cache in (True, False):
            greedy_decode(model, sources, length, use_cache=use_cache)  # trace
            start = time.perf_counter()
            outputs[use_cache] = greedy_decode(model, sources, length, use_cache=use_cache)
            timings[use_cache] = time.perf_counter() - start
        if not np.array_equal(outputs[True], outputs[False]):
            raise AssertionError(f"cached and full decoding disagree at length {length}")
        tokens = outputs[True].shape[1] * batch
        rows.append({"length": length, "tokens": tokens, "cached_tokens_per_s": tokens / timings[True],
                     "full_tokens_per_s": tokens / timings[False], "speedup": timings[False] / timings[True]})
    return rows


def main(argv: list[str] | None = None) -> list[dict]:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--preset", default="small", choices=sorted(tl.PRESETS))
    parser.add_argument("--batch", type=int, default=8)
    parser.add_argument("--lengths", type=int, nargs="+", default=[16, 32, 64])
    parser.add_argument("--vocab-size", type=int, default=8000)
    args = parser.parse_args(argv)
    rows = measure(args.preset, args.batch, args.lengths, args.vocab_size)
    print(f"Greedy decoding, preset {args.preset}, batch {args.batch}, random weights (same tokens both ways)")
    print(f"{'length':>6} {'cached tok/s':>13} {'full tok/s':>11} {'speed-up':>9}")
    for row in rows:
        print(f"{row['length']:>6} {row['cached_tokens_per_s']:>13.0f} {row['full_tokens_per_s']:>11.0f} "
              f"{row['speedup']:>8.1f}x")
    return rows


if __name__ == "__main__":
    main()
