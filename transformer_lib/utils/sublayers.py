"""Building a layer's sub-layers, each once."""

from __future__ import annotations


def build_unbuilt(layer, *shapes) -> None:
    """Build a sub-layer from its parent's `build` unless it is built already (a reader may have
    called it on its own first, e.g. `mha.wq(x)`); Keras refuses to build a layer twice."""
    if not layer.built:
        layer.build(*shapes)
