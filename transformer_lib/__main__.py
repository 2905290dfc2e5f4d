"""Command line: train a translator, translate with it, evaluate it.

    python -m transformer_lib train --corpus tatoeba/rus-eng --preset small --out runs/small
    python -m transformer_lib translate --model runs/small "Я люблю читать книги."
    python -m transformer_lib evaluate --model runs/small --corpus tatoeba/rus-eng --split test
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="python -m transformer_lib",
        description="Train, run and evaluate the Transformer translator of 'Attention, step by step'.",
    )
    commands = parser.add_subparsers(dest="command", required=True)

    train = commands.add_parser("train", help="train tokenizers and a model on a corpus; save a translator")
    train.add_argument("--corpus", default="tatoeba/rus-eng", help="a corpus name (default: %(default)s)")
    train.add_argument("--preset", default="small", choices=["tiny", "small", "base", "big"],
                       help="model size: tiny (CI), small (CPU, tens of minutes), base (paper, GPU)")
    train.add_argument("--out", required=True, type=Path, help="directory for the translator and checkpoints")
    train.add_argument("--epochs", type=int, default=30, help="training epochs (default: %(default)s)")
    train.add_argument("--vocab-size", type=int, default=8000, help="subword vocabulary per language")
    train.add_argument("--joint-vocab", action="store_true",
                       help="one tokenizer for both languages, with shared embeddings (paper §3.4)")
    train.add_argument("--batch-tokens", type=int, default=1024, help="about this many tokens per batch")
    train.add_argument("--max-length", type=int, default=64, help="longest sentence in tokens")
    train.add_argument("--warmup-steps", type=int, default=4000, help="learning-rate warm-up (default: the paper's %(default)s)")
    train.add_argument("--norm-first", action="store_true", help="pre-LN instead of the paper's post-LN")
    train.add_argument("--mixed-precision", action="store_true", help="mixed_float16 (on a GPU)")
    train.add_argument("--xla", action="store_true", help="compile the training step with XLA")
    train.add_argument("--seed", type=int, default=0)

    translate = commands.add_parser("translate", help="translate sentences with a saved translator")
    translate.add_argument("--model", required=True, type=Path, help="directory written by `train`")
    translate.add_argument("--beam-size", type=int, default=4)
    translate.add_argument("--alpha", type=float, default=0.6, help="length penalty")
    translate.add_argument("sentences", nargs="*", help="sentences to translate (default: one per line on stdin)")

    evaluate = commands.add_parser("evaluate", help="BLEU and chrF (sacreBLEU) of a saved translator")
    evaluate.add_argument("--model", required=True, type=Path, help="directory written by `train`")
    evaluate.add_argument("--corpus", default="tatoeba/rus-eng")
    evaluate.add_argument("--split", default="test", choices=["train", "validation", "test"])
    evaluate.add_argument("--beam-size", type=int, default=4)
    evaluate.add_argument("--alpha", type=float, default=0.6, help="length penalty")
    evaluate.add_argument("--limit", type=int, default=None, help="score only the first N pairs")
    return parser


def run_train(args) -> dict:
    import keras

    from transformer_lib.export import train_translator

    if args.mixed_precision:
        keras.mixed_precision.set_global_policy("mixed_float16")
    return train_translator(
        args.out, corpus=args.corpus, preset=args.preset, epochs=args.epochs, vocab_size=args.vocab_size,
        joint_vocab=args.joint_vocab, batch_tokens=args.batch_tokens, max_length=args.max_length,
        warmup_steps=args.warmup_steps, norm_first=args.norm_first, xla=args.xla, seed=args.seed,
    )


def run_translate(args) -> list[str]:
    from transformer_lib.export import load_translator

    sentences = args.sentences or [line.rstrip("\n") for line in sys.stdin]
    translator = load_translator(args.model)
    translations = translator(sentences, beam_size=args.beam_size, alpha=args.alpha)
    for translation in translations:
        print(translation)
    return translations


def run_evaluate(args) -> dict:
    import transformer_lib as tl
    from transformer_lib.evaluation import evaluate_bleu
    from transformer_lib.export import load_translator

    pairs = tl.load_parallel_corpus(args.corpus, args.split)[: args.limit]
    print(f"{args.corpus} {args.split}: {len(pairs):,} pairs")
    return evaluate_bleu(load_translator(args.model), pairs, beam_size=args.beam_size, alpha=args.alpha)


def main(argv: list[str] | None = None):
    args = build_parser().parse_args(argv)
    return {"train": run_train, "translate": run_translate, "evaluate": run_evaluate}[args.command](args)


if __name__ == "__main__":
    main()
