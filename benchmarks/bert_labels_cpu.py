"""Chapter 9's question on the CPU, with the library's own models: does masked-LM pretraining
that fits a chapter's budget on two cores make the small BERT beat the same model from scratch at
1,000 labels?

    python -m benchmarks.bert_labels_cpu [--minutes 30] [--size 2,128,4,512] [--window 128]
        [--lr 3e-3] [--norm-first] [--mask-rate 0.15] [--pretrain-epochs N] [--finetune-lrs 3e-4,1e-3]
        [--scratch-lrs LRS] [--finetune-epochs 20] [--patience 4] [--labels 1000] [--seeds 3]
        [--all-labels] [--all-labels-lr 3e-4] [--windows consecutive|random] [--pretrain-clip weight|global]
        [--save DIR] [--out FILE] [--toy]

The GPU screen (`benchmarks/bert_labels_gpu.py`, plain JAX) found the gain once masked-token accuracy
leaves its frequent-token plateau (~0.13), after about 5,600 updates of 64 windows of 256 tokens at
width 128. A CPU does about a fifth of those tokens in half an hour, so this screen spends its
budget on *updates* instead: windows of `--window` tokens (every review cut into consecutive
windows, so all its text is read), batches of about 8,192 tokens, the §5.3 schedule with a
1,000-update warm-up up to `--lr`, pre-LN if `--norm-first`. It pretrains `tl.MaskedLanguageModel`
in whole epochs, starting another while fewer than `--minutes` have passed, and records masked-token
accuracy on windows of the validation reviews after every epoch. Then it fine-tunes
`tl.classifier_from_pretrained` and an identical `tl.TransformerClassifier` from scratch on
`--labels` balanced training reviews (first and last 127 pieces of each, as chapter 9), for each of
`--seeds` and two learning rates, up to 20 epochs, keeping the best epoch on the validation reviews
(patience 4). The learning rate of each model is chosen on validation; test accuracy is read once
per model, on a fixed balanced sample of 5,000 test reviews (the screen's budget; the chapter reads
all 25,000).

`--windows random` pretrains on one window of every review an epoch, starting at a random place
(`tl.data.imdb.random_review_windows`, `--batch-tokens / --window` windows a batch, as the GPU screen drew
them) instead of all its consecutive windows; `--pretrain-clip global` clips the gradient of all
weights together to norm 1 (as the GPU screen) instead of each weight's.
`--pretrain-epochs N` pretrains exactly N epochs (instead of a budget in minutes); `--scratch-lrs`
gives the model from scratch its own learning rates to choose from (default: the same as the
pretrained one's). `--all-labels` then fine-tunes the pretrained model once more, on every labelled
training review (one seed, learning rate `--all-labels-lr`, up to 4 epochs, patience 1) and reads its
accuracy on all 25,000 test reviews. `--save DIR` keeps the pretrained model's weights, its
tokenizer and its pretraining curve there, so that its fine-tuning can be tried again without
pretraining again.
"""

from __future__ import annotations

import argparse
import datetime
import json
import sys
import time
from pathlib import Path

import keras
import numpy as np
import tensorflow as tf

import transformer_lib as tl
from transformer_lib.utils.json_records import write_json
from transformer_lib.utils.machine_description import describe_machine

DEFAULT_OUT = Path(__file__).resolve().parent / "bert_labels_cpu.json"
REVIEW_LENGTH = 256  # tokens of a review for classification, as chapter 9
FINETUNE_LRS = (3e-4, 1e-3)
TEST_SAMPLE = 5000


def window_batches(ids: list[list[int]], window: int, batch_tokens: int, shuffle: bool, seed: int = 0) -> tf.data.Dataset:
    """`tl.data.imdb.review_windows` batched by length (labels 0, unused)."""
    rows = tl.data.imdb.review_windows(ids, window)
    return tl.data.imdb.batch_rows(rows, [0] * len(rows), window, batch_tokens, shuffle, seed)


def main(argv=None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--minutes", type=float, default=30.0, help="pretraining budget: a new epoch starts while under it")
    parser.add_argument("--size", default="2,128,4,512", help="layers,width,heads,dff")
    parser.add_argument("--window", type=int, default=128)
    parser.add_argument("--batch-tokens", type=int, default=8192)
    parser.add_argument("--lr", type=float, default=3e-3, help="pretraining peak learning rate")
    parser.add_argument("--warmup", type=int, default=1000)
    parser.add_argument("--norm-first", action="store_true", help="pre-LN (default: BERT's post-LN)")
    parser.add_argument("--mask-rate", type=float, default=tl.models.bert.MASK_RATE, help="share of tokens to predict")
    parser.add_argument("--finetune-lrs", default=",".join(str(lr) for lr in FINETUNE_LRS),
                        help="fine-tuning learning rates tried (each model's chosen on validation)")
    parser.add_argument("--pretrain-epochs", type=int, default=0, help="exactly this many epochs (0: as --minutes allows)")
    parser.add_argument("--scratch-lrs", default="", help="the model from scratch's learning rates (default: --finetune-lrs)")
    parser.add_argument("--finetune-epochs", type=int, default=20)
    parser.add_argument("--patience", type=int, default=4)
    parser.add_argument("--all-labels", action="store_true", help="also fine-tune the pretrained model on all labels")
    parser.add_argument("--all-labels-lr", type=float, default=3e-4)
    parser.add_argument("--windows", choices=("consecutive", "random"), default="consecutive",
                        help="pretraining text: every review's consecutive windows, or one random window each")
    parser.add_argument("--pretrain-clip", choices=("weight", "global"), default="weight")
    parser.add_argument("--save", type=Path, default=None, help="keep the pretrained model and its tokenizer here")
    parser.add_argument("--labels", type=int, default=1000)
    parser.add_argument("--seeds", type=int, default=3)
    parser.add_argument("--out", type=Path, default=DEFAULT_OUT)
    parser.add_argument("--toy", action="store_true", help="the 2,000-review sample, tiny sizes (for the tests)")
    args = parser.parse_args(argv)
    command = "python -m benchmarks.bert_labels_cpu " + " ".join(sys.argv[1:] if argv is None else argv)
    layers, width, heads, dff = (int(v) for v in args.size.split(","))
    start_all = time.perf_counter()
    reviews = {split: tl.load_imdb(split, sample=args.toy) for split in ("train", "validation", "test")}
    tokenizer = tl.data.imdb.train_review_tokenizer(reviews["train"], 1000 if args.toy else 8000)
    mask_id = tokenizer.vocab_size
    sizes = dict(num_layers=layers, d_model=width, num_heads=heads, dff=dff, dropout_rate=0.1,
                 max_length=REVIEW_LENGTH, norm_first=args.norm_first)
    encode = lambda split: tokenizer.encode([text for text, _ in reviews[split]])
    if args.windows == "random":
        per_batch = max(1, args.batch_tokens // args.window)
        train_windows = tl.data.imdb.random_review_windows(encode("train"), args.window, per_batch)
    else:
        train_windows = window_batches(encode("train"), args.window, args.batch_tokens, True)
    mlm_train = tl.models.bert.make_mlm_batches(train_windows, mask_id, rate=args.mask_rate)
    mlm_val = tl.models.bert.make_mlm_batches(window_batches(encode("validation"), args.window, args.batch_tokens, False), mask_id,
                                       seed=1)  # BERT's 15% whatever the training rate: comparable accuracies

    keras.utils.set_random_seed(0)
    bert = tl.MaskedLanguageModel(mask_id + 1, activation="gelu", **sizes)
    schedule = tl.TransformerSchedule(width, args.warmup, peak_rate=args.lr)
    clip = {"weight": dict(clipnorm=1.0), "global": dict(global_clipnorm=1.0)}[args.pretrain_clip]
    bert.compile(optimizer=keras.optimizers.Adam(schedule, **clip), metrics=["accuracy"],
                 loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True))
    curve, started = [], time.perf_counter()

    def more_epochs() -> bool:
        if args.pretrain_epochs:
            return len(curve) < args.pretrain_epochs
        return (time.perf_counter() - started) / 60 < args.minutes and len(curve) < (1 if args.toy else 1000)

    while more_epochs():
        history = bert.fit(mlm_train, validation_data=mlm_val, epochs=1, verbose=0, shuffle=False).history
        curve.append({"epoch": len(curve) + 1, "minutes": round((time.perf_counter() - started) / 60, 2),
                      "updates": int(bert.optimizer.iterations.numpy()),
                      "train_masked_accuracy": round(history["accuracy"][0], 4),
                      "val_masked_accuracy": round(history["val_accuracy"][0], 4),
                      "val_loss": round(history["val_loss"][0], 4)})
        print("pretraining", curve[-1], flush=True)
    if args.save:
        args.save.mkdir(parents=True, exist_ok=True)
        bert.save_weights(args.save / "bert.weights.h5")
        tokenizer.save(args.save / "tokenizer.model")
        write_json(args.save / "pretraining.json", {"command": command, "machine": describe_machine(), "curve": curve},
                   indent=1)

    batching = dict(max_length=REVIEW_LENGTH, batch_tokens=8192, truncate="head+tail")
    val_ds = tl.make_review_batches(reviews["validation"], tokenizer, shuffle=False, **batching)
    test_pairs = tl.data.imdb.balanced(reviews["test"], TEST_SAMPLE, seed=99)
    test_ds = tl.make_review_batches(test_pairs, tokenizer, shuffle=False, **batching)

    def fine_tune(pretrained: bool, seed: int, lr: float, labels: int = args.labels, epochs: int = args.finetune_epochs,
                  patience: int = args.patience, test=test_ds) -> dict:
        keras.utils.set_random_seed(seed)
        train_ds = tl.make_review_batches(tl.data.imdb.balanced(reviews["train"], labels, seed), tokenizer, seed=seed, **batching)
        model = (tl.classifier_from_pretrained(bert) if pretrained else
                 tl.TransformerClassifier(mask_id + 1, activation="gelu", **sizes))
        model.compile(optimizer=keras.optimizers.Adam(lr, clipnorm=1.0), metrics=["accuracy"],
                      loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True))
        keep = keras.callbacks.EarlyStopping(monitor="val_accuracy", patience=patience, restore_best_weights=True)
        start = time.perf_counter()
        model.fit(train_ds, validation_data=val_ds, epochs=2 if args.toy else epochs, verbose=0, shuffle=False, callbacks=[keep])
        return {"seed": seed, "lr": lr, "val_accuracy": round(float(keep.best), 4), "best_epoch": keep.best_epoch + 1,
                "minutes": round((time.perf_counter() - start) / 60, 2),
                "test_accuracy": round(float(model.evaluate(test, verbose=0)[1]), 4)}

    finetune_lrs = tuple(float(lr) for lr in args.finetune_lrs.split(","))
    scratch_lrs = tuple(float(lr) for lr in args.scratch_lrs.split(",")) if args.scratch_lrs else finetune_lrs
    comparison = {}
    for name, pretrained, lrs in (("pretrained", True, finetune_lrs), ("scratch", False, scratch_lrs)):
        by_lr = {lr: [fine_tune(pretrained, seed, lr) for seed in range(args.seeds)] for lr in lrs}
        chosen = max(lrs, key=lambda lr: np.mean([run["val_accuracy"] for run in by_lr[lr]]))
        comparison[name] = {"chosen_lr": chosen, "mean_val": round(float(np.mean([r["val_accuracy"] for r in by_lr[chosen]])), 4),
                            "mean_test": round(float(np.mean([r["test_accuracy"] for r in by_lr[chosen]])), 4),
                            "runs": [run for lr in lrs for run in by_lr[lr]]}
        print(name, {k: v for k, v in comparison[name].items() if k != "runs"}, flush=True)
    all_labels = None
    if args.all_labels:
        every_test = tl.make_review_batches(reviews["test"], tokenizer, shuffle=False, **batching)
        all_labels = fine_tune(True, 0, args.all_labels_lr, labels=len(reviews["train"]), epochs=4, patience=1, test=every_test)
        all_labels.update(labels=len(reviews["train"]), test_reviews=len(reviews["test"]))
        print("pretrained, all labels", all_labels, flush=True)
    record = {"what": "Chapter 9's small BERT on the CPU: masked-LM pretraining within a budget, then fine-tuning at "
                      f"{args.labels} labels against the same model from scratch (mean of {args.seeds} seeds).",
              "command": command,
              "date": datetime.date.today().isoformat(), "machine": describe_machine(),
              "settings": {"size": [layers, width, heads, dff], "window": args.window, "batch_tokens": args.batch_tokens,
                           "pretraining_lr": args.lr, "warmup": args.warmup, "norm_first": args.norm_first,
                           "mask_rate": args.mask_rate, "windows": args.windows, "pretrain_clip": args.pretrain_clip,
                           "finetune_epochs": args.finetune_epochs, "patience": args.patience,
                           "labels": args.labels, "seeds": args.seeds, "finetune_lrs": list(finetune_lrs),
                           "scratch_lrs": list(scratch_lrs), "all_labels_lr": args.all_labels_lr if args.all_labels else None,
                           "test_reviews": len(test_pairs), "toy": args.toy},
              "pretraining": curve, "comparison": comparison, "all_labels": all_labels,
              "gain_at_labels": round(comparison["pretrained"]["mean_test"] - comparison["scratch"]["mean_test"], 4),
              "minutes": round((time.perf_counter() - start_all) / 60, 1)}
    args.out.write_text(json.dumps(record, indent=1) + "\n")
    print(f"gain {record['gain_at_labels']:+.4f} (test, mean of {args.seeds} seeds); {record['minutes']} min", flush=True)
    return record


if __name__ == "__main__":
    main()
