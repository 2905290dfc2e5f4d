"""The back-translated pairs that the corpus "tatoeba+smartool+bt/rus-eng" adds to its training split.

They are stored as text, one pair a line: the machine-made Russian, a tab, the English sentence. The book's
file is `back_translations/eng-por.rus-eng.tsv` in this folder, derived from the English sentences of the
Tatoeba Portuguese-English test set (CC BY 2.0 FR); its README says how it was made (the command, the
reverse model's recipe and score, the date), its licence and credit, and its sha256, which is checked when
it is read. To train on other back-translations (a study's variants), point the environment variable
TRANSFORMER_BOOK_BACK_TRANSLATIONS at another such file.
"""

from __future__ import annotations

import hashlib
import os
from importlib import resources
from pathlib import Path

from transformer_lib.data.downloads import CorpusUnavailableError, verify_sha256

BACK_TRANSLATIONS_ENV = "TRANSFORMER_BOOK_BACK_TRANSLATIONS"
SHIPPED_NAME = "eng-por.rus-eng.tsv"
SHIPPED_SHA256 = "13102fdde65cb4b5343198890808330ecd55495365cc399ae78d77118805ccaa"  # the committed file's (its README)


def shipped_path() -> Path:
    return Path(str(resources.files(__package__).joinpath("back_translations", SHIPPED_NAME)))


def read_back_translations(path: str | Path | None = None) -> list[tuple[str, str]]:
    """The `(russian, english)` pairs of `path` (default: $TRANSFORMER_BOOK_BACK_TRANSLATIONS, else the book's file)."""
    chosen = Path(path or os.environ.get(BACK_TRANSLATIONS_ENV) or shipped_path())
    if not chosen.is_file():
        raise CorpusUnavailableError(
            f"No back-translations at {chosen}: make them with `python -m transformer_lib back-translate --out FILE` "
            f"and set {BACK_TRANSLATIONS_ENV}=FILE, or train on 'tatoeba+smartool/rus-eng', which needs none.")
    if chosen == shipped_path():
        verify_sha256(chosen, SHIPPED_SHA256)
    pairs = []
    for number, line in enumerate(chosen.read_text(encoding="utf-8").splitlines(), 1):
        fields = line.split("\t")
        if len(fields) != 2 or not all(field.strip() for field in fields):
            raise ValueError(f"{chosen}, line {number}: expected 'russian<TAB>english', got {line[:80]!r}.")
        pairs.append((fields[0], fields[1]))
    return pairs


def write_back_translations(path: str | Path, pairs: list[tuple[str, str]]) -> str:
    """Write `pairs` as `read_back_translations` reads them; returns the file's sha256."""
    bad = [i for i, pair in enumerate(pairs) if any(("\t" in text or "\n" in text or not text.strip()) for text in pair)]
    if bad:
        raise ValueError(f"{len(bad)} pair(s) hold a tab, a line break or an empty side (first: #{bad[0]}: "
                         f"{pairs[bad[0]]!r}); a line holds exactly one pair.")
    text = "".join(f"{russian}\t{english}\n" for russian, english in pairs)
    Path(path).write_text(text, encoding="utf-8")
    return hashlib.sha256(text.encode("utf-8")).hexdigest()
