"""§3.2.3: the masks of a padded batch, one sequence picked with a menu."""

from __future__ import annotations

from collections.abc import Sequence

import altair as alt
import numpy as np

from transformer_lib.utils.checks import require_positive_int
from transformer_lib.book.figures._data import _matrix_record, _select
from transformer_lib.book.figures.interactive import InteractiveFigure
from transformer_lib.layers.masks import decoder_mask, look_ahead_mask, padding_mask

MASK_NAMES = ("padding mask", "look-ahead mask", "combined mask")


def masks_figure(lengths: Sequence[int] = (5, 3, 6)) -> InteractiveFigure:
    """Pick a sequence of a padded batch: its padding mask, the look-ahead mask and the decoder's
    combined mask (`decoder_mask`), each as a `[query, key]` grid; 1 = blocked, the library's
    polarity (`transformer_lib.layers.masks`).

    Args:
        lengths: the real tokens of each sequence; the batch is padded with id 0 to the longest.
    """
    if len(lengths) == 0:
        raise ValueError("masks_figure needs at least one sequence length.")
    for n in lengths:
        require_positive_int("each of lengths", n)
    lengths = [int(n) for n in lengths]
    width = max(lengths)
    token_ids = np.array([[7] * n + [0] * (width - n) for n in lengths], np.int32)  # any id but 0 is a token
    padding = np.broadcast_to(np.asarray(padding_mask(token_ids))[:, 0], (len(lengths), width, width))
    ahead = np.asarray(look_ahead_mask(width))  # (width, width), the same for every sequence
    combined = np.asarray(decoder_mask(token_ids))[:, 0]  # (batch, width, width)
    data = alt.Data(values=[
        _matrix_record(matrix, 0, sequence=b, mask=name)
        for b in range(len(lengths))
        for name, matrix in zip(MASK_NAMES, (padding[b], ahead, combined[b]))])
    sequence = _select("sequence", list(range(len(lengths))),
                       [f"{b}: {n} tokens, {width - n} padding" for b, n in enumerate(lengths)])
    cells = alt.Chart().encode(
        x=alt.X("key:O", title="key position"),
        y=alt.Y("query:O", title="query position"),
    )
    grid = cells.mark_rect(stroke="white").encode(
        color=alt.Color("value:N", scale=alt.Scale(domain=[0, 1], range=["#f2f2f2", "#b2182b"]),
                        title="1 = blocked"),
        tooltip=["query:Q", "key:Q", alt.Tooltip("value:Q", title="blocked")],
    )
    text = cells.mark_text().encode(text="value:Q", color=alt.condition(alt.datum.value == 1, alt.value("white"),
                                                                        alt.value("black")))
    chart = alt.layer(grid, text, data=data).transform_filter(alt.datum.sequence == sequence).transform_flatten(
        ["query", "key", "value"]).properties(width=alt.Step(24), height=alt.Step(24)).facet(
        column=alt.Column("mask:N", sort=list(MASK_NAMES), title=None)).add_params(sequence)
    return InteractiveFigure(
        chart, "masks",
        f"Interactive figure: padding, look-ahead and combined masks of a batch of {len(lengths)} sequences "
        f"padded to {width} (§3.2.3; 1 = blocked); a menu picks the sequence.")
