"""Decoding (chapter 8): the growing key/value cache, and a small beam search drawn as a tree."""

from __future__ import annotations

from transformer_lib.book.diagrams._draw import EDGE, HIGHLIGHT, MUTED, _axes, _box, _require_count


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
