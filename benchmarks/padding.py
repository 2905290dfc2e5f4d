"""How much of a batch is padding: plain `padded_batch` on shuffled data (the TensorFlow tutorial's
way) against length bucketing (`make_batches`, the library's way), on Tatoeba rus-eng.

    python -m benchmarks.padding [--corpus tatoeba/rus-eng] [--batch-size 64] [--batch-tokens 4096]

Padding is wasted work: every pad position is computed and then masked away.
"""

from __future__ import annotations

import argparse

from transformer_lib.data.corpora import load_parallel_corpus
from transformer_lib.data.batching import make_batches, padding_fraction, train_tokenizers


def measure(corpus: str = "tatoeba/rus-eng", batch_size: int = 64, batch_tokens: int = 4096,
            vocab_size: int = 8000, max_length: int = 64, pairs=None, tokenizers=None) -> dict:
    """Padding fractions of the training split batched both ways, with tokenizers trained on it.
    `pairs` and `tokenizers`, when given, are that split and those tokenizers, already made."""
    pairs = pairs if pairs is not None else load_parallel_corpus(corpus, "train")
    tokenizers = tokenizers or train_tokenizers(pairs, vocab_size=vocab_size)
    common = dict(max_length=max_length, verbose=False)
    return {
        "corpus": corpus,
        "pairs": len(pairs),
        "padded_batch": padding_fraction(make_batches(pairs, tokenizers, batch_size=batch_size, bucketing=False, **common)),
        "bucketing": padding_fraction(make_batches(pairs, tokenizers, batch_tokens=batch_tokens, **common)),
        "settings": f"padded_batch: batch_size={batch_size}; bucketing: batch_tokens={batch_tokens}; "
        f"vocab_size={vocab_size}, max_length={max_length}",
    }


def main(argv: list[str] | None = None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--corpus", default="tatoeba/rus-eng")
    parser.add_argument("--batch-size", type=int, default=64)
    parser.add_argument("--batch-tokens", type=int, default=4096)
    parser.add_argument("--vocab-size", type=int, default=8000)
    args = parser.parse_args(argv)
    result = measure(args.corpus, args.batch_size, args.batch_tokens, args.vocab_size)
    print(f"Padding fraction on {result['corpus']} train ({result['pairs']:,} pairs; {result['settings']})")
    print(f"  padded_batch on shuffled data  {result['padded_batch']:6.1%}")
    print(f"  bucketing by length            {result['bucketing']:6.1%}")
    return result


if __name__ == "__main__":
    main()
