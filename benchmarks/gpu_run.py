"""The `base` model on a GPU: what a reader with a GPU gets from the paper's recipe (chapter 8 shows it).

    python -m benchmarks.gpu_run prepare .gpu                 # here: splits, tokenizers, token ids
    KERAS_BACKEND=jax python benchmarks/gpu_run.py train .gpu benchmarks/gpu_run.json [--minutes 7] [--mixed-precision]

Two steps because the GPU machine this course was measured on has JAX but no TensorFlow (and cannot
download it). `prepare` runs where the library runs: it loads the leak-free splits of
tatoeba+newstest/rus-eng, trains separate 8,000-piece tokenizers on the training split and writes
token ids and the test sets to a folder. `train` needs only Keras, JAX, SentencePiece and sacreBLEU:
it builds the library's own `Transformer.from_preset("base")` (its layers use `keras.ops` only, so
the JAX backend runs them unchanged), trains it with the paper's recipe (Adam 0.9/0.98/1e-9, §5.3's
schedule with 4,000 warm-up steps, label smoothing 0.1, dropout 0.1) for a fixed number of minutes,
keeps the last, the best or the average of the last five epochs (§6.1) by greedy BLEU on the
validation split, and scores both test splits with sacreBLEU (greedy decoding: the library's beam
search is written for TensorFlow). The record names the GPU, the minutes and the precision
(`--mixed-precision`: bfloat16 products, float32 weights; `benchmarks/gpu_run_mixed_precision.json`).
"""

from __future__ import annotations

import argparse
import json
import sys
import time
import types
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
CORPUS = "tatoeba+newstest/rus-eng"
TESTS = {"Tatoeba test": "tatoeba/rus-eng", "news test": "newstest/rus-eng"}
DEMO = ["Где находится ближайшая станция метро?", "Белый хлеб, пожалуйста.", "Я люблю читать книги.",
        "Сколько это стоит?", "Мы опоздали на поезд."]
MAX_LENGTH = 128
BUCKETS = (16, 32, 64, 128)  # padded lengths: few shapes, so few compilations


def prepare(out: Path, vocab_size: int = 8000) -> None:
    """Write the tokenizers, and the splits as token ids (train, validation) and texts (validation, tests)."""
    import transformer_lib as tl

    out.mkdir(parents=True, exist_ok=True)
    train = tl.load_parallel_corpus(CORPUS, "train")
    tokenizers = tl.train_tokenizers(train, vocab_size)
    for tokenizer, side in zip(tokenizers, ("source", "target")):
        tokenizer.save(out / f"{side}.model")
    data = {}
    for split in ("train", "validation"):
        pairs = tl.load_parallel_corpus(CORPUS, split)
        data[split] = {side: tokenizer.encode(list(texts), add_start_end=True)
                       for tokenizer, side, texts in zip(tokenizers, ("source", "target"), zip(*pairs))}
    data["validation"]["pairs"] = pairs
    data["tests"] = {name: tl.load_parallel_corpus(corpus, "test") for name, corpus in TESTS.items()}
    (out / "data.json").write_text(json.dumps(data, ensure_ascii=False))
    print({split: len(data[split]["source"]) for split in ("train", "validation")},
          {name: len(pairs) for name, pairs in data["tests"].items()})


def import_model_modules():
    """transformer_lib's model modules without its __init__ (which loads TensorFlow for the rest)."""
    package = types.ModuleType("transformer_lib")
    package.__path__ = [str(ROOT / "transformer_lib")]
    sys.modules.setdefault("transformer_lib", package)
    from transformer_lib.decoding import bleu as evaluation
    from transformer_lib.models import transformer as model
    from transformer_lib.training import objective
    from transformer_lib.data import tokenizer

    return model, tokenizer, evaluation, objective


def batches(sources, targets, batch_tokens: int, rng):
    """Shuffled batches of pairs of similar length, padded to a bucket length: ((source, target_in), target_out).

    Each bucket's last, partial batch is left out (another shape would mean another compilation); the
    pairs are shuffled every epoch, so a different few wait for the next epoch each time.
    """
    import numpy as np

    lengths = np.array([max(len(s), len(t)) for s, t in zip(sources, targets)])
    keep = lengths <= MAX_LENGTH  # longer pairs are left out (train() counts them)
    bucket_of = np.searchsorted(BUCKETS, lengths)
    out = []
    for b, length in enumerate(BUCKETS):
        rows = rng.permutation(np.flatnonzero(keep & (bucket_of == b)))
        size = max(1, batch_tokens // length)
        for start in range(0, len(rows) - size + 1, size):  # full batches only: one shape per bucket
            chosen = rows[start : start + size]
            source = np.zeros((len(chosen), length), np.int32)
            target = np.zeros((len(chosen), length + 1), np.int32)
            for i, r in enumerate(chosen):
                source[i, : len(sources[r])] = sources[r]
                target[i, : len(targets[r])] = targets[r]
            out.append(((source, target[:, :-1]), target[:, 1:]))
    return [out[i] for i in rng.permutation(len(out))]


def train(folder: Path, record_path: Path, minutes: float, batch_tokens: int, preset: str, seed: int,
          limit: int | None = None, mixed_precision: bool = False) -> dict:
    import jax
    import jax.numpy as jnp
    import keras
    import numpy as np
    import sacrebleu

    model_module, tokenizer_module, evaluation, objective = import_model_modules()
    keras.utils.set_random_seed(seed)
    if mixed_precision:  # bfloat16 matmuls, float32 weights, softmax and logits (the layers cast where it matters)
        keras.mixed_precision.set_global_policy("mixed_bfloat16")
    rng = np.random.default_rng(seed)
    source_tok = tokenizer_module.SubwordTokenizer.load(folder / "source.model")
    target_tok = tokenizer_module.SubwordTokenizer.load(folder / "target.model")
    data = json.loads((folder / "data.json").read_text())
    if limit:  # a smoke test of the script: the first `limit` pairs of every split
        data = {"train": {side: ids[:limit] for side, ids in data["train"].items()},
                "validation": {key: value[:limit] for key, value in data["validation"].items()},
                "tests": {name: pairs[:limit] for name, pairs in data["tests"].items()}}
    val_pairs = [tuple(pair) for pair in data["validation"]["pairs"]]

    model = model_module.Transformer.from_preset(preset, source_tok.vocab_size, target_tok.vocab_size,
                                                 max_length=MAX_LENGTH)
    model((np.ones((2, 8), np.int32), np.ones((2, 8), np.int32)))
    d_model = model.config.d_model

    model.compile(optimizer=objective.make_optimizer(d_model, warmup_steps=4000),  # Adam and §5.3's schedule
                  loss=objective.MaskedLoss(label_smoothing=0.1))  # padding never counts

    @jax.jit
    def greedy(values, source):
        """Greedy decoding in one compiled loop: encode once, then one decoder pass per position."""
        target = jnp.zeros((source.shape[0], MAX_LENGTH), jnp.int32).at[:, 0].set(tokenizer_module.START_ID)
        with keras.StatelessScope(state_mapping=list(zip(model.variables, values))):
            memory = model.encoder(source, training=False)

            def step(t, target):
                x, _ = model.decoder(target, memory, source, training=False)
                logits = model.project(jax.lax.dynamic_slice_in_dim(x, t, 1, axis=1))[:, 0]
                return target.at[:, t + 1].set(jnp.argmax(logits, axis=-1).astype(jnp.int32))

            return jax.lax.fori_loop(0, MAX_LENGTH - 1, step, target)

    def translate(texts, size=256):
        values = [v.value for v in model.variables]
        out = []
        for start in range(0, len(texts), size):
            chunk = texts[start : start + size]
            source = np.zeros((size, MAX_LENGTH), np.int32)
            for i, ids in enumerate(source_tok.encode(chunk, add_start_end=True)):
                ids = ids[: MAX_LENGTH - 1] + [tokenizer_module.END_ID] if len(ids) > MAX_LENGTH else ids
                source[i, : len(ids)] = ids
            result = np.asarray(greedy(values, source))[: len(chunk), 1:]
            for row in result:
                ends = np.flatnonzero(row == tokenizer_module.END_ID)
                out.append(target_tok.decode(row[: ends[0]] if len(ends) else row))
        return out

    def score(pairs):
        sources, streams = evaluation.group_references(pairs)
        translations = translate(sources)
        return {"bleu": sacrebleu.metrics.BLEU().corpus_score(translations, streams).score,
                "chrf": sacrebleu.metrics.CHRF().corpus_score(translations, streams).score,
                "sentences": len(sources), "references": len(pairs)}

    too_long = sum(max(len(s), len(t)) > MAX_LENGTH for s, t in zip(data["train"]["source"], data["train"]["target"]))
    print(f"{too_long:,} of {len(data['train']['source']):,} training pairs are longer than {MAX_LENGTH} tokens: left out")
    history, kept, best = [], [], (-1.0, None, 0)
    start = time.perf_counter()
    epoch = 0
    while time.perf_counter() - start < minutes * 60:
        epoch += 1
        epoch_batches = batches(data["train"]["source"], data["train"]["target"], batch_tokens, rng)
        tick = time.perf_counter()
        result = model.fit((batch for batch in epoch_batches), steps_per_epoch=len(epoch_batches), epochs=1, verbose=0)
        seconds = time.perf_counter() - tick
        kept = (kept + [[w.copy() for w in model.get_weights()]])[-5:]
        entry = {"epoch": epoch, "loss": float(result.history["loss"][-1]), "seconds": round(seconds, 1)}
        if epoch % 5 == 0:
            entry["val_bleu"] = score(val_pairs)["bleu"]
            if entry["val_bleu"] > best[0]:
                best = (entry["val_bleu"], kept[-1], epoch)
        history.append(entry)
        print(entry, flush=True)
    train_minutes = (time.perf_counter() - start) / 60
    candidates = {f"last (epoch {epoch})": kept[-1], f"average of epochs {epoch - len(kept) + 1}-{epoch}":
                  [np.mean(np.stack(ws).astype(np.float64), axis=0).astype(ws[0].dtype) for ws in zip(*kept)]}
    if best[1] is not None and best[2] != epoch:
        candidates[f"best (epoch {best[2]})"] = best[1]
    choice = {}
    for name, weights in candidates.items():
        model.set_weights(weights)
        choice[name] = score(val_pairs)["bleu"]
    chosen = max(choice, key=choice.get)
    model.set_weights(candidates[chosen])
    device = jax.devices()[0]
    record = {
        "corpus": CORPUS, "preset": preset, "hyperparameters": model.hyperparameters,
        "parameters": int(sum(np.prod(w.shape) for w in model.trainable_weights)),
        "recipe": "paper: separate 8k vocabularies, Adam(0.9, 0.98, 1e-9), warm-up 4000, label smoothing 0.1",
        "batch_tokens": batch_tokens, "max_length": MAX_LENGTH, "seed": seed,
        "train_pairs": len(data["train"]["source"]), "too_long": too_long, "steps_per_epoch": len(epoch_batches), "epochs": epoch,
        "budget_minutes": minutes, "train_minutes": round(train_minutes, 2),
        "precision": keras.mixed_precision.global_policy().name,
        "device": getattr(device, "device_kind", str(device)), "backend": f"Keras {keras.__version__}, JAX {jax.__version__}",
        "decoding": "greedy", "history": history, "validation_bleu": choice, "chosen": chosen,
        "tests": {name: score([tuple(p) for p in pairs]) for name, pairs in data["tests"].items()},
        "demo": dict(zip(DEMO, translate(DEMO))),
    }
    record_path.write_text(json.dumps(record, indent=2, ensure_ascii=False) + "\n")
    print(json.dumps({k: record[k] for k in ("device", "epochs", "train_minutes", "chosen", "tests", "demo")},
                     indent=1, ensure_ascii=False))
    return record


def main(argv=None) -> None:
    global MAX_LENGTH
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    commands = parser.add_subparsers(dest="command", required=True)
    p = commands.add_parser("prepare", help="write splits, tokenizers and token ids to FOLDER (needs the library)")
    p.add_argument("folder", type=Path)
    t = commands.add_parser("train", help="train and score on the GPU (KERAS_BACKEND=jax)")
    t.add_argument("folder", type=Path)
    t.add_argument("record", type=Path)
    t.add_argument("--minutes", type=float, default=7.0,
                   help="start no new epoch after this many minutes (compilation and validation scores included)")
    t.add_argument("--batch-tokens", type=int, default=4096)
    t.add_argument("--preset", default="base")
    t.add_argument("--seed", type=int, default=0)
    t.add_argument("--max-length", type=int, default=MAX_LENGTH, help="longest sequence, in tokens")
    t.add_argument("--limit", type=int, help="use only the first LIMIT pairs of each split (a smoke test)")
    t.add_argument("--mixed-precision", action="store_true", help="compute in bfloat16, keep float32 weights")
    args = parser.parse_args(argv)
    MAX_LENGTH = getattr(args, "max_length", MAX_LENGTH)
    if args.command == "prepare":
        prepare(args.folder)
    else:
        train(args.folder, args.record, args.minutes, args.batch_tokens, args.preset, args.seed, args.limit,
              args.mixed_precision)


if __name__ == "__main__":
    main()
