"""Does the way chapter 9's fine-tuning is batched change what pretraining is worth?

    python -m benchmarks.bert_finetune_protocol SAVED --model pretrained|scratch --protocol reviews|buckets
        [--size 2,128,4,512] [--norm-first] [--clip weight|global] [--lr 1e-3] [--labels 1000]
        [--seeds 0,1,2] [--epochs 20] [--patience 4] [--test sample|all] [--out FILE]

SAVED is a folder written by `python -m benchmarks.bert_labels_cpu ... --save SAVED` (the pretrained
small BERT's weights, its tokenizer and its pretraining curve); `--size` and `--norm-first` must be
the ones it was pretrained with (other weights are refused). This fine-tunes that model
(`--model pretrained`) or the same classifier from random weights (`--model scratch`) on `--labels`
balanced training reviews, for each seed, keeping the best epoch on the validation reviews, and reads
its test accuracy (`sample`: the balanced 5,000 test reviews of bert_labels_cpu; `all`: all 25,000).
Reviews are read as chapter 9 reads them (the first and last 127 pieces of a long one).

The two protocols differ in how the labelled reviews become updates:
- `buckets` (bert_labels_cpu's and the chapter's so far): reviews of similar length share a batch of
  about 8,192 tokens (`tl.make_review_batches`), each weight's gradient clipped to norm 1 (Keras's
  `clipnorm`);
- `reviews` (the GPU screen's, benchmarks/bert_labels_gpu.py): 32 reviews drawn at random per update
  whatever their length, padded to 256, the gradient clipped to global norm 1 (`global_clipnorm`).
`--clip` overrides the protocol's clipping, to tell the two differences apart.
Every run appends one row to the record (with its command), so several invocations fill one table.
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
from transformer_lib.data.tokenizer import END_ID, START_ID

DEFAULT_OUT = Path(__file__).resolve().parent / "bert_finetune_protocol.json"
REVIEW_LENGTH = 256
REVIEWS_PER_UPDATE = 32
TEST_SAMPLE = 5000  # the balanced test sample of bert_labels_cpu (seed 99)


def padded_rows(reviews, tokenizer) -> tuple[np.ndarray, np.ndarray]:
    """START, head and tail of each review, END, padded with 0 to REVIEW_LENGTH; and the labels."""
    ids = [[START_ID, *tl.data.imdb.truncated(row, REVIEW_LENGTH - 2, "head+tail"), END_ID]
           for row in tokenizer.encode([text for text, _ in reviews])]
    return (keras.utils.pad_sequences(ids, maxlen=REVIEW_LENGTH, padding="post"),
            np.asarray([label for _, label in reviews], np.int32))


def stored_names(path: Path) -> set[str]:
    """The names of the model weights stored in a .weights.h5 file (not those of its optimizer)."""
    import h5py

    names = set()
    with h5py.File(path, "r") as stored:
        stored.visititems(lambda name, item: names.add(name) if isinstance(item, h5py.Dataset) else None)
    return {name for name in names if not name.startswith("optimizer/")}  # a compiled model keeps its optimizer's


def load_exactly(model: keras.Model, path: Path, tmp: Path) -> None:
    """`model.load_weights(path)`, refusing a file written by a model of another shape: Keras loads
    whatever matches by name and says nothing of the rest (a pre-LN model's final norm, say)."""
    model.save_weights(tmp)
    expected, found = stored_names(tmp), stored_names(path)
    tmp.unlink()
    if expected != found:
        differ = sorted(expected ^ found)
        raise ValueError(f"{path} was not written by a model of these sizes ({len(differ)} weights differ, e.g. "
                         f"{differ[0]}): give the --size and --norm-first it was pretrained with.")
    model.load_weights(path)


def main(argv=None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("saved", type=Path, help="a folder written by bert_labels_cpu --save")
    parser.add_argument("--model", choices=("pretrained", "scratch"), required=True)
    parser.add_argument("--protocol", choices=("reviews", "buckets"), required=True)
    parser.add_argument("--size", default="2,128,4,512", help="layers,width,heads,dff of the saved model")
    parser.add_argument("--norm-first", action="store_true", help="the saved model is pre-LN")
    parser.add_argument("--clip", choices=("weight", "global"), default=None,
                        help="clip each weight's gradient, or all together (default: the protocol's)")
    parser.add_argument("--lr", type=float, default=1e-3)
    parser.add_argument("--labels", type=int, default=1000)
    parser.add_argument("--seeds", default="0,1,2")
    parser.add_argument("--epochs", type=int, default=20)
    parser.add_argument("--patience", type=int, default=4)
    parser.add_argument("--test", choices=("sample", "all"), default="sample")
    parser.add_argument("--out", type=Path, default=DEFAULT_OUT)
    parser.add_argument("--toy", action="store_true", help="the 2,000-review sample (for the tests)")
    args = parser.parse_args(argv)
    command = "python -m benchmarks.bert_finetune_protocol " + " ".join(sys.argv[1:] if argv is None else argv)
    if not (args.saved / "bert.weights.h5").exists():
        raise FileNotFoundError(f"{args.saved} has no bert.weights.h5: make it with "
                                "python -m benchmarks.bert_labels_cpu ... --save " + str(args.saved))
    layers, width, heads, dff = (int(v) for v in args.size.split(","))
    sizes = dict(num_layers=layers, d_model=width, num_heads=heads, dff=dff, dropout_rate=0.1, max_length=REVIEW_LENGTH,
                 norm_first=args.norm_first, activation="gelu")
    tokenizer = tl.SubwordTokenizer.load(args.saved / "tokenizer.model")
    reviews = {split: tl.load_imdb(split, sample=args.toy) for split in ("train", "validation", "test")}
    bert = tl.MaskedLanguageModel(tokenizer.vocab_size + 1, **sizes)
    bert.build(((None, None), (None, 2)))
    load_exactly(bert, args.saved / "bert.weights.h5", args.out.with_suffix(".check.weights.h5"))

    batching = dict(max_length=REVIEW_LENGTH, batch_tokens=8192, truncate="head+tail")
    val_ds = tl.make_review_batches(reviews["validation"], tokenizer, shuffle=False, **batching)
    test_pairs = reviews["test"] if args.test == "all" else tl.data.imdb.balanced(reviews["test"], min(TEST_SAMPLE, len(
        reviews["test"]) // 2 * 2), seed=99)
    test_ds = tl.make_review_batches(test_pairs, tokenizer, shuffle=False, **batching)
    clip = args.clip or {"buckets": "weight", "reviews": "global"}[args.protocol]
    runs = []
    for seed in (int(s) for s in args.seeds.split(",")):
        keras.utils.set_random_seed(seed)
        labelled = tl.data.imdb.balanced(reviews["train"], args.labels, seed)
        if args.protocol == "buckets":
            train_ds = tl.make_review_batches(labelled, tokenizer, seed=seed, **batching)
        else:
            x, y = padded_rows(labelled, tokenizer)
            train_ds = tf.data.Dataset.from_tensor_slices((x, y))
            train_ds = train_ds.shuffle(len(x), seed=seed, reshuffle_each_iteration=True)
            train_ds = train_ds.batch(REVIEWS_PER_UPDATE, drop_remainder=True)
        optimizer = (keras.optimizers.Adam(args.lr, clipnorm=1.0) if clip == "weight" else
                     keras.optimizers.Adam(args.lr, global_clipnorm=1.0))
        model = (tl.classifier_from_pretrained(bert) if args.model == "pretrained" else
                 tl.TransformerClassifier(tokenizer.vocab_size + 1, **sizes))
        model.compile(optimizer=optimizer, metrics=["accuracy"],
                      loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True))
        keep = keras.callbacks.EarlyStopping(monitor="val_accuracy", patience=args.patience, restore_best_weights=True)
        start = time.perf_counter()
        model.fit(train_ds, validation_data=val_ds, epochs=args.epochs, verbose=0, shuffle=False, callbacks=[keep])
        runs.append({"seed": seed, "val_accuracy": round(float(keep.best), 4), "best_epoch": keep.best_epoch + 1,
                     "minutes": round((time.perf_counter() - start) / 60, 2),
                     "test_accuracy": round(float(model.evaluate(test_ds, verbose=0)[1]), 4)})
        print(runs[-1], flush=True)
    row = {"command": command, "date": datetime.date.today().isoformat(), "machine": describe_machine(),
           "saved": str(args.saved), "size": [layers, width, heads, dff], "norm_first": args.norm_first,
           "model": args.model, "protocol": args.protocol, "clip": clip, "lr": args.lr,
           "labels": len(labelled), "epochs": args.epochs, "patience": args.patience, "test_reviews": len(test_pairs),
           "mean_val": round(float(np.mean([r["val_accuracy"] for r in runs])), 4),
           "mean_test": round(float(np.mean([r["test_accuracy"] for r in runs])), 4), "runs": runs}
    record = json.loads(args.out.read_text()) if args.out.exists() else {
        "what": "Fine-tuning a saved small BERT (and the same model from scratch) under two batching protocols; "
                "see benchmarks/bert_finetune_protocol.py. One row per invocation.", "rows": []}
    record["rows"].append(row)
    write_json(args.out, record, indent=1)
    print(f"{args.model} {args.protocol} (clip {clip}) lr {args.lr}: mean test {row['mean_test']} ({len(runs)} seeds)",
          flush=True)
    return row


if __name__ == "__main__":
    main()
