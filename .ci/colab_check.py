"""`make colab-check`: the chapters on Colab's own package versions, with the course library
installed exactly the way their setup cell installs it.

1. A fresh virtual environment (.venv-colab) with Colab's versions (.ci/colab-runtime.txt) and the
   tools the check needs (.ci/colab-tools.txt).
2. The setup cell of chapter 1 run by IPython as Colab runs it (a `google.colab` module present),
   with the repository URL replaced by this checkout (`git+file://localhost/...`: its committed HEAD).
3. Every package of colab-runtime.txt still at Colab's version: the install replaced none of them.
4. Every chapter of the student edition (the notebooks Colab opens, exercises unwritten) in quick mode
   under nbval, in that environment (chapters 7 and 8 and the performance appendix in the fresh folder of
   step 6, not twice). The key's chapters run in the project's own environment (`make notebooks`): each
   edition runs once, in the environment its readers use.
5. Colab runs Python 3.13, which this machine lacks: the registry is asked (a dry run, nothing is
   installed) whether the library's dependencies resolve to Python 3.13 wheels at Colab's versions.
6. A fresh runtime's path (`fresh_runtime`): chapters 7 and 8 and the performance appendix of the student
   edition copied into an empty folder (no checkout, no `runs/`). Chapter 8 with a reader's settings, before
   chapter 7 has run there, stops at its translator cell and offers the choices instead of training. nbval then
   runs chapter 7 there and chapter 8 after it, on the same worker (conftest.py's AFTER): chapter 8
   reads the translator chapter 7 trained in that folder, as a reader's next chapter in the same
   runtime does. (Until 2026-12-05 chapter 8 trained its own copy there, the same quick recipe a third
   time in `make test`; `chapter_7_translator(..., train=True)` is tested in tests/book/test_runs.py,
   and the training it calls, `train_translator`, in tests/training/test_recipe.py and tests/test_faults.py.)
   There the chapters' records (`benchmarks/*.json`, read through `course_file`) are the copies a Colab
   runtime downloads from the course repository, put in Keras's download cache beforehand (this check runs
   offline); the benchmarks themselves are no installed package: they run from a clone's root.

Uses only the standard library; run it with the machine's python3 (3.11). `--wheels-only` runs step 5 alone;
`--prepare` runs steps 5 and 1 (`make test` runs it while it installs .venv), which a later run then skips.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import re
import subprocess
import sys
import tempfile
import time
import tomllib
import venv
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
VENV = ROOT / ".venv-colab"
RUNTIME = ROOT / ".ci" / "colab-runtime.txt"
TOOLS = ROOT / ".ci" / "colab-tools.txt"
PLATFORMS = ["manylinux2014_x86_64", "manylinux_2_17_x86_64", "manylinux_2_27_x86_64", "manylinux_2_28_x86_64"]


def pins(path: Path) -> dict[str, str]:
    """{name: version} of a requirements file of `name==version` lines."""
    lines = [line.split("#")[0].strip() for line in path.read_text().splitlines()]
    return {name.lower(): version for name, version in (line.split("==") for line in lines if line)}


def run(*command, **options) -> subprocess.CompletedProcess:
    print("+", " ".join(str(c) for c in command)[:200], flush=True)
    start = time.monotonic()
    done = subprocess.run([str(c) for c in command], check=True, **options)
    print(f"  ({time.monotonic() - start:.0f} s)", flush=True)  # where colab-check's minutes go
    return done


def installed_versions(python: Path, names) -> dict[str, str]:
    script = ("import json, sys, importlib.metadata as m; "
              "print(json.dumps({n: m.version(n) for n in sys.argv[1:]}))")
    out = run(python, "-c", script, *names, capture_output=True, text=True).stdout
    return {name.lower(): version for name, version in json.loads(out).items()}


def junit(name: str) -> list[str]:
    """pytest's JUnit report option under CI_TIME_DIR, where `make ci-profile` reads test times."""
    folder = os.environ.get("CI_TIME_DIR")
    return [f"--junitxml={Path(folder) / name}.xml"] if folder else []


def setup_cell() -> str:
    """The first code cell of chapter 1, the one every chapter starts with."""
    notebook = json.loads((ROOT / "chapters" / "01_data.ipynb").read_text())
    return "".join(next(c for c in notebook["cells"] if c["cell_type"] == "code")["source"])


def run_setup_cell_as_colab(python: Path) -> None:
    """Run the setup cell in IPython with `google.colab` importable and this checkout as the repository."""
    cell = setup_cell()
    urls = re.findall(r'REPOSITORY = "(\S+)"', cell)
    if len(urls) != 1:
        sys.exit(f"colab-check: the setup cell must set REPOSITORY once; found {urls}")
    cell = cell.replace(f'"{urls[0]}"', f'"file://localhost{ROOT}"')  # pip wants a host in git+file URLs
    fake_colab = "import sys, types\nsys.modules['google.colab'] = types.ModuleType('google.colab')\n"
    with tempfile.NamedTemporaryFile("w", suffix=".ipy", delete=False) as script:
        script.write(fake_colab + cell)
    # A fresh Colab runtime has no transformer_lib. The copy an earlier check left in .venv-colab has the same
    # version number, so the setup cell's pip would keep it and the chapters would run an older library than HEAD.
    run(python, "-m", "pip", "uninstall", "--quiet", "--yes", "transformer_lib")
    try:
        run(python.parent / "ipython", "--quick", "--no-banner", script.name)
    finally:
        os.unlink(script.name)
    check = "import transformer_lib; assert 'site-packages' in transformer_lib.__file__, transformer_lib.__file__"
    run(python, "-c", check, cwd=tempfile.gettempdir())  # not the checkout's own copy
    for cell in section_setup_cells():  # what a section installs for itself in Colab (chapter 10: SmolLM2's file)
        with tempfile.NamedTemporaryFile("w", suffix=".ipy", delete=False) as script:
            script.write(fake_colab + "import sys\n" + cell)
        try:
            run(python.parent / "ipython", "--quick", "--no-banner", script.name)
        finally:
            os.unlink(script.name)


def section_setup_cells() -> list[str]:
    """The code cells after a chapter's first that install packages in Colab (`%pip` under `google.colab`)."""
    cells = []
    for path in sorted((ROOT / "chapters").glob("*.ipynb")):
        code = [c for c in json.loads(path.read_text())["cells"] if c["cell_type"] == "code"][1:]
        cells += ["".join(c["source"]) for c in code if "google.colab" in "".join(c["source"])
                  and "%pip install" in "".join(c["source"])]
    return cells


def runs_on_python_313(wheel: str) -> bool:
    """From a wheel's file name (name-version-python-abi-platform.whl): built for CPython 3.13, for
    CPython 3's stable ABI (abi3) from 3.x <= 3.13 on, or pure Python 3."""
    python, abi, _ = wheel.removesuffix(".whl").split("-")[-3:]
    tags = python.split(".")
    return ("cp313" in tags or any(t.startswith("py3") for t in tags)
            or (abi == "abi3" and any(t.startswith("cp3") and int(t[3:]) <= 13 for t in tags)))


def check_python_313_wheels() -> None:
    """Resolve the library's dependencies for CPython 3.13 on Linux x86-64, wheels only, with Colab's
    versions as constraints: pip fails if any of them has no cp313 (or pure-Python) wheel. Nothing is
    downloaded beyond what resolution needs, and nothing is installed."""
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    # The `ted` extra (tensorflow-datasets) is left out: Colab ships TFDS with what it needs
    # (one of its requirements, `promise`, exists only as a source archive, never as a wheel).
    requirements = [*project["dependencies"], *project["optional-dependencies"]["export"]]
    with tempfile.TemporaryDirectory() as folder:
        report = Path(folder) / "report.json"
        platforms = [option for platform in PLATFORMS for option in ("--platform", platform)]
        run(sys.executable, "-m", "pip", "install", "--quiet", "--dry-run", "--ignore-installed",
            "--only-binary=:all:", "--python-version", "3.13", "--implementation", "cp", *platforms,
            "--target", Path(folder) / "target", "--report", report, "-c", RUNTIME, *requirements)
        resolved = json.loads(report.read_text())["install"]
    wheels = [item["download_info"]["url"].rsplit("/", 1)[-1] for item in resolved]
    wrong = [w for w in wheels if not runs_on_python_313(w)]
    if wrong:
        sys.exit(f"colab-check: not installable on Python 3.13: {wrong}")
    print(f"colab-check: {len(wheels)} dependencies resolve to Python 3.13 wheels at Colab's versions "
          f"({', '.join(sorted(w.split('-')[0] + ' ' + w.split('-')[1] for w in wheels if w.split('-')[0].lower() in ('tensorflow', 'keras', 'numpy', 'sentencepiece', 'sacrebleu')))}).")


def prepare() -> Path:
    """Steps 5 and 1: the Python 3.13 wheel check, then .venv-colab with Colab's versions and the tools.
    Each is skipped when it was done for the same requirement files (a stamp in .venv-colab holds their
    hash): `make test` prepares while it installs .venv, and colab-check, its last stage, goes on from there."""
    digest = hashlib.sha256(b"".join(path.read_bytes() for path in (RUNTIME, TOOLS, ROOT / "pyproject.toml")))
    stamp = VENV / ".prepared"
    python = VENV / "bin" / "python"
    if stamp.is_file() and stamp.read_text() == digest.hexdigest():
        print(f"colab-check: {VENV.name} is prepared for these requirements (the wheel check passed).")
        return python
    check_python_313_wheels()
    if not VENV.exists():
        venv.create(VENV, with_pip=True)
    run(python, "-m", "pip", "install", "--quiet", "-r", RUNTIME, "-r", TOOLS)
    stamp.write_text(digest.hexdigest())
    return python


def main() -> None:
    if "--wheels-only" in sys.argv:
        check_python_313_wheels()
        return
    python = prepare()
    if "--prepare" in sys.argv:
        return
    colab = pins(RUNTIME)
    before = installed_versions(python, colab)
    if before != colab:
        sys.exit(f"colab-check: could not install Colab's versions: {before} != {colab}")
    run_setup_cell_as_colab(python)
    after = installed_versions(python, colab)
    replaced = {name: f"{colab[name]} -> {after[name]}" for name in colab if after[name] != colab[name]}
    if replaced:
        sys.exit(f"colab-check: installing transformer_lib replaced Colab's packages: {replaced}")
    print(f"colab-check: the setup cell kept Colab's {', '.join(f'{n} {v}' for n, v in colab.items())}.")
    # two kernels at a time, one computing thread each (as make notebooks)
    env = {"TF_NUM_INTRAOP_THREADS": "1", **os.environ, "BOOK_QUICK": "1", "PYTHONPATH": ""}
    with fresh_runtime(python, env) as (fresh, env):
        # The student edition and the fresh runtime's chapters in one run, two at a time (as in make
        # notebooks). Chapters 7 and 8 and the appendix run once, in the fresh folder (the same notebooks:
        # there they find the records as downloaded, and chapter 8 reads chapter 7's run there).
        elsewhere = [f"--ignore=student/chapters/{name}" for name in FRESH_CHAPTERS]
        run(python, "-m", "pytest", "-n", "2", "--dist", "loadfile",
            "--nbval-lax", "--nbval-current-env", "-p", "no:cacheprovider", "-q", *junit("colab-notebooks"),
            "-o", "addopts=", "-o", "pythonpath=", *elsewhere, "student/chapters/", fresh, cwd=ROOT, env=env)
        print("colab-check: chapters 7 and 8 and the performance appendix ran in a fresh folder "
              "(chapter 8 read chapter 7's run there).")
    print(f"colab-check: every chapter of the student edition ran on tensorflow {after['tensorflow']} / "
          f"keras {after['keras']} "
          f"(Colab's GPU runtime versions; Python {sys.version_info.major}.{sys.version_info.minor} here, "
          "3.13 on Colab).")


FRESH_CHAPTERS = ("07_training.ipynb", "08_translating.ipynb", "appendix_performance.ipynb")  # run in the fresh folder only
FRESH_CHAPTER_8 = """
import json, sys
from pathlib import Path
cells = [c for c in json.loads(Path("08_translating.ipynb").read_text())["cells"] if c["cell_type"] == "code"]
ip = get_ipython()
ip.showtraceback = lambda *args, **kwargs: None  # the error is checked below, its first line printed
for cell in cells:
    source = "".join(cell["source"])
    result = ip.run_cell(source)
    if not result.success:
        error = result.error_in_exec or result.error_before_exec
        message = str(error)
        ok = isinstance(error, RuntimeError) and "TRAIN_IF_MISSING = True" in message and "SAVED_TRANSLATOR" in message
        if not ok or "chapter_7_translator" not in source or Path("runs").exists():
            sys.exit(f"colab-check: chapter 8 in a fresh runtime failed otherwise than by offering the choice: {error!r}")
        print("colab-check: chapter 8 in a fresh runtime stops at its translator cell and says:", message.splitlines()[0])
        break
else:
    sys.exit("colab-check: chapter 8 in a fresh runtime ran to the end without chapter 7's translator")
"""


def keras_home_with_records(home: Path) -> Path:
    """A Keras home (KERAS_HOME) whose download cache holds every committed record as `course_file` names
    its download (`benchmarks/NAME.json` -> `benchmarks_NAME.json`), so that `course_file` in a folder with
    no checkout finds what a Colab runtime downloads from the course repository, without the network. The
    cache's other files (corpora already downloaded) are linked in from the usual Keras home."""
    cache = home / "datasets"
    cache.mkdir(parents=True)
    usual = Path(os.environ.get("KERAS_HOME", Path.home() / ".keras")) / "datasets"
    for path in sorted(usual.iterdir()) if usual.is_dir() else []:
        (cache / path.name).symlink_to(path)
    for record in sorted((ROOT / "benchmarks").glob("*.json")):
        target = cache / f"benchmarks_{record.name}"
        target.unlink(missing_ok=True)
        target.write_bytes(record.read_bytes())
    return home


@contextlib.contextmanager
def fresh_runtime(python: Path, env: dict):
    """Chapters 7 and 8 and the performance appendix where a fresh Colab runtime has them: an empty folder,
    the installed library, the records downloaded (`keras_home_with_records`). Chapter 8 with a reader's
    settings is checked here, before chapter 7 ran; the folder is yielded, with the environment to run in,
    for nbval to run the three notebooks in quick mode, chapter 8 after chapter 7, whose run it reads."""
    with tempfile.TemporaryDirectory(prefix="fresh-runtime-") as folder, \
            tempfile.TemporaryDirectory(prefix="fresh-keras-") as keras_home:
        env = {**env, "KERAS_HOME": str(keras_home_with_records(Path(keras_home)))}
        for name in FRESH_CHAPTERS:
            (Path(folder) / name).write_bytes((ROOT / "student" / "chapters" / name).read_bytes())
        script = Path(folder) / "fresh_chapter_8.ipy"
        script.write_text(FRESH_CHAPTER_8)
        reader = {key: value for key, value in env.items() if key != "BOOK_QUICK"}  # a reader's full settings
        run(python.parent / "ipython", "--quick", "--no-banner", script.name, cwd=folder, env=reader)
        script.unlink()
        found = ("import importlib.util, transformer_lib.book.course_files as c; "
                 "assert importlib.util.find_spec('benchmarks') is None, 'the library installs a benchmarks package'; "
                 "print('colab-check: the performance appendix finds', c.course_file('benchmarks/time_to_quality.json'))")
        run(python, "-c", found, cwd=folder, env=env)
        # the appendix's exercises in Colab: the benchmarks run from a clone's root
        run(python, "-m", "benchmarks.throughput", "--help", cwd=ROOT, env=env, capture_output=True)
        yield folder, env


if __name__ == "__main__":
    main()
