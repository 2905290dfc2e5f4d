"""What the translator is given: text, and text that could be in its source language.

`as_text_list` turns one string or an iterable of strings into a list and refuses anything else
with an error that names it; `warn_unusual_text` warns (and lets the translation go on) about
sentences with no letter of the script the source tokenizer learned, or with control characters.
"""

from __future__ import annotations

import unicodedata
import warnings
from collections import Counter
from collections.abc import Iterable, Mapping

from transformer_lib.data.tokenizer import SubwordTokenizer


def as_text_list(texts) -> list[str]:
    """A list of str from a list, tuple or other iterable of str; a clear TypeError for anything else."""
    if isinstance(texts, (bytes, bytearray)):
        raise TypeError("Translator expects str or a list of str, got bytes: decode it first, e.g. text.decode('utf-8').")
    if isinstance(texts, Mapping) or not isinstance(texts, Iterable):
        raise TypeError(f"Translator expects str or a list of str, got {type(texts).__name__}: {texts!r}")
    texts = list(texts)
    for text in texts:
        if not isinstance(text, str):
            raise TypeError(f"Translator expects str or a list of str, got {type(text).__name__}: {text!r}")
    return texts


def script_of(character: str) -> str | None:
    """The script of a letter from its Unicode name ("CYRILLIC", "LATIN", ...); None for a non-letter."""
    if not unicodedata.category(character).startswith("L"):
        return None
    return unicodedata.name(character, "UNKNOWN").split()[0]


def main_script(tokenizer: SubwordTokenizer) -> str | None:
    """The script most letters of the tokenizer's learned pieces are written in (None if none has a
    letter); byte pieces (`<0x41>`) and the reserved ones (`<pad>`, ...) do not count."""
    processor = tokenizer.processor
    learned = (processor.id_to_piece(i) for i in range(tokenizer.vocab_size)
               if not (processor.is_byte(i) or processor.is_control(i) or processor.is_unknown(i)))
    counts = Counter(script_of(c) for piece in learned for c in piece)
    counts.pop(None, None)
    return counts.most_common(1)[0][0] if counts else None


def warn_unusual_text(texts: list[str], script: str | None, numbers: list[int]) -> None:
    """Warn about sentences that cannot be in the source language: no letter of its `script`, or
    control characters. They are still translated; one warning per kind names how many and the first."""
    controls = [(n, t) for n, t in zip(numbers, texts) if any(unicodedata.category(c) == "Cc" and c not in "\t\n\r" for c in t)]
    if controls:
        warnings.warn(f"{len(controls)} sentence(s) contain control characters (first: #{controls[0][0]}, "
                      f"{controls[0][1][:40]!r}); they are not text and may spoil the translation. Remove them.",
                      stacklevel=3)
    foreign = [(n, t) for n, t in zip(numbers, texts) if script is not None and not any(script_of(c) == script for c in t)]
    if foreign:
        warnings.warn(f"{len(foreign)} sentence(s) have no {script.title()} letter (first: #{foreign[0][0]}, "
                      f"{foreign[0][1][:40]!r}), but the translator was trained on {script.title()} text: they are "
                      "probably not in the source language, and their translations will be nonsense.", stacklevel=3)
