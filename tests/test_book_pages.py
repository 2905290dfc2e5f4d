"""book_ext/book_pages.py, the book's own Sphinx extension, on pages written by hand (the site check
sees its effect on the real site)."""

import sys
from pathlib import Path
from types import SimpleNamespace

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "book_ext"))
import book_pages  # noqa: E402

ICONS = '<script src="../_static/vendor/fontawesome/6.5.2/js/all.min.js?digest=dfe6"></script>'


def site(tmp_path):
    (tmp_path / "chapters").mkdir()
    page = tmp_path / "chapters" / "01_data.html"
    page.write_text(f'<head>\n  {ICONS}\n<link href="../_static/vendor/fontawesome/6.5.2/css/all.min.css">\n</head>')
    scripts = tmp_path / "_static" / "vendor" / "fontawesome" / "6.5.2" / "js"
    scripts.mkdir(parents=True)
    (scripts / "all.min.js").write_text("// 1.5 MB")
    (tmp_path / "_static" / "vendor" / "fontawesome" / "6.5.2" / "css").mkdir()
    return page, scripts


def test_the_font_awesome_script_leaves_every_page_and_the_site_its_stylesheet_stays(tmp_path):
    page, scripts = site(tmp_path)
    app = SimpleNamespace(outdir=str(tmp_path), builder=SimpleNamespace(format="html"))
    book_pages.drop_font_awesome_script(app, None)
    assert page.read_text() == '<head>\n<link href="../_static/vendor/fontawesome/6.5.2/css/all.min.css">\n</head>'
    assert not scripts.exists() and scripts.parent.joinpath("css").is_dir()


def test_a_failed_build_or_another_builder_is_left_alone(tmp_path):
    page, scripts = site(tmp_path)
    stored = page.read_text()
    book_pages.drop_font_awesome_script(SimpleNamespace(outdir=str(tmp_path), builder=SimpleNamespace(format="html")),
                                        RuntimeError("a page failed"))
    book_pages.drop_font_awesome_script(SimpleNamespace(outdir=str(tmp_path), builder=SimpleNamespace(format="latex")), None)
    assert page.read_text() == stored and scripts.is_dir()


def test_solution_markers_leave_the_shown_code_and_vega_leaves_pages_without_a_figure():
    body = ('<span class="k">def</span> f():\n    <span class="c1"># BEGIN SOLUTION</span>\n    return 1\n'
            '    <span class="c1"># END SOLUTION</span>\n')
    context = {"body": body, "script_files": [SimpleNamespace(filename="_static/vega/vega.min.js"),
                                              SimpleNamespace(filename="_static/doctools.js")]}
    book_pages.drop_solution_markers(None, "p", "page.html", context, None)
    book_pages.drop_unused_vega(None, "p", "page.html", context, None)
    assert context["body"] == '<span class="k">def</span> f():\n    return 1\n'
    assert [script.filename for script in context["script_files"]] == ["_static/doctools.js"]


def scripts_kept(body: str) -> list[str]:
    names = ["_static/vega/vega.min.js", "_static/vega/vega-figures.js", "_static/browser-translator/browser-translator.js",
             "_static/doctools.js"]
    context = {"body": body, "script_files": [SimpleNamespace(filename=name) for name in names]}
    book_pages.drop_unused_vega(None, "p", "page.html", context, None)
    return [script.filename.split("/")[1] for script in context["script_files"]]


def test_the_translators_script_stays_only_on_a_page_with_the_translator_and_keeps_vega_for_its_map():
    assert scripts_kept("<p>text</p>") == ["doctools.js"]
    assert scripts_kept('<div class="vega-figure"></div>') == ["vega", "vega", "doctools.js"]
    assert scripts_kept('<div class="browser-translator"></div>') == ["vega", "vega", "browser-translator", "doctools.js"]
    assert scripts_kept('<div class="vega-figure"></div><div class="browser-translator"></div>') == \
        ["vega", "vega", "browser-translator", "doctools.js"]
