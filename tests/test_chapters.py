"""Rules every chapter notebook follows (the notebooks themselves run under nbval in `make test`)."""

import ast
import json
import re
import shutil
import sys
import types
from pathlib import Path

import pytest
import yaml

import transformer_lib

ROOT = Path(__file__).resolve().parent.parent
CONFIG = yaml.safe_load((ROOT / "_config.yml").read_text())
TOC = yaml.safe_load((ROOT / "_toc.yml").read_text())
CHAPTERS = sorted((ROOT / "chapters").glob("*.ipynb"))


def toc_files(node) -> list[str]:
    if isinstance(node, dict):
        return ([node["file"]] if "file" in node else []) + [f for value in node.values() for f in toc_files(value)]
    if isinstance(node, list):
        return [f for item in node for f in toc_files(item)]
    return []


def code_cells(path):
    return [c for c in json.loads(path.read_text())["cells"] if c["cell_type"] == "code"]


def source(cell) -> str:
    return "".join(cell["source"])


def test_the_table_of_contents_lists_every_chapter_and_only_those():
    listed = {f for f in toc_files(TOC) if f.startswith("chapters/")}
    assert listed == {f"chapters/{p.stem}" for p in CHAPTERS}
    assert (ROOT / f"{TOC['root']}.md").is_file()


@pytest.mark.parametrize("path", CHAPTERS, ids=lambda p: p.stem)
def test_chapter_starts_with_a_colab_only_setup_cell_for_the_configured_repository(path):
    first = source(code_cells(path)[0])
    assert 'if "google.colab" in sys.modules:' in first
    assert re.findall(r'REPOSITORY = "(\S+?)"', first) == [CONFIG["repository"]["url"]], (
        "the setup cell must install from _config.yml's repository.url: run `make set-repository URL=...`"
    )
    assert '%pip install -q "transformer_lib @ git+{REPOSITORY}"' in first


def test_the_setup_cell_stops_with_a_clear_message_when_the_repository_cannot_be_reached(monkeypatch):
    from IPython.core.inputtransformer2 import TransformerManager

    cell = source(code_cells(CHAPTERS[0])[0]).replace(CONFIG["repository"]["url"], "file:///nonexistent/course")
    monkeypatch.setitem(sys.modules, "google.colab", types.ModuleType("google.colab"))
    with pytest.raises(SystemExit, match="file:///nonexistent/course cannot be reached: it is not published yet"):
        exec(TransformerManager().transform_cell(cell), {})  # stops before the %pip line


def test_set_repository_rewrites_the_config_and_every_setup_cell_and_round_trips(tmp_path):
    from tools.set_repository import configured_url, set_repository

    for name in ["_config.yml", *(f"chapters/{p.name}" for p in CHAPTERS)]:
        (tmp_path / name).parent.mkdir(exist_ok=True)
        shutil.copy(ROOT / name, tmp_path / name)
    original = {p: p.read_bytes() for p in tmp_path.rglob("*") if p.is_file()}
    changed = set_repository("https://github.com/someone/course", tmp_path)
    assert len(changed) == 1 + len(CHAPTERS) and configured_url(tmp_path) == "https://github.com/someone/course"
    assert yaml.safe_load((tmp_path / "_config.yml").read_text())["repository"]["url"] == "https://github.com/someone/course"
    for path in CHAPTERS:
        first = source(code_cells(tmp_path / "chapters" / path.name)[0])
        assert re.findall(r'REPOSITORY = "(\S+?)"', first) == ["https://github.com/someone/course"]
        rewritten, before = (json.loads(p.read_text())["cells"] for p in (tmp_path / "chapters" / path.name, path))
        assert sum(a != b for a, b in zip(rewritten, before)) == 1  # the setup cell, nothing else
    set_repository(CONFIG["repository"]["url"], tmp_path)
    assert {p: p.read_bytes() for p in tmp_path.rglob("*") if p.is_file()} == original  # byte for byte
    with pytest.raises(ValueError, match="is not a repository URL like https://github.com/OWNER/NAME"):
        set_repository("github.com/someone", tmp_path)


@pytest.mark.parametrize("path", CHAPTERS, ids=lambda p: p.stem)
def test_chapter_never_redefines_what_the_library_exports(path):
    exported = set(transformer_lib.__all__)
    for cell in code_cells(path):
        if "exercise" in cell.get("metadata", {}).get("tags", []):
            continue
        text = re.sub(r"^(\s*)[%!].*$", r"\1pass", source(cell), flags=re.M)  # IPython magics are not Python
        defined = {n.name for n in ast.parse(text).body if isinstance(n, (ast.FunctionDef, ast.ClassDef))}
        assert not defined & exported, f"{path.name} defines {defined & exported}: show the library's source instead"


@pytest.mark.parametrize("path", CHAPTERS, ids=lambda p: p.stem)
def test_stored_outputs_come_from_a_complete_clean_run(path):
    cells = code_cells(path)
    assert all(c["execution_count"] is not None for c in cells), "run `make execute` to store every output"
    counts = [c["execution_count"] for c in cells]
    assert counts == sorted(counts), "cells were run out of order"
    outputs = json.dumps([c["outputs"] for c in cells])
    assert '"output_type": "error"' not in outputs
    assert not re.search(r"/(work|root|tmp|home)/[A-Za-z]", outputs), "an output shows a path of this machine"
    assert "application/vnd.jupyter.widget-view+json" not in outputs  # the site cannot show live widgets
    assert "Run with " in outputs  # the line that names the mode and the hardware (describe_run)
