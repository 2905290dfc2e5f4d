"""Back-translation for chapter 7's translator: which synthetic pairs help, and how many?

    python -m benchmarks.back_translation_study [--epochs 8] [--workers 1] [--only ROW,ROW] [--out FILE]

Two steps come first, each once, their results kept in runs/back-translation/ (not committed) and recorded
with their minutes:

1. The reverse model: chapter 7's recipe (`tl.Recipe()`) trained English -> Russian on the same pairs swapped
   (`tatoeba+smartool/eng-rus`, `REVERSE_EPOCHS` epochs), scored by beam BLEU against the Russian of the
   swapped validation split. Its training never saw a held-out sentence of either side.
2. The synthetic pairs: the English sentences of the Tatoeba Portuguese-English set, each once (12,521 of its
   13,222 pairs' English; `tl.data.corpora.monolingual_english`) put into Russian by the reverse model, with beam search (beam 4, the translator's alpha)
   and by sampling (temperature 1; Edunov et al. 2018).

Then the rows, trained and scored as the small-data study's (`benchmarks.studies.train_and_score`: the same
recipe, seed and epochs, Tatoeba's validation split, never its test split): "center" is chapter 7's recipe
without synthetic pairs, the others add them through `tatoeba+smartool+bt/rus-eng` (whose leak rule leaves out
any synthetic pair linked to a held-out Tatoeba sentence): beam or sampled, tagged with `<bt>` (Caswell et al.
2019) or not, all of them or half. More pairs are more updates per epoch, so one more row trains the center
1.5 times as many epochs (about the updates of a row with every synthetic pair): is it the pairs that help,
or only the longer training? `--toy` runs the two steps at toy sizes on the synthetic corpus (for the
tests: its numbers mean nothing).
"""

from __future__ import annotations

import datetime
import hashlib
import json
import os
import random
import time
from pathlib import Path

from benchmarks import processor
from benchmarks.studies import run_rows, save_record, study_main, train_and_score

ROOT = Path(__file__).resolve().parent.parent
DEFAULT_OUT = Path(__file__).resolve().parent / "back_translation_study.json"
FOLDER = ROOT / "runs" / "back-translation"
REVERSE_EPOCHS = 12
# name: (what changes, the synthetic pairs added: method, tagged, share of them; None for none)
RUNS = {
    "center": ("chapter 7's recipe on Tatoeba + SMARTool, no synthetic pair", None),
    "beam": ("+ the back-translations by beam search", ("beam", False, 1.0)),
    "sampled": ("+ the back-translations by sampling", ("sampled", False, 1.0)),
    "beam tagged": ("+ the beam back-translations, each source tagged <bt>", ("beam", True, 1.0)),
    "sampled tagged": ("+ the sampled back-translations, each source tagged <bt>", ("sampled", True, 1.0)),
    "beam half": ("+ half of the beam back-translations (a seeded draw)", ("beam", False, 0.5)),
    "beam tagged half": ("+ half of the tagged beam back-translations (a seeded draw)", ("beam", True, 0.5)),
    "center 1.5x epochs": ("chapter 7's recipe, no synthetic pair, 1.5 times the epochs: about the updates "
                                "of a row with all the synthetic pairs", None),
}
# rows that train longer than --epochs, by this factor (rounded): adding pairs adds updates per epoch, and this
# row asks whether the synthetic pairs help, or only the extra updates
EPOCH_FACTOR = {"center 1.5x epochs": 1.5}
# --toy: the steps at toy sizes, the "reverse" model trained on the synthetic numbers task
TOY = (dict(corpus="synthetic/small", preset="tiny", vocab_size=400, warmup_steps=20, epochs=1, average_last=1),
       dict(num_layers=1, d_model=32, num_heads=2, dff=64), 12)  # recipe changes, sizes, sentences


def folder(toy: bool) -> Path:
    return FOLDER.with_name(FOLDER.name + "-toy") if toy else FOLDER


def reverse_model(epochs: int, toy: bool = False) -> dict:
    """Step 1: the reverse model, trained once into `folder(toy)/reverse`; its record (BLEU, minutes)."""
    import transformer_lib as tl

    out, record_file = folder(toy) / "reverse", folder(toy) / "reverse.json"
    if record_file.is_file():
        return json.loads(record_file.read_text())
    recipe = tl.Recipe(corpus="tatoeba+smartool/eng-rus", epochs=epochs)
    if toy:
        recipe = recipe.replace(**TOY[0])
    start = time.perf_counter()
    summary = tl.train_translator(out, recipe, verbose=0 if toy else 2)
    pairs = tl.load_parallel_corpus(recipe.corpus, "validation")
    score = tl.evaluate_bleu(tl.load_translator(out), pairs, beam_size=4, verbose=False)
    record = {"corpus": recipe.corpus, "epochs": recipe.epochs, "recipe": recipe.to_dict(),
              "val_beam_bleu": round(score["bleu"], 2), "val_beam_chrf": round(score["chrf"], 2),
              "weights": summary["weights"]["chosen"], "train_minutes": round(summary["train_seconds"] / 60, 1),
              "minutes": round((time.perf_counter() - start) / 60, 1), "bleu_signature": score["bleu_signature"]}
    record_file.write_text(json.dumps(record, indent=1, ensure_ascii=False) + "\n")
    return record


def synthetic_pairs(method: str, toy: bool = False) -> dict:
    """Step 2: every monolingual English sentence back-translated by `method`, once, into
    `folder(toy)/<method>.tsv`; its record (pairs, minutes)."""
    import transformer_lib as tl
    from transformer_lib.data.back_translations import write_back_translations
    from transformer_lib.data.corpora import monolingual_english, load_parallel_corpus

    path, record_file = folder(toy) / f"{method}.tsv", folder(toy) / f"{method}.json"
    if record_file.is_file():
        return json.loads(record_file.read_text())
    # the toy's "reverse" model reads Russian number words: its monolingual side is some of them
    english = [ru for ru, _ in load_parallel_corpus("synthetic/small", "train")][: TOY[2]] if toy else monolingual_english()
    start = time.perf_counter()
    pairs = tl.back_translate(tl.load_translator(folder(toy) / "reverse"), english, method=method, progress=not toy)
    record = {"method": method, "english": len(english), "pairs": len(pairs), "file": path.name,
              "sha256": write_back_translations(path, pairs), "minutes": round((time.perf_counter() - start) / 60, 1)}
    record_file.write_text(json.dumps(record, indent=1, ensure_ascii=False) + "\n")
    return record


def row_file(name: str, toy: bool = False) -> Path | None:
    """The pairs file row `name` trains on (its method's pairs, tagged or halved as the row says), or None."""
    from transformer_lib.data.back_translations import read_back_translations, write_back_translations
    from transformer_lib.decoding.back_translation import TAG

    if RUNS[name][1] is None:
        return None
    method, tagged, share = RUNS[name][1]
    path = folder(toy) / f"row-{name.replace(' ', '-')}.tsv"
    pairs = read_back_translations(folder(toy) / f"{method}.tsv")
    if share < 1:
        pairs = sorted(random.Random(0).sample(pairs, round(share * len(pairs))), key=pairs.index)
    write_back_translations(path, [(f"{TAG} {ru}" if tagged else ru, en) for ru, en in pairs])
    return path


def run_one(name: str, epochs: int, threads: int, toy: bool = False) -> dict:
    """Train and score one row (a worker process); the steps have run already."""
    import transformer_lib as tl

    path = row_file(name, toy)
    if path is not None:
        os.environ["TRANSFORMER_BOOK_BACK_TRANSLATIONS"] = str(path)
    recipe = tl.Recipe(corpus="tatoeba+smartool/rus-eng" if path is None else "tatoeba+smartool+bt/rus-eng")
    epochs = round(epochs * EPOCH_FACTOR.get(name, 1))
    row = train_and_score(name, RUNS[name][0], recipe, {}, epochs, threads)  # its record counts the pairs, updates
    if path is not None:  # which synthetic pairs: the step's file, by its checksum (the step's record has it too)
        row["synthetic_sha256"] = hashlib.sha256((folder(toy) / f"{RUNS[name][1][0]}.tsv").read_bytes()).hexdigest()
    return row


def run_all(names: list[str], epochs: int, workers: int, out: Path, toy: bool = False) -> dict:
    """The steps (once), then the rows `workers` at a time; the record is written after each."""
    start = time.perf_counter()
    folder(toy).mkdir(parents=True, exist_ok=True)
    steps = {"reverse": reverse_model(REVERSE_EPOCHS, toy)}
    write(out, epochs, start, steps, {}, {})
    for method in sorted({RUNS[name][1][0] for name in names if RUNS[name][1]}):
        steps[method] = synthetic_pairs(method, toy)
        write(out, epochs, start, steps, {}, {})
    if toy:  # the toy stops at the steps: its rows would train on the real corpus
        return write(out, epochs, start, steps, {}, {})
    rows, failed = run_rows("benchmarks.back_translation_study", names, epochs, workers, toy,
                            lambda rows, failed: write(out, epochs, start, steps, rows, failed),
                            lambda row: f"val beam BLEU {row['val_beam_bleu']:5.2f}  ({row['minutes']:.1f} min)")
    return write(out, epochs, start, steps, rows, failed)


def write(out: Path, epochs: int, start: float, steps: dict, rows: dict, failed: dict) -> dict:
    """The record so far; rows of an earlier call with the same epochs are kept unless run again."""
    from transformer_lib.utils.machine_description import describe_machine

    earlier = json.loads(out.read_text()) if out.is_file() else {}
    kept = {row["name"]: row for row in earlier.get("rows", []) if earlier.get("epochs") == epochs}
    # a row run again replaces its earlier run, which stays in the record (with the date it was replaced)
    replaced = [{**row, "replaced": datetime.date.today().isoformat()} for name, row in kept.items()
                if name in rows and rows[name] != row]
    rows = {**kept, **rows}
    record = {"what": __doc__.split("\n\n")[0], "command": f"python -m benchmarks.back_translation_study --epochs "
              f"{epochs} --out benchmarks/{out.name}", "epochs": epochs, "date": datetime.date.today().isoformat(),
              "machine": describe_machine(), "cpu": processor(), "steps": {**earlier.get("steps", {}), **steps},
              "minutes_this_call": round((time.perf_counter() - start) / 60, 1),
              "rows": [rows[n] for n in RUNS if n in rows], "replaced_rows": earlier.get("replaced_rows", []) + replaced,
              "failed": failed,
              "not_run": [n for n in RUNS if n not in rows and n not in failed]}
    return save_record(out, record)


def main(argv=None) -> dict | None:
    return study_main(argv, __doc__, RUNS, DEFAULT_OUT, run_one, run_all)


if __name__ == "__main__":
    main()
