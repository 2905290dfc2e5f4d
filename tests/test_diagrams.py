"""The book's diagrams: every part is drawn, and exactly the requested ones are highlighted."""

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt  # noqa: E402
import pytest  # noqa: E402
from matplotlib.colors import to_hex  # noqa: E402

from transformer_lib.diagrams import HIGHLIGHT, MUTED, PARTS, architecture_diagram  # noqa: E402


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
