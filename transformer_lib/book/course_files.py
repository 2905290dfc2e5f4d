"""A file of the course repository (a benchmark record), wherever the chapter runs.

A chapter that shows a committed record (`benchmarks/recipe_study.json`, ...) finds it in the checkout it
runs from, whether from `chapters/`, `student/chapters/` or the root; in Colab, with no checkout, it
downloads the copy committed to the course repository (`REPOSITORY`, which `make set-repository` rewrites).
"""

from __future__ import annotations

from pathlib import Path

REPOSITORY = "https://github.com/attention-step-by-step/attention-step-by-step"
BRANCH = "main"
INSTALLED_PACKAGES = ("transformer_lib",)  # pyproject.toml's packages: their files come installed


def raw_url(relative: str, repository: str | None = None) -> str:
    """The address of the committed copy of `relative` (a path from the repository's root) on GitHub."""
    raw = (repository or REPOSITORY).replace("https://github.com/", "https://raw.githubusercontent.com/")
    return f"{raw}/{BRANCH}/{relative}"


def course_file(relative: str, start: Path | str | None = None) -> Path:
    """The file `relative` (e.g. "benchmarks/recipe_study.json") of the course.

    Looked for under `start` (default: the current folder) and each folder above it; when none
    has it, the committed copy is downloaded from the course repository once (keras.utils.get_file
    keeps it in ~/.keras/datasets). Raises FileNotFoundError, saying what to do, when neither works.
    """
    start = Path.cwd() if start is None else Path(start)
    found = local_course_file(relative, start)
    if found is not None:
        return found
    url = raw_url(relative)
    try:
        import keras

        return Path(keras.utils.get_file(relative.replace("/", "_"), url))
    except Exception as error:  # no network, repository not published, file not committed
        raise FileNotFoundError(
            f"{relative} is neither in {start.resolve()} nor in a folder above it, and its committed copy could "
            f"not be downloaded from {url} ({type(error).__name__}: {error}). Run the chapter from a clone of the "
            "course (its chapters/ or student/chapters/ folder), or connect to the internet and run the cell again."
        ) from error


def local_course_file(relative: str, start: Path | str | None = None) -> Path | None:
    """`relative` in the checkout around `start` (default: the current folder; it and each folder above
    it) or in the installed package; None when neither has it. Never downloads."""
    start = Path.cwd() if start is None else Path(start)
    for folder in (start, *start.resolve().parents):
        if (folder / relative).is_file():
            return folder / relative
    return _installed(relative)


def _installed(relative: str) -> Path | None:
    """`relative` inside an installed package of the course (transformer_lib/... in site-packages), if there."""
    import importlib.util

    package, _, rest = relative.partition("/")
    try:
        # only the packages the course installs (a folder like book_static/ may import as a namespace package)
        spec = importlib.util.find_spec(package) if rest and package in INSTALLED_PACKAGES else None
    except (ImportError, ValueError):
        spec = None
    if spec is None or not spec.submodule_search_locations:
        return None
    path = Path(next(iter(spec.submodule_search_locations))) / rest
    return path if path.is_file() else None


def published_folder(start: str | Path | None = None) -> Path | None:
    """The course's `book_static/translator/` (the translator its published page loads) when this runs
    inside a clone of the course, looked for from `start` (default: the current folder) upwards;
    None elsewhere (a fresh Colab runtime), where there is no published folder to write into."""
    from transformer_lib.export.web import MANIFEST, PUBLISHED

    manifest = local_course_file(f"{PUBLISHED}/{MANIFEST}", start)
    return None if manifest is None else manifest.parent
