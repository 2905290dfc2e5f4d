"""How an interactive figure reaches the page: `InteractiveFigure` shows an Altair chart as a
`<div class="vega-figure">` holding its Vega-Lite spec (for the book's site), as Vega-Lite (for
JupyterLab), or with Altair's own renderer (in Colab)."""

from __future__ import annotations

import dataclasses
import html
import json
import sys

import altair as alt

VEGALITE_MIME_TYPE = "application/vnd.vegalite.v5+json"


@dataclasses.dataclass
class InteractiveFigure:
    """An Altair chart that shows itself on the book's static site, in JupyterLab and in Colab.

    Attributes:
        chart: the Altair chart, with its data inline.
        name: a short identifier (`data-figure` in the HTML), e.g. "positional-encoding".
        description: one line saying what the figure shows (the text/plain output and the
            figure's label for screen readers).
    """

    chart: alt.TopLevelMixin
    name: str
    description: str

    def spec(self) -> dict:
        """The Vega-Lite spec, validated against Altair's schema."""
        return self.chart.to_dict(validate=True)

    def to_html(self) -> str:
        return figure_html(self.spec(), self.name, self.description)

    def _repr_mimebundle_(self, include=None, exclude=None) -> dict:
        if "google.colab" in sys.modules:  # Colab renders neither our div nor the Vega-Lite MIME type
            return self.chart._repr_mimebundle_(include, exclude)
        spec = self.spec()
        return {"text/html": figure_html(spec, self.name, self.description),
                VEGALITE_MIME_TYPE: spec,
                "text/plain": self.description}


def figure_html(spec: dict, name: str, description: str) -> str:
    """The HTML of a figure: a `<div class="vega-figure">` holding `spec` as JSON, for the site's
    script to draw, and a line of text shown until it does (or where no script runs).

    The JSON is inert (`type="application/json"`), every "<" in it is escaped so that no string of
    the data can close the script element, and "$schema" (a URL) is left out: the site's Vega-Lite
    is the version of Altair's schema.
    """
    spec = {key: value for key, value in spec.items() if key != "$schema"}
    data = json.dumps(spec, separators=(",", ":"), allow_nan=False).replace("<", "\\u003c")
    label = html.escape(description)
    return (f'<div class="vega-figure" data-figure="{html.escape(name)}" role="figure" aria-label="{label}" '
            f'style="overflow-x: auto">'
            f'<script type="application/json">{data}</script>'
            f'<p class="vega-figure-fallback"><em>Interactive figure (needs JavaScript): {label}</em></p>'
            f"</div>")
