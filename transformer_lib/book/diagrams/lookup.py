"""Attention before its formula (chapter 3, §3.2.1): a soft dictionary lookup, and one token's path
from its embedding to its output."""

from __future__ import annotations

from transformer_lib.book.diagrams._draw import EDGE, HIGHLIGHT, MUTED, _arrow, _axes, _box, _require_count

DICTIONARY = (("кот", "cat"), ("чай", "tea"), ("дом", "house"))  # Russian-English; the query is "чай"


def _require_weights(weights) -> tuple:
    """`weights` as a tuple of 1 to 4 non-negative numbers that sum to 1 (a softmax's output)."""
    try:
        weights = tuple(float(w) for w in weights)
    except (TypeError, ValueError):
        raise ValueError(f"weights must be a sequence of numbers such as (0.47, 0.47, 0.06); got {weights!r}.")
    if not 1 <= len(weights) <= 4:
        raise ValueError(f"weights must hold 1 to 4 numbers (one per key), got {len(weights)}.")
    if min(weights) < 0 or abs(sum(weights) - 1) > 0.02:
        raise ValueError(f"weights must be non-negative and sum to 1, as a softmax's output does; got {weights} "
                         f"(sum {sum(weights):.3f}).")
    return weights


def lookup_diagram(weights=(0.47, 0.47, 0.06), ax=None):
    """A Python dict against attention (chapter 3): one exact match against a weighted average.

    Left, a dict: the query equals one key, and the lookup returns that key's value alone. Right,
    attention: the query is compared with every key, the similarities become weights that sum to 1
    (the bars, drawn to scale), and the output is the weighted average of all the values.

    Args:
        weights: the attention weights, one per key (1 to 4 numbers that sum to 1).
        ax: draw into this Axes (default: a new figure).
    """
    from matplotlib.patches import Rectangle

    weights = _require_weights(weights)
    n = len(weights)
    ax = _axes(ax, (0, 12.6), (0, 5.0))
    rows = [3.7 - i * (3.0 / max(n - 1, 1)) for i in range(n)] if n > 1 else [2.2]

    # Left: the dict. Only the key that equals the query is read.
    ax.text(2.9, 4.7, "Python dict: one key equals the query", ha="center", va="center", fontsize=9)
    query_word, answer = DICTIONARY[1]
    _box(ax, 0.75, 2.2, f"query\n{query_word!r}", "dict query", MUTED, width=1.2, height=0.75, fontsize=8.5)
    dict_rows = [3.7, 2.2, 0.7]
    for y, (key, value) in zip(dict_rows, DICTIONARY):
        match = key == query_word
        _box(ax, 2.55, y, repr(key), "dict key", HIGHLIGHT if match else MUTED, width=1.1, height=0.5)
        _box(ax, 4.05, y, repr(value), "dict value", HIGHLIGHT if match else MUTED, width=1.2, height=0.5)
        _arrow(ax, 3.1, y, 3.45, y)
    _arrow(ax, 1.35, 2.2, 2.0, 2.2)  # the query reaches the one equal key
    ax.text(2.55, 2.72, "equal", ha="center", va="bottom", fontsize=8, color=EDGE)
    _box(ax, 5.4, 2.2, repr(answer), "dict output", HIGHLIGHT, width=0.95, height=0.5)
    _arrow(ax, 4.65, 2.2, 4.92, 2.2)
    ax.plot([6.05, 6.05], [0.3, 4.5], color=MUTED, lw=1.0)  # the two halves

    # Right: attention. Every key is compared; every value contributes by its weight.
    ax.text(9.4, 4.7, "attention: every key, weighted", ha="center", va="center", fontsize=9)
    _box(ax, 6.75, 2.2, "query\nq", "query", MUTED, width=0.95, height=0.75, fontsize=8.5)
    bar_x, bar_width = 9.0, 0.9  # a weight of 1 would fill the whole width
    for j, (y, w) in enumerate(zip(rows, weights), start=1):
        _box(ax, 8.05, y, f"$k_{j}$", "key", MUTED, width=0.7, height=0.5)
        _arrow(ax, 7.24, 2.2, 7.68, y)  # the query meets every key
        ax.add_patch(Rectangle((bar_x, y - 0.18), bar_width * w, 0.36, facecolor=HIGHLIGHT, edgecolor=EDGE,
                               linewidth=0.8, gid="weight"))
        ax.add_patch(Rectangle((bar_x, y - 0.18), bar_width, 0.36, fill=False, edgecolor=MUTED, linewidth=0.8))
        ax.text(bar_x + bar_width / 2, y + 0.22, f"{w:.2f}", ha="center", va="bottom", fontsize=8)
        _arrow(ax, 8.42, y, bar_x - 0.05, y)
        _box(ax, 10.55, y, f"$v_{j}$", "value", MUTED, width=0.7, height=0.5)
        _arrow(ax, bar_x + bar_width + 0.05, y, 10.18, y)
        _arrow(ax, 10.92, y, 11.45, 2.2)  # every value flows into the output
    ax.text(bar_x + bar_width / 2, 0.12, "softmax weights", ha="center", va="bottom", fontsize=8, color=EDGE)
    _box(ax, 11.95, 2.2, "output\n$\\sum_j w_j v_j$", "output", HIGHLIGHT, width=1.0, height=0.85, fontsize=8.5)
    return ax


def token_flow_diagram(num_tokens=3, ax=None):
    """One token's path through self-attention (chapter 3): x_j -> q_j, k_j, v_j; q_1 meets every key.

    Columns are tokens. Each x_j is projected by W^Q, W^K and W^V; the first token's query q_1 is
    compared with every key k_j (the scores, divided by sqrt(d_k)); a softmax over j turns the scores
    into weights a_1j that sum to 1; the output z_1 is the sum of the weighted values a_1j v_j. The
    other queries (grey) do the same for their own tokens.

    Args:
        num_tokens: how many tokens to draw, from 1 to 4.
        ax: draw into this Axes (default: a new figure).
    """
    _require_count("num_tokens", num_tokens, 4, 3)
    n = num_tokens
    ax = _axes(ax, (0, 12.6), (0, 6.5))
    spacing = 9.6 / n
    centres = [2.9 + spacing * (j + 0.5) for j in range(n)]
    y_token, y_qkv, y_score, y_weight, y_weighted, y_out = 6.0, 4.85, 3.7, 2.6, 1.5, 0.45
    labels = [(y_token, "tokens"), (y_qkv, "$\\times W^Q, W^K, W^V$"), (y_score, "scores\n$\\div \\sqrt{d_k}$"),
              (y_weight, "softmax over $j$:\nweights, sum 1"), (y_weighted, "weighted\nvalues"),
              (y_out, "sum: the output\nof token 1")]
    for y, text in labels:
        ax.text(1.3, y, text, ha="center", va="center", fontsize=8.5, color=EDGE)
    for j, c in enumerate(centres, start=1):
        _box(ax, c, y_token, f"$x_{j}$", "token", MUTED, width=0.9, height=0.45)
        for dx, letter, gid in ((-0.7, "q", "query"), (0.0, "k", "key"), (0.7, "v", "value")):
            face = HIGHLIGHT if (gid != "query" or j == 1) else MUTED
            _box(ax, c + dx, y_qkv, f"${letter}_{j}$", gid, face, width=0.55, height=0.45)
            _arrow(ax, c, y_token - 0.26, c + dx, y_qkv + 0.26)
        _box(ax, c - 0.2, y_score, f"$q_1 \\cdot k_{j}$", "score", HIGHLIGHT, width=0.95, height=0.45)
        _arrow(ax, c, y_qkv - 0.26, c - 0.05, y_score + 0.26)  # k_j into its score
        _arrow(ax, centres[0] - 0.7, y_qkv - 0.26, c - 0.45, y_score + 0.26)  # q_1 into every score
        _box(ax, c - 0.2, y_weight, f"$a_{{1{j}}}$", "weight", HIGHLIGHT, width=0.8, height=0.45)
        _arrow(ax, c - 0.2, y_score - 0.26, c - 0.2, y_weight + 0.26)
        _box(ax, c + 0.25, y_weighted, f"$a_{{1{j}}}\\,v_{j}$", "weighted value", HIGHLIGHT, width=1.05, height=0.45)
        _arrow(ax, c - 0.2, y_weight - 0.26, c - 0.2, y_weighted + 0.26)
        _arrow(ax, c + 0.7, y_qkv - 0.26, c + 0.7, y_weighted + 0.26)  # v_j waits for its weight
        _arrow(ax, c + 0.25, y_weighted - 0.26, (centres[0] + centres[-1]) / 2, y_out + 0.3)
    middle = (centres[0] + centres[-1]) / 2
    _box(ax, middle, y_out, "$z_1 = \\sum_j a_{1j}\\, v_j$", "output", HIGHLIGHT, width=2.2, height=0.5)
    return ax
