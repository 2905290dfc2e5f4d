"""The decoder-only block of 2017 beside a Llama-style block of today (the chapter "Since 2017")."""

from __future__ import annotations

from transformer_lib.book.diagrams._draw import HIGHLIGHT, MUTED, _arrow, _axes, _box

# bottom to top: (gid, text) of each box; the norms' place is the difference between post-LN and pre-LN
BLOCKS = {
    "2017 (the paper's block, post-LN)": [
        ("positions", "token embedding\n+ sinusoids, once"), ("attention", "multi-head attention\n(h key/value heads)"),
        ("norm", "add, then LayerNorm"), ("feed-forward", "feed-forward: ReLU\n(2 matrices)"),
        ("norm", "add, then LayerNorm")],
    "today (Llama-style, pre-LN)": [
        ("positions", "token embedding\n(no positions added)"), ("norm", "RMSNorm, then the sub-layer"),
        ("attention", "grouped-query attention (g < h\nkey/value heads), rotary q and k"),
        ("norm", "RMSNorm, then the sub-layer"), ("feed-forward", "SwiGLU: Swish(gate) * up\n(3 matrices)"),
        ("norm", "final RMSNorm")],
}


def block_2017_and_today_diagram(ax=None):
    """The paper's decoder-only block (grey) beside a block of today, every changed box in colour, each
    box where it sits from the embedding (bottom) to the output (top).

    Args:
        ax: draw into this Axes (default: a new figure).
    """
    ax = _axes(ax, (0, 10.0), (0, 6.2))
    for cx, (title, boxes) in zip((2.5, 7.5), BLOCKS.items()):
        ax.text(cx, 6.05, title, ha="center", va="top", fontsize=9.5)
        face = MUTED if title.startswith("2017") else HIGHLIGHT
        for i, (gid, text) in enumerate(boxes):
            y = 0.5 + 0.9 * i
            _box(ax, cx, y, text, gid, face, width=4.0, height=0.62, fontsize=8.5)
            if i:
                _arrow(ax, cx, y - 0.59, cx, y - 0.31)
    return ax
