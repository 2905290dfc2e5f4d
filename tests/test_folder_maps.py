"""Each folder map (the folder's `__init__` docstring) names those of its definitions that a chapter prints
with `show_source`, so that a maintainer who edits one knows that a chapter's listing changes with it
(`make listings` refreshes them)."""

import functools
import inspect
import json
import re
from pathlib import Path

import pytest

from tools.notebooks.refresh import LISTING

ROOT = Path(__file__).resolve().parent.parent
CHAPTERS = sorted((ROOT / "chapters").glob("*.ipynb"))


def printed_definitions(chapters) -> dict[str, dict[str, set[str]]]:
    """Folder package (`transformer_lib.layers`) -> `module.qualname` (`attention.MultiHeadAttention.call`)
    -> the chapters (file stems) whose listing cells print it."""
    import transformer_lib as tl

    found = {}
    for path in chapters:
        for cell in json.loads(Path(path).read_text())["cells"]:
            match = LISTING.match("".join(cell["source"])) if cell["cell_type"] == "code" else None
            if match is None:
                continue
            target = functools.reduce(getattr, match["target"].split(".")[1:], tl)
            target = inspect.unwrap(getattr(target, "python_function", target))  # a tf.function's Python function
            package, _, module = target.__module__.rpartition(".")
            found.setdefault(package, {}).setdefault(f"{module}.{target.__qualname__}", set()).add(Path(path).stem)
    return found


def unnamed(docstring: str, names) -> list[str]:
    """The `module.qualname`s that `docstring` does not name (as a whole word)."""
    return sorted(name for name in names if not re.search(rf"(?<![\w.]){re.escape(name)}(?!\w)", docstring or ""))


def test_a_printed_definition_that_its_folder_map_does_not_name_is_found(tmp_path):
    chapter = tmp_path / "99_planted.ipynb"
    cells = [{"cell_type": "code", "source": ["show_source(tl.MultiHeadAttention.split_heads)"]},
             {"cell_type": "code", "source": ["# the library's Eq. 1\n", "show_source(tl.scaled_dot_product_attention)"]},
             {"cell_type": "markdown", "source": ["show_source(tl.FeedForward)"]}]
    chapter.write_text(json.dumps({"cells": cells}))
    printed = printed_definitions([chapter])
    assert printed == {"transformer_lib.layers": {"attention.MultiHeadAttention.split_heads": {"99_planted"},
                                                  "attention.scaled_dot_product_attention": {"99_planted"}}}
    assert unnamed("attention.scaled_dot_product_attention (3)", printed["transformer_lib.layers"]) == [
        "attention.MultiHeadAttention.split_heads"]
    assert unnamed("attention.MultiHeadAttention.split_heads_more", ["attention.MultiHeadAttention.split_heads"])


@pytest.mark.parametrize("package, names", sorted(printed_definitions(CHAPTERS).items()))
def test_each_folder_map_names_the_definitions_the_chapters_print(package, names):
    import importlib

    missing = unnamed(importlib.import_module(package).__doc__, names)
    assert missing == [], (f"{package}'s __init__ docstring does not name {missing}, which "
                           f"{sorted(set().union(*(names[m] for m in missing)))} print with show_source")
