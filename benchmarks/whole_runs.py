"""Whole runs in chapter 7's budget: a short study's winner trained as chapter 7 trains its recipe, then scored.

    python -m benchmarks.whole_runs --name NAME [--preset wide] [--corpus C] [--tie-output] [--epochs N] [--keep K]
                                    [--folder F]

The studies' eight-epoch rows rank how fast a change learns; a whole run says where it ends within the 40
minutes of training that chapter 7 allows. This trains `tl.Recipe()` with the changes given (`--preset`,
`--corpus`, `--tie-output`, and `--epochs`: as many as fit in that budget) by `tl.train_translator`, as chapter 7
does, into `--folder` (default runs/whole-runs/NAME, not committed; a finished run there is scored without training
again), keeping the weights of the last `--keep` epochs. Then it scores them on Tatoeba's validation split as
chapter 7 chooses its weights (beam 4, alpha 0.6): the last epoch's weights and the averages of the last 3, 5
and 10 kept epochs. It adds an entry to `whole_runs.json`: the recipe and sizes, machine, date, minutes of
training, the seconds, validation loss and greedy validation BLEU of every epoch, those beam scores, and the
validation translations of the average of the last five (the recipe's `average_last`), so that two runs can
be compared by a paired bootstrap (`tl.paired_bootstrap`). Chapter 7's own run is one of them ("small (chapter
7)", trained into chapters/runs/ with `--folder`); the record also keeps another run of its recipe, on an Intel
Xeon, copied from the chapter's outputs when it was the book's run (its translations were not kept).
"""

from __future__ import annotations

import argparse
import datetime
import json
from pathlib import Path

from benchmarks import processor

ROOT = Path(__file__).resolve().parent.parent
OUT = Path(__file__).resolve().parent / "whole_runs.json"
AVERAGES = (3, 5, 10)  # the averages of the last n kept epochs that are scored


def score_run(translator, folder: Path, recipe, val_pairs) -> dict:
    """Beam BLEU (beam 4, alpha 0.6) on `val_pairs` of the last kept epoch and of the averages of the last
    3, 5 and 10 kept epochs in `folder` (loaded into `translator`'s model in turn), and the translations of the
    average of the last `recipe.average_last`."""
    import transformer_lib as tl
    from transformer_lib.training.selection import average_weights, epoch_file, kept_epochs

    directory = folder / "checkpoints"
    epochs = kept_epochs(directory)
    candidates = {f"last (epoch {epochs[-1]})": epochs[-1:]}
    for n in AVERAGES:
        if len(epochs) >= n:
            candidates[f"average of epochs {epochs[-n]}-{epochs[-1]}"] = epochs[-n:]
    scores, translations = {}, None
    for name, chosen in candidates.items():
        average_weights(translator.model, [epoch_file(directory, epoch) for epoch in chosen])
        found = tl.evaluate_bleu(translator, val_pairs, beam_size=4, alpha=0.6, verbose=False)
        scores[name] = {"bleu": round(found["bleu"], 2), "chrf": round(found["chrf"], 2)}
        print(f"  {name:<28} validation beam BLEU {found['bleu']:.2f}", flush=True)
        if len(chosen) == recipe.average_last:
            translations = found["translations"]
    return {"val_beam": scores, "average_last": recipe.average_last, "val_translations": translations,
            "parameters": tl.count_parameters(translator.model),
            "sizes": translator.model.config.pick("num_layers", "d_model", "num_heads", "dff")}


def whole_run(name: str, folder: Path, keep: int, out: Path = OUT, **changes) -> dict:
    """Train (or find finished) the run of `tl.Recipe(**changes)` in `folder`, score it, add it to `out`."""
    import transformer_lib as tl
    from transformer_lib.data.batching import make_batches

    recipe = tl.Recipe(**changes)
    summary = tl.train_translator(folder, recipe.replace(average_last=keep), verbose=2)
    val_pairs = tl.load_parallel_corpus(recipe.corpus, "validation")
    train_pairs = tl.load_parallel_corpus(recipe.corpus, "train")
    translator = tl.load_translator(folder)
    batches = make_batches(train_pairs, (translator.source_tokenizer, translator.target_tokenizer), seed=recipe.seed,
                           verbose=False, **recipe.batching())
    history = summary["history"]
    entry = {"name": name, "changes": recipe.changes(), "recipe": recipe.to_dict(), "training_pairs": len(train_pairs),
             "batches_per_epoch": int(batches.cardinality()), "updates": int(batches.cardinality()) * recipe.epochs,
             "date": datetime.date.today().isoformat(), "cpu": processor(), "machine": summary["machine"],
             "train_minutes": round(summary["train_seconds"] / 60, 1),
             "seconds_per_epoch": [round(s) for s in history["seconds"]],
             "val_loss": [round(v, 4) for v in history["val_loss"]],
             "val_greedy_bleu": [round(v, 2) for v in history["val_score"]],
             **score_run(translator, folder, recipe, val_pairs)}
    record = json.loads(out.read_text()) if out.is_file() else {"what": __doc__.split("\n\n")[0], "runs": {}}
    record["command"] = ("python -m benchmarks.whole_runs --name NAME [--preset P] [--corpus C] [--tie-output] "
                         "--epochs N --keep K")
    record["runs"][name] = entry
    out.write_text(json.dumps(record, indent=1, ensure_ascii=False) + "\n")
    return entry


def main(argv=None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--name", required=True, help="the entry's name in the record")
    parser.add_argument("--preset", default=None)
    parser.add_argument("--corpus", default=None)
    parser.add_argument("--tie-output", action="store_true", default=None, help="the target embedding as output layer")
    parser.add_argument("--epochs", type=int, default=None)
    parser.add_argument("--keep", type=int, default=5, help="keep the weights of the last K epochs (default 5)")
    parser.add_argument("--folder", type=Path, default=None, help="the run's folder (default runs/whole-runs/NAME)")
    parser.add_argument("--out", type=Path, default=OUT)
    args = parser.parse_args(argv)
    given = {"preset": args.preset, "corpus": args.corpus, "epochs": args.epochs, "tie_output": args.tie_output}
    changes = {key: value for key, value in given.items() if value is not None}
    folder = args.folder or ROOT / "runs" / "whole-runs" / args.name
    entry = whole_run(args.name, folder, args.keep, args.out, **changes)
    print(f"{args.name}: {entry['train_minutes']} min of training; validation beam BLEU "
          + ", ".join(f"{name} {found['bleu']:.2f}" for name, found in entry["val_beam"].items()))
    return entry


if __name__ == "__main__":
    main()
