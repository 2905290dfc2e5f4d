"""Diagrams the chapters draw with code (our own drawings; no figure is copied from the paper).

`architecture_diagram(highlight=...)` draws the whole encoder-decoder of §3 as boxes and arrows,
with the parts a chapter is about in colour and the rest in grey: every chapter calls the same
function, so the reader always sees where the current piece sits.
"""

from __future__ import annotations

# The parts that can be highlighted, and the chapter that builds each.
PARTS = {
    "embedding": "chapter 1 (token ids) and chapter 6",
    "positional encoding": "chapter 2",
    "self-attention": "chapters 4 and 5",
    "masked self-attention": "chapters 3, 4 and 5",
    "cross-attention": "chapters 4 and 5",
    "add & norm": "chapter 6",
    "feed-forward": "chapter 6",
    "linear & softmax": "chapters 6 to 8",
}
HIGHLIGHT, MUTED, EDGE = "#f4b942", "#e9e9e9", "#555555"


def _require_parts(highlight) -> set[str]:
    parts = {highlight} if isinstance(highlight, str) else set(highlight)
    unknown = sorted(parts - set(PARTS))
    if unknown:
        raise ValueError(f"Unknown part(s) {unknown}; choose among {sorted(PARTS)}.")
    return parts


def architecture_diagram(highlight=(), title: str | None = None, ax=None):
    """Draw the Transformer (§3) with the parts in `highlight` coloured; returns the matplotlib Axes.

    Args:
        highlight: a part name or several, from `PARTS` ("positional encoding", "self-attention",
            "masked self-attention", "cross-attention", "add & norm", "feed-forward", "embedding",
            "linear & softmax").
        title: drawn above the diagram.
        ax: draw into this Axes (default: a new figure).
    """
    import matplotlib.pyplot as plt  # the book's plotting library; the model code does not need it
    from matplotlib.patches import Circle, FancyBboxPatch

    parts = _require_parts(highlight)
    if ax is None:
        _, ax = plt.subplots(figsize=(8, 7.2))
    ax.set(xlim=(0, 11), ylim=(0, 13.2), aspect="equal")
    ax.axis("off")

    def box(x, y, text, part, width=3.6, height=0.62):
        face = HIGHLIGHT if part in parts else MUTED
        patch = FancyBboxPatch((x - width / 2, y - height / 2), width, height, boxstyle="round,pad=0.05",
                               facecolor=face, edgecolor=EDGE, linewidth=1.0, gid=part)
        ax.add_patch(patch)
        ax.text(x, y, text, ha="center", va="center", fontsize=8.5)

    def arrow(x0, y0, x1, y1):
        ax.annotate("", xy=(x1, y1), xytext=(x0, y0), arrowprops=dict(arrowstyle="->", color=EDGE, lw=1.0))

    def adder(x, y):
        face = HIGHLIGHT if "positional encoding" in parts else MUTED
        ax.add_patch(Circle((x, y), 0.22, facecolor=face, edgecolor=EDGE, gid="positional encoding"))
        ax.text(x, y, "+", ha="center", va="center", fontsize=11)

    enc_x, dec_x = 2.7, 8.1
    # Inputs, embeddings and positions.
    ax.text(enc_x, 0.35, "source tokens (Russian)", ha="center", fontsize=9)
    ax.text(dec_x, 0.35, "target tokens, shifted right", ha="center", fontsize=9)
    for x, label in ((enc_x, "input embedding"), (dec_x, "output embedding")):
        arrow(x, 0.6, x, 1.05)
        box(x, 1.4, label, "embedding")
        arrow(x, 1.75, x, 2.2)
        adder(x, 2.45)
        arrow(x, 2.7, x, 3.2)
    ax.text(enc_x - 0.35, 2.45, "positional\nencoding ~", ha="right", va="center", fontsize=8)
    ax.text(dec_x + 0.35, 2.45, "~ positional\nencoding", ha="left", va="center", fontsize=8)

    # Encoder layer: self-attention, add & norm, feed-forward, add & norm.
    ax.add_patch(FancyBboxPatch((enc_x - 2.05, 3.15), 4.1, 4.6, boxstyle="round,pad=0.1", fill=False,
                                edgecolor=EDGE, linestyle="--"))
    ax.text(enc_x - 2.2, 5.45, "N x", ha="right", va="center", fontsize=10)
    ys = [3.75, 4.75, 5.95, 6.95]
    for y, (text, part) in zip(ys, [("self-attention", "self-attention"), ("add & norm", "add & norm"),
                                    ("feed-forward", "feed-forward"), ("add & norm", "add & norm")]):
        box(enc_x, y, text, part)
    for y0, y1 in zip(ys, ys[1:]):
        arrow(enc_x, y0 + 0.31, enc_x, y1 - 0.31)
    ax.text(enc_x, 9.0, "encoder", ha="center", fontsize=11, weight="bold")
    ax.text(enc_x, 8.55, "reads the whole source at once", ha="center", fontsize=8)

    # Decoder layer: masked self-attention, add & norm, cross-attention, add & norm, feed-forward, add & norm.
    ax.add_patch(FancyBboxPatch((dec_x - 2.1, 3.15), 4.2, 6.65, boxstyle="round,pad=0.1", fill=False,
                                edgecolor=EDGE, linestyle="--"))
    ax.text(dec_x + 2.3, 6.45, "x N", ha="left", va="center", fontsize=10)
    ys = [3.75, 4.65, 5.85, 6.75, 7.95, 8.85]
    rows = [("masked self-attention", "masked self-attention"), ("add & norm", "add & norm"),
            ("cross-attention", "cross-attention"), ("add & norm", "add & norm"),
            ("feed-forward", "feed-forward"), ("add & norm", "add & norm")]
    for y, (text, part) in zip(ys, rows):
        box(dec_x, y, text, part, width=3.8)
    for y0, y1 in zip(ys, ys[1:]):
        arrow(dec_x, y0 + 0.31, dec_x, y1 - 0.31)
    # The encoder's output (keys and values) feeds the cross-attention of every decoder layer.
    middle = (enc_x + dec_x) / 2
    ax.plot([enc_x, enc_x, middle, middle], [7.3, 8.0, 8.0, 5.85], color=EDGE, lw=1.0)
    arrow(middle, 5.85, dec_x - 1.95, 5.85)
    ax.text(middle + 0.1, 7.6, "keys and\nvalues", ha="left", va="center", fontsize=7.5)

    # Output: linear and softmax.
    arrow(dec_x, 9.18, dec_x, 10.2)
    box(dec_x, 10.55, "linear", "linear & softmax", width=2.4)
    arrow(dec_x, 10.88, dec_x, 11.3)
    box(dec_x, 11.65, "softmax", "linear & softmax", width=2.4)
    arrow(dec_x, 11.98, dec_x, 12.45)
    ax.text(dec_x, 12.75, "next-token probabilities (English)", ha="center", fontsize=9)
    ax.text(enc_x, 10.1, "every attention box is multi-head (chapter 5)", ha="center", fontsize=7.5, color=EDGE)
    ax.text(dec_x - 1.6, 11.1, "decoder", ha="right", fontsize=11, weight="bold")
    ax.text(dec_x - 1.6, 10.65, "writes one token at a time", ha="right", fontsize=8)
    if title:
        ax.set_title(title, fontsize=11)
    return ax
