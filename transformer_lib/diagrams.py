"""Diagrams the chapters draw with code (our own drawings; no figure is copied from the paper).

`architecture_diagram(highlight=...)` draws the whole encoder-decoder of §3 as boxes and arrows,
with the parts a chapter is about in colour and the rest in grey: every chapter calls the same
function, so the reader always sees where the current piece sits.

The "idea" diagrams each draw one mechanism:

    masks_diagram                padding, look-ahead and combined masks (chapter 3)
    qkv_diagram                  scaled dot-product attention as a flow (chapter 4)
    heads_diagram                split heads, attend, merge heads, W^O (chapter 5)
    layer_norm_placement_diagram post-LN and pre-LN sub-layers (chapter 6)
    teacher_forcing_diagram      decoder input vs labels in training (chapter 7)
    kv_cache_diagram             the growing key/value cache (chapter 8)
    beam_tree_diagram            a small beam search, beam size 2 (chapter 8)

Every function takes `ax=None` (draw into a new figure) and returns the matplotlib Axes. Each patch
has a `gid` naming what it stands for, so the tests can count and check the drawing.
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


# ---------------------------------------------------------------------------------------------
# The "idea" diagrams. They share three small helpers: a blank Axes, a box with text, an arrow.


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


def teacher_forcing_diagram(target=("I", "like", "tea"), ax=None):
    """Teacher forcing (chapter 7): the decoder reads the target shifted right and learns every next token at once.

    Position t reads the true tokens 0..t (the look-ahead mask hides the rest) and must predict label t.

    Args:
        target: the target sentence as tokens, e.g. ("I", "like", "tea").
        ax: draw into this Axes (default: a new figure).
    """
    from matplotlib.patches import FancyBboxPatch

    words = () if isinstance(target, str) else tuple(target)
    if not words or not all(isinstance(word, str) for word in words):
        raise ValueError(f'target must be a non-empty sequence of tokens, e.g. ("I", "like", "tea"); got {target!r}.')
    inputs = ["<s>", *words]  # the decoder's input: the target shifted right by one
    labels = [*words, "</s>"]  # what each position must predict
    xs = [3.2 + 1.45 * t for t in range(len(inputs))]
    ax = _axes(ax, (0, xs[-1] + 0.8), (-0.65, 3.75))
    bottom, top = 1.3, 2.5  # the decoder box
    ax.add_patch(FancyBboxPatch((0.2, bottom), xs[-1] + 0.4, top - bottom, boxstyle="round,pad=0.03",
                                facecolor=MUTED, edgecolor=EDGE, gid="decoder"))
    ax.text(1.3, (bottom + top) / 2, "decoder\n(look-ahead\nmask)", ha="center", va="center", fontsize=9)
    ax.text(1.3, 0.7, "decoder input\n(target shifted\nright)", ha="center", va="center", fontsize=8.5)
    ax.text(1.3, 3.3, "labels\n(the target)", ha="center", va="center", fontsize=8.5)

    shown = len(inputs) - 2  # the position whose label is the last word: its lines are drawn in colour
    for t, x in enumerate(xs):
        _box(ax, x, 0.7, inputs[t], "input", MUTED, width=1.1, height=0.5)
        _box(ax, x, 3.3, labels[t], "label", HIGHLIGHT, width=1.1, height=0.5)
        _arrow(ax, x, 0.95, x, bottom)
        _arrow(ax, x, top, x, 3.05)
        for j in range(t + 1):  # position t sees inputs 0..t
            colour, width = (HIGHLIGHT, 2.2) if t == shown else ("#b5b5b5", 0.8)
            ax.plot([xs[j], x], [bottom, top], color=colour, lw=width, zorder=3 if t == shown else 2)
    ax.text(0.2, -0.25, f'Position t predicts label t from inputs 0..t: position {shown} predicts '
            f'"{labels[shown]}" from {" ".join(inputs[:shown + 1])} (coloured lines).\n'
            "All positions are trained in one step, in parallel, from the true previous tokens "
            "(not the model's own guesses).", ha="left", va="center", fontsize=8.5)
    return ax


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


def masks_diagram(lengths=(5, 3), ax=None):
    """The masks of a padded batch (chapter 3), drawn for its shortest sequence.

    Polarity as in `transformer_lib.masks`: 1 (dark) = blocked, 0 (light) = may attend. Three grids:
    the padding mask (one row: it blocks keys, whatever the query), the look-ahead mask (above the
    diagonal: the future) and the decoder's combined mask, their maximum.

    Args:
        lengths: the real length of each sequence of the batch, e.g. (5, 3); all are padded to the longest.
        ax: draw into this Axes (default: a new figure).
    """
    import numpy as np
    from matplotlib.patches import Rectangle

    lengths = () if isinstance(lengths, (str, int)) else tuple(lengths)
    if not lengths or any(isinstance(n, bool) or not isinstance(n, (int, np.integer)) or n < 1 for n in lengths):
        raise ValueError(f"lengths must be the real lengths of the batch's sequences, positive integers such as "
                         f"(5, 3); got {lengths!r}.")
    size = max(lengths)
    if size > 10:
        raise ValueError(f"The longest sequence has {size} tokens; pass lengths of at most 10, so that the "
                         "grids stay readable.")
    shortest = int(np.argmin(lengths))
    real = lengths[shortest]
    padding = (np.arange(size) >= real).astype(int)  # one row: 1 where the key is padding
    look_ahead = np.triu(np.ones((size, size), dtype=int), k=1)  # 1 above the diagonal: future keys
    combined = np.maximum(look_ahead, padding[None, :])  # blocked if either mask blocks it

    cell, gap = 0.5, 1.3
    tokens = [f"x{i + 1}" for i in range(real)] + ["pad"] * (size - real)
    top = size * cell + 1.2
    ax = _axes(ax, (0, 3 * size * cell + 2 * gap + 1.2), (-0.9, top + 0.4))
    grids = [("padding", padding[None, :], "padding mask\n(one row, for every query)"),
             ("look-ahead", look_ahead, "look-ahead mask\n(no peeking ahead)"),
             ("combined", combined, "combined =\nmax(padding, look-ahead)")]
    for g, (gid, grid, title) in enumerate(grids):
        x0 = 0.9 + g * (size * cell + gap)
        for i in range(grid.shape[0]):  # query positions, top to bottom
            for j in range(size):  # key positions, left to right
                blocked = grid[i, j] == 1
                ax.add_patch(Rectangle((x0 + j * cell, top - 0.9 - (i + 1) * cell), cell, cell, gid=gid,
                                       facecolor=EDGE if blocked else MUTED, edgecolor="white", linewidth=1.5))
                ax.text(x0 + (j + 0.5) * cell, top - 0.9 - (i + 0.5) * cell, str(grid[i, j]), ha="center",
                        va="center", fontsize=8, color="white" if blocked else EDGE)
        for j, token in enumerate(tokens):  # keys along the top
            ax.text(x0 + (j + 0.5) * cell, top - 0.85, token, ha="center", va="bottom", fontsize=8)
        if grid.shape[0] > 1:
            for i, token in enumerate(tokens):  # queries down the left
                ax.text(x0 - 0.08, top - 0.9 - (i + 0.5) * cell, token, ha="right", va="center", fontsize=8)
        ax.text(x0 + size * cell / 2, top - 0.35, title, ha="center", va="bottom", fontsize=9)
    ax.text(0.15, -0.25, f"Sequence {shortest} of the batch {lengths}: {real} real tokens padded to {size}. "
            "Columns are keys, rows are queries;\n1 (dark) = blocked, 0 (light) = may attend.", ha="left",
            va="center", fontsize=8.5)
    return ax


def layer_norm_placement_diagram(ax=None):
    """Where the LayerNorm sits around a sub-layer (chapter 6): post-LN (the paper) and pre-LN.

    Args:
        ax: draw into this Axes (default: a new figure).
    """
    from matplotlib.patches import Circle

    ax = _axes(ax, (0, 10.0), (-0.75, 5.4))
    panels = [(2.4, "post-LN (the paper, §3.1)\nLayerNorm(x + Sublayer(x))", ["sublayer", "norm"]),
              (7.4, "pre-LN (Xiong et al. 2020)\nx + Sublayer(LayerNorm(x))", ["norm", "sublayer"])]
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


def kv_cache_diagram(steps=4, ax=None):
    """The decoder's key/value cache (chapter 8): at step t the new query attends to t cached positions.

    Args:
        steps: how many decoding steps to draw, from 1 to 8.
        ax: draw into this Axes (default: a new figure).
    """
    _require_count("steps", steps, 8, 4)
    spacing, row = 1.0, 0.85
    note_x = 1.6 + spacing * steps + 0.1
    ax = _axes(ax, (0, note_x + 2.5), (-0.8, row * steps))
    for t in range(1, steps + 1):
        y = row * (steps - t) + 0.3
        query_x = 1.6 + spacing * t - 0.3  # the new query sits just after the newest box
        ax.text(0.1, y, f"step {t}", ha="left", va="center", fontsize=9)
        for j in range(1, t + 1):
            x = 1.6 + spacing * (j - 1)
            _box(ax, x, y, f"$k_{j},v_{j}$", "new" if j == t else "cached", HIGHLIGHT if j == t else MUTED,
                 width=0.82, height=0.45, fontsize=8.5)
            # the new query reads every cached key: an arc from the query over the row to the box's top
            ax.annotate("", xy=(x, y + 0.24), xytext=(query_x, y + 0.24), arrowprops=dict(
                arrowstyle="->", color="#999999", lw=0.8, shrinkA=0, shrinkB=0,
                connectionstyle=f"arc3,rad={0.4 / (query_x - x):.3f}"))
        _box(ax, query_x, y, f"$q_{t}$", "query", HIGHLIGHT, width=0.4, height=0.45, fontsize=8.5, linestyle="--")
        ax.text(note_x, y, f"computes $k_{t},v_{t}$; reuses {t - 1}", ha="left", va="center", fontsize=8.5)
    ax.text(0.1, -0.45, "Each step computes only the new token's keys and values and reuses the others from the\n"
            "cache; the new query still attends to all of them.", ha="left", va="center", fontsize=8.5)
    return ax


# A made-up next-word model for the beam diagram: log P(next | word) of each word's three likeliest next
# words. Only the words the beam keeps need a row.
BEAM_MODEL = {
    "<s>": (("I", -0.4), ("We", -0.9), ("The", -2.5)),
    "I": (("am", -0.9), ("like", -1.2), ("drink", -2.2)),
    "We": (("like", -0.3), ("drink", -1.0), ("are", -1.9)),
    "like": (("tea", -0.4), ("it", -1.3), ("to", -1.8)),
    "am": (("happy", -0.6), ("here", -1.1), ("tired", -1.5)),
}


def beam_tree_diagram(ax=None):
    """Beam search with beam size 2 over 3 steps (chapter 8), on the made-up model `BEAM_MODEL`.

    Every step expands the kept beams with all their next words, adds each edge's log-probability to
    the running total (written in the node), and keeps the 2 highest totals; the others are pruned.

    Args:
        ax: draw into this Axes (default: a new figure).
    """
    beam_size, num_steps = 2, 3
    ax = _axes(ax, (-0.2, 10.4), (-0.9, 5.5))
    column_x = [0.45 + 3.0 * s for s in range(num_steps + 1)]
    beams = [(("<s>",), 0.0, 2.3)]  # (words so far, total log-probability, y of its node)
    _box(ax, column_x[0], 2.3, "<s>\n0.0", "start", MUTED, width=0.9, height=0.62, fontsize=8.5)
    greedy = ("<s>",)
    for step in range(1, num_steps + 1):
        # All expansions of the kept beams, each with its new total.
        candidates = [(words + (word,), round(total + logp, 1), y, logp)
                      for words, total, y in beams for word, logp in BEAM_MODEL[words[-1]]]
        best = sorted(candidates, key=lambda c: c[1], reverse=True)[:beam_size]
        x, parent_x = column_x[step], column_x[step - 1]
        ys = [4.6 - 4.6 * (i + 0.5) / len(candidates) for i in range(len(candidates))]
        kept = []
        for (words, total, parent_y, logp), y in zip(candidates, ys):
            is_kept = any(words == b[0] for b in best)
            _box(ax, x, y, f"{words[-1]}\n{total:.1f}", "kept" if is_kept else "pruned",
                 HIGHLIGHT if is_kept else MUTED, width=1.0, height=0.62, fontsize=8.5)
            ax.annotate("", xy=(x - 0.53, y), xytext=(parent_x + 0.53, parent_y), arrowprops=dict(
                arrowstyle="->", color=EDGE if is_kept else "#bbbbbb", lw=1.4 if is_kept else 0.8,
                shrinkA=0, shrinkB=0))
            label_x, label_y = parent_x + 0.53 + 0.62 * (x - parent_x - 1.06), parent_y + 0.62 * (y - parent_y)
            ax.text(label_x, label_y, f"{logp:.1f}", ha="center", va="center", fontsize=8,
                    color=EDGE if is_kept else "#999999", bbox=dict(boxstyle="square,pad=0.1", fc="white", ec="none"))
            if is_kept:
                kept.append((words, total, y))
        beams = kept
        ax.text(x, 5.05, f"step {step}", ha="center", va="bottom", fontsize=9)
        greedy += (max(BEAM_MODEL[greedy[-1]], key=lambda pair: pair[1])[0],)
    greedy_total = round(sum(dict(BEAM_MODEL[a])[b] for a, b in zip(greedy, greedy[1:])), 1)
    winner, winner_total, _ = max(beams, key=lambda b: b[1])
    ax.text(-0.1, -0.5, "Beam size 2: keep the 2 best totals (node: word, total log-probability; "
            "edge: log P(word | previous word)).\n"
            f"Greedy decoding would say \"{' '.join(greedy[1:])}\" ({greedy_total:.1f}); the beam finds "
            f"\"{' '.join(winner[1:])}\" ({winner_total:.1f}).", ha="left", va="center", fontsize=8.5)
    return ax
