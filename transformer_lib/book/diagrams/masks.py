"""The masks of a padded batch (chapter 4, §3.2.3): padding, look-ahead and the decoder's combined mask."""

from __future__ import annotations

from transformer_lib.book.diagrams._draw import EDGE, MUTED, _axes

CELL, GAP = 0.5, 1.3  # the side of a grid's square and the space between two grids


def _require_lengths(lengths) -> tuple:
    """`lengths` as a tuple of positive integers, the longest at most 10 (more would not be readable)."""
    import numpy as np

    lengths = () if isinstance(lengths, (str, int)) else tuple(lengths)
    if not lengths or any(isinstance(n, bool) or not isinstance(n, (int, np.integer)) or n < 1 for n in lengths):
        raise ValueError(f"lengths must be the real lengths of the batch's sequences, positive integers such as "
                         f"(5, 3); got {lengths!r}.")
    if max(lengths) > 10:
        raise ValueError(f"The longest sequence has {max(lengths)} tokens; pass lengths of at most 10, so that the "
                         "grids stay readable.")
    return lengths


def _draw_grid(ax, grid, gid, title, x0, top, tokens):
    """One mask as a grid of 0s and 1s (rows: queries, columns: keys), its tokens and title around it."""
    from matplotlib.patches import Rectangle

    size = len(tokens)
    for i in range(grid.shape[0]):  # query positions, top to bottom
        for j in range(size):  # key positions, left to right
            blocked = grid[i, j] == 1
            ax.add_patch(Rectangle((x0 + j * CELL, top - 0.9 - (i + 1) * CELL), CELL, CELL, gid=gid,
                                   facecolor=EDGE if blocked else MUTED, edgecolor="white", linewidth=1.5))
            ax.text(x0 + (j + 0.5) * CELL, top - 0.9 - (i + 0.5) * CELL, str(grid[i, j]), ha="center",
                    va="center", fontsize=8, color="white" if blocked else EDGE)
    for j, token in enumerate(tokens):  # keys along the top
        ax.text(x0 + (j + 0.5) * CELL, top - 0.85, token, ha="center", va="bottom", fontsize=8)
    if grid.shape[0] > 1:
        for i, token in enumerate(tokens):  # queries down the left
            ax.text(x0 - 0.08, top - 0.9 - (i + 0.5) * CELL, token, ha="right", va="center", fontsize=8)
    ax.text(x0 + size * CELL / 2, top - 0.35, title, ha="center", va="bottom", fontsize=9)


def masks_diagram(lengths=(5, 3), ax=None):
    """The masks of a padded batch (chapter 4), drawn for its shortest sequence.

    Polarity as in `transformer_lib.layers.masks`: 1 (dark) = blocked, 0 (light) = may attend. Three grids:
    the padding mask (one row: it blocks keys, whatever the query), the look-ahead mask (above the
    diagonal: the future) and the decoder's combined mask, their maximum.

    Args:
        lengths: the real length of each sequence of the batch, e.g. (5, 3); all are padded to the longest.
        ax: draw into this Axes (default: a new figure).
    """
    import numpy as np

    lengths = _require_lengths(lengths)
    size = max(lengths)
    shortest = int(np.argmin(lengths))
    real = lengths[shortest]
    padding = (np.arange(size) >= real).astype(int)  # one row: 1 where the key is padding
    look_ahead = np.triu(np.ones((size, size), dtype=int), k=1)  # 1 above the diagonal: future keys
    combined = np.maximum(look_ahead, padding[None, :])  # blocked if either mask blocks it

    tokens = [f"x{i + 1}" for i in range(real)] + ["pad"] * (size - real)
    top = size * CELL + 1.2
    ax = _axes(ax, (0, 3 * size * CELL + 2 * GAP + 1.2), (-0.9, top + 0.4))
    grids = [("padding", padding[None, :], "padding mask\n(one row, for every query)"),
             ("look-ahead", look_ahead, "look-ahead mask\n(no peeking ahead)"),
             ("combined", combined, "combined =\nmax(padding, look-ahead)")]
    for g, (gid, grid, title) in enumerate(grids):
        _draw_grid(ax, grid, gid, title, 0.9 + g * (size * CELL + GAP), top, tokens)
    ax.text(0.15, -0.25, f"Sequence {shortest} of the batch {lengths}: {real} real tokens padded to {size}. "
            "Columns are keys, rows are queries;\n1 (dark) = blocked, 0 (light) = may attend.", ha="left",
            va="center", fontsize=8.5)
    return ax
