"""Greedy decoding with the key/value cache vs re-running the decoder over the whole prefix, and
the cost of beam search (beam 4) against greedy decoding.

    python -m benchmarks.decode_speed [--preset small] [--batch 8] [--lengths 16 32 64] [--beam-size 4]

Random weights are enough: the work per step does not depend on what the weights say. Both ways
must produce the same tokens (checked), so the ratio compares equal work. Each way runs once to
trace its functions before it is timed, then the fastest of `repeats` runs counts.

For beam search against greedy, END is made impossible (a large negative bias on its logit), so
every sentence runs exactly `max_length` steps both ways: the ratio is the cost of keeping
`beam_size` hypotheses instead of one, at equal length.
"""

from __future__ import annotations

import argparse

import keras
import numpy as np

import transformer_lib as tl
from benchmarks import best_seconds
from transformer_lib.decoding import beam_search, greedy_decode
from transformer_lib.tokenizer import END_ID


def measure(preset: str = "small", batch: int = 8, lengths=(16, 32, 64), vocab_size: int = 8000,
            source_length: int = 16, seed: int = 0, repeats: int = 3) -> list[dict]:
    keras.utils.set_random_seed(seed)
    model = tl.Transformer.from_preset(preset, vocab_size, vocab_size, dropout_rate=0.0)
    sources = np.random.default_rng(seed).integers(3, vocab_size, size=(batch, source_length)).astype(np.int32)
    rows = []
    for length in lengths:
        timings, outputs = {}, {}
        for use_cache in (True, False):
            timings[use_cache], outputs[use_cache] = best_seconds(
                lambda: greedy_decode(model, sources, length, use_cache=use_cache), repeats)
        if not np.array_equal(outputs[True], outputs[False]):
            raise AssertionError(f"cached and full decoding disagree at length {length}")
        tokens = outputs[True].shape[1] * batch
        rows.append({"length": length, "tokens": tokens, "cached_tokens_per_s": tokens / timings[True],
                     "full_tokens_per_s": tokens / timings[False], "speedup": timings[False] / timings[True]})
    return rows


def measure_beam(preset: str = "small", batch: int = 8, max_length: int = 32, beam_size: int = 4,
                 vocab_size: int = 8000, source_length: int = 16, seed: int = 0, repeats: int = 2) -> dict:
    """Seconds per sentence of cached greedy decoding and of `beam_search(beam_size)`, both running
    exactly `max_length` steps (END is never chosen), and their ratio (the cost of the beam)."""
    keras.utils.set_random_seed(seed)
    model = tl.Transformer.from_preset(preset, vocab_size, vocab_size, dropout_rate=0.0)
    sources = np.random.default_rng(seed).integers(3, vocab_size, size=(batch, source_length)).astype(np.int32)
    model((sources[:1], sources[:1, :1]))  # build, then forbid END: every hypothesis runs the full length
    bias = model.final_layer.bias
    bias.assign(np.where(np.arange(vocab_size) == END_ID, -1e9, np.asarray(bias)).astype(np.float32))
    timings = {}
    for name, decode in (("greedy", lambda: greedy_decode(model, sources, max_length)),
                         ("beam", lambda: beam_search(model, sources, beam_size, max_length=max_length))):
        timings[name], ids = best_seconds(decode, repeats)
        if ids.shape[1] != max_length:
            raise AssertionError(f"{name} stopped after {ids.shape[1]} of {max_length} steps")
    return {"preset": preset, "batch": batch, "max_length": max_length, "beam_size": beam_size,
            "greedy_seconds_per_sentence": timings["greedy"] / batch,
            "beam_seconds_per_sentence": timings["beam"] / batch, "beam_cost": timings["beam"] / timings["greedy"]}


def main(argv: list[str] | None = None) -> list[dict]:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--preset", default="small", choices=sorted(tl.PRESETS))
    parser.add_argument("--batch", type=int, default=8)
    parser.add_argument("--lengths", type=int, nargs="+", default=[16, 32, 64])
    parser.add_argument("--vocab-size", type=int, default=8000)
    parser.add_argument("--beam-size", type=int, default=4)
    args = parser.parse_args(argv)
    rows = measure(args.preset, args.batch, args.lengths, args.vocab_size)
    print(f"Greedy decoding, preset {args.preset}, batch {args.batch}, random weights (same tokens both ways)")
    print(f"{'length':>6} {'cached tok/s':>13} {'full tok/s':>11} {'speed-up':>9}")
    for row in rows:
        print(f"{row['length']:>6} {row['cached_tokens_per_s']:>13.0f} {row['full_tokens_per_s']:>11.0f} "
              f"{row['speedup']:>8.1f}x")
    beam = measure_beam(args.preset, args.batch, max(args.lengths), args.beam_size, args.vocab_size)
    print(f"Beam search (beam {beam['beam_size']}) vs cached greedy, {beam['max_length']} tokens: "
          f"{beam['beam_seconds_per_sentence'] * 1e3:.1f} vs {beam['greedy_seconds_per_sentence'] * 1e3:.1f} "
          f"ms per sentence, {beam['beam_cost']:.1f}x the cost")
    return rows


if __name__ == "__main__":
    main()
