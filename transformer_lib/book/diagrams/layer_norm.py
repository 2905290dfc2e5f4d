"""Where the LayerNorm sits around a sub-layer (chapter 6): post-LN, as in the paper, and pre-LN."""

from __future__ import annotations

from transformer_lib.book.diagrams._draw import EDGE, HIGHLIGHT, MUTED, _arrow, _axes, _box


def layer_norm_placement_diagram(ax=None):
    """Where the LayerNorm sits around a sub-layer (chapter 6): post-LN (the paper) and pre-LN.

    Args:
        ax: draw into this Axes (default: a new figure).
    """
    from matplotlib.patches import Circle

    ax = _axes(ax, (0, 10.0), (-0.75, 5.4))
    panels = [(2.4, "post-LN (the paper, §3.1)\nLayerNorm(x + Sublayer(x))", ["sublayer", "norm"]),
              (7.4, "pre-LN (GPT-2 and most models since)\nx + Sublayer(LayerNorm(x))", ["norm", "sublayer"])]
    texts = {"sublayer": "sublayer\n(attention or FFN)", "norm": "LayerNorm"}
    for cx, title, order in panels:
        ax.text(cx, 5.3, title, ha="center", va="top", fontsize=9.5)
        ax.text(cx, 0.0, "x", ha="center", va="center", fontsize=10)
        _arrow(ax, cx, 0.2, cx, 0.72 if order[0] == "norm" else 1.07)  # into the first box
        # The residual path: from x, around the sub-layer, into the addition.
        add_y = 2.6 if order[0] == "sublayer" else 3.4
        ax.plot([cx, cx + 1.65, cx + 1.65], [0.45, 0.45, add_y], color=EDGE, lw=1.0)
        _arrow(ax, cx + 1.65, add_y, cx + 0.22, add_y)
        ax.text(cx + 1.75, (0.45 + add_y) / 2, "residual\npath (x)", ha="left", va="center", fontsize=8)
        ax.add_patch(Circle((cx, add_y), 0.22, facecolor=MUTED, edgecolor=EDGE, gid="residual add"))
        ax.text(cx, add_y, "+", ha="center", va="center", fontsize=11)
        if order[0] == "sublayer":  # post-LN: x -> sublayer -> + x -> LayerNorm
            _box(ax, cx, 1.4, texts["sublayer"], "sublayer", MUTED, width=2.2, height=0.65)
            _arrow(ax, cx, 1.73, cx, add_y - 0.22)
            _box(ax, cx, 3.6, texts["norm"], "norm", HIGHLIGHT, width=2.2, height=0.55)
            _arrow(ax, cx, add_y + 0.22, cx, 3.32)
            _arrow(ax, cx, 3.88, cx, 4.45)
        else:  # pre-LN: x -> LayerNorm -> sublayer -> + x
            _box(ax, cx, 1.0, texts["norm"], "norm", HIGHLIGHT, width=2.2, height=0.55)
            _box(ax, cx, 2.2, texts["sublayer"], "sublayer", MUTED, width=2.2, height=0.65)
            _arrow(ax, cx, 1.28, cx, 1.87)
            _arrow(ax, cx, 2.53, cx, add_y - 0.22)
            _arrow(ax, cx, add_y + 0.22, cx, 4.45)
        ax.text(cx, 4.6, "output", ha="center", va="bottom", fontsize=9)
    ax.text(5.0, -0.55, "Pre-LN leaves the residual path untouched from input to output (the stack then ends "
            "with one more LayerNorm).", ha="center", va="center", fontsize=8.5)
    return ax
