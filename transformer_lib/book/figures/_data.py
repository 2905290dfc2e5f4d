"""What the figures' data is made of: one record per curve or per matrix, its arrays flattened in the
browser, rounded so the page stays small; and the menus that pick what a figure shows."""

from __future__ import annotations

import altair as alt
import numpy as np


def _rounded(values, decimals: int) -> list:
    return np.round(np.asarray(values, np.float64), decimals).tolist()


def _matrix_record(matrix, decimals: int = 3, **keys) -> dict:
    """One record for a `[queries, keys]` matrix: parallel lists `query`, `key`, `value`, one entry
    per cell (row by row); a chart's `transform_flatten(["query", "key", "value"])` makes them rows."""
    matrix = np.asarray(matrix, np.float64)
    query, key = np.indices(matrix.shape)
    return {**keys, "query": query.ravel().tolist(), "key": key.ravel().tolist(),
            "value": _rounded(matrix.ravel(), decimals)}


def _select(name: str, options: list, labels: list[str], value=None) -> alt.Parameter:
    """A parameter set by a menu under the chart."""
    return alt.param(name=name, value=options[0] if value is None else value,
                     bind=alt.binding_select(options=options, labels=labels, name=f"{name} "))
