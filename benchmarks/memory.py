"""Peak resident memory (RSS) of training steps, measured in a fresh Python process.

    python -m benchmarks.memory [--preset base] [--batch 64] [--length 32]

TensorFlow allocates outside Python's heap, so `tracemalloc` sees almost nothing of it. The
operating system's count is what matters: the largest resident set the process has had. A fresh
process makes that peak belong to this measurement alone. It is read twice: once the model and
Adam's slots are built (TensorFlow, weights and optimizer state), and after a few training steps
(plus gradients and the activations kept for the backward pass).

On Linux the peak is read from /proc/self/status (VmHWM), not from `getrusage(...).ru_maxrss`: a
process started by a large one (this harness, after training models) inherits the parent's peak
in ru_maxrss across fork and exec, which would measure the parent.

For comparison, the weights and what training adds per weight in float32: the weight, its
gradient and Adam's two moments, 4 x 4 bytes = 16 bytes per parameter.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent  # where `python -m benchmarks.memory` resolves


def _max_rss_bytes() -> int:
    """This process's peak resident set size in bytes (see the module doc for why not ru_maxrss on Linux)."""
    status = Path("/proc/self/status")
    if status.is_file():
        for line in status.read_text().splitlines():
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) * 1024  # "VmHWM:   123456 kB"
    import resource

    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return peak if sys.platform == "darwin" else peak * 1024  # macOS reports bytes, others KiB


def run_child(preset: str, batch: int, length: int, vocab_size: int, jit_compile: bool, steps: int) -> dict:
    """In this (fresh) process: build the model, then train `steps` steps; report the peaks."""
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
    import keras

    import transformer_lib as tl
    from benchmarks.limit import full_batch
    from benchmarks.throughput import make_train_step
    from transformer_lib.training.objective import make_optimizer

    keras.utils.set_random_seed(0)
    model = tl.Transformer.from_preset(preset, vocab_size, vocab_size, max_length=max(64, length))
    source, target_in, target_out = full_batch(batch, length, vocab_size)
    model((source[:1], target_in[:1]))
    optimizer = make_optimizer(model.config.d_model)
    optimizer.build(model.trainable_variables)
    built = _max_rss_bytes()
    step = make_train_step(model, optimizer, jit_compile)
    for _ in range(steps):
        float(step(source, target_in, target_out))
    return {"parameters": tl.count_parameters(model), "rss_after_build_bytes": built,
            "peak_rss_bytes": _max_rss_bytes()}


def measure(preset: str = "base", batch: int = 64, length: int = 32, vocab_size: int = 8000,
            jit_compile: bool = False, steps: int = 2) -> dict:
    """Peak RSS of `steps` training steps of `preset` on a full `[batch, length]` batch, in a fresh process."""
    command = [sys.executable, "-m", "benchmarks.memory", "--child", "--preset", preset, "--batch", str(batch),
               "--length", str(length), "--vocab-size", str(vocab_size), "--steps", str(steps)]
    if jit_compile:
        command.append("--xla")
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")])),
           "TF_CPP_MIN_LOG_LEVEL": "2"}
    done = subprocess.run(command, cwd=ROOT, env=env, capture_output=True, text=True)
    if done.returncode != 0:
        raise RuntimeError(f"the memory measurement's process failed ({done.returncode}):\n{done.stderr[-3000:]}")
    result = json.loads(done.stdout.strip().splitlines()[-1])  # the child prints one JSON line last
    parameters = result["parameters"]
    return {"preset": preset, "batch": batch, "length": length, "vocab_size": vocab_size, "jit_compile": jit_compile,
            "steps": steps, **result, "training_state_bytes": 16 * parameters,
            "step_increase_bytes": result["peak_rss_bytes"] - result["rss_after_build_bytes"]}


def main(argv: list[str] | None = None) -> dict | None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--preset", default="base")
    parser.add_argument("--batch", type=int, default=64)
    parser.add_argument("--length", type=int, default=32)
    parser.add_argument("--vocab-size", type=int, default=8000)
    parser.add_argument("--steps", type=int, default=2)
    parser.add_argument("--xla", action="store_true", help="compile the step with XLA")
    parser.add_argument("--child", action="store_true", help=argparse.SUPPRESS)  # used by measure()
    args = parser.parse_args(argv)
    if args.child:
        print(json.dumps(run_child(args.preset, args.batch, args.length, args.vocab_size, args.xla, args.steps)))
        return None
    result = measure(args.preset, args.batch, args.length, args.vocab_size, args.xla, args.steps)
    mib = 2**20
    print(f"{args.preset}, batch {args.batch} x {args.length} tokens, {result['parameters']:,} parameters: "
          f"peak RSS {result['peak_rss_bytes'] / mib:,.0f} MiB (after building: "
          f"{result['rss_after_build_bytes'] / mib:,.0f} MiB; weights + gradients + Adam: "
          f"{result['training_state_bytes'] / mib:,.0f} MiB)")
    return result


if __name__ == "__main__":
    main()
