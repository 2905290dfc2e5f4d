"""Greedy decoding with the key/value cache vs re-running the decoder over the whole prefix, and
the cost of beam search (beam 4) against greedy decoding, as TensorFlow graphs and compiled with XLA.

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
from transformer_lib.decoding.search import beam_search, greedy_decode
from transformer_lib.data.tokenizer import END_ID


GREEDY_WAYS = {  # name: greedy_decode options
    "cached": dict(use_cache=True),
    "cached_xla": dict(use_cache=True, jit_compile=True),
    "full": dict(use_cache=False),
}


def measure(preset: str = "small", batch: int = 8, lengths=(16, 32, 64), vocab_size: int = 8000,
            source_length: int = 16, seed: int = 0, repeats: int = 3) -> list[dict]:
    """Tokens per second of greedy decoding with the cache (as a graph, and compiled with XLA) and
    of re-running the decoder over the prefix; `speedup` = cached graph against the re-run,
    `speedup_xla` = cached XLA against the re-run (the re-run's shapes grow: XLA cannot compile it)."""
    model, sources = _random_model_and_sources(preset, batch, vocab_size, source_length, seed)
    rows = []
    for length in lengths:
        timings, outputs = {}, {}
        for name, options in GREEDY_WAYS.items():
            timings[name], outputs[name] = best_seconds(
                lambda: greedy_decode(model, sources, length, **options), repeats)
        for name in GREEDY_WAYS:
            if not np.array_equal(outputs[name], outputs["full"]):
                raise AssertionError(f"{name} and full decoding disagree at length {length}")
        tokens = outputs["full"].shape[1] * batch
        row = {"length": length, "tokens": tokens}
        row.update({f"{name}_tokens_per_s": tokens / timings[name] for name in GREEDY_WAYS})
        row.update(speedup=timings["full"] / timings["cached"], speedup_xla=timings["full"] / timings["cached_xla"])
        rows.append(row)
    return rows


def _random_model_and_sources(preset, batch, vocab_size, source_length, seed):
    keras.utils.set_random_seed(seed)
    model = tl.Transformer.from_preset(preset, vocab_size, vocab_size, dropout_rate=0.0)
    sources = np.random.default_rng(seed).integers(3, vocab_size, size=(batch, source_length)).astype(np.int32)
    return model, sources


def measure_beam(preset: str = "small", batch: int = 8, max_length: int = 32, beam_size: int = 4,
                 vocab_size: int = 8000, source_length: int = 16, seed: int = 0, repeats: int = 2) -> dict:
    """Seconds per sentence of cached greedy decoding and of `beam_search(beam_size)`, both running
    exactly `max_length` steps (END is never chosen), and their ratio (the cost of the beam), as
    graphs (`beam_cost`) and compiled with XLA (`beam_cost_xla`)."""
    model, sources = _random_model_and_sources(preset, batch, vocab_size, source_length, seed)
    model((sources[:1], sources[:1, :1]))  # build, then forbid END: every hypothesis runs the full length
    bias = model.final_layer.bias
    bias.assign(np.where(np.arange(vocab_size) == END_ID, -1e9, np.asarray(bias)).astype(np.float32))
    result = {"preset": preset, "batch": batch, "max_length": max_length, "beam_size": beam_size}
    for suffix, jit in (("", False), ("_xla", True)):
        timings = {}
        for name, decode in (("greedy", lambda: greedy_decode(model, sources, max_length, jit_compile=jit)),
                             ("beam", lambda: beam_search(model, sources, beam_size, max_length=max_length,
                                                          jit_compile=jit))):
            timings[name], ids = best_seconds(decode, repeats)
            if ids.shape[1] != max_length:
                raise AssertionError(f"{name} stopped after {ids.shape[1]} of {max_length} steps")
        result.update({f"greedy_seconds_per_sentence{suffix}": timings["greedy"] / batch,
                       f"beam_seconds_per_sentence{suffix}": timings["beam"] / batch,
                       f"beam_cost{suffix}": timings["beam"] / timings["greedy"]})
    return result


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
    print(f"{'length':>6} {'cached tok/s':>13} {'cached XLA':>11} {'full tok/s':>11} {'speed-up':>9} {'XLA':>6}")
    for row in rows:
        print(f"{row['length']:>6} {row['cached_tokens_per_s']:>13.0f} {row['cached_xla_tokens_per_s']:>11.0f} "
              f"{row['full_tokens_per_s']:>11.0f} {row['speedup']:>8.1f}x {row['speedup_xla']:>5.1f}x")
    beam = measure_beam(args.preset, args.batch, max(args.lengths), args.beam_size, args.vocab_size)
    print(f"Beam search (beam {beam['beam_size']}) vs cached greedy, {beam['max_length']} tokens: "
          f"{beam['beam_seconds_per_sentence'] * 1e3:.1f} vs {beam['greedy_seconds_per_sentence'] * 1e3:.1f} "
          f"ms per sentence, {beam['beam_cost']:.1f}x the cost ({beam['beam_cost_xla']:.1f}x with XLA)")
    return rows


if __name__ == "__main__":
    main()
