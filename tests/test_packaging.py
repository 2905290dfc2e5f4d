"""What `pip install transformer_lib` (Colab's setup cell) brings must be enough to import it."""

import ast
import re
import sys
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
DISTRIBUTION = {"sentencepiece": "sentencepiece", "sacrebleu": "sacrebleu", "tensorflow": "tensorflow",
                "keras": "keras", "numpy": "numpy", "h5py": "h5py"}


def top_level_imports(path: Path) -> set[str]:
    """Modules imported when the file is imported (not those imported inside functions)."""
    names = set()
    for node in ast.parse(path.read_text()).body:
        if isinstance(node, ast.With):  # `with hide_tensorflow_notices(): import tensorflow`
            node_list = node.body
        else:
            node_list = [node]
        for item in node_list:
            if isinstance(item, ast.Import):
                names |= {alias.name.split(".")[0] for alias in item.names}
            elif isinstance(item, ast.ImportFrom) and item.level == 0:
                names.add(item.module.split(".")[0])
    return names


def test_every_module_the_package_imports_is_a_declared_dependency():
    declared = {re.split(r"[<>=!\[ ]", d)[0].lower()
                for d in tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["dependencies"]}
    third_party = set()
    for path in sorted((ROOT / "transformer_lib").rglob("*.py")):
        if "book" in path.relative_to(ROOT / "transformer_lib").parts:
            continue  # the teaching helpers: the book's figures need altair (requirements.txt), and so on
        third_party |= top_level_imports(path) - set(sys.stdlib_module_names) - {"transformer_lib", "__future__"}
    unknown = third_party - set(DISTRIBUTION)
    assert not unknown, f"add {unknown} to DISTRIBUTION here and to pyproject's dependencies"
    missing = {DISTRIBUTION[name] for name in third_party} - declared
    assert not missing, f"transformer_lib imports {missing} at import time; declare them in pyproject.toml"


def imported_modules(path: Path | str) -> set[str]:
    """Every module a file (or a code cell's source) imports, at any depth (inside functions too), as
    dotted names. A cell's IPython lines (`!...`, `%...`) count as `pass`."""
    source = path.read_text() if isinstance(path, Path) else re.sub(r"^([ \t]*)[!%].*$", r"\1pass", path, flags=re.M)
    names = set()
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            names |= {alias.name for alias in node.names}
        elif isinstance(node, ast.ImportFrom) and node.level == 0:
            names.add(node.module)
    return names


def test_library_modules_import_neither_the_package_root_nor_the_teaching_helpers():
    teaching = {"book", "exercises", "diagrams", "figures"}
    for path in sorted((ROOT / "transformer_lib").rglob("*.py")):
        parts = path.relative_to(ROOT / "transformer_lib").parts
        if parts[0] in {"book", "exercises.py", "__init__.py"}:
            continue  # the teaching helpers may import the library; the root imports every module
        forbidden = {"transformer_lib"} | {f"transformer_lib.{name}" for name in teaching}
        assert not imported_modules(path) & forbidden, f"{path.name} imports {imported_modules(path) & forbidden}"


def test_the_wheel_ships_every_data_file_the_library_reads_and_no_other_top_level_package(tmp_path):
    """The checksums of the news corpus are a file inside the package: a wheel without it cannot import.
    The wheel installs `transformer_lib` alone: the benchmarks are scripts of the course repository, run
    from a clone's root, and the chapters read their records through `course_file` (downloaded in Colab)."""
    import subprocess
    import zipfile

    import shutil

    source = tmp_path / "source"  # a copy, so the build leaves nothing in the checkout
    for package in ("transformer_lib", "benchmarks"):  # benchmarks/ beside it, as in a clone: left out all the same
        shutil.copytree(ROOT / package, source / package, ignore=shutil.ignore_patterns("__pycache__"))
    for name in ("pyproject.toml", "README.md"):
        shutil.copy(ROOT / name, source / name)
    subprocess.run([sys.executable, "-m", "pip", "wheel", str(source), "--no-deps", "--no-build-isolation", "-q",
                    "-w", str(tmp_path)], check=True, cwd=tmp_path)
    (wheel,) = tmp_path.glob("transformer_lib-*.whl")
    shipped = set(zipfile.ZipFile(wheel).namelist())
    data_files = {path.relative_to(ROOT).as_posix() for path in (ROOT / "transformer_lib").rglob("*")
                  if path.is_file() and path.suffix not in (".py", ".pyc") and "__pycache__" not in path.parts}
    data_files -= {"transformer_lib/README.md"}  # the library's map, for the repository's readers; no code reads it
    assert data_files and data_files <= shipped, data_files - shipped
    top_level = {name.split("/", 1)[0] for name in shipped if not name.split("/", 1)[0].endswith(".dist-info")}
    assert top_level == {"transformer_lib"}, f"the wheel installs {sorted(top_level - {'transformer_lib'})} too"


def test_no_chapter_imports_the_benchmarks():
    """The benchmarks are not installed (Colab has no `benchmarks` package): a chapter reads their records
    through `course_file` and never imports them in a code cell."""
    import json

    for path in sorted((ROOT / "chapters").glob("*.ipynb")):
        for cell in json.loads(path.read_text())["cells"]:
            if cell["cell_type"] == "code":
                imported = {name.split(".")[0] for name in imported_modules("".join(cell["source"]))}
                assert "benchmarks" not in imported, f"{path.name}, cell {cell.get('id')}: imports the benchmarks"
