"""The published site's sources: the book as students see it, without the instructor's key.

    python tools/public_book.py _build/public      (`make book` runs it, then builds the site from there)

Writes into the given folder (emptied first) the book's configuration, pages and static files, and as
`chapters/` the student edition of every chapter (`tools/student_edition.py`: no solution code, no
solution boxes, the key's stored outputs everywhere else), so the site's page names and links stay as
they are. In the Markdown pages, what lies between a `<!-- key only -->` line and a
`<!-- end key only -->` line (the instructors' rubric, which states the answers) is left out and
replaced by a pointer to the key. `make book-key` builds the key site from the repository as it is.
"""

from __future__ import annotations

import argparse
import re
import shutil
import sys
from pathlib import Path

from student_edition import build as build_student_edition

ROOT = Path(__file__).resolve().parent.parent
COPIED = ("_config.yml", "_toc.yml", "book_ext", "book_static", "_assets")  # as they are
PAGES = ("intro.md", "instructors.md")  # Markdown pages, key-only parts left out
KEY_ONLY = re.compile(r"^<!-- key only -->\n.*?^<!-- end key only -->\n", re.M | re.S)
MARKERS = ("<!-- key only -->", "<!-- end key only -->")
POINTER = ("*Left out of the published site, as it gives the answers: read it in `instructors.md` in the "
           "repository, or in the key site that `make book-key` builds.*\n")


def public_page(text: str, where: str) -> str:
    """The Markdown page `text` without its key-only parts, each replaced by POINTER."""
    public = KEY_ONLY.sub(POINTER, text)
    for marker in MARKERS:
        if marker in public:
            raise ValueError(f"{where}: '{marker}' without its partner; key-only parts go between a "
                             f"'{MARKERS[0]}' line and an '{MARKERS[1]}' line.")
    return public


def stage(out: Path, root: Path = ROOT) -> Path:
    """Write the published site's sources to `out` (emptied first) and return it."""
    out = Path(out)
    if out.resolve() == root.resolve() or root.resolve().is_relative_to(out.resolve()):
        raise ValueError(f"{out} holds the repository: give an empty folder, e.g. _build/public.")
    shutil.rmtree(out, ignore_errors=True)
    out.mkdir(parents=True)
    for name in COPIED:
        source = root / name
        if not source.exists():
            raise FileNotFoundError(f"{source} is missing: `make book` fetches _assets (MathJax, Vega) first.")
        (shutil.copytree if source.is_dir() else shutil.copy)(source, out / name)
    for name in PAGES:
        (out / name).write_text(public_page((root / name).read_text(), name))
    build_student_edition(root, out / "chapters")
    return out


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("out", type=Path, help="the folder to write (emptied first), e.g. _build/public")
    args = parser.parse_args(argv)
    try:
        out = stage(args.out)
    except (ValueError, FileNotFoundError) as error:
        parser.exit(2, f"error: {error}\n")
    print(f"The published site's sources (the student edition of {len(list((out / 'chapters').glob('*.ipynb')))} "
          f"chapters) written to {out}.")


if __name__ == "__main__":
    main(sys.argv[1:])
