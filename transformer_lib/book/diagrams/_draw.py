"""What every idea diagram is drawn with: the colours, a blank Axes, a box with text, an arrow, and
the check of a count argument."""

from __future__ import annotations

HIGHLIGHT, MUTED, EDGE = "#f4b942", "#e9e9e9", "#555555"


def _axes(ax, xlim, ylim, width_inches=8.0):
    """A blank Axes with equal units on both axes; a new figure `width_inches` wide if `ax` is None."""
    import matplotlib.pyplot as plt

    if ax is None:
        height = width_inches * (ylim[1] - ylim[0]) / (xlim[1] - xlim[0])
        _, ax = plt.subplots(figsize=(width_inches, height))
        ax.figure.subplots_adjust(left=0.01, right=0.99, bottom=0.01, top=0.99)
    ax.set(xlim=xlim, ylim=ylim, aspect="equal")
    ax.axis("off")
    return ax


def _box(ax, x, y, text, gid, face=HIGHLIGHT, width=1.2, height=0.6, fontsize=9, **style):
    """A rounded box centred on (x, y), named `gid`, with `text` in its middle."""
    from matplotlib.patches import FancyBboxPatch

    ax.add_patch(FancyBboxPatch((x - width / 2, y - height / 2), width, height, boxstyle="round,pad=0.03",
                                facecolor=face, edgecolor=EDGE, linewidth=1.0, gid=gid, **style))
    ax.text(x, y, text, ha="center", va="center", fontsize=fontsize)


def _arrow(ax, x0, y0, x1, y1, **style):
    """An arrow from (x0, y0) to (x1, y1)."""
    ax.annotate("", xy=(x1, y1), xytext=(x0, y0),
                arrowprops=dict(arrowstyle="->", color=EDGE, lw=1.0, shrinkA=0, shrinkB=0, **style))


def _require_count(name, value, most, example):
    """`value` must be an integer from 1 to `most` (more would not fit in the picture)."""
    from numbers import Integral

    if isinstance(value, bool) or not isinstance(value, Integral) or not 1 <= value <= most:
        raise ValueError(f"{name} must be an integer from 1 to {most}, got {value!r}; pass e.g. {name}={example}.")
