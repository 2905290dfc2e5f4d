"""Weights saved by the since-2017 language model before it became `LanguageModel` with switches: its
blocks sat in a list of their own (`blocks/modern_block_1/attention/...`), each with its two norms beside
the sub-layers. `load_modern_block_weights` reads such a `.weights.h5` file into the same weights of
today's model (`decoder/stack_layers/decoder_only_layer_1/self_attention/...`), so that nothing saved
before is lost."""

from __future__ import annotations

import re

import numpy as np


def _groups(path) -> dict[str, list[np.ndarray]]:
    """Every group of a Keras 3 `.weights.h5` file that holds variables: its path -> the arrays, in order."""
    import h5py

    groups = {}
    with h5py.File(path, "r") as file:
        def visit(name, item):
            if isinstance(item, h5py.Group) and name.endswith("/vars") and len(item):
                groups[name.removesuffix("/vars")] = [np.asarray(item[key]) for key in sorted(item, key=int)]
        file.visititems(visit)
    return groups


def modern_block_layout(path) -> bool:
    """True for a file with the old layout: its blocks under `blocks/`, no `decoder/` (only the top-level
    names are read, not the weights)."""
    import h5py

    with h5py.File(path, "r") as file:
        return "blocks" in file and "decoder" not in file


def _target(model, name: str):
    """The layer of today's `model` that holds the old group `name`, or None if the name is not the old layout's."""
    decoder = model.decoder
    if name == "embedding/token_embedding":
        return decoder.embedding.token_embedding
    if name == "final_norm":
        return decoder.final_norm
    match = re.fullmatch(r"blocks/modern_block(?:_(\d+))?/(\w+)(?:/(\w+))?", name)
    if match is None:
        return None
    index, part, sub = int(match[1] or 0), match[2], match[3]
    if index >= len(decoder.stack_layers):
        return None
    layer = decoder.stack_layers[index]
    places = {"attention": layer.self_attention, "attention_norm": layer.self_attention_add_norm.norm,
              "feed_forward": layer.feed_forward, "feed_forward_norm": layer.feed_forward_add_norm.norm}
    place = places.get(part)
    return getattr(place, sub, None) if sub is not None and place is not None else place


def load_modern_block_weights(model, path) -> None:
    """Read the old layout's `path` into the built `model` (a `LanguageModel` of the same sizes and switches);
    a group with no place here, or of another shape, raises a ValueError that names it."""
    if not model.built:
        raise ValueError("Build the model first (call it on a batch of token ids), then load the weights.")
    for name, arrays in _groups(path).items():
        target = _target(model, name)
        if target is None or len(target.weights) != len(arrays):
            raise ValueError(f"{path}: the weights {name!r} have no place in this model; build it with the sizes and "
                             "switches of the model that saved them.")
        for variable, array in zip(target.weights, arrays):
            if tuple(variable.shape) != array.shape:
                raise ValueError(f"{path}: {name!r} has shape {array.shape}, this model's {variable.path} "
                                 f"{tuple(variable.shape)}; build it with the sizes and switches that saved them.")
            variable.assign(array)
