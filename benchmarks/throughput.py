"""Training throughput: our model and pipeline against the keras-hub peer fed the tutorial's way.

    python -m benchmarks.throughput [--d-model 128] [--num-layers 4] [--real-tokens 20000] [--xla]

Both sides read the whole Tatoeba rus-eng training split in the same shuffled order (same seed), each
through its own pipeline, and train on the first batches of that epoch that hold `real_tokens` real
target tokens, with the same optimizer (Adam and the §5.3 schedule) and the same loss
(label-smoothed cross-entropy over real tokens), for `epochs` epochs of those same batches each:

- **ours**: `transformer_lib.Transformer`, batches from `make_batches` (length bucketing, about
  `batch_tokens` tokens each), trained by `transformer_lib.train` with our best settings for the
  machine (on a CPU: without XLA, whose compilation of every new batch shape costs more than it
  saves in a short run; `--xla` turns it on);
- **peer**: `benchmarks.peer.build_peer_transformer` (keras-hub layers), batches the TensorFlow
  tutorial's way (`padded_batch` of `batch_size` sentences from shuffled data; `make_batches(...,
  bucketing=False)` does exactly that), trained by `model.compile` + `model.fit` with Keras's
  defaults (on a CPU-only machine Keras turns XLA off by default).

Throughput = real (non-padding) target tokens / seconds. Padding is computed but learns nothing, so
it does not count. The first epoch includes tracing and XLA compilation; the later ones are the
steady state that a long run sees, and the fastest of them is the one compared (on a shared
machine, the fastest epoch is the one least slowed by other work).

Why the first batches of a full epoch rather than a small sample of pairs: bucketing fills a batch
only when enough pairs of one length range have arrived. A sample of a few thousand pairs spread
over some thirty buckets gives mostly small, half-empty batches, which no real run sees; the first
batches of a full epoch are full ones, as most of a real epoch's are (a complete epoch ends with one
smaller batch per bucket).

**Model only**: to separate the model from the pipeline, both models then take the *same* padded
batches (the peer's first few, padded to one shape so that XLA compiles once) through the *same*
training step (`make_train_step`), with XLA off and on, taking turns (ours, peer, ours, ...) so that
a change in the machine's load hits both; the best pass of each counts. The first call (tracing,
compilation) is timed separately.
"""

from __future__ import annotations

import argparse
import contextlib
import time
import warnings

import keras
import tensorflow as tf

import transformer_lib as tl
from benchmarks import load_average
from benchmarks.peer import build_peer_transformer
from transformer_lib.data.tokenizer import PAD_ID
from transformer_lib.training.objective import MaskedLoss, make_optimizer, masked_loss


def first_batches(dataset: tf.data.Dataset, real_tokens: int) -> list:
    """The first batches of one pass over `dataset` that together hold at least `real_tokens` real
    (non-padding) target tokens, as a list of `((source, target_in), target_out)` tensors."""
    batches, real = [], 0
    for batch in dataset:
        batches.append(batch)
        real += int(tf.math.count_nonzero(batch[1] != PAD_ID))
        if real >= real_tokens:
            return batches
    raise ValueError(f"the whole dataset holds only {real:,} real target tokens, fewer than real_tokens={real_tokens:,}")


def frozen(batches: list) -> tf.data.Dataset:
    """A dataset that yields exactly `batches`, in order, every epoch (shapes may differ between batches)."""
    spec = tf.TensorSpec([None, None], tf.int32)
    dataset = tf.data.Dataset.from_generator(lambda: iter(batches), output_signature=((spec, spec), spec))
    return dataset.apply(tf.data.experimental.assert_cardinality(len(batches)))  # tl.train needs the length


def count_tokens(dataset: tf.data.Dataset) -> tuple[int, int, int]:
    """(real target tokens, target positions including padding, distinct batch shapes) in one pass
    over `dataset`. XLA compiles the training step once per distinct shape."""
    real = total = 0
    shapes = set()
    for (source, _), target_out in dataset:
        real += int(tf.math.count_nonzero(target_out != PAD_ID))
        total += int(tf.size(target_out))
        shapes.add((*source.shape, target_out.shape[1]))
    return real, total, len(shapes)


@contextlib.contextmanager
def keras_hub_mask_notes_hidden():
    """Keras warns that some inner layers of keras-hub's blocks "destroy the mask information": by
    design, since each block reads the Keras mask itself before its inner layers run. Hide only that."""
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message=".*does not support masking.*")
        yield


class EpochTimer(keras.callbacks.Callback):
    """Wall-clock seconds of every epoch of `model.fit`."""

    def on_train_begin(self, logs=None):
        self.seconds = []

    def on_epoch_begin(self, epoch, logs=None):
        self._start = time.perf_counter()

    def on_epoch_end(self, epoch, logs=None):
        self.seconds.append(time.perf_counter() - self._start)


def build_models(sizes: dict, vocab_sizes: tuple[int, int], max_length: int):
    """(ours, peer) with identical sizes; `sizes` holds num_layers, d_model, num_heads, dff, dropout_rate."""
    ours = tl.Transformer(**sizes, input_vocab_size=vocab_sizes[0], target_vocab_size=vocab_sizes[1],
                          max_length=max_length)
    with keras_hub_mask_notes_hidden():
        peer = build_peer_transformer(**sizes, input_vocab_size=vocab_sizes[0], target_vocab_size=vocab_sizes[1],
                                      max_length=max_length)
    return ours, peer


def train_ours(model, dataset, epochs: int = 3, jit_compile: bool = False) -> list[float]:
    """Seconds per epoch of `transformer_lib.train`."""
    history = tl.train(model, dataset, epochs=epochs, optimizer=make_optimizer(model.config.d_model),
                       jit_compile=jit_compile, verbose=0)
    return history["seconds"]


def train_peer(model, dataset, d_model: int, epochs: int = 3, jit_compile="auto") -> tuple[list[float], bool]:
    """Seconds per epoch of `model.fit`, and whether Keras chose XLA (`jit_compile="auto"` decides)."""
    model.compile(optimizer=make_optimizer(d_model), loss=MaskedLoss(), jit_compile=jit_compile)
    timer = EpochTimer()
    with keras_hub_mask_notes_hidden():
        model.fit(dataset, epochs=epochs, verbose=0, callbacks=[timer], shuffle=False)  # fixed batches, as for ours
    return timer.seconds, bool(model.jit_compile)


def make_train_step(model, optimizer, jit_compile: bool):
    """One training step as a `tf.function`: forward, label-smoothed masked loss, backward, Adam."""

    @tf.function(jit_compile=jit_compile, reduce_retracing=True)
    def step(source, target_in, target_out):
        with tf.GradientTape() as tape:
            logits = model((source, target_in), training=True)  # (B, T, V)
            loss = masked_loss(target_out, logits)
        grads = tape.gradient(loss, model.trainable_variables)
        optimizer.apply_gradients(zip(grads, model.trainable_variables))
        return loss

    return step


def common_shape(batches) -> list:
    """The `((source, target_in), target_out)` batches padded with 0 to one shape `[B, S_max]`, `[B, T_max]`
    (B: the first batch's size; smaller batches are left out), so that XLA compiles the step once."""
    size = int(batches[0][1].shape[0])
    batches = [b for b in batches if int(b[1].shape[0]) == size]
    longest_source = max(int(s.shape[1]) for (s, _), _ in batches)
    longest_target = max(int(t.shape[1]) for _, t in batches)

    def pad(ids, length):
        return tf.pad(ids, [[0, 0], [0, length - int(ids.shape[1])]])

    return [((pad(s, longest_source), pad(ti, longest_target)), pad(to, longest_target)) for (s, ti), to in batches]


def model_only(models: dict, batches, d_model: int, jit_compile: bool, rounds: int = 3) -> dict:
    """The same training step over the same `batches` (a list of `((source, target_in), target_out)`
    tensors of one shape) for each of `models` ({name: model}), in turns, `rounds` times.

    Returns:
        {name: {"first_step_seconds": tracing, compilation and one step,
                "seconds": the fastest of the `rounds` passes over `batches`}}.
    """
    (source, target_in), target_out = batches[0]
    steps, result = {}, {}
    for name, model in models.items():
        model((source[:1], target_in[:1]))  # create the weights, and Adam's slots, before tracing: else
        optimizer = make_optimizer(d_model)  # tf.function traces twice (once to create variables)
        optimizer.build(model.trainable_variables)
        steps[name] = make_train_step(model, optimizer, jit_compile)
        start = time.perf_counter()
        float(steps[name](source, target_in, target_out))
        result[name] = {"first_step_seconds": time.perf_counter() - start, "seconds": float("inf")}
    for _ in range(rounds):
        for name, step in steps.items():
            start = time.perf_counter()
            for (source, target_in), target_out in batches:
                loss = step(source, target_in, target_out)
            float(loss)  # wait for the last step
            result[name]["seconds"] = min(result[name]["seconds"], time.perf_counter() - start)
    return result


def _one_minute_load() -> float | None:
    return (load_average() or [None])[0]


def measure(pairs, tokenizers, sizes: dict, real_tokens: int = 20_000, batch_tokens: int = 2048,
            batch_size: int = 64, max_length: int = 64, model_only_batches: int = 6, ours_jit: bool = False,
            model_only_xla: bool = True, epochs: int = 3, seed: int = 0) -> dict:
    """End-to-end and model-only throughput of ours and the peer at one model size (see module doc);
    `model_only_xla=False` skips the model-only runs with XLA (each compiles both models)."""
    vocab_sizes = (tokenizers[0].vocab_size, tokenizers[1].vocab_size)
    common = dict(max_length=max_length, seed=seed, verbose=False)
    ours_epoch = tl.make_batches(pairs, tokenizers, batch_tokens=batch_tokens, **common)
    peer_epoch = tl.make_batches(pairs, tokenizers, batch_size=batch_size, bucketing=False, **common)
    epoch_shapes = {"ours": count_tokens(ours_epoch)[2], "peer": count_tokens(peer_epoch)[2]}  # a whole epoch's
    ours_ds = frozen(first_batches(ours_epoch, real_tokens))
    peer_ds = frozen(first_batches(peer_epoch, real_tokens))
    ours_real, ours_positions, ours_shapes = count_tokens(ours_ds)
    peer_real, peer_positions, peer_shapes = count_tokens(peer_ds)

    keras.utils.set_random_seed(seed)
    ours, peer = build_models(sizes, vocab_sizes, max_length)
    load = {"ours": _one_minute_load()}
    ours_seconds = train_ours(ours, ours_ds, epochs, jit_compile=ours_jit)
    load["peer"] = _one_minute_load()
    peer_seconds, peer_jit = train_peer(peer, peer_ds, sizes["d_model"], epochs)

    # Model only: the same padded batches (the peer's, brought to one shape) through the same step.
    batches = common_shape(list(peer_ds.take(model_only_batches)))
    batch_real = sum(int(tf.math.count_nonzero(t != PAD_ID)) for _, t in batches)
    runs = {}
    for jit in (False, True) if model_only_xla else (False,):
        keras.utils.set_random_seed(seed)
        models = dict(zip(("ours", "peer"), build_models(sizes, vocab_sizes, max_length)))
        with keras_hub_mask_notes_hidden():
            for name, run in model_only(models, batches, sizes["d_model"], jit).items():
                runs[f"{name}_{'xla' if jit else 'no_xla'}"] = run
    tps = {name: batch_real / run["seconds"] for name, run in runs.items()}

    ours_tps, peer_tps = ours_real / min(ours_seconds[1:]), peer_real / min(peer_seconds[1:])
    result = {
        "sizes": sizes,
        "real_target_tokens": {"ours": ours_real, "peer": peer_real},
        "batch_shapes_per_epoch": epoch_shapes,  # XLA compiles the step once per shape
        "load_average_before": load,  # 1-minute load average when each side started
        "ours": {"pipeline": f"make_batches(batch_tokens={batch_tokens}) + tl.train(jit_compile={ours_jit})",
                 "batches": int(ours_ds.cardinality()), "batch_shapes": ours_shapes,
                 "padding_fraction": 1 - ours_real / ours_positions,
                 "epoch_seconds": ours_seconds, "tokens_per_s": ours_tps},
        "peer": {"pipeline": f"padded_batch({batch_size}) + compile/fit (jit_compile='auto' -> {peer_jit})",
                 "batches": int(peer_ds.cardinality()), "batch_shapes": peer_shapes,
                 "padding_fraction": 1 - peer_real / peer_positions,
                 "epoch_seconds": peer_seconds, "tokens_per_s": peer_tps},
        "end_to_end_ratio": ours_tps / peer_tps,
        "model_only": {
            "batches": len(batches), "shape": [int(n) for n in batches[0][0][0].shape] + [int(batches[0][1].shape[1])],
            "real_target_tokens": batch_real,
            "padding_fraction": 1 - batch_real / sum(int(tf.size(t)) for _, t in batches),
            "tokens_per_s": tps,
            "first_step_seconds": {name: run["first_step_seconds"] for name, run in runs.items()},
            "ratio_no_xla": tps["ours_no_xla"] / tps["peer_no_xla"],
        },
    }
    if model_only_xla:
        result["model_only"].update(ratio_xla=tps["ours_xla"] / tps["peer_xla"],
                                    xla_speedup_ours=tps["ours_xla"] / tps["ours_no_xla"],
                                    xla_speedup_peer=tps["peer_xla"] / tps["peer_no_xla"])
    return result


def main(argv: list[str] | None = None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--corpus", default="tatoeba/rus-eng")
    parser.add_argument("--vocab-size", type=int, default=8000)
    parser.add_argument("--num-layers", type=int, default=4)
    parser.add_argument("--d-model", type=int, default=128)
    parser.add_argument("--num-heads", type=int, default=8)
    parser.add_argument("--real-tokens", type=int, default=20_000)
    parser.add_argument("--batch-tokens", type=int, default=2048)
    parser.add_argument("--batch-size", type=int, default=64)
    parser.add_argument("--xla", action="store_true", help="train ours with jit_compile=True")
    args = parser.parse_args(argv)
    pairs = tl.load_parallel_corpus(args.corpus, "train")
    tokenizers = tl.train_tokenizers(pairs, vocab_size=args.vocab_size)
    sizes = dict(num_layers=args.num_layers, d_model=args.d_model, num_heads=args.num_heads, dff=4 * args.d_model,
                 dropout_rate=0.1)
    result = measure(pairs, tokenizers, sizes, args.real_tokens, args.batch_tokens, args.batch_size, ours_jit=args.xla)
    print(f"Training {sizes}, {result['real_target_tokens']['ours']:,} real target tokens, fastest epoch after the first:")
    print(f"  ours {result['ours']['tokens_per_s']:,.0f} tok/s, peer {result['peer']['tokens_per_s']:,.0f} tok/s: "
          f"{result['end_to_end_ratio']:.2f}x end to end")
    model = result["model_only"]
    print(f"  model only, same batches: {model['ratio_no_xla']:.2f}x without XLA, {model['ratio_xla']:.2f}x with XLA")
    return result


if __name__ == "__main__":
    main()
