"""Command line: train a translator, translate with it, evaluate it, export it for a web page, back-translate.

    python -m transformer_lib train --corpus tatoeba/rus-eng --preset small --out runs/small
    python -m transformer_lib translate --model runs/small "Я люблю читать книги."
    python -m transformer_lib evaluate --model runs/small --corpus tatoeba/rus-eng --split test
    python -m transformer_lib export-web --model runs/small --out book_static/translator
    python -m transformer_lib back-translate --model runs/eng-rus --method sampled --tag --out bt.tsv
"""

from __future__ import annotations

import argparse
import json
import dataclasses
import os
import sys
import warnings
from pathlib import Path

from transformer_lib.config import PRESETS
from transformer_lib.data.tokenizer import MAX_VOCAB
from transformer_lib.training.recipe import Recipe
from transformer_lib.utils.arguments import (
    growth,
    learning_rate,
    non_negative_float,
    output_directory,
    positive_int,
    rate,
    sequence_length,
    share,
    within,
)

RECIPE = Recipe()  # the defaults the options' help names


def vocab_size(text: str) -> int:
    """argparse type: a vocabulary size sentencepiece can be asked for."""
    value = positive_int(text)
    return within(value, value <= MAX_VOCAB, f"a size <= {MAX_VOCAB:,} (sentencepiece's largest)", text)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="python -m transformer_lib",
        description="Train, run and evaluate the Transformer translator of 'Attention, step by step'.",
    )
    commands = parser.add_subparsers(dest="command", required=True)
    add_train_parser(commands)
    add_translate_and_evaluate_parsers(commands)
    add_export_web_parser(commands)
    add_back_translate_parser(commands)
    return parser


def add_train_parser(commands) -> None:
    """`train`: every setting of `Recipe`, each defaulting to the recipe's."""
    train = commands.add_parser("train", help="train tokenizers and a model on a corpus; save a translator")
    train.add_argument("--corpus", default=None, help="a corpus name (default: %s)" % RECIPE.corpus)
    train.add_argument("--preset", default=None, choices=list(PRESETS),
                       help="model size: tiny (CI), small or wide (CPU, tens of minutes; default: %s), base (paper, GPU)" % RECIPE.preset)
    train.add_argument("--out", required=True, type=output_directory, help="directory for the translator and checkpoints")
    train.add_argument("--epochs", type=positive_int, default=None, help="training epochs (default: %d)" % RECIPE.epochs)
    train.add_argument("--vocab-size", type=vocab_size, default=None,
                       help="subword vocabulary (default: %d)" % RECIPE.vocab_size)
    train.add_argument("--joint-vocab", action="store_true", default=None,
                       help="one tokenizer for both languages, with shared embeddings (paper §3.4)")
    train.add_argument("--batch-tokens", type=positive_int, default=None,
                       help="about this many tokens per batch (default: the recipe's, %d)" % RECIPE.batch_tokens)
    train.add_argument("--batch-size", type=positive_int, default=None,
                       help="this many sentences per batch, instead of --batch-tokens")
    train.add_argument("--bucket-growth", type=growth, default=None,
                       help="each length bucket this many times wider than the last (default: %g)" % RECIPE.bucket_growth)
    train.add_argument("--shuffle-batches", action=argparse.BooleanOptionalAction, default=None,
                       help="shuffle each epoch's batches after bucketing (default: %s)" % RECIPE.shuffle_batches)
    train.add_argument("--sampling-alpha", type=rate, default=None,
                       help="subword sampling: skip each BPE merge with this probability when segmenting a training "
                            "sentence (BPE-dropout), e.g. 0.1; 0 turns it off (default: %s)" % RECIPE.sampling_alpha)
    train.add_argument("--max-length", type=sequence_length, default=None, help="longest sentence in tokens")
    train.add_argument("--warmup-steps", type=positive_int, default=None,
                       help="learning-rate warm-up in steps (default: %s)" % RECIPE.warmup_steps)
    train.add_argument("--warmup-ratio", type=share, default=None,
                       help="warm-up as a share of the run's steps, instead of --warmup-steps")
    train.add_argument("--peak-rate", type=learning_rate, default=None,
                       help="the schedule's highest learning rate (default: the paper's, (d_model * warm-up)^-0.5)")
    train.add_argument("--dropout-rate", type=rate, default=None,
                       help="P_drop, the dropout on each sub-layer's output and on the embeddings "
                            "(default: %s)" % RECIPE.dropout_rate)
    train.add_argument("--attention-dropout", type=rate, default=None,
                       help="dropout on the attention weights (default: %g)" % RECIPE.attention_dropout)
    train.add_argument("--activation-dropout", type=rate, default=None,
                       help="dropout on the feed-forward's inner activations (default: %g)" % RECIPE.activation_dropout)
    train.add_argument("--label-smoothing", type=rate, default=None,
                       help="label smoothing (default: %g)" % RECIPE.label_smoothing)
    train.add_argument("--average-last", type=positive_int, default=None,
                       help="also try the average of the last N epochs' weights (§6.1) (default: %d)" % RECIPE.average_last)
    train.add_argument("--norm-first", action=argparse.BooleanOptionalAction, default=None,
                       help="pre-LN (--no-norm-first: the paper's post-LN) (default: %s)" % RECIPE.norm_first)
    train.add_argument("--tie-output", action=argparse.BooleanOptionalAction, default=None,
                       help="the target embedding is also the output layer (default: %s)" % RECIPE.tie_output)
    train.add_argument("--mixed-precision", action="store_true", help="mixed_float16 (on a GPU)")
    train.add_argument("--xla", action="store_true", help="compile the training step with XLA")
    train.add_argument("--seed", type=int, default=None)
    train.add_argument("--restart", action="store_true",
                       help="delete the run already in --out (checkpoints, record) and start afresh")


def add_translate_and_evaluate_parsers(commands) -> None:
    """`translate` (sentences, or stdin) and `evaluate` (BLEU and chrF on a corpus split)."""
    translate = commands.add_parser("translate", help="translate sentences with a saved translator")
    translate.add_argument("--model", required=True, type=Path, help="directory written by `train`")
    translate.add_argument("--beam-size", type=positive_int, default=4)
    translate.add_argument("--alpha", type=non_negative_float, default=0.6, help="length penalty")
    translate.add_argument("sentences", nargs="*", help="sentences to translate (default: one per line on stdin)")

    evaluate = commands.add_parser("evaluate", help="BLEU and chrF (sacreBLEU) of a saved translator")
    evaluate.add_argument("--model", required=True, type=Path, help="directory written by `train`")
    evaluate.add_argument("--corpus", default="tatoeba/rus-eng")
    evaluate.add_argument("--split", default="test", choices=["train", "validation", "test"])
    evaluate.add_argument("--beam-size", type=positive_int, default=4)
    evaluate.add_argument("--alpha", type=non_negative_float, default=0.6, help="length penalty")
    evaluate.add_argument("--limit", type=positive_int, default=None, help="score only the first N pairs")


def add_export_web_parser(commands) -> None:
    """`export-web`: the translator for chapter 8's page."""
    export_web = commands.add_parser("export-web", help="the translator for a web page: two ONNX graphs, the "
                                     "tokenizers and a manifest (needs the web extra)")
    export_web.add_argument("--model", required=True, type=Path, help="directory written by `train`")
    export_web.add_argument("--out", required=True, type=output_directory, help="directory for the page's files")
    export_web.add_argument("--float32", action="store_true", help="keep the weights in float32 (default: int8 "
                            "with one scale per column, a quarter of the size)")
    export_web.add_argument("--references", type=Path, default=None, help="a UTF-8 file of sentences, one per line, "
                            "whose translations the page must reproduce (default: eight everyday sentences)")
    export_web.add_argument("--alpha", type=non_negative_float, default=None, help="the length penalty of the page's "
                            "beam search (default: the translator's own, saved with it; 0.6 unless chosen)")
    export_web.add_argument("--about", default=None, help='JSON the page shows about the model, e.g. \'{"test_bleu": 35.2}\'')
    export_web.add_argument("--tie", type=non_negative_float, default=None, help="where the int8 graphs choose "
                            "otherwise than the model, how much better (nats) the model may find its own token where the two "
                            "translations first part "
                            "(default: 0.1, a near tie; 0: any difference fails)")


def add_back_translate_parser(commands) -> None:
    """`back-translate`: monolingual English -> a file of synthetic (Russian, English) pairs."""
    command = commands.add_parser("back-translate", help="put English sentences into Russian with a reverse "
                                  "(English -> Russian) translator: training pairs for 'tatoeba+smartool+bt/rus-eng'")
    command.add_argument("--model", required=True, type=Path, help="an English -> Russian translator (`train` "
                         "with --corpus tatoeba+smartool/eng-rus)")
    command.add_argument("--out", required=True, type=Path, help="the pairs' file (TRANSFORMER_BOOK_BACK_TRANSLATIONS)")
    command.add_argument("--method", default="beam", choices=["greedy", "beam", "sampled"])
    command.add_argument("--temperature", type=non_negative_float, default=1.0, help="for --method sampled")
    command.add_argument("--tag", action="store_true", help="put <bt> before every synthetic source (Caswell et al.)")
    command.add_argument("--seed", type=int, default=0)
    command.add_argument("--limit", type=positive_int, default=None, help="only the first N English sentences")
    command.add_argument("english", nargs="?", type=Path, default=None, help="a UTF-8 file of English sentences, one "
                         "per line (default: the English of the Tatoeba Portuguese-English set)")


def recipe_from(args):
    """The `Recipe` the command line asks for: the default recipe with the options given."""
    if args.warmup_steps is not None and args.warmup_ratio is not None:
        raise ValueError("give --warmup-steps or --warmup-ratio, not both (the warm-up is one or the other)")
    if args.batch_tokens is not None and args.batch_size is not None:
        raise ValueError("give --batch-tokens or --batch-size, not both (a batch is counted in one or the other)")
    given = {field.name: getattr(args, field.name, None) for field in dataclasses.fields(Recipe)}
    changes = {name: value for name, value in given.items() if value is not None}
    if changes.get("sampling_alpha") == 0:
        changes["sampling_alpha"] = None  # --sampling-alpha 0: the one fixed segmentation
    return RECIPE.replace(**changes)


def run_train(args) -> dict:
    import keras

    from transformer_lib.training.recipe import train_translator

    recipe = recipe_from(args)
    if args.mixed_precision:
        keras.mixed_precision.set_global_policy("mixed_float16")
    # a progress bar redrawn at every step suits a terminal; a log file gets one line per epoch
    return train_translator(args.out, recipe, xla=args.xla, restart=args.restart,
                            verbose=1 if sys.stdout.isatty() else 2)


def run_translate(args) -> list[str]:
    from transformer_lib.export.saved_model import load_translator

    translator = load_translator(args.model)  # first: a wrong --model fails before stdin is read
    # the shell hands arguments over as bytes; Python keeps undecodable ones as surrogates, which
    # os.fsencode turns back into the bytes given, so both ways in are decoded alike
    sentences = (read_lines([os.fsencode(text) for text in args.sentences], "argument") if args.sentences
                 else read_lines(sys.stdin.buffer))
    translations = translator(sentences, beam_size=args.beam_size, alpha=args.alpha)
    for translation in translations:
        print(translation)
    return translations


def read_lines(stream, name: str = "stdin line") -> list[str]:
    """One sentence per line of a byte stream (or per item of a list of bytes: `name` says which),
    decoded as UTF-8. A line that is not valid UTF-8 is kept, its bad bytes replaced by U+FFFD, with
    a warning that names it: the other lines (and the line numbers of the output) are not lost."""
    lines = []
    for number, raw in enumerate(stream, start=1):
        try:
            line = raw.decode("utf-8")
        except UnicodeDecodeError as error:
            line = raw.decode("utf-8", errors="replace")
            warnings.warn(f"{name} {number} is not valid UTF-8 ({error.reason} at byte {error.start}); "
                          "its undecodable bytes were replaced by U+FFFD. Save the input as UTF-8.", stacklevel=2)
        lines.append(line.rstrip("\r\n"))
    return lines


def run_evaluate(args) -> dict:
    from transformer_lib.data.corpora import load_parallel_corpus
    from transformer_lib.decoding.bleu import evaluate_bleu
    from transformer_lib.export.saved_model import load_translator

    pairs = load_parallel_corpus(args.corpus, args.split)[: args.limit]
    print(f"{args.corpus} {args.split}: {len(pairs):,} pairs")
    return evaluate_bleu(load_translator(args.model), pairs, beam_size=args.beam_size, alpha=args.alpha)


def run_export_web(args) -> dict:
    from transformer_lib.export.web import export_web

    try:
        about = json.loads(args.about) if args.about else None
    except json.JSONDecodeError as error:
        raise ValueError(f"--about is not JSON ({error}); give an object such as '{{\"run\": \"chapter 7\"}}'") from None
    options = {}
    if args.references is not None:
        options["references"] = [line for line in read_lines(args.references.open("rb"), f"{args.references} line")
                                 if line.strip()]
        if not options["references"]:
            raise ValueError(f"{args.references} holds no sentence; give one per line")
    if args.tie is not None:
        options["tie"] = args.tie
    manifest = export_web(args.model, args.out, quantize=not args.float32, about=about,
                          beam_alpha=args.alpha, **options)
    sizes = ", ".join(f"{name} {entry['bytes'] / 1e6:.1f} MB" for name, entry in manifest["files"].items())
    print(f"wrote {args.out}: {sizes}; {len(manifest['references'])} reference sentences checked against the model")
    for case in manifest["near_ties"]:
        print(f"  near tie ({case['search']}, {case['margin']:.3f} nats): {case['text']} -> the page "
              f"{case['page']!r}, the model {case['keras']!r}")
    return manifest


def run_back_translate(args) -> list[tuple[str, str]]:
    from transformer_lib.data.back_translations import write_back_translations
    from transformer_lib.data.corpora import monolingual_english
    from transformer_lib.decoding.back_translation import TAG, back_translate
    from transformer_lib.export.saved_model import load_translator

    translator = load_translator(args.model)
    english = ([line for line in read_lines(args.english.open("rb"), f"{args.english} line") if line.strip()]
               if args.english else monolingual_english())[: args.limit]
    pairs = back_translate(translator, english, method=args.method, tag=TAG if args.tag else None,
                           temperature=args.temperature, seed=args.seed, progress=True)
    digest = write_back_translations(args.out, pairs)
    print(f"wrote {args.out}: {len(pairs):,} pairs (sha256 {digest})")
    return pairs


def main(argv: list[str] | None = None):
    parser = build_parser()
    args = parser.parse_args(argv)
    from transformer_lib.data.corpora import CorpusUnavailableError
    from transformer_lib.training.run_lock import RunInUseError

    try:
        return {"train": run_train, "translate": run_translate, "evaluate": run_evaluate,
                "export-web": run_export_web, "back-translate": run_back_translate}[args.command](args)
    except (ValueError, OSError, ImportError, CorpusUnavailableError, RunInUseError) as error:  # a user's fault: a message, no traceback
        parser.exit(2, f"{parser.prog} {args.command}: error: {error}\n")
    except KeyboardInterrupt:  # Ctrl-C: one line, and how to go on
        again = (f" Run the same command again to resume from the last finished epoch (checkpoints in "
                 f"{args.out / 'checkpoints'})." if args.command == "train" else "")
        parser.exit(130, f"\n{parser.prog} {args.command}: interrupted.{again}\n")


if __name__ == "__main__":
    main()
