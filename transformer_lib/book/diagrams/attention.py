"""Attention as a flow (chapter 3, §3.2.1) and multi-head attention (chapter 5, §3.2.2)."""

from __future__ import annotations

from transformer_lib.book.diagrams._draw import EDGE, HIGHLIGHT, MUTED, _arrow, _axes, _box, _require_count


def qkv_diagram(ax=None):
    """Scaled dot-product attention (§3.2.1, chapter 3) as a flow from Q, K and V to the output.

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


HEAD_SHADES = [HIGHLIGHT, "#9fc5e8", "#b6d7a8", "#ea9999"]  # one colour per head, followed into the Concat


def heads_diagram(num_heads=3, ax=None):
    """Multi-head attention (§3.2.2, chapter 5) as the paper writes it: every head projects x with its
    own W_i^Q, W_i^K, W_i^V (d_model -> d_k), runs Eq. 1 on its q, k, v, and the heads' outputs are
    concatenated and mixed by W^O.

    Args:
        num_heads: how many heads to draw, from 1 to 4 (the paper uses 8; the drawing stays readable up to 4).
        ax: draw into this Axes (default: a new figure).
    """
    from matplotlib.patches import Rectangle

    _require_count("num_heads", num_heads, 4, 3)
    ax = _axes(ax, (0, 14), (0, 7.4))
    top, bottom = 6.4, 0.3
    row = (top - bottom) / num_heads  # each head's share of the height
    middle = (top + bottom) / 2
    _box(ax, 0.9, middle, "x\n[len,\nd_model]", "input", MUTED, width=1.1, height=(top - bottom) * 0.95, fontsize=8.5)
    box_height = min(0.5, 0.22 * row)
    step = box_height + min(0.15, 0.07 * row)
    for h in range(num_heads):
        y = top - (h + 0.5) * row
        shade = HEAD_SHADES[h]
        for offset, name in ((step, "Q"), (0, "K"), (-step, "V")):  # W_i^Q, W_i^K, W_i^V: d_model -> d_k
            _box(ax, 2.95, y + offset, f"$W_{{{h + 1}}}^{{{name}}}$", "projection", shade, width=1.0,
                 height=box_height, fontsize=8.5)
            _arrow(ax, 1.45, y + offset, 2.42, y + offset)
            _arrow(ax, 3.48, y + offset, 4.38, y)  # q, k and v meet in the head's attention
        head_height = min(0.9, 0.55 * row)
        _box(ax, 5.3, y, f"head {h + 1}: Eq. 1", "head", shade, width=1.8, height=head_height, fontsize=8.5)
        slice_height = min(0.7, 0.45 * row)
        ax.add_patch(Rectangle((6.8, y - slice_height / 2), 0.4, slice_height, facecolor=shade, edgecolor=EDGE,
                               gid="slice"))
        _arrow(ax, 6.22, y, 6.78, y)
        _arrow(ax, 7.22, y, 8.15, middle)  # into the Concat
    ax.text(7.0, top - (num_heads - 0.5) * row - slice_height / 2 - 0.08, "[len, d_k]" + " each" * (num_heads > 1),
            ha="center", va="top", fontsize=8)
    width = 1.6
    for h in range(num_heads):  # the Concat: head 1's d_k features first, then head 2's, ...
        ax.add_patch(Rectangle((8.2 + h * width / num_heads, middle - 1.0), width / num_heads, 2.0,
                               facecolor=HEAD_SHADES[h], edgecolor=EDGE, gid="concat"))
    ax.text(9.0, middle + 1.12, "Concat\n[len, h·d_k]", ha="center", va="bottom", fontsize=8.5)
    _box(ax, 11.05, middle, r"$W^O$", "dense", MUTED, width=1.1, height=0.7)
    _arrow(ax, 9.82, middle, 10.47, middle)
    _arrow(ax, 11.63, middle, 12.35, middle)
    ax.text(13.1, middle, "output\n[len,\nd_model]", ha="center", va="center", fontsize=8)
    ax.text(2.95, 6.95, "$W_i^Q, W_i^K, W_i^V$:\nd_model → d_k", ha="center", va="center", fontsize=8.5)
    ax.text(5.3, 6.95, "Eq. 1 per head,\non its own q, k, v", ha="center", va="center", fontsize=8.5)
    ax.text(11.05, middle + 0.5, "d_model →\nd_model", ha="center", va="bottom", fontsize=8)
    return ax
