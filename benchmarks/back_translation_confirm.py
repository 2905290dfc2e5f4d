"""The back-translation study's confirmation: chapter 7's whole recipe, with the book's synthetic pairs.

    python -m benchmarks.back_translation_confirm [--epochs 20] [--out FILE]

The study's rows (`benchmarks.back_translation_study`) are eight-epoch runs: they rank how fast a change
learns, not where a whole run ends. This trains chapter 7's recipe of the time (`SMALL`: `tl.Recipe()` with the
`small` preset and its 29 epochs' budget, which the study's rows used), on
`tatoeba+smartool+bt/rus-eng` (the shipped beam back-translations added to the training split) for `--epochs`
epochs, with `tl.train_translator` as chapter 7 does (checkpoints; the last epoch, the best and the average
of the last five compared by beam BLEU on the validation split, the best kept) into
runs/back-translation/confirm-<epochs>/ (not committed). Twenty epochs of the larger corpus make about as
many updates as that recipe's 29 epochs without it, in about the same time. The record
(`back_translation_confirm.json`, one entry per number of epochs) holds the recipe, the machine, the minutes,
the greedy validation BLEU of every epoch and the validation beam BLEU of each candidate weights, to set
beside chapter 7's published run of that recipe without synthetic pairs (`benchmarks/whole_runs.json`).
"""

from __future__ import annotations

import argparse
import datetime
import json
from pathlib import Path

from benchmarks import processor

ROOT = Path(__file__).resolve().parent.parent
OUT = Path(__file__).resolve().parent / "back_translation_confirm.json"
CORPUS = "tatoeba+smartool+bt/rus-eng"
# chapter 7's recipe: today's, with the small preset
SMALL = dict(preset="small")
# what to set it beside: a run of that recipe without synthetic pairs on the same kind of machine (an Intel Xeon),
# read from the record that keeps it
WHOLE_RUNS = Path(__file__).resolve().parent / "whole_runs.json"
BASELINE_RUN = "small, another run (Intel Xeon)"  # its name in whole_runs.json


def baseline() -> dict:
    """The run of the small recipe that this record sets its runs beside."""
    run = json.loads(WHOLE_RUNS.read_text())["runs"][BASELINE_RUN]
    return {"what": f"another run of chapter 7's recipe (small preset; \"{BASELINE_RUN}\" in whole_runs.json): "
                    "tatoeba+smartool/rus-eng, 29 epochs, no synthetic pair", "cpu": "a 2-core Intel Xeon with AVX-512",
            **{key: run[key] for key in ("updates", "train_minutes", "batches_per_epoch", "val_beam_bleu", "val_greedy_bleu")}}


def confirm(epochs: int, out: Path = OUT, folder: Path | None = None) -> dict:
    """Train (or resume) the confirmation run of `epochs` epochs; add its entry to `out`; return the entry."""
    import transformer_lib as tl

    recipe = tl.Recipe(corpus=CORPUS, epochs=epochs, **SMALL)
    folder = folder or ROOT / "runs" / "back-translation" / f"confirm-{epochs}"
    summary = tl.train_translator(folder, recipe, verbose=2)
    entry = {"recipe": recipe.to_dict(), "training_pairs": len(tl.load_parallel_corpus(recipe.corpus, "train")),
             "date": datetime.date.today().isoformat(),
             "machine": summary["machine"], "cpu": processor(), "train_minutes": round(summary["train_seconds"] / 60, 1),
             "val_greedy_bleu": [round(v, 2) for v in summary["history"]["val_score"]],
             "val_beam_bleu": summary["weights"]["scores"], "chosen": summary["weights"]["chosen"]}
    record = json.loads(out.read_text()) if out.is_file() else {}
    runs = {**record.get("runs", {}), str(epochs): entry}
    record = {"what": __doc__.split("\n\n")[0], "command": "python -m benchmarks.back_translation_confirm --epochs N",
              "runs": runs, "baseline": baseline()}
    out.write_text(json.dumps(record, indent=1, ensure_ascii=False) + "\n")
    return entry


def main(argv=None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--epochs", type=int, default=20)
    parser.add_argument("--out", type=Path, default=OUT)
    args = parser.parse_args(argv)
    entry = confirm(args.epochs, args.out)
    print(f"{args.epochs} epochs on {CORPUS}: {entry['chosen']}, validation beam BLEU "
          f"{entry['val_beam_bleu'][entry['chosen']]:.2f} ({entry['train_minutes']} min of training)")
    return entry


if __name__ == "__main__":
    main()
