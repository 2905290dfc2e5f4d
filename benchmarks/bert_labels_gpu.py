"""A screen for chapter 9 on one GPU, with the small BERT written in plain JAX: how long must the small BERT pretrain (masked language
modelling on the training reviews' text) before it beats the same model from scratch at 1,000 labels?

    python -m benchmarks.bert_labels_gpu prepare .gpu44          # here: tokenizer, token ids of the reviews
    python benchmarks/bert_labels_gpu.py screen .gpu44 OUT.json  # there: JAX only (no TensorFlow, no Keras)

A screen, not the chapter's result: the GPU machine it runs on has JAX but neither TensorFlow nor
Keras, so `screen` writes chapter 9's model out in plain JAX (pre-norm encoder layers, mean pooling
over real tokens, BERT's 80/10/10 masking of 15% of the tokens, the output layer tied to the
embedding) to find the pretraining length, learning rates and masking worth measuring on the CPU with
the library's own `MaskedLanguageModel` and `TransformerClassifier`. Everything it reports is chosen on
the validation reviews; test accuracy is read once per fine-tuned model, at its best validation epoch.
The record, benchmarks/bert_labels_gpu.json (six calls on an NVIDIA H200, their commands and variants in
it), sums up each variant at 1,000 labels in its `summary`; `budget_screen` holds the later calls, which
ask what a CPU's budget (22 or 45 million pretraining tokens) buys.

A variant (`VARIANTS`, JSON) names `size` and `lr`, and either `checkpoints` (epochs: as many windows as
training reviews) or `millions` (millions of pretraining tokens); optionally `window` and `batch` (the
windows per update), `mask_rate` (0.15), `positions` ("learned", or "sinusoidal" as the library's
`Encoder`), `finetune_lrs`, `scratch` (false: skip the model from scratch), `label_counts` (1,000; more
than the training reviews = all of them) and `seeds` (3).
"""

from __future__ import annotations

import json
import os
import sys
import time
from pathlib import Path

import numpy as np

PAD, START, END = 0, 1, 2
MAX_LENGTH = 256  # tokens per review, START and END included, as in chapter 9


def prepare(folder: Path, vocab_size: int = 8000) -> None:
    """The three splits' token ids (every review whole, flattened with offsets) and labels."""
    import transformer_lib as tl

    folder.mkdir(parents=True, exist_ok=True)
    reviews = {split: tl.load_imdb(split) for split in ("train", "validation", "test")}
    tokenizer = tl.data.imdb.train_review_tokenizer(reviews["train"], vocab_size)
    arrays = {"vocab_size": np.int32(tokenizer.vocab_size)}
    for split, pairs in reviews.items():
        ids = tokenizer.encode([text for text, _ in pairs])
        arrays[f"{split}_ids"] = np.concatenate([np.asarray(row, np.uint16) for row in ids])
        arrays[f"{split}_offsets"] = np.cumsum([0] + [len(row) for row in ids]).astype(np.int64)
        arrays[f"{split}_labels"] = np.asarray([label for _, label in pairs], np.int8)
    np.savez_compressed(folder / "imdb.npz", **arrays)
    print({split: len(pairs) for split, pairs in reviews.items()}, "vocab", tokenizer.vocab_size)


# ---------------------------------------------------------------- the screen (JAX only from here on)

def rows_head_tail(ids, offsets, length=MAX_LENGTH):
    """START, the first and last (length - 2) / 2 pieces of each review (all of a short one), END; 0-padded."""
    out = np.zeros((len(offsets) - 1, length), np.int32)
    keep = length - 2
    for i in range(len(offsets) - 1):
        row = ids[offsets[i]:offsets[i + 1]]
        if len(row) > keep:
            row = np.concatenate([row[: keep // 2], row[len(row) - (keep - keep // 2):]])
        out[i, 0], out[i, 1:len(row) + 1], out[i, len(row) + 1] = START, row, END
    return out


def screen(folder: Path, out_path: Path, minutes: float) -> None:
    import jax
    import jax.numpy as jnp

    deadline = time.time() + 60 * minutes
    data = dict(np.load(folder / "imdb.npz"))  # read once (an npz file decompresses on every access)
    vocab = int(data["vocab_size"]) + 1  # + the [MASK] id
    mask_id = vocab - 1
    smoke = bool(os.environ.get("SMOKE"))  # a few hundred reviews: does it run at all (on a CPU)?
    if smoke:
        for split, n in (("train", 800), ("validation", 300), ("test", 300)):
            data[f"{split}_offsets"] = data[f"{split}_offsets"][: n + 1]
            data[f"{split}_labels"] = data[f"{split}_labels"][:n]
    rows = {s: rows_head_tail(data[f"{s}_ids"], data[f"{s}_offsets"]) for s in ("train", "validation", "test")}
    labels = {s: data[f"{s}_labels"].astype(np.int32) for s in ("train", "validation", "test")}
    record = {"what": __doc__.split("\n\n")[0], "device": str(jax.devices()[0].device_kind), "jax": jax.__version__,
              "date": time.strftime("%Y-%m-%d"), "reviews": {s: len(r) for s, r in rows.items()}, "stages": []}

    def save():
        out_path.write_text(json.dumps(record, indent=1))

    def sinusoids(length, d):
        angles = np.arange(length)[:, None] / np.power(10000.0, (np.arange(d) // 2 * 2) / d)[None, :]
        return jnp.asarray(np.where(np.arange(d) % 2 == 0, np.sin(angles), np.cos(angles)), jnp.float32)

    def init(key, layers, d, heads, dff):
        keys = iter(jax.random.split(key, 8 + 8 * layers))
        normal = lambda shape: 0.02 * jax.random.normal(next(keys), shape)
        norm = lambda: (jnp.ones(d), jnp.zeros(d))
        params = {"embedding": normal((vocab, d)), "position": normal((MAX_LENGTH, d)), "final_norm": norm(),
                  "mlm_dense": (normal((d, d)), jnp.zeros(d)), "mlm_norm": norm(), "mlm_bias": jnp.zeros(vocab),
                  "head": (normal((d, 2)), jnp.zeros(2)), "layers": []}
        for _ in range(layers):
            params["layers"].append({"norm1": norm(), "qkv": (normal((d, 3 * d)), jnp.zeros(3 * d)),
                                     "out": (normal((d, d)), jnp.zeros(d)), "norm2": norm(),
                                     "ff1": (normal((d, dff)), jnp.zeros(dff)), "ff2": (normal((dff, d)), jnp.zeros(d))})
        return params

    def layer_norm(x, scale_shift):
        mean = x.mean(-1, keepdims=True)
        variance = ((x - mean) ** 2).mean(-1, keepdims=True)
        return (x - mean) / jnp.sqrt(variance + 1e-6) * scale_shift[0] + scale_shift[1]

    def dropout(x, key, rate):
        if key is None or rate == 0:
            return x
        return jnp.where(jax.random.bernoulli(key, 1 - rate, x.shape), x / (1 - rate), 0.0)

    def encode(params, ids, key, rate, heads):
        batch, length = ids.shape
        d = params["embedding"].shape[1]
        real = ids != PAD
        keys = list(jax.random.split(key, 1 + 3 * len(params["layers"]))) if key is not None else [None] * 99
        position = params["position"] if "position" in params else sinusoids(MAX_LENGTH, d)  # learned, or fixed (the library's)
        x = dropout(params["embedding"][ids] * np.sqrt(d) + position[:length], keys[0], rate)
        for i, layer in enumerate(params["layers"]):
            y = layer_norm(x, layer["norm1"])
            q, k, v = jnp.split(y @ layer["qkv"][0] + layer["qkv"][1], 3, axis=-1)
            split = lambda t: t.reshape(batch, length, heads, d // heads)
            scores = jnp.einsum("bqhd,bkhd->bhqk", split(q), split(k)) / np.sqrt(d // heads)
            weights = jax.nn.softmax(jnp.where(real[:, None, None, :], scores, -1e9), axis=-1)
            attended = jnp.einsum("bhqk,bkhd->bqhd", weights, split(v)).reshape(batch, length, d)
            x = x + dropout(attended @ layer["out"][0] + layer["out"][1], keys[1 + 3 * i], rate)
            y = jax.nn.gelu(layer_norm(x, layer["norm2"]) @ layer["ff1"][0] + layer["ff1"][1])
            x = x + dropout(y @ layer["ff2"][0] + layer["ff2"][1], keys[2 + 3 * i], rate)
        return layer_norm(x, params["final_norm"]), real

    def mlm_loss(params, ids, key, rate, heads, mask_rate):
        k_choose, k_action, k_random, k_drop = jax.random.split(key, 4)
        chosen = (jax.random.uniform(k_choose, ids.shape) < mask_rate) & (ids > END)
        action = jax.random.uniform(k_action, ids.shape)
        inputs = jnp.where(chosen & (action < 0.8), mask_id, ids)
        inputs = jnp.where(chosen & (action >= 0.8) & (action < 0.9),
                           jax.random.randint(k_random, ids.shape, END + 1, mask_id), inputs)
        x, _ = encode(params, inputs, k_drop, rate, heads)
        x = layer_norm(jax.nn.gelu(x @ params["mlm_dense"][0] + params["mlm_dense"][1]), params["mlm_norm"])
        logits = x @ params["embedding"].T + params["mlm_bias"]
        nll = -jnp.take_along_axis(jax.nn.log_softmax(logits), ids[..., None], -1)[..., 0]
        count = jnp.maximum(chosen.sum(), 1)
        accuracy = ((logits.argmax(-1) == ids) & chosen).sum() / count
        return (nll * chosen).sum() / count, accuracy

    def class_logits(params, ids, key, rate, heads):
        x, real = encode(params, ids, key, rate, heads)
        pooled = (x * real[..., None]).sum(1) / jnp.maximum(real.sum(1, keepdims=True), 1)
        return dropout(pooled, None if key is None else jax.random.fold_in(key, 7), rate) @ params["head"][0] + params["head"][1]

    def class_loss(params, ids, y, key, rate, heads):
        logits = class_logits(params, ids, key, rate, heads)
        return -jnp.take_along_axis(jax.nn.log_softmax(logits), y[:, None], -1).mean()

    def adam(params, grads, state, lr, clip=1.0):
        m, v, t = state
        norm = jnp.sqrt(sum(jnp.sum(g ** 2) for g in jax.tree_util.tree_leaves(grads)))
        grads = jax.tree_util.tree_map(lambda g: g * jnp.minimum(1.0, clip / (norm + 1e-6)), grads)
        t = t + 1
        m = jax.tree_util.tree_map(lambda a, g: 0.9 * a + 0.1 * g, m, grads)
        v = jax.tree_util.tree_map(lambda a, g: 0.999 * a + 0.001 * g * g, v, grads)
        params = jax.tree_util.tree_map(lambda p, a, b: p - lr * (a / (1 - 0.9 ** t)) / (jnp.sqrt(b / (1 - 0.999 ** t)) + 1e-8),
                                        params, m, v)
        return params, (m, v, t)

    def fresh_state(params):
        zeros = jax.tree_util.tree_map(jnp.zeros_like, params)
        return (zeros, zeros, jnp.zeros((), jnp.float32))

    from functools import partial

    @partial(jax.jit, static_argnames=("heads", "rate", "mask_rate"))
    def mlm_step(params, state, ids, key, lr, heads, rate, mask_rate):
        (loss, accuracy), grads = jax.value_and_grad(mlm_loss, has_aux=True)(params, ids, key, rate, heads, mask_rate)
        params, state = adam(params, grads, state, lr)
        return params, state, loss, accuracy

    @partial(jax.jit, static_argnames=("heads", "mask_rate"))
    def mlm_eval(params, ids, key, heads, mask_rate):
        return mlm_loss(params, ids, key, 0.0, heads, mask_rate)

    @partial(jax.jit, static_argnames=("heads", "rate"))
    def class_step(params, state, ids, y, key, lr, heads, rate):
        loss, grads = jax.value_and_grad(class_loss)(params, ids, y, key, rate, heads)
        params, state = adam(params, grads, state, lr)
        return params, state, loss

    @partial(jax.jit, static_argnames=("heads",))
    def predict(params, ids, heads):
        return class_logits(params, ids, None, 0.0, heads).argmax(-1)

    def accuracy(params, split, heads, batch=500):
        x, y = rows[split], labels[split]
        right = 0
        for start in range(0, len(x) - len(x) % batch, batch):  # whole batches: one shape, one compilation
            right += int((np.asarray(predict(params, x[start:start + batch], heads)) == y[start:start + batch]).sum())
        rest = len(x) % batch
        if rest:
            padded = np.concatenate([x[-rest:], np.zeros((batch - rest, MAX_LENGTH), np.int32)])
            right += int((np.asarray(predict(params, padded, heads))[:rest] == y[-rest:]).sum())
        return right / len(x)

    def windows(rng, batch, window=MAX_LENGTH):
        """Random stretches of window - 2 pieces of random training reviews (whole reviews when short)."""
        ids, offsets = data["train_ids"], data["train_offsets"]
        out = np.zeros((batch, window), np.int32)
        for i, r in enumerate(rng.integers(0, len(offsets) - 1, batch)):
            start, end = offsets[r], offsets[r + 1]
            if end - start > window - 2:
                start = rng.integers(start, end - (window - 2) + 1)
                end = start + window - 2
            out[i, 0], out[i, 1:end - start + 1], out[i, end - start + 1] = START, ids[start:end], END
        return out

    def pretrain(size, checkpoints, lr, mask_rate, batch=64, warmup=1000, seed=0, rate=0.1, window=MAX_LENGTH,
                 positions="learned", millions=None):
        """MLM for max(checkpoints) epochs (an epoch: as many windows as training reviews); params kept at each.
        With `millions`, the checkpoints are millions of training tokens (batch * window per step) instead."""
        params = init(jax.random.PRNGKey(seed), *size)
        if positions == "sinusoidal":
            del params["position"]
        if millions:
            checkpoints = tuple(round(m * 1e6 / (batch * window)) for m in millions)  # in steps: one "epoch" = one step
            steps_per_epoch = 1
        state, rng, key = fresh_state(params), np.random.default_rng(seed), jax.random.PRNGKey(seed + 1)
        if not millions:
            steps_per_epoch = len(rows["train"]) // batch
        batch_v = min(256, len(rows["validation"]))
        validation_windows = rows["validation"][: min(1024, len(rows["validation"])) // batch_v * batch_v]
        kept, curve, start, step = {0: params}, [], time.time(), 0
        for epoch in range(1, max(checkpoints) + 1):
            for _ in range(steps_per_epoch):
                step += 1
                rate_now = lr * min(step / warmup, (warmup / step) ** 0.5)
                key, sub = jax.random.split(key)
                params, state, loss, acc = mlm_step(params, state, windows(rng, batch, window), sub, rate_now,
                                                    heads=size[2], rate=rate, mask_rate=mask_rate)
            if millions and epoch not in checkpoints:
                continue
            val = [mlm_eval(params, validation_windows[i:i + batch_v], jax.random.PRNGKey(99 + i), heads=size[2],
                            mask_rate=0.15) for i in range(0, len(validation_windows), batch_v)]
            curve.append({"epoch": epoch, "train_loss": float(loss), "val_loss": float(np.mean([v[0] for v in val])),
                          "val_masked_accuracy": float(np.mean([v[1] for v in val])),
                          "seconds": round(time.time() - start, 1)})
            print("pretrain", size, lr, mask_rate, curve[-1], flush=True)
            if epoch in checkpoints:
                kept[epoch] = params
            if time.time() > deadline - 120:
                break
        return kept, curve, steps_per_epoch

    def fine_tune(params, n_labels, seed, lr, size, epochs=20, batch=32, rate=0.1, patience=4):
        rng = np.random.default_rng(1000 + seed)
        train_y = labels["train"]
        if n_labels < len(train_y):  # balanced: half positive, half negative
            pick = np.concatenate([rng.choice(np.flatnonzero(train_y == c), n_labels // 2, replace=False) for c in (0, 1)])
        else:
            pick = np.arange(len(train_y))
        x, y = rows["train"][pick], train_y[pick]
        state, key = fresh_state(params), jax.random.PRNGKey(2000 + seed)
        best, best_params, since = -1.0, params, 0
        for epoch in range(epochs):
            order = rng.permutation(len(x))
            for start in range(0, len(order) - batch + 1, batch):
                key, sub = jax.random.split(key)
                index = order[start:start + batch]
                params, state, _ = class_step(params, state, x[index], y[index], sub, lr, heads=size[2], rate=rate)
            val = accuracy(params, "validation", size[2])
            if val > best:
                best, best_params, since = val, params, 0
            else:
                since += 1
                if since >= patience:
                    break
        return best, accuracy(best_params, "test", size[2])

    def compare(kept, size, label_counts, seeds, lrs, name):
        """Each kept checkpoint fine-tuned at every label count, learning rate and seed: mean val and test."""
        for n_labels in label_counts:
            for epoch, params in kept.items():
                for lr in lrs:
                    runs = []
                    for seed in seeds:
                        if time.time() > deadline - 30:
                            return
                        runs.append(fine_tune(params, n_labels, seed, lr, size))
                    row = {"stage": name, "size": size, "labels": n_labels, "pretrain_epochs": epoch, "lr": lr,
                           "val": [v for v, _ in runs], "test": [t for _, t in runs],
                           "mean_val": float(np.mean([v for v, _ in runs])), "mean_test": float(np.mean([t for _, t in runs]))}
                    record["stages"].append(row)
                    print(row, flush=True)
                    save()

    # variants: VARIANTS='[{"size": [2, 64, 4, 256], "lr": 0.003, "checkpoints": [4, 16, 48]}, ...]'
    default = [{"size": [2, 64, 4, 256], "lr": 1e-3, "checkpoints": [1, 2] if smoke else [1, 4, 16, 48], "more_labels": True}]
    for variant in json.loads(os.environ.get("VARIANTS", "null")) or default:
        size, name = tuple(variant["size"]), f"size {variant['size']}, pretraining lr {variant['lr']}"
        extra = {k: variant[k] for k in ("window", "batch", "positions", "mask_rate", "millions") if k in variant}
        name += "".join(f", {k} {v}" for k, v in extra.items() if k != "millions")
        kept, curve, steps = pretrain(size, checkpoints=tuple(variant.get("checkpoints", ())), lr=variant["lr"],
                                      **{"mask_rate": 0.15, **extra})
        if "millions" in variant:  # name the kept checkpoints by millions of pretraining tokens
            kept = {**{m: kept[round(m * 1e6 / (extra.get("batch", 64) * extra.get("window", MAX_LENGTH)))]
                       for m in variant["millions"]}, 0: kept[0]}
            if not variant.get("scratch", True):
                del kept[0]
        record.setdefault("pretraining", []).append({"variant": name, "size": size, "lr": variant["lr"], **extra,
                                                     "steps_per_epoch": steps, "curve": curve})
        save()
        compare(kept, size, (100,) if smoke else tuple(variant.get("label_counts", (1000,))),
                seeds=tuple(range(variant.get("seeds", 3))), lrs=tuple(variant.get("finetune_lrs", (3e-4, 1e-3))), name=name)
        if not variant.get("more_labels"):
            continue
        ranked = lambda rows: max(rows, key=lambda r: r["mean_val"], default=None)  # chosen on validation
        mine = [r for r in record["stages"] if r["stage"] == name]
        for row in (ranked([r for r in mine if r["pretrain_epochs"] > 0]), ranked([r for r in mine if r["pretrain_epochs"] == 0])):
            if row:
                compare({row["pretrain_epochs"]: kept[row["pretrain_epochs"]]}, size, (50, 200) if smoke else (250, 5000),
                        seeds=(0, 1, 2), lrs=(row["lr"],), name=name + ", other label counts")
    record["minutes"] = round((time.time() - (deadline - 60 * minutes)) / 60, 1)
    save()


if __name__ == "__main__":
    command, folder = sys.argv[1], Path(sys.argv[2])
    if command == "prepare":
        prepare(folder)
    else:
        screen(folder, Path(sys.argv[3]), float(sys.argv[4]) if len(sys.argv) > 4 else 8.0)
