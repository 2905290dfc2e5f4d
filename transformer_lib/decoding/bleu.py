"""Scoring translations with sacreBLEU (Post 2018): corpus BLEU and chrF, with their signatures.

BLEU is never hand-written here: tokenization and smoothing details change the number by whole
points, and sacreBLEU's signature says exactly which variant was computed. Sentences that occur
several times with different translations (Tatoeba has many) are scored once against all their
references. `paired_bootstrap` says how sure a difference between two systems is (Koehn 2004).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import sacrebleu


def group_references(pairs: Sequence[tuple[str, str]]) -> tuple[list[str], list[list[str | None]]]:
    """Unique sources in first-seen order, and sacreBLEU reference streams (None where a source
    has fewer references than the most referenced one)."""
    references: dict[str, list[str]] = {}
    for source, target in pairs:
        references.setdefault(source, []).append(target)
    sources = list(references)
    depth = max((len(refs) for refs in references.values()), default=0)
    streams = [[references[s][i] if i < len(references[s]) else None for s in sources] for i in range(depth)]
    return sources, streams


def _require_pairs(pairs) -> None:
    """A clear error unless `pairs` is a non-empty sequence of (source, target) pairs of strings:
    anything else would be unpacked wrongly (a two-letter string scores one letter against the other)."""
    expected = "pairs must be a list of (source, target) pairs of strings, e.g. [('сто', 'one hundred')]"
    if isinstance(pairs, (str, bytes)) or not isinstance(pairs, Sequence):
        raise TypeError(f"{expected}; got {type(pairs).__name__}.")
    if not pairs:
        raise ValueError("evaluate_bleu needs at least one (source, target) pair; got an empty sequence.")
    for index, item in enumerate(pairs):
        if not (isinstance(item, (tuple, list)) and len(item) == 2 and all(isinstance(text, str) for text in item)):
            hint = (": pair each source with its reference, e.g. list(zip(sources, references))"
                    if isinstance(item, str) else "")
            raise TypeError(f"{expected}; item #{index} is {type(item).__name__} {item!r:.80}{hint}.")


EVALUATION_BATCH = 64  # sentences translated at once


def evaluate_bleu(translator, pairs: Sequence[tuple[str, str]], beam_size: int = 4, alpha: float = 0.6,
                  batch_size: int = EVALUATION_BATCH, verbose: bool = True) -> dict:
    """Translate the sources of `pairs` and score them against the targets.

    Returns:
        A dict with `bleu`, `chrf` (floats), `bleu_signature`, `chrf_signature`, `sentences`,
        `references` (counts), and the `sources`, `translations` and reference `streams`.
    """
    _require_pairs(pairs)
    sources, streams = group_references(pairs)
    translations = []
    for start in range(0, len(sources), batch_size):
        translations += translator(sources[start : start + batch_size], beam_size=beam_size, alpha=alpha)
    bleu, chrf = sacrebleu.metrics.BLEU(), sacrebleu.metrics.CHRF()
    result = {
        "bleu": bleu.corpus_score(translations, streams).score,
        "chrf": chrf.corpus_score(translations, streams).score,
        "bleu_signature": str(bleu.get_signature()),
        "chrf_signature": str(chrf.get_signature()),
        "sentences": len(sources),
        "references": len(pairs),
        "sources": sources,
        "translations": translations,
        "streams": streams,
    }
    if verbose:
        print(f"BLEU {result['bleu']:.2f}  ({result['bleu_signature']})")
        print(f"chrF {result['chrf']:.2f}  ({result['chrf_signature']})")
        print(f"on {len(sources):,} sentences with {len(pairs):,} references, beam size {beam_size}, alpha {alpha}")
    return result


def paired_bootstrap(translations_a: Sequence[str], translations_b: Sequence[str], streams, samples: int = 1000,
                     seed: int = 12345) -> dict:
    """How sure is "a scores higher than b"? Paired bootstrap resampling (Koehn 2004), as sacreBLEU's
    `--paired-bs` draws it: `samples` test sets of the same size, drawn with replacement from the
    sentences, the same draws for both systems; each draw scored with sacreBLEU's BLEU.

    Args:
        translations_a, translations_b: two systems' translations of the same sources, in order.
        streams: the reference streams of those sources (`evaluate_bleu`'s "streams").

    Returns:
        A dict with `bleu_a`, `bleu_b` and `difference` (a - b) on the whole set; `mean`, `low` and
        `high`, the mean and the 95% interval of the difference over the draws (the 2.5% of draws
        below it and the 2.5% above left out, as sacreBLEU bounds its intervals); and
        `within_noise`, True when that interval holds 0 (the difference may be the sentences drawn).
    """
    if len(translations_a) != len(translations_b) or any(len(stream) != len(translations_a) for stream in streams):
        raise ValueError(f"paired_bootstrap compares translations of the same sources: got {len(translations_a)} and "
                         f"{len(translations_b)} translations and reference streams of "
                         f"{sorted({len(stream) for stream in streams})} sentences; pass the same sentences in order.")
    if samples < 100:
        raise ValueError(f"samples={samples} is too few for a 95% interval; use at least 100 (sacreBLEU uses 1000).")
    bleu = sacrebleu.metrics.BLEU()  # corpus BLEU's settings, as evaluate_bleu scores
    a, b = (_sentence_statistics(translations, streams) for translations in (translations_a, translations_b))
    draws = np.random.default_rng(seed).choice(len(a), size=(samples, len(a)), replace=True)  # sacreBLEU's draws

    def score(stats) -> float:  # corpus BLEU of the summed counts of the sentences drawn
        n = bleu.max_ngram_order
        return bleu.compute_bleu(correct=stats[2: 2 + n].tolist(), total=stats[2 + n:].tolist(), sys_len=int(stats[0]),
                                 ref_len=int(stats[1]), smooth_method=bleu.smooth_method, smooth_value=bleu.smooth_value,
                                 effective_order=bleu.effective_order, max_ngram_order=n).score

    differences = np.sort([score(a[draw].sum(0)) - score(b[draw].sum(0)) for draw in draws])
    low, high = differences[samples // 40], differences[samples - samples // 40 - 1]  # sacreBLEU's 95% bounds
    bleu_a, bleu_b = score(a.sum(0)), score(b.sum(0))
    return {"bleu_a": bleu_a, "bleu_b": bleu_b, "difference": bleu_a - bleu_b,
            "mean": float(differences.mean()), "low": float(low), "high": float(high),
            "within_noise": bool(low <= 0 <= high), "samples": samples, "seed": seed}


def _sentence_statistics(translations: Sequence[str], streams) -> np.ndarray:
    """BLEU's counts for each sentence, `[sentences, 2 + 2 * 4]`: its length, its reference length, then the
    matched and the total n-grams of each order; summed over any sentences, they give those sentences' corpus BLEU.
    (effective_order only quiets sacreBLEU's advice for sentence scores: the counts do not depend on it.)"""
    counter = sacrebleu.metrics.BLEU(effective_order=True)
    rows = []
    for i, translation in enumerate(translations):
        found = counter.sentence_score(translation, [stream[i] for stream in streams if stream[i] is not None])
        rows.append([found.sys_len, found.ref_len, *found.counts, *found.totals])
    return np.array(rows, dtype=np.int64)
