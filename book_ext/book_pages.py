"""A Sphinx extension of the book's own, applied to every page before it is written:

- the interactive figures' scripts (Vega, Vega-Lite, vega-embed and book_js/vega-figures.js, about
  1 MB) only on the pages that hold a figure: _config.yml names them for every page (html_js_files:
  vega/...), and a page whose body has no `<div class="vega-figure">` (transformer_lib.book.figures)
  loses them; likewise the translator's script (browser-translator/...) on a page without a
  `<div class="browser-translator">` (transformer_lib.book.browser_translator);
- the exercise cells' `# BEGIN SOLUTION` / `# END SOLUTION` lines (tools/student_edition.py's
  markers) out of the shown code: a reader sees the reference solution as a solution, not its markup;
- no Font Awesome script (1.5 MB on every page): the theme's template loads both Font Awesome's
  stylesheet with its web fonts, which draw the icons, and its script, which draws them again as
  SVG; once the site is written, the script's tag leaves every page and the script the site.
"""

import re
import shutil
from pathlib import Path

FIGURE = 'class="vega-figure"'
TRANSLATOR = 'class="browser-translator"'
# a highlighted comment line holding only a solution marker (and its hint)
SOLUTION_MARKER = re.compile(r'^[ \t]*<span class="c1"># (?:BEGIN|END) SOLUTION[^<]*</span>\n', re.MULTILINE)


def drop_solution_markers(app, pagename, templatename, context, doctree):
    if "body" in context:
        context["body"] = SOLUTION_MARKER.sub("", context["body"])


def drop_unused_vega(app, pagename, templatename, context, doctree):
    body = context.get("body", "")
    unused = [folder for folder, marker in (("vega/", FIGURE), ("browser-translator/", TRANSLATOR)) if marker not in body]
    if TRANSLATOR in body and "vega/" in unused:
        unused.remove("vega/")  # the translator draws its attention map with Vega-Lite too
    context["script_files"] = [script for script in context["script_files"] if not
                               (getattr(script, "filename", None) or "").removeprefix("_static/").startswith(tuple(unused))]


FONT_AWESOME_SCRIPT = re.compile(r'[ \t]*<script src="[^"]*_static/vendor/fontawesome/[^/"]+/js/all\.min\.js[^"]*"></script>\n?')


def drop_font_awesome_script(app, exception):
    if exception is not None or app.builder.format != "html":
        return
    out = Path(app.outdir)
    for page in out.rglob("*.html"):
        text = page.read_text(encoding="utf-8")
        if FONT_AWESOME_SCRIPT.search(text):
            page.write_text(FONT_AWESOME_SCRIPT.sub("", text), encoding="utf-8")
    for scripts in (out / "_static" / "vendor" / "fontawesome").glob("*/js"):
        shutil.rmtree(scripts)


def setup(app):
    app.connect("html-page-context", drop_unused_vega)
    app.connect("html-page-context", drop_solution_markers)
    app.connect("build-finished", drop_font_awesome_script)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
