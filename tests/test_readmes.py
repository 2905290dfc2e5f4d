"""The README is read in five minutes, and the reference it leaves out lives beside the code, complete:
transformer_lib/README.md maps every module and preset, benchmarks/README.md every command and record."""

import ast
import fnmatch
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
README, LIBRARY_MAP, BENCHMARKS_MAP = (ROOT / "README.md", ROOT / "transformer_lib" / "README.md",
                                       ROOT / "benchmarks" / "README.md")
MOST_LINES = 150
LINK = re.compile(r"\]\(([^)#\s]+)(?:#[^)]*)?\)")  # a Markdown link's target, without its anchor


def broken_links(page: Path) -> list[str]:
    """The relative link targets of `page` that name no file or folder of the repository."""
    targets = [t for t in LINK.findall(page.read_text()) if not re.match(r"[a-z]+:", t)]
    return [t for t in targets if not (page.parent / t).exists()]


def unnamed(names, text: str) -> list[str]:
    """The names (file names, or globs such as `bert_labels_cpu*.json`) that `text` does not name in backticks."""
    quoted = set(re.findall(r"`([^`\s]+)`", text))
    return sorted(name for name in names if not any(fnmatch.fnmatch(name, q) for q in quoted))


def test_a_broken_link_and_an_unnamed_file_are_found(tmp_path):
    page = tmp_path / "README.md"
    (tmp_path / "there.md").write_text("")
    page.write_text("[here](there.md), [gone](gone.md#top), [web](https://example.org)\n")
    assert broken_links(page) == ["gone.md"]
    assert unnamed(["a.json", "b_1.json", "c.json"], "`a.json` and `b_*.json`") == ["c.json"]


def test_the_readme_is_short_gives_the_two_commands_and_links_to_the_maps():
    text = README.read_text()
    assert len(text.splitlines()) <= MOST_LINES, f"README.md has {len(text.splitlines())} lines, at most {MOST_LINES}"
    assert "make test" in text and "make book" in text
    for page in (LIBRARY_MAP, BENCHMARKS_MAP):
        assert page.relative_to(ROOT).as_posix() in text, f"README.md does not link {page.relative_to(ROOT)}"
    for heading in ("## Three ways to read it", "## The two commands", "## Where things are", "## Licences"):
        assert heading in text


def test_the_three_pages_have_no_broken_links():
    for page in (README, LIBRARY_MAP, BENCHMARKS_MAP):
        assert broken_links(page) == [], page.relative_to(ROOT)


def test_the_librarys_map_names_every_module_of_every_folder():
    text = LIBRARY_MAP.read_text()
    library = ROOT / "transformer_lib"
    modules = {p.relative_to(library).as_posix() for p in library.glob("*/*.py") if p.name != "__init__.py"}
    folders = {p.parent.relative_to(library).as_posix() + "/" for p in library.glob("*/*/__init__.py")}
    missing = [m for m in sorted(modules) if f"`{Path(m).name}`" not in text] + \
              [f for f in sorted(folders) if f"`{Path(f).name}/`" not in text]
    assert missing == [], f"transformer_lib/README.md does not name {missing}"


def presets() -> list[str]:
    """The names of `PRESETS` in transformer_lib/config.py, read without importing TensorFlow."""
    for node in ast.parse((ROOT / "transformer_lib" / "config.py").read_text()).body:
        if isinstance(node, ast.Assign) and any(getattr(t, "id", None) == "PRESETS" for t in node.targets):
            return [key.value for key in node.value.keys]
    raise AssertionError("transformer_lib/config.py defines no PRESETS")


def test_the_librarys_map_gives_every_preset_and_where_presets_live():
    text = LIBRARY_MAP.read_text()
    assert len(presets()) >= 5 and [p for p in presets() if f"| `{p}` |" not in text] == []
    assert "`PRESETS`, in the same file" in text and "(`config.py`)" in text


def test_the_benchmarks_map_names_every_command_and_every_record():
    text = BENCHMARKS_MAP.read_text()
    folder = ROOT / "benchmarks"
    commands = [p.stem for p in folder.glob("*.py") if '__name__ == "__main__"' in p.read_text()
                and p.stem != "__main__"]
    assert commands and [c for c in sorted(commands) if f"`{c}`" not in text and f"`{c}.py`" not in text] == []
    assert unnamed([p.name for p in folder.glob("*.json")], text) == []
