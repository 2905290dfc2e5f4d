"""Attention as a flow (chapter 4, §3.2.1) and split into heads (chapter 5, §3.2.2)."""

from __future__ import annotations

from transformer_lib.book.diagrams._draw import EDGE, HIGHLIGHT, MUTED, _arrow, _axes, _box, _require_count


def qkv_diagram(ax=None):
    """Scaled dot-product attention (§3.2.1, chapter 4) as a flow from Q, K and V to the output.

    Args:
        ax: draw into this Axes (default: a new figure).
    """
    ax = _axes(ax, (0, 12.6), (0.3, 3.9))
    _box(ax, 0.75, 2.85, "Q (queries)", "query", MUTED, width=1.3, height=0.5, fontsize=8.5)
    _box(ax, 0.75, 1.95, "K (keys)", "key", MUTED, width=1.3, height=0.5, fontsize=8.5)
    _box(ax, 0.75, 0.8, "V (values)", "value", MUTED, width=1.3, height=0.5, fontsize=8.5)
    steps = [(r"$Q\,K^{\top}$", "matmul", "scores\n[len_q, len_k]"),
             (r"$\div\ \sqrt{d_k}$", "scale", "keeps scores in\nsoftmax's range"),
             ("mask\n(optional)", "mask", "blocked (1):\nadd -1e9"),
             ("softmax", "softmax", "weights: each\nrow sums to 1"),
             (r"$\cdot\ V$", "weighted sum", "")]
    xs = [2.85 + 1.75 * i for i in range(len(steps))]
    y = 2.4
    for i, (x, (text, gid, note)) in enumerate(zip(xs, steps)):
        _box(ax, x, y, text, gid, face=MUTED if gid == "mask" else HIGHLIGHT, width=1.25, height=0.65,
             linestyle="--" if gid == "mask" else "-")
        ax.text(x, y - 0.5, note, ha="center", va="top", fontsize=8, color=EDGE)
        if i:
            _arrow(ax, xs[i - 1] + 0.66, y, x - 0.66, y)
    _arrow(ax, 1.43, 2.85, xs[0] - 0.66, y + 0.15)  # Q and K meet in the first matmul
    _arrow(ax, 1.43, 1.95, xs[0] - 0.66, y - 0.15)
    ax.plot([1.43, xs[-1]], [0.8, 0.8], color=EDGE, lw=1.0)  # V goes straight to the last matmul
    _arrow(ax, xs[-1], 0.8, xs[-1], y - 0.36)
    ax.text(xs[-1] + 0.12, 1.25, "weighted sum\nof the values", ha="left", va="center", fontsize=8, color=EDGE)
    _box(ax, 11.8, y, "output\n[len_q, d_v]", "output", MUTED, width=1.35, height=0.65, fontsize=8.5)
    _arrow(ax, xs[-1] + 0.66, y, 11.8 - 0.7, y)
    ax.text(6.3, 3.55, r"Attention$(Q, K, V) = \mathrm{softmax}(Q K^{\top} / \sqrt{d_k})\ V$", ha="center",
            va="center", fontsize=10)
    return ax


def heads_diagram(num_heads=4, ax=None):
    """Multi-head attention (§3.2.2, chapter 5): split the features into heads, attend, merge, project.

    Args:
        num_heads: how many heads to draw, from 1 to 8 (the paper uses 8).
        ax: draw into this Axes (default: a new figure).
    """
    from matplotlib.patches import Rectangle

    _require_count("num_heads", num_heads, 8, 4)
    shades = [HIGHLIGHT, "#fbe3a8"]  # neighbouring heads alternate, so each slice can be followed
    ax = _axes(ax, (0, 12.4), (-0.45, 5.0))
    block_y, block_height, width = 1.2, 2.0, 2.0  # the [len, d_model] blocks

    def sliced_block(x0, gid, label):
        for h in range(num_heads):
            ax.add_patch(Rectangle((x0 + h * width / num_heads, block_y), width / num_heads, block_height,
                                   facecolor=shades[h % 2], edgecolor=EDGE, gid=gid))
        ax.text(x0 + width / 2, block_y + block_height + 0.15, label, ha="center", va="bottom", fontsize=8.5)

    sliced_block(0.3, "input", "x: [len, d_model]")
    sliced_block(7.5, "merge", "concatenated:\n[len, d_model]")
    middle = block_y + block_height / 2
    row = 4.4 / num_heads  # each head's share of the height
    for h in range(num_heads):
        y = 4.5 - (h + 0.5) * row
        height = min(0.6, 0.75 * row)
        ax.add_patch(Rectangle((3.4, y - height / 2), 0.45, height, facecolor=shades[h % 2], edgecolor=EDGE,
                               gid="slice"))
        _box(ax, 5.3, y, f"head {h + 1}: attention", "head", shades[h % 2], width=2.0, height=height,
             fontsize=8.5 if row > 0.45 else 8)
        _arrow(ax, 2.35, middle, 3.4, y)  # split heads
        _arrow(ax, 3.85, y, 4.28, y)
        _arrow(ax, 6.32, y, 7.45, middle)  # merge heads
    ax.text(2.9, 4.75, "split heads", ha="center", fontsize=8.5)
    slice_size = f"[len, d_model/{num_heads}]" + " each" * (num_heads > 1)
    ax.text(3.62, 4.5 - (num_heads - 0.5) * row - height / 2 - 0.08, slice_size, ha="center", va="top", fontsize=8)
    ax.text(6.9, 4.75, "merge heads", ha="center", fontsize=8.5)
    _box(ax, 10.75, middle, r"dense $W^O$", "dense", MUTED, width=1.2, height=0.7)
    _arrow(ax, 9.55, middle, 10.12, middle)
    _arrow(ax, 11.38, middle, 12.0, middle)
    ax.text(11.7, middle - 0.45, "[len,\nd_model]", ha="center", va="top", fontsize=8)
    return ax
