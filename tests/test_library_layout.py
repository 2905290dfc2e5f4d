"""The library's house stays readable: folders by role, imports that run one way, short modules and
functions, and no block written twice.

Folders, from the bottom up (a module imports only from its own folder and the folders below it):
utils, data, layers, models, decoding, export, training, book, then the root's `__init__`,
`__main__` and `exercises`. The root's `config` and `_version` are leaves any folder may read
(`config` itself reads only utils)."""

import ast
from pathlib import Path

import pytest
from conftest import function_lengths

ROOT = Path(__file__).resolve().parent.parent
LIBRARY = ROOT / "transformer_lib"
FOLDERS = ("utils", "data", "layers", "models", "decoding", "export", "training", "book")
LEAVES = {"transformer_lib.config": {"utils"}, "transformer_lib._version": set()}  # root modules below everything
AT_THE_ROOT = {"__init__.py", "__main__.py", "_version.py"}  # beside at most 6 others
MOST_LINES_PER_MODULE, MOST_CODE_LINES_PER_FUNCTION, REPEATED_BLOCK = 300, 60, 6
THE_CHAPTERS_VIEW = set()  # no module below the package root imports it


def rank(module: str) -> int:
    """Where a module (`transformer_lib.layers.attention`) stands: its folder's place in FOLDERS, a root
    leaf -1, the rest of the root (`__init__`, `__main__`, `exercises`) above every folder."""
    if module in LEAVES:
        return -1
    parts = module.split(".")
    return FOLDERS.index(parts[1]) if len(parts) >= 2 and parts[1] in FOLDERS else len(FOLDERS)


def module_name(path: Path, root: Path = ROOT) -> str:
    name = ".".join(path.relative_to(root).with_suffix("").parts)
    return name.removesuffix(".__init__")


def imports_of(source: str, modules: set[str]) -> set[str]:
    """The library modules `source` imports, anywhere in it (a function's import counts too):
    `from transformer_lib.data import tokenizer` names `transformer_lib.data.tokenizer`."""
    found = set()
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.ImportFrom) and node.module and node.module.startswith("transformer_lib"):
            names = [f"{node.module}.{alias.name}" for alias in node.names]
            found |= {name for name in names if name in modules} or {node.module}
        elif isinstance(node, ast.Import):
            found |= {alias.name for alias in node.names if alias.name.startswith("transformer_lib")}
    return found & modules


def import_graph(library: Path = LIBRARY) -> dict[str, set[str]]:
    paths = sorted(library.rglob("*.py"))
    modules = {module_name(path, library.parent) for path in paths}
    return {module_name(path, library.parent): imports_of(path.read_text(), modules) for path in paths}


def upward_imports(graph: dict[str, set[str]]) -> list[str]:
    """Every import from a folder above the importer's (or, for a root leaf, outside what it may read)."""
    problems = []
    for module, imported in sorted(graph.items()):
        for other in sorted(imported):
            if module in LEAVES:
                wrong = other not in LEAVES and other.split(".")[1] not in LEAVES[module]
            else:
                wrong = rank(other) > rank(module) and (module, other) not in THE_CHAPTERS_VIEW
            if wrong:
                problems.append(f"{module} imports {other}, which stands above it")
    return problems


def import_cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The import cycles between modules (a package's `__init__` importing its own modules aside)."""
    cycles, state = [], {}

    def visit(module, path):
        state[module] = "open"
        for other in sorted(graph.get(module, ())):
            if other == module.rpartition(".")[0] or module == other.rpartition(".")[0]:
                continue  # a module and its own package
            if state.get(other) == "open":
                cycles.append(path[path.index(other):] + [other])
            elif other not in state:
                visit(other, path + [other])
        state[module] = "done"

    for module in sorted(graph):
        if module not in state:
            visit(module, [module])
    return cycles


def code_lines(source: str) -> dict[str, int]:
    """Every function's length in lines, from `def` (or its first decorator) to its last line, less
    its docstring, by qualified name (`Class.method`)."""
    return function_lengths(source, without_docstrings=True)


def meaningful_lines(source: str) -> list[tuple[int, str]]:
    """(line number, stripped text) of the lines that carry code: no blank lines, comments, imports,
    lone brackets or docstring lines."""
    docstrings = set()
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, (ast.Module, ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            if ast.get_docstring(node) is not None:
                docstrings |= set(range(node.body[0].lineno, node.body[0].end_lineno + 1))
    kept = []
    for number, line in enumerate(source.splitlines(), 1):
        text = line.strip()
        if (not text or text.startswith(("#", "import ", "from ")) or number in docstrings
                or set(text) <= set("()[]{},:")):
            continue
        kept.append((number, text))
    return kept


def repeated_blocks(paths: list[Path], size: int = REPEATED_BLOCK, root: Path = ROOT) -> list[str]:
    """Each run of `size` code lines that stands word for word in two places, once."""
    seen, problems = {}, []
    for path in paths:
        lines = meaningful_lines(path.read_text())
        in_a_repeat = False  # a longer repeat is named once, at its first line
        for i in range(len(lines) - size + 1):
            block = tuple(text for _, text in lines[i: i + size])
            where = f"{path.relative_to(root).as_posix()}:{lines[i][0]}"
            if block in seen and not in_a_repeat:
                problems.append(f"{where} repeats {seen[block]} ({size} lines: {block[0]!r} ...)")
            in_a_repeat = block in seen
            seen.setdefault(block, where)
    return problems


# --- the measures, each on a planted case ----------------------------------------------------------

def test_an_upward_import_and_a_cycle_are_found(tmp_path):
    library = tmp_path / "transformer_lib"
    for name, source in {"__init__.py": "", "layers/__init__.py": "", "models/__init__.py": "",
                         "utils/__init__.py": "",
                         "layers/attention.py": "from transformer_lib.models import transformer\n",
                         "models/transformer.py": "from transformer_lib.layers.attention import X\n",
                         "utils/checks.py": "def f():\n    from transformer_lib.utils import more\n",
                         "utils/more.py": "from transformer_lib.utils.checks import f\n"}.items():
        (library / name).parent.mkdir(parents=True, exist_ok=True)
        (library / name).write_text(source)
    graph = import_graph(library)
    assert upward_imports(graph) == [
        "transformer_lib.layers.attention imports transformer_lib.models.transformer, which stands above it"]
    assert sorted(map(tuple, import_cycles(graph))) == [
        ("transformer_lib.layers.attention", "transformer_lib.models.transformer", "transformer_lib.layers.attention"),
        ("transformer_lib.utils.checks", "transformer_lib.utils.more", "transformer_lib.utils.checks")]


def test_a_function_is_measured_without_its_docstring():
    body = "\n".join(f"    x{i} = {i}" for i in range(60))
    source = f'def long():\n    """One\n    two."""\n{body}\n\n\ndef short():\n    return 1\n'
    assert code_lines(source) == {"long": 61, "short": 2}  # def + 60 lines; the docstring's 2 lines do not count


def test_a_block_written_twice_is_found_and_a_shorter_one_is_not(tmp_path):
    block = "".join(f"    total = total + {i}  # step\n" for i in range(6))
    first, second = tmp_path / "a.py", tmp_path / "b.py"
    first.write_text(f"def f(total):\n{block}    return total\n")
    second.write_text(f'def g(total):\n    """Sum."""\n\n{block}    return total\n')
    assert repeated_blocks([first, second], root=tmp_path) == [
        "b.py:4 repeats a.py:2 (6 lines: 'total = total + 0  # step' ...)"]
    five = "".join(block.splitlines(True)[:5])
    second.write_text(f"def g(total):\n{five}    return -total\n")
    assert repeated_blocks([first, second], root=tmp_path) == []  # five shared lines are not a block


# --- the library ------------------------------------------------------------------------------------

def test_the_folders_by_role_exist_each_saying_what_it_holds():
    for folder in FOLDERS:
        init = LIBRARY / folder / "__init__.py"
        assert init.is_file(), f"transformer_lib/{folder}/ is missing"
        assert len(ast.get_docstring(ast.parse(init.read_text())) or "") > 80, f"{init} says too little"
        listed = ast.get_docstring(ast.parse(init.read_text()))
        if folder != "book":
            missing = [p.stem for p in (LIBRARY / folder).glob("*.py") if p.stem != "__init__" and p.stem not in listed]
            assert missing == [], f"transformer_lib/{folder}/__init__.py does not name {missing}"


def test_at_most_six_modules_stay_at_the_root_and_the_package_map_names_every_module():
    others = sorted(p.name for p in LIBRARY.glob("*.py") if p.name not in AT_THE_ROOT)
    assert len(others) <= 6, others
    assert set(others) >= {"config.py"}  # the one config every folder reads
    map_ = ast.get_docstring(ast.parse((LIBRARY / "__init__.py").read_text()))
    for folder in FOLDERS:
        for path in (LIBRARY / folder).glob("*.py"):
            if path.stem != "__init__":
                assert path.stem in map_, f"transformer_lib/__init__.py's map does not name {folder}/{path.name}"


def test_imports_run_down_the_folders_without_a_cycle():
    graph = import_graph()
    assert upward_imports(graph) == []
    assert import_cycles(graph) == []


@pytest.mark.parametrize("path", sorted(p for p in LIBRARY.rglob("*.py") if "book" not in p.parts),
                         ids=lambda p: p.relative_to(LIBRARY).as_posix())
def test_modules_and_functions_are_short(path):
    source = path.read_text()
    assert len(source.splitlines()) <= MOST_LINES_PER_MODULE
    assert {name: n for name, n in code_lines(source).items() if n > MOST_CODE_LINES_PER_FUNCTION} == {}


def test_no_block_of_six_code_lines_is_written_twice_in_the_library():
    assert repeated_blocks(sorted(LIBRARY.rglob("*.py"))) == []


def test_two_layers_do_not_take_dropout_rate_for_another_dropout():
    import transformer_lib as tl

    for make, argument in ((lambda **k: tl.MultiHeadAttention(16, 4, **k), "attention_dropout"),
                           (lambda **k: tl.FeedForward(16, 32, **k), "activation_dropout")):
        with pytest.raises((TypeError, ValueError), match="dropout_rate"):
            make(dropout_rate=0.1)
        assert make(**{argument: 0.1}).get_config()[argument] == 0.1



def test_the_tests_mirror_the_library_folders():
    """tests/layers/ holds the tests of transformer_lib/layers/, and so on (utils, whose helpers the other
    folders use, has no folder of its own); tests/fixtures/ holds the files kept for the tests."""
    tests = ROOT / "tests"
    folders = sorted(path.relative_to(tests).as_posix() for path in tests.rglob("*") if path.is_dir()
                     and "__pycache__" not in path.parts and path.relative_to(tests).parts[0] != "fixtures")
    assert [folder for folder in folders if not (LIBRARY / folder / "__init__.py").is_file()] == []
    assert [folder for folder in FOLDERS if folder != "utils" and not list((tests / folder).glob("test_*.py"))] == []


def test_a_translator_saved_before_the_folders_loads_and_translates_as_it_did():
    import json

    import transformer_lib as tl

    saved = ROOT / "tests" / "fixtures" / "translator-before-folders"
    expected = json.loads((saved / "expected.json").read_text())
    translator = tl.load_translator(saved)
    assert translator.model.config == tl.TransformerConfig(
        num_layers=2, d_model=64, num_heads=4, dff=256, input_vocab_size=400, target_vocab_size=400,
        dropout_rate=0.0, max_length=2048)
    assert translator(expected["sources"], beam_size=1) == expected["greedy"]
    assert translator(expected["sources"], beam_size=4) == expected["beam4"]
