"""A Sphinx extension of the book's own, applied to every page before it is written:

- the interactive figures' scripts (Vega, Vega-Lite, vega-embed and book_js/vega-figures.js, about
  1 MB) only on the pages that hold a figure: _config.yml names them for every page (html_js_files:
  vega/...), and a page whose body has no `<div class="vega-figure">` (transformer_lib.book.figures)
  loses them;
- the exercise cells' `# BEGIN SOLUTION` / `# END SOLUTION` lines (tools/student_edition.py's
  markers) out of the shown code: a reader sees the reference solution as a solution, not its markup.
"""

import re

FIGURE = 'class="vega-figure"'
# a highlighted comment line holding only a solution marker (and its hint)
SOLUTION_MARKER = re.compile(r'^[ \t]*<span class="c1"># (?:BEGIN|END) SOLUTION[^<]*</span>\n', re.MULTILINE)


def drop_solution_markers(app, pagename, templatename, context, doctree):
    if "body" in context:
        context["body"] = SOLUTION_MARKER.sub("", context["body"])


def drop_unused_vega(app, pagename, templatename, context, doctree):
    if FIGURE not in context.get("body", ""):
        context["script_files"] = [script for script in context["script_files"] if not
                                   (getattr(script, "filename", None) or "").removeprefix("_static/").startswith("vega/")]


def setup(app):
    app.connect("html-page-context", drop_unused_vega)
    app.connect("html-page-context", drop_solution_markers)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
