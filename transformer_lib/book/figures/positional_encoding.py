"""§3.5: the positional encoding, one dimension's curve picked with a slider beside the whole heatmap."""

from __future__ import annotations

import altair as alt
import numpy as np

from transformer_lib.book.figures._data import _rounded
from transformer_lib.book.figures.interactive import InteractiveFigure
from transformer_lib.layers.positional_encoding import positional_encoding


def positional_encoding_figure(length: int = 64, depth: int = 64) -> InteractiveFigure:
    """Pick a dimension with a slider: its curve PE[:, dimension] over the positions, and the whole
    encoding as a heatmap `[length, depth]` with that dimension's column outlined.

    Values are `transformer_lib.layers.positional_encoding(length, depth)`, rounded to 4 decimals.
    """
    encoding = np.asarray(positional_encoding(length, depth))  # (length, depth)
    positions = list(range(length))
    data = alt.Data(values=[{"dimension": d, "position": positions, "value": _rounded(encoding[:, d], 4)}
                            for d in range(depth)])  # one record per dimension: its curve
    dimension = alt.param(name="dimension", value=0,
                          bind=alt.binding_range(min=0, max=depth - 1, step=1, name="dimension "))
    points = alt.Chart(data).transform_flatten(["position", "value"])  # one row per (position, dimension)
    # Even dimensions are sines, odd ones cosines; dimensions 2i and 2i+1 share the wavelength.
    title = alt.expr(f"'PE[:, ' + dimension + '] = ' + (dimension % 2 ? 'cos' : 'sin') "
                     f"+ '(pos / 10000^(' + 2 * floor(dimension / 2) + '/{depth}))'")
    curve = points.transform_filter(alt.datum.dimension == dimension).mark_line(point=True).encode(
        x=alt.X("position:Q", title="position"),
        y=alt.Y("value:Q", title="PE[position, dimension]", scale=alt.Scale(domain=[-1, 1])),
        tooltip=["position:Q", "dimension:Q", alt.Tooltip("value:Q", format=".4f")],
    ).properties(width=240, height=200, title=alt.Title(title))
    ticks = alt.Axis(values=list(range(0, max(length, depth), 8)), labelAngle=0)
    heatmap = points.mark_rect().encode(
        x=alt.X("dimension:O", axis=ticks),
        y=alt.Y("position:O", axis=ticks),
        color=alt.Color("value:Q", scale=alt.Scale(scheme="redblue", domain=[-1, 1]), title="PE"),
        tooltip=["position:Q", "dimension:Q", alt.Tooltip("value:Q", format=".4f")],
    )
    column = alt.Chart(data).transform_filter(alt.datum.dimension == dimension).mark_rect(
        filled=False, stroke="black", strokeWidth=2).encode(x="dimension:O")  # one record: the whole column
    whole = alt.layer(heatmap, column).properties(width=240, height=240, title="the whole encoding")
    return InteractiveFigure(
        alt.hconcat(curve, whole).add_params(dimension), "positional-encoding",
        f"Interactive figure: the positional encoding of {length} positions in {depth} dimensions (§3.5); "
        f"a slider picks the dimension whose curve is drawn.")
