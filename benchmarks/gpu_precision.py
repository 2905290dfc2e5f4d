"""Mixed precision on a GPU: the `base` model's training step in float32 and in mixed bfloat16, side by side.

    KERAS_BACKEND=jax python -m benchmarks.gpu_precision benchmarks/gpu_precision.json

The performance appendix (section 6) shows the record. It needs only Keras and a backend (the GPU
this was measured on had JAX and no TensorFlow; JAX compiles every step with XLA). In one run:

1. **Peak**: the best FLOP/s of an n x n matrix product (2 n^3 FLOPs) in float32 and in bfloat16,
   after a warm-up: the two ceilings a training step could reach.
2. **Steps**: for each batch (B sentences of exactly `length` tokens on both sides, no padding) and
   each dtype policy, a fresh `Transformer.from_preset(preset)` compiled with the course's optimizer
   and loss, and `train_on_batch` timed on the same batch: the median of the timed steps, after
   warm-up steps (compilation). Each step returns its loss, so each timing waits for the GPU.
3. **Through `fit`**: the first batch size again, fed by `model.fit` from a Python generator as
   `benchmarks/gpu_run.py` feeds it, per step: what a real epoch pays on top of the step.

`mixed_bfloat16` keeps the weights in float32 and computes in bfloat16; the library's layers keep
the softmax, the logits and the loss in float32. The appendix counts each step's FLOPs with
`benchmarks.limit.training_step_flops` to put the steps next to the peaks.
"""

from __future__ import annotations

import argparse
import datetime
import json
import statistics
import time
from pathlib import Path

from benchmarks.gpu_run import import_model_modules

FULL = dict(preset="base", vocab_size=8000, length=32, batches=(128, 512), steps=20, warmup=3, fit_steps=60, n=8192,
            jit_compile="auto")  # Keras's default: compiled by XLA (JAX always compiles)
# --toy: the same code at toy sizes, on whatever the machine has (for the test suite; its numbers mean nothing).
# Not compiled by XLA: on TensorFlow's CPU backend that takes most of the toy run's time. One batch size:
# each model's first step is traced (7 to 9 s of CPU each), and a second size repeated the same code.
TOY = dict(preset="tiny", vocab_size=50, length=8, batches=(4,), steps=2, warmup=1, fit_steps=3, n=64,
           jit_compile=False)
POLICIES = ("float32", "mixed_bfloat16")


def wait(x) -> None:
    """Block until `x` is computed (JAX returns before the GPU is done; other backends are read)."""
    if hasattr(x, "block_until_ready"):
        x.block_until_ready()
    else:
        import keras

        keras.ops.convert_to_numpy(x)


def matmul_peak(n: int, dtype: str, repeats: int = 5) -> dict:
    """Best FLOP/s of an n x n by n x n product in `dtype`, after one untimed product."""
    import keras

    a = keras.random.normal((n, n), dtype=dtype, seed=1)
    b = keras.random.normal((n, n), dtype=dtype, seed=2)
    wait(keras.ops.matmul(a, b))
    best = float("inf")
    for _ in range(repeats):
        start = time.perf_counter()
        wait(keras.ops.matmul(a, b))
        best = min(best, time.perf_counter() - start)
    return {"n": n, "seconds": best, "flops_per_s": 2.0 * n**3 / best}


def build(model_module, objective, preset: str, vocab_size: int, policy: str, jit_compile="auto"):
    """A fresh model under `policy`, compiled as the course compiles it (Adam with §5.3's schedule,
    label-smoothed masked loss); `jit_compile` as in `keras.Model.compile`."""
    import keras
    import numpy as np

    keras.mixed_precision.set_global_policy(policy)
    keras.utils.set_random_seed(0)
    model = model_module.Transformer.from_preset(preset, vocab_size, vocab_size)
    model((np.ones((2, 8), np.int32), np.ones((2, 8), np.int32)))
    model.compile(optimizer=objective.make_optimizer(model.config.d_model, warmup_steps=4000),
                  loss=objective.MaskedLoss(label_smoothing=0.1), jit_compile=jit_compile)
    return model


def full_batch(batch: int, length: int, vocab_size: int):
    """((source, target_in), target_out) of random real tokens (ids 3.. : no padding, start or end)."""
    import numpy as np

    rng = np.random.default_rng(0)
    source, target = (rng.integers(3, vocab_size, size=(batch, length + extra)).astype(np.int32) for extra in (0, 1))
    return (source, target[:, :-1]), target[:, 1:]


def time_steps(model, batch, steps: int, warmup: int) -> list[float]:
    """Seconds of each of `steps` calls of `train_on_batch` on `batch`, after `warmup` untimed ones."""
    inputs, labels = batch
    for _ in range(warmup):
        model.train_on_batch(inputs, labels)
    seconds = []
    for _ in range(steps):
        start = time.perf_counter()
        model.train_on_batch(inputs, labels)  # returns the loss as a number: the step is done
        seconds.append(time.perf_counter() - start)
    return seconds


def time_fit(model, batch, steps: int) -> float:
    """Seconds per step of `model.fit` over `steps` copies of `batch` from a Python generator (after a
    short untimed fit, which compiles)."""
    model.fit((batch for _ in range(2)), steps_per_epoch=2, epochs=1, verbose=0, shuffle=False)
    start = time.perf_counter()
    model.fit((batch for _ in range(steps)), steps_per_epoch=steps, epochs=1, verbose=0, shuffle=False)
    wait(model.trainable_variables[0].value)
    return (time.perf_counter() - start) / steps


def device_and_backend() -> tuple[str, str, str | None]:
    """The device's name, the backend with its version, and JAX's default matmul precision."""
    import keras

    if keras.backend.backend() == "jax":
        import jax

        device = jax.devices()[0]
        return (getattr(device, "device_kind", str(device)), f"Keras {keras.__version__}, JAX {jax.__version__}",
                str(jax.config.jax_default_matmul_precision))
    return "CPU", f"Keras {keras.__version__}, {keras.backend.backend()}", None


def measure(config: dict) -> dict:
    import keras

    model_module, _, _, objective = import_model_modules()
    previous = keras.mixed_precision.global_policy()  # restored at the end: build() sets the global policy
    device, backend, precision = device_and_backend()
    record = {"date": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
              "device": device, "backend": backend, "jax_default_matmul_precision": precision,
              "config": {key: list(value) if isinstance(value, tuple) else value for key, value in config.items()},
              "matmul_peak": {dtype: matmul_peak(config["n"], dtype) for dtype in ("float32", "bfloat16")},
              "steps": [], "fit": []}
    try:
        for batch_size in config["batches"]:
            batch = full_batch(batch_size, config["length"], config["vocab_size"])
            for policy in POLICIES:
                model = build(model_module, objective, config["preset"], config["vocab_size"], policy,
                              config.get("jit_compile", "auto"))
                seconds = time_steps(model, batch, config["steps"], config["warmup"])
                row = {"policy": policy, "batch": batch_size, "length": config["length"],
                       "tokens": batch_size * config["length"], "median_seconds": statistics.median(seconds),
                       "seconds": [round(s, 5) for s in seconds], "hyperparameters": model.hyperparameters}
                if batch_size == config["batches"][0]:
                    record["fit"].append({"policy": policy, "batch": batch_size, "steps": config["fit_steps"],
                                          "seconds_per_step": time_fit(model, batch, config["fit_steps"])})
                record["steps"].append(row)
                print({key: row[key] for key in ("policy", "batch", "median_seconds")}, flush=True)
    finally:
        keras.mixed_precision.set_global_policy(previous)
    return record


def main(argv=None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("out", type=Path, help="where to write the record (JSON)")
    parser.add_argument("--toy", action="store_true", help="toy sizes (for the tests)")
    args = parser.parse_args(argv)
    record = measure(TOY if args.toy else FULL)
    record["toy"] = args.toy
    args.out.write_text(json.dumps(record, indent=2) + "\n")
    print(json.dumps({key: record[key] for key in ("device", "backend", "matmul_peak", "fit")}, indent=1))
    return record


if __name__ == "__main__":
    main()
