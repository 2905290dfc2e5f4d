"""Record what the encoder's heads of a trained translator attend to, for chapter 5.

    python tools/record_trained_heads.py --model chapters/runs/small-tatoeba-rus-eng \
        [--sentence "Я не знаю, кто будет на собрании."] [--out chapters/results/trained_heads.json]

Loads the translator that `train_translator` saved in `--model` (chapter 7's recipe), runs its encoder
on `--sentence`, and writes every layer's self-attention weights, with those of the same model with
fresh random weights, to `--out` (`transformer_lib.book.trained_heads`). The record's "run" says which
run it came from: the run folder's name, its recipe, epochs and validation BLEU (from the run's
`training.json`), the machine that recorded it and the date. Chapter 5 reads the committed record.
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
DEFAULT_SENTENCE = "Я не знаю, кто будет на собрании."  # Tatoeba rus-eng, validation split


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", required=True, help="a translator directory (tl.load_translator)")
    parser.add_argument("--sentence", default=DEFAULT_SENTENCE, help="the source sentence (default: %(default)s)")
    parser.add_argument("--out", default=str(ROOT / "chapters/results/trained_heads.json"),
                        help="the record to write (default: chapters/results/trained_heads.json)")
    parser.add_argument("--seed", type=int, default=0, help="seed of the untrained model's weights")
    args = parser.parse_args(argv)
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
    sys.path.insert(0, str(ROOT))

    import transformer_lib as tl
    from transformer_lib.book.trained_heads import (
        load_heads,
        print_head_summary,
        record_heads,
        run_description,
        save_heads,
    )

    translator = tl.load_translator(args.model)
    record = record_heads(translator, args.sentence, run=run_description(args.model), seed=args.seed)
    path = save_heads(record, args.out)
    print(f"Wrote {path}: {record['shape']} weights of {args.sentence!r} ({' '.join(record['pieces'])}).")
    record = load_heads(path)
    for layer in range(record["shape"][0]):
        print_head_summary(record, layer)
    return 0


if __name__ == "__main__":
    sys.exit(main())
