"""Name the course's public repository in the one place that names it, and everywhere that copies it.

    python tools/set_repository.py https://github.com/OWNER/NAME        (or: make set-repository URL=...)

`_config.yml`'s `repository.url` is the source of truth (the site's Colab and repository buttons
read it); this command writes it there, into the setup cell of every chapter (the line
`REPOSITORY = "..."`), the student edition's too where one exists (student/chapters), and into
`transformer_lib/book/course_files.py` (its `REPOSITORY`, where a chapter run without a checkout downloads
the benchmark records from). Nothing else in the files changes: the edit is textual, so the notebooks'
stored outputs and layout stay as they are.
"""

from __future__ import annotations

import argparse
import re
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
CONFIG_URL = re.compile(r"^(repository:\n(?:[ \t]+#.*\n)*[ \t]+url:[ \t]*)(\S+)", re.M)
CELL_URL = re.compile(r'(REPOSITORY = \\")([^"\\]*)(\\")')  # inside the notebook's JSON text
MODULE = Path("transformer_lib") / "book" / "course_files.py"
MODULE_URL = re.compile(r'^(REPOSITORY = ")([^"]*)(")', re.M)
URL = re.compile(r"^https://[\w.-]+(/[\w.-]+){2}$")


def notebooks(root: Path) -> list[Path]:
    return sorted([*(root / "chapters").glob("*.ipynb"), *(root / "student" / "chapters").glob("*.ipynb")])


def configured_url(root: Path = ROOT) -> str:
    match = CONFIG_URL.search((root / "_config.yml").read_text())
    if match is None:
        raise ValueError("_config.yml has no `repository:` block with a `url:` line.")
    return match.group(2)


def set_repository(url: str, root: Path = ROOT) -> list[Path]:
    """Write `url` into _config.yml, transformer_lib/book/course_files.py and every setup cell; return the files changed."""
    if not URL.match(url):
        raise ValueError(f"{url!r} is not a repository URL like https://github.com/OWNER/NAME (https, no trailing slash).")
    changed = []
    config = root / "_config.yml"
    configured_url(root)  # fails clearly if the block is missing
    for path, pattern, replacement in [(config, CONFIG_URL, rf"\g<1>{url}"),
                                       (root / MODULE, MODULE_URL, rf"\g<1>{url}\g<3>"),
                                       *((p, CELL_URL, rf"\g<1>{url}\g<3>") for p in notebooks(root))]:
        text = path.read_text()
        new, count = pattern.subn(replacement, text)
        if count != 1:
            raise ValueError(f"{path.relative_to(root)}: expected one repository URL to rewrite, found {count}.")
        if new != text:
            path.write_text(new)
            changed.append(path)
    return changed


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("url", help="the public repository, e.g. https://github.com/OWNER/NAME")
    args = parser.parse_args(argv)
    try:
        changed = set_repository(args.url)
    except ValueError as error:
        parser.exit(2, f"error: {error}\n")
    print(f"Repository set to {args.url}: {len(changed)} file(s) changed.")


if __name__ == "__main__":
    main(sys.argv[1:])
