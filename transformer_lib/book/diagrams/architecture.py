"""The whole encoder-decoder of §3 as boxes and arrows, the parts a chapter is about in colour and the
rest in grey: every chapter calls `architecture_diagram`, so the reader always sees where the current
piece sits."""

from __future__ import annotations

from transformer_lib.book.diagrams._draw import EDGE, HIGHLIGHT, MUTED

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
ENCODER_X, DECODER_X = 2.7, 8.1  # the centres of the two columns


def _require_parts(highlight) -> set[str]:
    parts = {highlight} if isinstance(highlight, str) else set(highlight)
    unknown = sorted(parts - set(PARTS))
    if unknown:
        raise ValueError(f"Unknown part(s) {unknown}; choose among {sorted(PARTS)}.")
    return parts


class _Pen:
    """Draws the diagram's pieces into `ax`: a box is in colour when its part is in `parts`."""

    def __init__(self, ax, parts: set[str]):
        self.ax, self.parts = ax, parts

    def box(self, x, y, text, part, width=3.6, height=0.62):
        from matplotlib.patches import FancyBboxPatch

        face = HIGHLIGHT if part in self.parts else MUTED
        patch = FancyBboxPatch((x - width / 2, y - height / 2), width, height, boxstyle="round,pad=0.05",
                               facecolor=face, edgecolor=EDGE, linewidth=1.0, gid=part)
        self.ax.add_patch(patch)
        self.ax.text(x, y, text, ha="center", va="center", fontsize=8.5)

    def arrow(self, x0, y0, x1, y1):
        self.ax.annotate("", xy=(x1, y1), xytext=(x0, y0), arrowprops=dict(arrowstyle="->", color=EDGE, lw=1.0))

    def adder(self, x, y):
        """The circle where the positional encoding is added to the embeddings."""
        from matplotlib.patches import Circle

        face = HIGHLIGHT if "positional encoding" in self.parts else MUTED
        self.ax.add_patch(Circle((x, y), 0.22, facecolor=face, edgecolor=EDGE, gid="positional encoding"))
        self.ax.text(x, y, "+", ha="center", va="center", fontsize=11)

    def frame(self, x, y, width, height):
        """The dashed outline of a layer repeated N times."""
        from matplotlib.patches import FancyBboxPatch

        self.ax.add_patch(FancyBboxPatch((x, y), width, height, boxstyle="round,pad=0.1", fill=False,
                                         edgecolor=EDGE, linestyle="--"))

    def stack(self, x, ys, rows, width=3.6):
        """The boxes `rows` ((text, part) each) at heights `ys`, joined by arrows from bottom to top."""
        for y, (text, part) in zip(ys, rows):
            self.box(x, y, text, part, width=width)
        for y0, y1 in zip(ys, ys[1:]):
            self.arrow(x, y0 + 0.31, x, y1 - 0.31)


def _draw_inputs(pen: _Pen) -> None:
    """Source and target tokens, their embeddings, and the positional encoding added to each."""
    ax = pen.ax
    ax.text(ENCODER_X, 0.35, "source tokens (Russian)", ha="center", fontsize=9)
    ax.text(DECODER_X, 0.35, "target tokens, shifted right", ha="center", fontsize=9)
    for x, label in ((ENCODER_X, "input embedding"), (DECODER_X, "output embedding")):
        pen.arrow(x, 0.6, x, 1.05)
        pen.box(x, 1.4, label, "embedding")
        pen.arrow(x, 1.75, x, 2.2)
        pen.adder(x, 2.45)
        pen.arrow(x, 2.7, x, 3.2)
    ax.text(ENCODER_X - 0.35, 2.45, "positional\nencoding ~", ha="right", va="center", fontsize=8)
    ax.text(DECODER_X + 0.35, 2.45, "~ positional\nencoding", ha="left", va="center", fontsize=8)


def _draw_encoder(pen: _Pen) -> None:
    """The encoder layer: self-attention, add & norm, feed-forward, add & norm."""
    ax, x = pen.ax, ENCODER_X
    pen.frame(x - 2.05, 3.15, 4.1, 4.6)
    ax.text(x - 2.2, 5.45, "N x", ha="right", va="center", fontsize=10)
    pen.stack(x, [3.75, 4.75, 5.95, 6.95], [("self-attention", "self-attention"), ("add & norm", "add & norm"),
                                           ("feed-forward", "feed-forward"), ("add & norm", "add & norm")])
    ax.text(x, 9.0, "encoder", ha="center", fontsize=11, weight="bold")
    ax.text(x, 8.55, "reads the whole source at once", ha="center", fontsize=8)


def _draw_decoder(pen: _Pen) -> None:
    """The decoder layer (masked self-attention, cross-attention, feed-forward, each followed by add &
    norm) and the encoder's output feeding its cross-attention."""
    ax, x = pen.ax, DECODER_X
    pen.frame(x - 2.1, 3.15, 4.2, 6.65)
    ax.text(x + 2.3, 6.45, "x N", ha="left", va="center", fontsize=10)
    rows = [("masked self-attention", "masked self-attention"), ("add & norm", "add & norm"),
            ("cross-attention", "cross-attention"), ("add & norm", "add & norm"),
            ("feed-forward", "feed-forward"), ("add & norm", "add & norm")]
    pen.stack(x, [3.75, 4.65, 5.85, 6.75, 7.95, 8.85], rows, width=3.8)
    # The encoder's output (keys and values) feeds the cross-attention of every decoder layer.
    middle = (ENCODER_X + x) / 2
    ax.plot([ENCODER_X, ENCODER_X, middle, middle], [7.3, 8.0, 8.0, 5.85], color=EDGE, lw=1.0)
    pen.arrow(middle, 5.85, x - 1.95, 5.85)
    ax.text(middle + 0.1, 7.6, "keys and\nvalues", ha="left", va="center", fontsize=7.5)


def _draw_output(pen: _Pen) -> None:
    """Linear and softmax on top of the decoder, and the labels of the two columns."""
    ax, x = pen.ax, DECODER_X
    pen.arrow(x, 9.18, x, 10.2)
    pen.box(x, 10.55, "linear", "linear & softmax", width=2.4)
    pen.arrow(x, 10.88, x, 11.3)
    pen.box(x, 11.65, "softmax", "linear & softmax", width=2.4)
    pen.arrow(x, 11.98, x, 12.45)
    ax.text(x, 12.75, "next-token probabilities (English)", ha="center", fontsize=9)
    ax.text(ENCODER_X, 10.1, "every attention box is multi-head (chapter 5)", ha="center", fontsize=7.5, color=EDGE)
    ax.text(x - 1.6, 11.1, "decoder", ha="right", fontsize=11, weight="bold")
    ax.text(x - 1.6, 10.65, "writes one token at a time", ha="right", fontsize=8)


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

    parts = _require_parts(highlight)
    if ax is None:
        _, ax = plt.subplots(figsize=(8, 7.2))
    ax.set(xlim=(0, 11), ylim=(0, 13.2), aspect="equal")
    ax.axis("off")
    pen = _Pen(ax, parts)
    _draw_inputs(pen)
    _draw_encoder(pen)
    _draw_decoder(pen)
    _draw_output(pen)
    if title:
        ax.set_title(title, fontsize=11)
    return ax
