"""A training history as line charts, one panel per metric, the epoch under the pointer marked in each."""

from __future__ import annotations

from collections.abc import Sequence

import altair as alt
import numpy as np

from transformer_lib.book.figures.interactive import InteractiveFigure


def _require_history(history: dict[str, Sequence[float]], metrics: Sequence[str] | None) -> tuple[list[str], int]:
    """The series to draw and the number of epochs; a clear error for a missing series, lists of
    different lengths or an empty history."""
    series = [k for k in history if k not in ("epoch", "seconds")] if metrics is None else list(metrics)
    missing = [k for k in series if k not in history]
    if not series or missing:
        raise ValueError(f"training_curves_figure needs series of the history to draw; missing: {missing}, "
                         f"the history has {sorted(history)}.")
    lengths = {k: len(history[k]) for k in series}
    if len(set(lengths.values())) != 1:
        raise ValueError(f"The history's lists must have one entry per epoch, but their lengths differ: {lengths}.")
    n = next(iter(lengths.values()))
    if n == 0:
        raise ValueError("The history has no epoch yet: train for at least one epoch first.")
    return series, n


def _epoch_axis(epochs: list[int]) -> alt.X:
    """The epoch axis, labelling whole epochs only, at most ten: every 1, 2, 5, 10, 20, 50, ... epochs,
    the first that fits."""
    every = next(s * 10**k for k in range(12) for s in (1, 2, 5) if len(epochs) <= 10 * s * 10**k)
    ticks = [e for e in range(min(epochs), max(epochs) + 1) if e % every == 0 or every == 1]
    return alt.X("epoch:Q", title="epoch", axis=alt.Axis(values=ticks, format="d"))


def _panel(data, metric: str, own: list[str], epoch: alt.X, hover, tooltip: list, index: int):
    """One metric's panel: its training and validation lines (`own`), the points and the rule of the
    epoch under the pointer, and the invisible points that follow the pointer."""
    lines = alt.Chart(data).transform_fold(own, as_=["series", "value"]).transform_filter(
        "isValid(datum.value)").transform_calculate(
        split="indexof(datum.series, 'val_') === 0 ? 'validation' : 'training'").encode(
        x=epoch,
        y=alt.Y("value:Q", title=metric, scale=alt.Scale(zero=False)),
        color=alt.Color("split:N", scale=alt.Scale(domain=["training", "validation"]), title=None),
    )
    marked = lines.mark_point(filled=True, size=50).encode(opacity=alt.condition(hover, alt.value(1), alt.value(0)))
    rule = alt.Chart(data).mark_rule(color="#888888").encode(
        x=epoch, opacity=alt.condition(hover, alt.value(0.7), alt.value(0)), tooltip=tooltip)
    pointer = alt.Chart(data).mark_point(opacity=0).encode(x=epoch, tooltip=tooltip).add_params(
        hover).properties(name=f"pointer_{index}")  # a fixed name: the same spec on every run
    panel = alt.layer(lines.mark_line(), marked, rule, pointer)
    return panel.properties(width=250, height=180, title=metric)


def training_curves_figure(history: dict[str, Sequence[float]], metrics: Sequence[str] | None = None
                           ) -> InteractiveFigure:
    """Line charts of a training history, one panel per metric (its training and validation series
    together: "loss" with "val_loss"); the pointer picks the nearest epoch, whose values the tooltip
    lists, and marks it in every panel.

    Args:
        history: per-epoch lists of equal length, like Keras's `History.history` or what
            `transformer_lib.training.loop.train` returns. An "epoch" list numbers the epochs (else
            1, 2, ...); missing or non-finite values are left out of the lines.
        metrics: the series to draw; default every series but "epoch" and "seconds".
    """
    series, n = _require_history(history, metrics)
    epochs = [int(e) for e in history["epoch"]] if "epoch" in history else list(range(1, n + 1))

    def value(v):
        return float(v) if v is not None and np.isfinite(v) else None

    data = alt.Data(values=[{"epoch": epochs[i], **{k: value(history[k][i]) for k in series}} for i in range(n)])
    hover = alt.selection_point(name="epoch_under_pointer", on="pointerover", nearest=True, fields=["epoch"],
                                empty=False, clear="pointerout")
    epoch = _epoch_axis(epochs)
    tooltip = ["epoch:Q", *[alt.Tooltip(f"{k}:Q", format=".4g") for k in series]]
    panels = []
    for metric in dict.fromkeys(k.removeprefix("val_") for k in series):  # "loss" and "val_loss": one panel
        own = [k for k in series if k.removeprefix("val_") == metric]
        panels.append(_panel(data, metric, own, epoch, hover, tooltip, len(panels)))
    return InteractiveFigure(
        alt.concat(*panels, columns=2), "training-curves",
        f"Interactive figure: {', '.join(series)} over {n} epochs; the tooltip gives the values of the epoch "
        f"under the pointer.")
