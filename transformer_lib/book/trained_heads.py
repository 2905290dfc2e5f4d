"""What the encoder's heads attend to, trained and untrained (chapter 5).

Chapter 5 shows the self-attention weights of chapter 7's trained translator next to those of a model
with the same sizes and fresh random weights. Training takes hours, so the weights of one sentence
are kept in a small committed record, `chapters/results/trained_heads.json`:

    record = record_heads(translator, "Я не знаю, кто будет на собрании.", run={...})
    save_heads(record)                       # the lead's tools/record_trained_heads.py does both
    record = load_heads()                    # the chapter: wherever it runs (course_file)

A record holds the sentence, its pieces (`<s>` ... `</s>`), the run it came from (`run`: a dict the
caller fills, see tools/record_trained_heads.py), and the weights `[layers][heads][T][T]` of every
encoder layer, rounded to 4 decimals, under "trained" and "random".
"""

from __future__ import annotations

import datetime
import json
import re
from pathlib import Path

import numpy as np

RECORD = "chapters/results/trained_heads.json"  # from the repository's root
RANDOM_SEED = 0  # the untrained model's weights


def encoder_self_attention(encoder, source_ids) -> np.ndarray:
    """Every encoder layer's self-attention weights for one sentence: `[layers, heads, T, T]`.

    Runs the encoder layer by layer as `Encoder.call` does, and asks each layer's `self_attention` for
    its weights on the input its Add & Norm gives it (`LayerNorm(x)` in a pre-LN layer, `x` in a
    post-LN one). `source_ids`: int `[1, T]`, no padding.
    """
    from transformer_lib.layers.masks import padding_mask

    mask = padding_mask(source_ids)  # (1, 1, 1, T)
    x = encoder.embed(source_ids, training=False)  # (1, T, d_model)
    weights = []
    for layer in encoder.stack_layers:
        h = layer.attention_add_norm.norm(x) if layer.norm_first else x  # what the sub-layer reads
        _, w = layer.self_attention(h, h, h, mask=mask)  # (1, heads, T, T)
        weights.append(np.asarray(w)[0])
        x = layer(x, padding_mask=mask, training=False)
    return np.stack(weights)  # (layers, heads, T, T)


def random_like(model, seed: int = RANDOM_SEED):
    """A model of `model`'s class and sizes with fresh random weights (drawn with `seed`)."""
    import keras

    keras.utils.set_random_seed(seed)
    return type(model).from_config(model.get_config())


def record_heads(translator, sentence: str, run: dict, seed: int = RANDOM_SEED) -> dict:
    """The encoder self-attention of `translator` for `sentence`, and of the same model untrained.

    Args:
        translator: a `Translator` (`tl.load_translator(run_dir)`).
        sentence: one source sentence (short: a figure shows every piece).
        run: where the trained weights came from (a JSON-able dict, stored as given).
        seed: the seed of the untrained model's weights.

    Returns:
        A JSON-able dict: "sentence", "pieces" (`<s>`, the pieces, `</s>`), "run", "seed", "shape"
        (`[layers, heads, T, T]`) and "trained" and "random", the weights as nested lists rounded
        to 4 decimals (each row sums to 1).
    """
    ids = translator.encode_sources([sentence])  # (1, T)
    pieces = ["<s>", *translator.source_tokenizer.pieces(sentence), "</s>"]
    if len(pieces) != ids.shape[1]:
        raise ValueError(f"{sentence!r} is {ids.shape[1]} tokens long after encoding, {len(pieces)} pieces: "
                         "a sentence cut to max_length cannot be labelled. Choose a shorter sentence.")
    trained = encoder_self_attention(translator.model.encoder, ids)
    untrained = random_like(translator.model, seed)
    untrained.encoder(ids, training=False)  # builds the encoder (the random model's decoder is not needed)
    random = encoder_self_attention(untrained.encoder, ids)
    return {"sentence": sentence, "pieces": pieces, "run": run, "seed": seed, "shape": list(trained.shape),
            "trained": np.round(trained.astype(np.float64), 4).tolist(),
            "random": np.round(random.astype(np.float64), 4).tolist()}


def save_heads(record: dict, path: str | Path | None = None) -> Path:
    """Write `record` (from `record_heads`) as JSON to `path` (default: `RECORD`, from the current folder)."""
    path = Path(RECORD if path is None else path)
    path.parent.mkdir(parents=True, exist_ok=True)
    text = json.dumps(record, ensure_ascii=False, indent=1)
    text = re.sub(r"\[\s*([-0-9.e,\s]+?)\s*\]", lambda m: "[" + ", ".join(n.strip() for n in m.group(1).split(",")) + "]", text)
    path.write_text(text + "\n", encoding="utf-8")  # one line per row of weights
    return path


def load_heads(path: str | Path | None = None) -> dict:
    """The record saved by `save_heads`; by default the committed one, found wherever the chapter runs
    (`transformer_lib.book.course_files.course_file`). Its "trained" and "random" come back as NumPy arrays."""
    if path is None:
        from transformer_lib.book.course_files import course_file

        path = course_file(RECORD)
    record = json.loads(Path(path).read_text(encoding="utf-8"))
    for key in ("trained", "random"):
        record[key] = np.asarray(record[key], dtype=np.float32)
        if list(record[key].shape) != record["shape"]:
            raise ValueError(f"{path}: {key!r} has shape {list(record[key].shape)}, the record says {record['shape']}.")
    return record


def head_summary(weights) -> dict[str, np.ndarray]:
    """What each head of one layer does, `weights` `[heads, T, T]` (rows: queries, columns: keys).

    Returns per head (arrays of length `heads`): the mean weight a query puts on the token before it
    ("previous"), on itself ("self") and on the token after it ("next"); the key that gets the most
    weight on average ("top", an index) and that average ("top_share"); and the mean entropy of the
    rows in bits ("entropy": 0 for a head that looks at one token, log2(T) for one that spreads its
    weight evenly over all T).
    """
    w = np.asarray(weights, dtype=np.float64)
    columns = w.mean(axis=1)  # (heads, T): the average weight each key receives
    return {"previous": np.diagonal(w, offset=-1, axis1=1, axis2=2).mean(axis=1),
            "self": np.diagonal(w, axis1=1, axis2=2).mean(axis=1),
            "next": np.diagonal(w, offset=1, axis1=1, axis2=2).mean(axis=1),
            "top": columns.argmax(axis=1), "top_share": columns.max(axis=1),
            "entropy": -(w * np.log2(np.clip(w, 1e-12, 1.0))).sum(axis=2).mean(axis=1)}


def print_head_summary(record: dict, layer: int) -> None:
    """One line per head of `layer`: for the trained and the random model, the mean weight on the
    previous token, the token itself and the next token, the mean entropy (bits), and the key that
    gets the most weight with its average share (`head_summary`)."""
    pieces, (layers, heads, T, _) = record["pieces"], record["shape"]
    print(f"Layer {layer + 1} of {layers}, {T} tokens. prev, self, next: the mean weight on the token before, the "
          "token itself, the token after.")
    print(f"entr: the mean entropy in bits (one token: 0; all {T} evenly: {np.log2(T):.2f}). top: the key that "
          "gets the most weight, with its mean share.")
    numbers = ("previous", "self", "next", "entropy")
    header = " ".join(f"{name:>5}" for name in ("prev", "self", "next", "entr")) + "  top"
    width = 5 * len(numbers) + len(numbers) - 1 + 2 + 16  # the numbers, then the top key
    print(f"{'':6}{'trained':<{width + 1}}random")
    print(f"{'head':6}{header:<{width + 1}}{header}")
    summaries = [head_summary(record[key][layer]) for key in ("trained", "random")]
    for head in range(heads):
        cells = []
        for summary in summaries:
            top = f"{pieces[summary['top'][head]]} {summary['top_share'][head]:.2f}"
            cells.append(" ".join(f"{summary[c][head]:5.2f}" for c in numbers) + f"  {top:<{12 + 4}}")
        print(f"{head + 1:<6}" + " ".join(cells).rstrip())


def plot_heads(weights, pieces, title: str, columns: int = 4):
    """One layer's heads, `weights` `[heads, T, T]`, as heatmaps (queries down, keys across), at the
    width of the book's column (7.5 inches at 100 dpi) with 8-point token labels. Returns the figure."""
    import matplotlib.pyplot as plt

    weights = np.asarray(weights)
    heads = weights.shape[0]
    rows = -(-heads // columns)
    fig, axes = plt.subplots(rows, columns, figsize=(7.5, 2.05 * rows + 0.5), sharex=True, sharey=True,
                             squeeze=False)
    labels = list(pieces)  # "▁" marks the start of a word, as in the tokenizer's pieces
    for head, ax in enumerate(axes.flat):
        if head >= heads:
            ax.axis("off")
            continue
        ax.imshow(weights[head], cmap="magma", vmin=0, vmax=1)
        ax.set_title(f"head {head + 1}", fontsize=9)
        ax.set_xticks(range(len(labels)), labels, rotation=90, fontsize=8)
        ax.set_yticks(range(len(labels)), labels, fontsize=8)
    fig.suptitle(title, fontsize=10)
    fig.supxlabel("key (the token attended to)", fontsize=8)
    fig.supylabel("query (the token that attends)", fontsize=8)
    fig.tight_layout()
    return fig


def run_description(run_dir: str | Path) -> dict:
    """The "run" of a record made from the translator saved in `run_dir` by `train_translator`:
    its folder's name, its recipe and its validation BLEU (from `training.json` when there), this
    machine and today's date."""
    from transformer_lib.utils.machine_description import describe_machine

    run_dir = Path(run_dir)
    run = {"run": run_dir.name, "provisional": False, "machine": describe_machine(),
           "date": datetime.date.today().isoformat()}
    record = run_dir / "training.json"
    if record.is_file():
        training = json.loads(record.read_text(encoding="utf-8"))
        history = training.pop("history", {})
        weights = training.pop("weights", {})
        training.pop("machine", None)
        run["recipe"] = training
        run["epochs_trained"] = (history.get("epoch") or [None])[-1]
        if history.get("val_score"):
            run["final_val_bleu_greedy"] = round(float(history["val_score"][-1]), 2)
        if weights:
            run["weights"] = weights.get("chosen")
            run["val_bleu_beam"] = weights.get("scores", {}).get(weights.get("chosen"))
    return run
