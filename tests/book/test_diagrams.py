"""The book's diagrams: every part is drawn, exactly the requested ones are highlighted, and the idea
diagrams draw what they claim (counted through the patches' gids, checked against the library)."""

import matplotlib

matplotlib.use("Agg")

import functools  # noqa: E402
from collections import Counter  # noqa: E402

import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pytest  # noqa: E402
from matplotlib.colors import to_hex  # noqa: E402
from matplotlib.patches import Circle  # noqa: E402

from transformer_lib.book.diagrams import (  # noqa: E402
    EDGE,
    HIGHLIGHT,
    MUTED,
    PARTS,
    architecture_diagram,
    beam_tree_diagram,
    heads_diagram,
    kv_cache_diagram,
    block_2017_and_today_diagram,
    layer_norm_placement_diagram,
    lookup_diagram,
    masks_diagram,
    qkv_diagram,
    teacher_forcing_diagram,
    token_flow_diagram,
)
from transformer_lib.layers.masks import decoder_mask, look_ahead_mask, padding_mask  # noqa: E402
from transformer_lib.data.tokenizer import PAD_ID  # noqa: E402


def _colours(ax):
    colours = {}
    for patch in ax.patches:
        if patch.get_gid():
            colours.setdefault(patch.get_gid(), set()).add(to_hex(patch.get_facecolor()))
    return colours


@pytest.mark.parametrize("highlight", [(), "positional encoding", ["self-attention", "cross-attention"], list(PARTS)])
def test_exactly_the_requested_parts_are_highlighted(highlight):
    ax = architecture_diagram(highlight)
    wanted = {highlight} if isinstance(highlight, str) else set(highlight)
    colours = _colours(ax)
    assert set(colours) == set(PARTS)  # every part is drawn
    for part, faces in colours.items():
        assert faces == {to_hex(HIGHLIGHT if part in wanted else MUTED)}, part
    plt.close("all")


def test_the_decoder_has_twice_the_attention_boxes_and_three_norms():
    colours = {}
    for patch in architecture_diagram().patches:
        colours[patch.get_gid()] = colours.get(patch.get_gid(), 0) + 1
    assert colours["add & norm"] == 2 + 3 and colours["feed-forward"] == 2
    assert colours["self-attention"] == colours["masked self-attention"] == colours["cross-attention"] == 1
    plt.close("all")


def test_an_unknown_part_is_refused_with_the_choices():
    with pytest.raises(ValueError, match="Unknown part.*'attention'.*choose among"):
        architecture_diagram(["attention"])


# ---------------------------------------------------------------------------------------------
# The idea diagrams.

IDEA_DIAGRAMS = [teacher_forcing_diagram, qkv_diagram, heads_diagram, masks_diagram, layer_norm_placement_diagram,
                 kv_cache_diagram, beam_tree_diagram, lookup_diagram, token_flow_diagram,
                 functools.partial(lookup_diagram, (0.4, 0.3, 0.2, 0.1)), functools.partial(lookup_diagram, (1.0,)),
                 functools.partial(token_flow_diagram, 4), functools.partial(token_flow_diagram, 1),
                 block_2017_and_today_diagram]


def _counts(ax):
    return Counter(patch.get_gid() for patch in ax.patches)


def _centre(patch):
    if isinstance(patch, Circle):
        return patch.center
    return patch.get_x() + patch.get_width() / 2, patch.get_y() + patch.get_height() / 2


def _text_in(ax, patch):
    """The text written in the middle of a box."""
    found = [t.get_text() for t in ax.texts if np.allclose(t.get_position(), _centre(patch))]
    assert len(found) == 1, f"{len(found)} texts in the box {patch.get_gid()!r}"
    return found[0]


def _boxes(ax, gid):
    """The patches named `gid`, left to right."""
    return sorted((p for p in ax.patches if p.get_gid() == gid), key=lambda p: _centre(p)[0])


@pytest.mark.parametrize("diagram", IDEA_DIAGRAMS, ids=lambda f: getattr(f, "__name__", None) or f"{f.func.__name__}{f.args}")
def test_an_idea_diagram_draws_into_the_given_axes_readably(diagram):
    fig, ax = plt.subplots(figsize=(8, 4))
    assert diagram(ax=ax) is ax
    plt.close("all")
    ax = diagram()
    fig = ax.figure
    width, height = fig.get_size_inches()
    assert width == 8 and 2 <= height <= 5  # compact
    fig.canvas.draw()
    renderer = fig.canvas.get_renderer()
    texts = [t for t in ax.texts if t.get_text()]
    boxes = [t.get_window_extent(renderer) for t in texts]
    for text, box in zip(texts, boxes):
        assert text.get_fontsize() >= 8, text.get_text()
        assert fig.bbox.contains(box.x0, box.y0) and fig.bbox.contains(box.x1, box.y1), f"cut off: {text.get_text()!r}"
    for i, j in ((i, j) for i in range(len(texts)) for j in range(i)):  # no text runs into another
        assert not boxes[i].overlaps(boxes[j]), (texts[i].get_text(), texts[j].get_text())
    plt.close("all")


@pytest.mark.parametrize("target", [("I", "like", "tea"), ["hello"], ("we", "are", "all", "very", "glad")])
def test_teacher_forcing_shifts_the_target_right_and_each_position_sees_only_the_past(target):
    ax = teacher_forcing_diagram(target)
    counts = _counts(ax)
    n = len(target) + 1
    assert counts["input"] == counts["label"] == n and counts["decoder"] == 1
    assert [_text_in(ax, p) for p in _boxes(ax, "input")] == ["<s>", *target]  # the target shifted right
    assert [_text_in(ax, p) for p in _boxes(ax, "label")] == [*target, "</s>"]  # the next token at each position
    # The lines in the decoder join input j to position t for every j <= t, and never j > t.
    columns = [_centre(p)[0] for p in _boxes(ax, "input")]
    pairs = sorted((columns.index(line.get_xdata()[0]), columns.index(line.get_xdata()[1])) for line in ax.lines)
    assert pairs == sorted((j, t) for t in range(n) for j in range(t + 1))
    plt.close("all")


@pytest.mark.parametrize("target", ["I like tea", (), ("I", 3)])
def test_teacher_forcing_refuses_a_target_that_is_not_tokens(target):
    with pytest.raises(ValueError, match=r"target must be a non-empty sequence of tokens, e\.g\."):
        teacher_forcing_diagram(target)


def test_qkv_draws_each_step_once_in_the_order_of_the_formula():
    ax = qkv_diagram()
    steps = ["matmul", "scale", "mask", "softmax", "weighted sum", "output"]
    assert _counts(ax) == Counter(["query", "key", "value", *steps])
    xs = [_centre(_boxes(ax, gid)[0])[0] for gid in steps]
    assert xs == sorted(xs)  # the flow runs left to right
    inputs = [_centre(_boxes(ax, gid)[0])[0] for gid in ("query", "key", "value")]
    assert max(inputs) < xs[0]
    plt.close("all")


@pytest.mark.parametrize("num_heads", [1, 3, 4])
def test_heads_draws_each_heads_own_projections_attention_and_concat_slice(num_heads):
    ax = heads_diagram(num_heads)
    counts = _counts(ax)
    assert counts["projection"] == 3 * num_heads  # W_i^Q, W_i^K, W_i^V for every head: x is not cut, it is projected
    assert counts["head"] == counts["slice"] == counts["concat"] == num_heads
    assert counts["input"] == counts["dense"] == 1
    names = sorted(_text_in(ax, p) for p in ax.patches if p.get_gid() == "projection")
    assert names == sorted(f"$W_{{{i}}}^{{{m}}}$" for i in range(1, num_heads + 1) for m in "QKV")
    plt.close("all")


@pytest.mark.parametrize("num_heads", [0, -2, 2.5, True, 5, "4"])
def test_heads_refuses_a_bad_number_of_heads_and_says_what_to_pass(num_heads):
    with pytest.raises(ValueError, match="num_heads must be an integer from 1 to 4.*pass e.g. num_heads=3"):
        heads_diagram(num_heads)


def _grid(ax, gid):
    """Read a mask back from its drawing: 1 where the square is dark (blocked), rows from the top."""
    cells = [p for p in ax.patches if p.get_gid() == gid]
    xs = sorted({round(p.get_x(), 6) for p in cells})
    ys = sorted({round(p.get_y(), 6) for p in cells}, reverse=True)
    assert len(cells) == len(xs) * len(ys)  # a full grid
    grid = np.zeros((len(ys), len(xs)))
    for p in cells:
        grid[ys.index(round(p.get_y(), 6)), xs.index(round(p.get_x(), 6))] = to_hex(p.get_facecolor()) == to_hex(EDGE)
    return grid


@pytest.mark.parametrize("lengths", [(5, 3), (4, 4, 2), (1,), (6, 1, 6), (3, 3)])
def test_the_drawn_masks_are_the_librarys_masks_of_the_shortest_sequence(lengths):
    ax = masks_diagram(lengths)
    size = max(lengths)
    ids = np.array([[7] * n + [PAD_ID] * (size - n) for n in lengths])  # real tokens, then padding
    shortest = int(np.argmin(lengths))
    np.testing.assert_array_equal(_grid(ax, "padding"), np.asarray(padding_mask(ids))[shortest, 0])  # [1, size]
    np.testing.assert_array_equal(_grid(ax, "look-ahead"), np.asarray(look_ahead_mask(size)))
    np.testing.assert_array_equal(_grid(ax, "combined"), np.asarray(decoder_mask(ids))[shortest, 0])
    plt.close("all")


@pytest.mark.parametrize("lengths", [(), (3, 0), "53", (2.5,), 5, (11, 2)])
def test_masks_refuses_bad_lengths_and_says_what_to_pass(lengths):
    with pytest.raises(ValueError, match=r"positive integers such as \(5, 3\)|pass lengths of at most 10"):
        masks_diagram(lengths)


def test_layer_norm_placement_puts_the_norm_after_the_add_or_before_the_sublayer():
    ax = layer_norm_placement_diagram()
    counts = _counts(ax)
    assert counts["norm"] == counts["sublayer"] == counts["residual add"] == 2
    middle = np.mean(ax.get_xlim())
    orders = {"post": ["sublayer", "residual add", "norm"], "pre": ["norm", "sublayer", "residual add"]}
    for side, expected in orders.items():
        panel = [p for p in ax.patches if p.get_gid() and (_centre(p)[0] < middle) == (side == "post")]
        assert [p.get_gid() for p in sorted(panel, key=lambda p: _centre(p)[1])] == expected, side  # bottom to top
    plt.close("all")


@pytest.mark.parametrize("steps", [1, 4, 8])
def test_kv_cache_adds_one_new_position_per_step_and_reuses_the_rest(steps):
    ax = kv_cache_diagram(steps)
    counts = _counts(ax)
    assert counts["new"] + counts["cached"] == steps * (steps + 1) // 2
    assert counts["new"] == counts["query"] == steps
    rows = {}
    for p in ax.patches:
        if p.get_gid() in ("new", "cached"):
            rows.setdefault(round(_centre(p)[1], 6), []).append(p)
    assert sorted(len(row) for row in rows.values()) == list(range(1, steps + 1))
    for row in rows.values():  # in every row, the one new box is the last of the cache
        assert [p.get_gid() for p in sorted(row, key=lambda p: _centre(p)[0])][-1] == "new"
        assert sum(p.get_gid() == "new" for p in row) == 1
    plt.close("all")


@pytest.mark.parametrize("steps", [0, 9, 2.0, "4"])
def test_kv_cache_refuses_a_bad_number_of_steps(steps):
    with pytest.raises(ValueError, match="steps must be an integer from 1 to 8.*pass e.g. steps=4"):
        kv_cache_diagram(steps)


def test_the_beam_keeps_exactly_the_two_best_totals_at_every_step():
    ax = beam_tree_diagram()
    assert _counts(ax)["start"] == 1
    columns = {}
    for p in ax.patches:
        if p.get_gid() in ("kept", "pruned"):
            word, total = _text_in(ax, p).split("\n")  # each node shows its word and its running total
            columns.setdefault(round(_centre(p)[0], 6), []).append((float(total), p.get_gid()))
    columns = [columns[x] for x in sorted(columns)]
    assert [len(c) for c in columns] == [3, 6, 6]  # <s> has 3 next words; then 3 for each of the 2 kept beams
    for column in columns:
        kept = [total for total, gid in column if gid == "kept"]
        pruned = [total for total, gid in column if gid == "pruned"]
        assert len(kept) == 2 and min(kept) > max(pruned)
    plt.close("all")


def test_the_block_of_today_moves_the_norms_before_each_sublayer_and_colours_every_change():
    ax = block_2017_and_today_diagram()
    middle = np.mean(ax.get_xlim())
    panels = {side: sorted((p for p in ax.patches if p.get_gid() and (_centre(p)[0] < middle) == (side == "2017")),
                           key=lambda p: _centre(p)[1]) for side in ("2017", "today")}
    assert [p.get_gid() for p in panels["2017"]] == ["positions", "attention", "norm", "feed-forward", "norm"]
    assert [p.get_gid() for p in panels["today"]] == ["positions", "norm", "attention", "norm", "feed-forward", "norm"]
    assert {p.get_facecolor() for p in panels["2017"]} != {p.get_facecolor() for p in panels["today"]}
    assert "rotary" in _text_in(ax, panels["today"][2]) and "SwiGLU" in _text_in(ax, panels["today"][4])
    plt.close("all")
