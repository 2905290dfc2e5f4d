"""Teacher forcing (chapter 7): the decoder reads the target shifted right and learns every next token at once."""

from __future__ import annotations

from transformer_lib.book.diagrams._draw import EDGE, HIGHLIGHT, MUTED, _arrow, _axes, _box


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
