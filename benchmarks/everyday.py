"""Everyday sentences, kept apart: how many does the page's translator get exactly right?

    python -m benchmarks.everyday [--page book_static/translator] [--label NAME] [--out FILE]

`everyday_sentences.tsv` holds short everyday Russian sentences written for this course (a shop, a station, a
doctor, the weather, the family), each with the English translations we accept: one line per sentence, the
Russian, a tab, the translations separated by " | ". None of the Russian sentences, and none of the accepted
translations, is in any split of the corpora the translator learns from or in the English that is
back-translated for it (tests/test_everyday.py checks). The accepted translations were widened once, after
the first scoring, with six correct ones we had missed (such as "It'll rain tomorrow."), before any other
translator was scored. The set is never used to choose a setting; it only
counts, once a translator is made, how many everyday sentences it gets exactly right. Exactly: the
translation equals one accepted translation, ignoring case, spacing, curly apostrophes and a final full stop.

The translator scored is the page's (the exported graphs of chapter 8, `OnnxTranslator`, with the page's
beam search: beam 4 and the manifest's alpha), as a reader meets it. The record (`everyday.json`) keeps one
row per translator, named by `--label` (default: the manifest's description of the run), with every
translation, so that two translators can be compared sentence by sentence.
"""

from __future__ import annotations

import argparse
import datetime
import json
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
SENTENCES = Path(__file__).resolve().parent / "everyday_sentences.tsv"
OUT = Path(__file__).resolve().parent / "everyday.json"
PAGE = ROOT / "book_static" / "translator"


def read_sentences(path: Path = SENTENCES) -> list[tuple[str, list[str]]]:
    """The `(russian, accepted translations)` of `path`, with a clear error for a malformed line."""
    sentences = []
    for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
        fields = line.split("\t")
        accepted = [text.strip() for text in fields[-1].split("|")] if len(fields) == 2 else []
        if len(fields) != 2 or not fields[0].strip() or not all(accepted):
            raise ValueError(f"{path}, line {number}: expected 'russian<TAB>english | english ...', got {line[:80]!r}.")
        sentences.append((fields[0].strip(), accepted))
    return sentences


def normalized(text: str) -> str:
    """`text` as exact matching compares it: lower case, one space, straight apostrophes, no final full stop."""
    text = re.sub(r"\s+", " ", text.replace("\u2019", "'").replace("\u2018", "'")).strip().lower()
    return text[:-1].rstrip() if text.endswith(".") else text


def is_exact(translation: str, accepted: list[str]) -> bool:
    return normalized(translation) in {normalized(text) for text in accepted}


def page_translations(texts: list[str], page: Path = PAGE, manifest: dict | None = None) -> list[str]:
    """The page's beam-4 translations of `texts` (its graphs, its alpha), as the page shows them."""
    from transformer_lib.export.onnx_translator import OnnxTranslator

    return OnnxTranslator(page, manifest)(list(texts), beam_size=4)


def score(page: Path = PAGE, label: str | None = None, out: Path = OUT) -> dict:
    """Translate the set with the page's translator; add its row to `out` (earlier rows are kept)."""
    from transformer_lib.utils.machine_description import describe_machine

    sentences = read_sentences()
    manifest = json.loads((page / "manifest.json").read_text())
    translations = page_translations([russian for russian, _ in sentences], page, manifest)
    row = {"about": manifest["about"], "written": manifest.get("written"), "search": f"beam 4, alpha {manifest['beam_alpha']}",
           "date": datetime.date.today().isoformat(), "machine": describe_machine(),
           "exact": sum(is_exact(t, accepted) for t, (_, accepted) in zip(translations, sentences)),
           "sentences": len(sentences),
           "translations": [{"russian": russian, "translation": t, "exact": is_exact(t, accepted)}
                            for t, (russian, accepted) in zip(translations, sentences)]}
    record = json.loads(out.read_text()) if out.is_file() else {}
    rows = {**record.get("translators", {}), (label or manifest["about"]["run"]): row}
    record = {"what": __doc__.split("\n\n")[0], "command": "python -m benchmarks.everyday", "translators": rows}
    out.write_text(json.dumps(record, indent=1, ensure_ascii=False) + "\n")
    return row


def main(argv=None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--page", type=Path, default=PAGE, help="the exported translator's folder")
    parser.add_argument("--label", help="the row's name (default: the manifest's description of the run)")
    parser.add_argument("--out", type=Path, default=OUT)
    args = parser.parse_args(argv)
    row = score(args.page, args.label, args.out)
    print(f"{row['exact']} of {row['sentences']} everyday sentences exactly right ({row['search']})")
    return row


if __name__ == "__main__":
    main()
