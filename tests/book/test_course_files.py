"""course_file: a chapter finds the course's benchmark records from any folder of a checkout, or downloads them."""

from pathlib import Path

import keras
import pytest

from transformer_lib.book import course_files
from transformer_lib.book.course_files import course_file

ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.parametrize("folder", ["chapters", "student/chapters", "."])
def test_a_chapter_finds_a_benchmark_record_from_either_edition_and_the_root(folder, monkeypatch):
    monkeypatch.chdir(ROOT / folder)
    monkeypatch.setattr(keras.utils, "get_file", lambda *a, **k: pytest.fail("downloaded a file the checkout has"))
    found = course_file("benchmarks/recipe_study.json")
    assert found.resolve() == (ROOT / "benchmarks" / "recipe_study.json").resolve()


def test_a_file_is_found_from_a_folder_nested_below_it(tmp_path, monkeypatch):
    (tmp_path / "benchmarks").mkdir()
    (tmp_path / "benchmarks" / "run.json").write_text("{}")
    nested = tmp_path / "student" / "chapters" / "deeper"
    nested.mkdir(parents=True)
    monkeypatch.setattr(keras.utils, "get_file", lambda *a, **k: pytest.fail("downloaded a file the checkout has"))
    assert course_file("benchmarks/run.json", start=nested).read_text() == "{}"
    monkeypatch.chdir(nested)
    assert course_file("benchmarks/run.json").resolve() == (tmp_path / "benchmarks" / "run.json").resolve()


def test_without_a_checkout_the_committed_copy_is_downloaded_from_the_course_repository(tmp_path, monkeypatch):
    asked = []

    def get_file(fname, origin, **kwargs):
        asked.append((fname, origin))
        (tmp_path / fname).write_text("{}")
        return str(tmp_path / fname)

    monkeypatch.setattr(keras.utils, "get_file", get_file)
    monkeypatch.setattr(course_files, "REPOSITORY", "https://github.com/someone/course")
    assert course_file("benchmarks/nowhere.json", start=tmp_path).read_text() == "{}"
    assert asked == [("benchmarks_nowhere.json",
                      "https://raw.githubusercontent.com/someone/course/main/benchmarks/nowhere.json")]


def test_a_missing_file_without_network_says_where_it_looked_and_what_to_do(tmp_path, monkeypatch):
    def offline(fname, origin, **kwargs):
        raise Exception(f"URL fetch failure on {origin}: None -- [Errno -3] Temporary failure in name resolution")

    monkeypatch.setattr(keras.utils, "get_file", offline)
    with pytest.raises(FileNotFoundError) as caught:
        course_file("benchmarks/nowhere.json", start=tmp_path)
    message = str(caught.value)
    assert f"benchmarks/nowhere.json is neither in {tmp_path.resolve()} nor in a folder above it" in message
    assert course_files.raw_url("benchmarks/nowhere.json") in message and "Temporary failure" in message
    assert "Run the chapter from a clone of the course" in message and "connect to the internet" in message


def test_without_a_checkout_a_record_installed_with_the_library_is_used(tmp_path, monkeypatch):
    site = tmp_path / "site-packages" / "coursebench"
    site.mkdir(parents=True)
    (site / "__init__.py").write_text("")
    (site / "run.json").write_text('{"installed": true}')
    monkeypatch.syspath_prepend(str(tmp_path / "site-packages"))
    monkeypatch.setattr(course_files, "INSTALLED_PACKAGES", ("coursebench",))  # as if the course installed it
    monkeypatch.setattr(keras.utils, "get_file", lambda *a, **k: pytest.fail("downloaded a file installed here"))
    elsewhere = tmp_path / "colab"
    elsewhere.mkdir()
    assert course_file("coursebench/run.json", start=elsewhere).read_text() == '{"installed": true}'
    monkeypatch.setattr(course_files, "INSTALLED_PACKAGES", ())  # a package the course does not install: not its file
    monkeypatch.setattr(keras.utils, "get_file", lambda *a, **k: (_ for _ in ()).throw(OSError("offline")))
    with pytest.raises(FileNotFoundError):
        course_file("coursebench/run.json", start=elsewhere)


def test_the_local_lookup_finds_the_checkouts_copy_and_never_downloads(tmp_path, monkeypatch):
    from transformer_lib.book.course_files import local_course_file

    monkeypatch.setattr(keras.utils, "get_file", lambda *a, **k: pytest.fail("the local lookup downloaded"))
    found = local_course_file("benchmarks/recipe_study.json", start=ROOT / "student" / "chapters")
    assert found.resolve() == (ROOT / "benchmarks" / "recipe_study.json").resolve()
    assert local_course_file("book_static/translator/manifest.json", start=tmp_path) is None


def test_the_published_translator_folder_exists_only_in_a_clone(tmp_path, monkeypatch):
    # Chapter 8's export writes into the course's book_static/translator in a clone, and into a temporary
    # folder elsewhere (a fresh Colab runtime, offline or not): it must never try to download the folder.

    monkeypatch.setattr(keras.utils, "get_file", lambda *a, **k: pytest.fail("looking for the folder downloaded"))
    assert course_files.published_folder(ROOT / "chapters").resolve() == (ROOT / "book_static" / "translator").resolve()
    monkeypatch.chdir(tmp_path)
    assert course_files.published_folder() is None


def test_the_widget_without_an_exported_model_says_so_instead_of_failing(tmp_path, monkeypatch):
    from transformer_lib.book.browser_translator import BrowserTranslator, NoBrowserTranslator, browser_translator

    def offline(fname, origin, **kwargs):
        raise Exception(f"URL fetch failure on {origin}: [Errno -2] Name or service not known")

    monkeypatch.setattr(keras.utils, "get_file", offline)
    monkeypatch.chdir(tmp_path)  # a fresh runtime: no clone around it, offline
    for widget in (browser_translator(), browser_translator(tmp_path)):
        assert isinstance(widget, NoBrowserTranslator)
        assert "runs on the book's published site" in repr(widget) and "translation box above" in repr(widget)
        assert "no exported model" in widget._repr_html_()
    assert "Name or service not known" in repr(browser_translator())  # why, for the default folder
    published = browser_translator(ROOT / "book_static" / "translator")  # a folder with a manifest: the widget
    assert isinstance(published, BrowserTranslator) and "Tatoeba test BLEU" in published.about()
