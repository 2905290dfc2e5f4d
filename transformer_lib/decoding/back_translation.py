"""Back-translation (Sennrich et al. 2016): training pairs made from sentences that have no translation.

A model that translates in the reverse direction (English -> Russian, trained on the same pairs swapped:
the corpus names ending in "/eng-rus") puts monolingual English sentences into Russian. Each (machine-made
Russian, real English) pair then trains the Russian -> English model: its targets are real English, so it
learns to write good English even from an imperfect source. Two refinements matter when the reverse model
is weak: sampling its output instead of taking the most likely one, which gives more varied sources
(Edunov et al. 2018), and a tag at the start of every synthetic source, which tells the model which pairs
are machine-made (Caswell et al. 2019).
"""

from __future__ import annotations

import warnings

import keras

from transformer_lib.decoding.text_checks import as_text_list
from transformer_lib.utils.checks import require_positive_int

METHODS = ("greedy", "beam", "sampled")
TAG = "<bt>"  # Caswell et al.'s tag: a text the real sources never hold


def back_translate(reverse_translator, english, method: str = "beam", tag: str | None = None, beam_size: int = 4,
                   temperature: float = 1.0, seed: int = 0, batch_size: int = 64, progress: bool = True):
    """Synthetic `(russian, english)` pairs: each English sentence with its translation by `reverse_translator`
    (a `Translator` from English to Russian).

    Args:
        english: the monolingual sentences (a list of strings), each used once as a target.
        method: "greedy", "beam" (`beam_size`, the translator's alpha) or "sampled" (`temperature`; batch i
            draws with seed `seed + i`, so the same seed gives the same pairs).
        tag: a text put before every synthetic source (`TAG`, or None for none).
        batch_size: sentences translated at once; progress: a progress bar (Keras's `Progbar`).

    Returns:
        The pairs in the order of `english`, each synthetic source on one line (runs of whitespace, line breaks
        included, as one space). A sentence translated to nothing gives no pair, with a warning that counts them.
    """
    if method not in METHODS:
        raise ValueError(f"method={method!r}: choose one of {', '.join(METHODS)}.")
    require_positive_int("batch_size", batch_size)
    english = as_text_list(english)
    blank = [i for i, text in enumerate(english) if not text.strip()]
    if blank:
        raise ValueError(f"{len(blank)} English sentence(s) are blank (first: #{blank[0]}): remove them first; "
                         "a blank target teaches nothing.")
    bar = keras.utils.Progbar(len(english), unit_name="sentence") if progress else None
    pairs, empty = [], 0
    for batch, start in enumerate(range(0, len(english), batch_size)):
        chunk = english[start:start + batch_size]
        if method == "sampled":
            russian = reverse_translator(chunk, temperature=temperature, seed=seed + batch)
        else:
            russian = reverse_translator(chunk, beam_size=1 if method == "greedy" else beam_size)
        for source, target in zip(russian, chunk):
            source = " ".join(source.split())  # a drawn piece may be a line break or a tab: one line, one pair
            if source:
                pairs.append((f"{tag} {source}" if tag else source, target))
            else:
                empty += 1
        if bar is not None:
            bar.add(len(chunk))
    if empty:
        warnings.warn(f"{empty} of {len(english)} sentences were translated to nothing and give no pair.", stacklevel=2)
    return pairs
