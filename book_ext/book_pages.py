"""A Sphinx extension of the book's own: the interactive figures' scripts (Vega, Vega-Lite,
vega-embed and book_js/vega-figures.js, about 1 MB) only on the pages that hold a figure.

_config.yml names the scripts for every page (html_js_files: vega/...); on a page whose body has no
`<div class="vega-figure">` (transformer_lib.book.figures) this drops them before the page is written.
"""

FIGURE = 'class="vega-figure"'


def drop_unused_vega(app, pagename, templatename, context, doctree):
    if FIGURE not in context.get("body", ""):
        context["script_files"] = [script for script in context["script_files"] if not
                                   (getattr(script, "filename", None) or "").removeprefix("_static/").startswith("vega/")]


def setup(app):
    app.connect("html-page-context", drop_unused_vega)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
