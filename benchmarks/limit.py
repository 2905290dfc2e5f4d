"""Distance to the limit: how much of the machine's float32 matmul speed one training step uses.

    python -m benchmarks.limit [--preset base] [--batch 64] [--length 32]

1. **Peak**: the best FLOP/s of a large square `tf.matmul` (n x n times n x n is 2 n^3 FLOPs), after a
   warm-up, best of several runs, both eagerly and compiled with XLA; the faster of the two is the
   peak. A Transformer is mostly matrix products, so this is the ceiling it could reach.
2. **Work**: the FLOPs of one training step, counted from the shapes (`training_step_flops`).
3. **Achieved** = work / measured seconds of a step; achieved / peak is the fraction of the limit.
4. **Where the time goes**: the forward pass, the whole step, Adam's update alone, and the part
   over the vocabulary (output projection + softmax cross-entropy, forward and backward) are timed
   separately; the backward pass is the step minus the forward pass and Adam.

The batch is a full one, B sentences of exactly `length` tokens on each side, with no padding, so
every counted FLOP is useful work.
"""

from __future__ import annotations

import argparse

import keras
import numpy as np
import tensorflow as tf

import transformer_lib as tl
from benchmarks import best_seconds
from benchmarks.throughput import make_train_step
from transformer_lib.training.objective import make_optimizer, masked_loss


def matmul_peak(n: int = 4096, repeats: int = 5) -> dict:
    """Best float32 FLOP/s of `tf.matmul` on two random n x n matrices (2 n^3 FLOPs per product),
    eager and under XLA, after one warm-up run each; returns both and the peak (the larger)."""
    a = tf.random.normal((n, n), seed=1)
    b = tf.random.normal((n, n), seed=2)
    flops = 2.0 * n**3
    result = {"n": n, "repeats": repeats}
    for name, fn in (("eager", tf.matmul), ("xla", tf.function(tf.matmul, jit_compile=True))):
        best, _ = best_seconds(lambda: fn(a, b), repeats)  # after a warm-up (and compilation)
        result[f"{name}_flops_per_s"] = flops / best
    result["peak_flops_per_s"] = max(result["eager_flops_per_s"], result["xla_flops_per_s"])
    return result


def training_step_flops(num_layers: int, d_model: int, dff: int, target_vocab_size: int,
                        batch: int, source_length: int, target_length: int) -> dict:
    """Matrix-multiply FLOPs of one training step of `transformer_lib.Transformer` (a multiply-add
    is 2 FLOPs), for a batch of `batch` pairs of shapes `[B, S]` and `[B, T]` (padding included:
    padded positions are computed too).

    With d = d_model, f = dff, N = num_layers, V = target vocabulary:

        encoder layer:  2·B·S·(4d² + 2df)              projections Q, K, V, O and the FFN (Eq. 2)
                      + 2·2·B·S²·d                       Q·Kᵀ and weights·V, all heads together (Eq. 1)
        decoder layer:  2·B·T·(4d² + 2df)              self-attention projections and the FFN
                      + 2·B·(2d²·T + 2d²·S)             cross-attention: Q, O on the targets, K, V on the source
                      + 2·2·B·T²·d + 2·2·B·T·S·d         self- and cross-attention scores and values
        output layer:   2·B·T·d·V
        forward = N·(encoder layer + decoder layer) + output layer
        backward ≈ 2·forward    (each product X·W needs two more of the same size: dX and dW)
        step ≈ 3·forward

    Not counted: embedding look-ups, softmax, layer norm, dropout, residual sums and Adam's update:
    O(B·L·d) or O(parameters) element-wise work, small in FLOPs but bound by memory speed.

    Returns:
        dict with `encoder`, `decoder`, `output` (forward FLOPs of each part), `forward`,
        `backward` and `step`.
    """
    B, S, T, d, f = batch, source_length, target_length, d_model, dff
    encoder_layer = 2 * B * S * (4 * d * d + 2 * d * f) + 2 * 2 * B * S * S * d
    decoder_layer = (2 * B * T * (4 * d * d + 2 * d * f) + 2 * B * (2 * d * d * T + 2 * d * d * S)
                     + 2 * 2 * B * T * T * d + 2 * 2 * B * T * S * d)
    output = 2 * B * T * d * target_vocab_size
    forward = num_layers * (encoder_layer + decoder_layer) + output
    return {"encoder": num_layers * encoder_layer, "decoder": num_layers * decoder_layer, "output": output,
            "forward": forward, "backward": 2 * forward, "step": 3 * forward}


PARTS = ("forward", "step", "optimizer", "vocabulary")


def time_step_parts(model: tl.Transformer, source, target_in, target_out, jit_compile: bool = False,
                    repeats: int = 3, parts=PARTS) -> dict:
    """Best seconds of some of: the forward pass with the loss, the whole step (forward, backward,
    Adam), Adam's update alone (on random dense gradients), and the vocabulary part alone (output
    projection + loss, forward and backward), on the same batch."""
    optimizer = make_optimizer(model.config.d_model)
    variables = model.trainable_variables
    optimizer.build(variables)
    compiled = tf.function(jit_compile=jit_compile)

    @compiled
    def forward(source, target_in, target_out):
        return masked_loss(target_out, model((source, target_in), training=True))

    @compiled
    def update(grads):
        optimizer.apply_gradients(zip(grads, variables))
        return optimizer.iterations

    head = model.final_layer.trainable_variables

    @compiled
    def vocabulary(x, target_out):  # x: the decoder output [B, T, d_model]
        with tf.GradientTape() as tape:
            tape.watch(x)
            loss = masked_loss(target_out, model.project(x))
        return loss, tape.gradient(loss, [x, *head])

    x = tf.random.normal((*target_in.shape, model.config.d_model), seed=3)
    batch = (source, target_in, target_out)
    grads = [tf.random.normal(v.shape, stddev=1e-3, seed=4) for v in variables]
    step = make_train_step(model, optimizer, jit_compile)
    runs = {"forward": (forward, batch), "step": (step, batch), "optimizer": (update, (grads,)),
            "vocabulary": (vocabulary, (x, target_out))}
    return {part: best_seconds(lambda: runs[part][0](*runs[part][1]), repeats)[0] for part in parts}


def full_batch(batch: int, length: int, vocab_size: int, seed: int = 0):
    """Random ids with no padding: source, target_in, target_out, each int32 `[batch, length]`."""
    rng = np.random.default_rng(seed)
    ids = [tf.constant(rng.integers(4, vocab_size, size=(batch, length)), tf.int32) for _ in range(3)]
    return tuple(ids)


def measure(preset: str = "base", batch: int = 64, length: int = 32, vocab_size: int = 8000,
            jit_compile: bool = False, matmul_n: int = 4096, repeats: int = 3, peak: dict | None = None,
            seed: int = 0) -> dict:
    """Peak matmul FLOP/s, and what a training step of `preset` achieves against it (module doc).

    The parts are timed with `jit_compile` (our setting); the whole step is also timed with the
    other setting, for comparison (`other_step_seconds`).
    """
    peak = peak or matmul_peak(matmul_n)
    keras.utils.set_random_seed(seed)
    sizes = tl.PRESETS[preset].pick("num_layers", "d_model", "num_heads", "dff", "dropout_rate")
    model = tl.Transformer(**sizes, input_vocab_size=vocab_size, target_vocab_size=vocab_size, max_length=max(64, length))
    source, target_in, target_out = full_batch(batch, length, vocab_size, seed)
    model((source[:1], target_in[:1]))  # build
    seconds = time_step_parts(model, source, target_in, target_out, jit_compile, repeats)
    other = time_step_parts(model, source, target_in, target_out, not jit_compile, repeats, parts=("step",))
    flops = training_step_flops(sizes["num_layers"], sizes["d_model"], sizes["dff"], vocab_size, batch, length, length)
    top = peak["peak_flops_per_s"]
    backward_seconds = seconds["step"] - seconds["forward"] - seconds["optimizer"]
    return {
        "preset": preset, "sizes": sizes, "vocab_size": vocab_size, "batch": batch, "length": length,
        "tokens_per_side": batch * length, "jit_compile": jit_compile, "parameters": tl.count_parameters(model),
        "peak": peak, "flops": flops, "seconds": seconds,
        "achieved_flops_per_s": flops["step"] / seconds["step"],
        "fraction_of_peak": flops["step"] / seconds["step"] / top,
        "other_step_seconds": {"jit_compile": not jit_compile, "step": other["step"],
                               "fraction_of_peak": flops["step"] / other["step"] / top},
        "parts": {
            "forward_fraction_of_peak": flops["forward"] / seconds["forward"] / top,
            "backward_seconds": backward_seconds,
            "backward_fraction_of_peak": flops["backward"] / max(backward_seconds, 1e-9) / top,
            "optimizer_share_of_step": seconds["optimizer"] / seconds["step"],
            "vocabulary_share_of_step": seconds["vocabulary"] / seconds["step"],
            "vocabulary_share_of_flops": 3 * flops["output"] / flops["step"],
        },
    }


def main(argv: list[str] | None = None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--preset", default="base", choices=sorted(tl.PRESETS))
    parser.add_argument("--batch", type=int, default=64)
    parser.add_argument("--length", type=int, default=32)
    parser.add_argument("--vocab-size", type=int, default=8000)
    parser.add_argument("--matmul-n", type=int, default=4096)
    parser.add_argument("--xla", action="store_true", help="time the parts with XLA")
    args = parser.parse_args(argv)
    result = measure(args.preset, args.batch, args.length, args.vocab_size, args.xla, args.matmul_n)
    peak = result["peak"]
    print(f"float32 matmul peak ({peak['n']}x{peak['n']}): eager {peak['eager_flops_per_s'] / 1e9:.1f}, "
          f"XLA {peak['xla_flops_per_s'] / 1e9:.1f} GFLOP/s")
    print(f"{args.preset} training step, batch {args.batch} x {args.length} tokens: "
          f"{result['flops']['step'] / 1e9:.0f} GFLOP in {result['seconds']['step']:.2f} s = "
          f"{result['achieved_flops_per_s'] / 1e9:.1f} GFLOP/s, {result['fraction_of_peak']:.0%} of peak")
    for part, value in result["seconds"].items():
        print(f"  {part:<17} {value:7.3f} s")
    other = result["other_step_seconds"]
    print(f"  step with jit_compile={other['jit_compile']}: {other['step']:.3f} s, {other['fraction_of_peak']:.0%} of peak")
    return result


if __name__ == "__main__":
    main()
