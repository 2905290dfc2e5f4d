"""Chapter 3's diagrams of attention before its formula: the soft lookup (a dict finds one key,
attention weighs every key) and one token's path (x_j -> q_j, k_j, v_j; q_1 meets every key).
Counted through the patches' gids, as in test_diagrams.py."""

import matplotlib

matplotlib.use("Agg")

from collections import Counter  # noqa: E402

import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pytest  # noqa: E402
from matplotlib.colors import to_hex  # noqa: E402

from transformer_lib.book.diagrams import HIGHLIGHT, MUTED, lookup_diagram, token_flow_diagram  # noqa: E402


@pytest.fixture(autouse=True)
def _close_figures():
    yield
    plt.close("all")


def _patches(ax, gid):
    """The patches named `gid`, top to bottom, then left to right."""
    def centre(p):
        box = p.get_bbox() if hasattr(p, "get_bbox") else p.get_extents()
        return (-(box.y0 + box.y1) / 2, (box.x0 + box.x1) / 2)
    return sorted((p for p in ax.patches if p.get_gid() == gid), key=centre)


def _text_in(ax, patch):
    box = patch.get_bbox()
    centre = ((box.x0 + box.x1) / 2, (box.y0 + box.y1) / 2)
    found = [t.get_text() for t in ax.texts if np.allclose(t.get_position(), centre)]
    assert len(found) == 1, f"{len(found)} texts in the box {patch.get_gid()!r}"
    return found[0]


def _is_highlighted(patch):
    return to_hex(patch.get_facecolor()) == to_hex(HIGHLIGHT)


# Their readability (text size, nothing cut off or overlapping) is tested with the other idea diagrams
# in test_diagrams.py, with these variants too.
def test_the_dict_returns_the_one_value_whose_key_equals_the_query():
    ax = lookup_diagram()
    query = _text_in(ax, _patches(ax, "dict query")[0]).split("\n")[-1]
    keys, values = _patches(ax, "dict key"), _patches(ax, "dict value")
    assert len(keys) == len(values) == 3
    matched = [i for i, key in enumerate(keys) if _is_highlighted(key)]
    assert len(matched) == 1 and _text_in(ax, keys[matched[0]]) == query  # one key, and it is the query
    assert [_is_highlighted(v) for v in values] == [i in matched for i in range(3)]
    assert _text_in(ax, _patches(ax, "dict output")[0]) == _text_in(ax, values[matched[0]])


@pytest.mark.parametrize("weights", [(0.47, 0.47, 0.06), (0.9, 0.1), (0.25, 0.25, 0.25, 0.25), (1.0,)])
def test_attention_weighs_every_key_with_bars_drawn_to_scale(weights):
    ax = lookup_diagram(weights)
    counts = Counter(p.get_gid() for p in ax.patches)
    assert counts["query"] == counts["output"] == 1
    assert counts["key"] == counts["value"] == counts["weight"] == len(weights)  # every key is used
    bars = _patches(ax, "weight")
    widths = np.array([bar.get_width() for bar in bars])
    np.testing.assert_allclose(widths / widths.sum(), weights, atol=1e-9)  # in order, top to bottom
    labels = {t.get_text() for t in ax.texts}
    assert {f"{w:.2f}" for w in weights} <= labels


@pytest.mark.parametrize("weights", [(0.5, 0.6), (1.2, -0.2), (0.2,) * 5, (), "abc"])
def test_weights_that_are_not_a_softmax_output_are_refused(weights):
    with pytest.raises(ValueError, match="weights must"):
        lookup_diagram(weights)


@pytest.mark.parametrize("num_tokens", [1, 3, 4])
def test_every_token_is_projected_and_the_first_query_meets_every_key(num_tokens):
    ax = token_flow_diagram(num_tokens)
    counts = Counter(p.get_gid() for p in ax.patches)
    for gid in ("token", "query", "key", "value", "score", "weight", "weighted value"):
        assert counts[gid] == num_tokens, gid
    assert counts["output"] == 1 and "z_1" in _text_in(ax, _patches(ax, "output")[0])
    queries = sorted(_patches(ax, "query"), key=lambda p: p.get_x())
    assert [_is_highlighted(q) for q in queries] == [True] + [False] * (num_tokens - 1)  # only q_1 is followed
    assert all(to_hex(q.get_facecolor()) == to_hex(MUTED) for q in queries[1:])
    scores = sorted(_patches(ax, "score"), key=lambda p: p.get_x())
    assert [_text_in(ax, s) for s in scores] == [f"$q_1 \\cdot k_{j}$" for j in range(1, num_tokens + 1)]
    weights = sorted(_patches(ax, "weight"), key=lambda p: p.get_x())
    assert [_text_in(ax, w) for w in weights] == [f"$a_{{1{j}}}$" for j in range(1, num_tokens + 1)]


@pytest.mark.parametrize("num_tokens", [0, 5, 2.0, True])
def test_a_token_count_that_would_not_fit_is_refused(num_tokens):
    with pytest.raises(ValueError, match="num_tokens must be an integer from 1 to 4"):
        token_flow_diagram(num_tokens)
