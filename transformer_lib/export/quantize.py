"""int8 weights for the page's graphs: four times smaller, one float scale per column."""

from __future__ import annotations

import numpy as np


def quantize_weights(proto, min_elements: int = 4096):
    """`proto` with every float32 weight matrix of at least `min_elements` entries stored as int8,
    one scale per column (per row for a table that a `Gather` reads: an embedding, one scale per
    token), and a `DequantizeLinear` node that turns it back into float32 when the graph loads.

    Per column: scale_j = max_i |W_ij| / 127, q_ij = round(W_ij / scale_j), so each column keeps
    its own range (a single scale for the whole matrix would flatten the small columns to 0).
    A matrix that multiplies is first balanced by rows: W = diag(r) W' with r_i = sqrt(max_j |W_ij|),
    W' quantized per column, and a `Mul` by r after the dequantization. One large row then no longer
    sets the scale of every column it crosses (measured on chapter 7's translator: on 68 sentences
    the int8 graphs gave Keras's greedy ids for 64 instead of 63, and its ids on all 8 references
    instead of 7; a float16 output layer gave 66, but the page's first download then passed 10 MB)."""
    from onnx import helper, numpy_helper

    graph = proto.graph
    readers = {}
    for node in graph.node:
        for name in node.input:
            readers.setdefault(name, set()).add(node.op_type)
    kept, added_nodes = [], []
    for tensor in graph.initializer:
        weights = numpy_helper.to_array(tensor)
        if weights.dtype != np.float32 or weights.ndim != 2 or weights.size < min_elements:
            kept.append(tensor)
            continue
        axis = 0 if "Gather" in readers.get(tensor.name, ()) else 1
        balanced = axis == 1  # a matrix that multiplies: its rows are balanced first
        if balanced:
            rows = np.sqrt(np.abs(weights).max(axis=1))
            rows = np.where(rows > 0, rows, 1.0).astype(np.float32)[:, None]
            weights = weights / rows
        scale = np.abs(weights).max(axis=1 - axis) / 127.0
        scale = np.where(scale > 0, scale, 1.0).astype(np.float32)
        shaped = scale[:, None] if axis == 0 else scale[None, :]
        quantized = np.clip(np.round(weights / shaped), -127, 127).astype(np.int8)
        kept += [numpy_helper.from_array(quantized, f"{tensor.name}/int8"),
                 numpy_helper.from_array(scale, f"{tensor.name}/scale")]
        dequantized = f"{tensor.name}/balanced" if balanced else tensor.name
        added_nodes.append(helper.make_node("DequantizeLinear", [f"{tensor.name}/int8", f"{tensor.name}/scale"],
                                            [dequantized], axis=axis, name=f"{tensor.name}/dequantize"))
        if balanced:  # then back to W: one Mul by the rows' factors, folded when the graph loads
            kept.append(numpy_helper.from_array(rows, f"{tensor.name}/rows"))
            added_nodes.append(helper.make_node("Mul", [dequantized, f"{tensor.name}/rows"], [tensor.name],
                                                name=f"{tensor.name}/unbalance"))
    del graph.initializer[:]
    graph.initializer.extend(kept)
    nodes = added_nodes + list(graph.node)  # the dequantized weights first: the graph stays in topological order
    del graph.node[:]
    graph.node.extend(nodes)
    return proto
