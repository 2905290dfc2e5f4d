"""The teaching helpers stay readable (issue #28): every module under transformer_lib/book/, its
subpackages included, has at most 300 lines, and every function or method at most 60."""

import textwrap
from pathlib import Path

import pytest
from conftest import function_lengths

BOOK = Path(__file__).resolve().parents[2] / "transformer_lib" / "book"
MOST_LINES_PER_MODULE, MOST_LINES_PER_FUNCTION = 300, 60


def too_long(path: Path, root: Path = BOOK.parent.parent) -> list[str]:
    """What in the module `path` is longer than allowed, one line each, naming the file (from `root`,
    the repository) and its length."""
    source = path.read_text()
    name = path.relative_to(root).as_posix()
    problems = []
    if len(source.splitlines()) > MOST_LINES_PER_MODULE:
        problems.append(f"{name} has {len(source.splitlines())} lines (at most {MOST_LINES_PER_MODULE})")
    problems += [f"{name}: {function}() has {length} lines (at most {MOST_LINES_PER_FUNCTION})"
                 for function, length in function_lengths(source).items() if length > MOST_LINES_PER_FUNCTION]
    return problems


def test_the_measure_counts_a_function_from_def_to_its_last_line():
    body = "\n".join(f"    x{i} = {i}" for i in range(59))  # def + 59 lines + return = 61
    source = textwrap.dedent("""\
        import functools


        @functools.cache
        def long():
        {body}
            return 0


        class Holder:
            def short(self):
                def inner():
                    return 1
                return inner()
        """).format(body=body)
    lengths = function_lengths(source)
    assert lengths == {"long": 62, "Holder.short": 4, "Holder.short.inner": 2}  # the decorator counts


def test_a_61_line_function_and_a_301_line_module_are_named_with_their_lengths(tmp_path):
    body = "\n".join(f"    x{i} = {i}" for i in range(59))
    module = tmp_path / "transformer_lib" / "book" / "long.py"
    module.parent.mkdir(parents=True)
    module.write_text(f"def fine():\n    return 1\n\n\ndef long():\n{body}\n    return 0\n" + "# padding\n" * 236)
    assert too_long(module, root=tmp_path) == ["transformer_lib/book/long.py has 301 lines (at most 300)",
                                "transformer_lib/book/long.py: long() has 61 lines (at most 60)"]


MODULES = sorted(BOOK.rglob("*.py"))


def test_the_book_package_has_its_modules():
    names = {path.relative_to(BOOK).as_posix() for path in MODULES}
    assert {"__init__.py", "diagrams/__init__.py", "figures/__init__.py"} <= names


@pytest.mark.parametrize("path", MODULES, ids=lambda path: path.relative_to(BOOK).as_posix())
def test_every_book_module_is_short_and_so_is_every_function(path):
    problems = too_long(path)
    assert not problems, "split into modules of one idea, or functions into named helpers:\n" + "\n".join(problems)
