"""The code the chapters show reads like the paper's boxes: each `call` holds its sub-layers in the
order of Figure 1 and §3.2.2, and the cached decoding path lives beside it, not inside it."""

import inspect
import re

import transformer_lib as tl


def _body(function) -> list[str]:
    """The code lines of `function`, without its signature, docstring, comments and blank lines."""
    source = inspect.getsource(function)
    source = re.sub(r'"""(.|\n)*?"""', "", source)
    lines = [line.split("#")[0].strip() for line in source.splitlines()[1:]]
    return [line for line in lines if line]


def _order(lines: list[str], *needles: str) -> list[int]:
    return [next(i for i, line in enumerate(lines) if needle in line) for needle in needles]


def test_the_decoder_layer_shows_its_three_sub_layers_in_order_each_in_add_and_norm():
    lines = _body(tl.DecoderLayer.call)
    positions = _order(lines, "self.self_attention(", "self.cross_attention(", "self.feed_forward")
    assert positions == sorted(positions)
    for add_norm in ("self.self_attention_add_norm(", "self.cross_attention_add_norm(", "self.feed_forward_add_norm("):
        assert any(add_norm in line for line in lines), add_norm
    assert not any("step" in line or "cache" in line for line in lines)  # the cached path is `step`
    assert "cache" in inspect.getsource(tl.DecoderLayer.step)


def test_the_encoder_layer_shows_self_attention_then_feed_forward():
    lines = _body(tl.EncoderLayer.call)
    positions = _order(lines, "self.self_attention(", "self.feed_forward")
    assert positions == sorted(positions) and len(lines) <= 4


def test_multi_head_attention_shows_project_split_equation_1_merge_and_output_projection():
    lines = _body(tl.MultiHeadAttention.call)  # steps 1 and 2, then steps 3 and 4 in attend_heads
    positions = _order(lines, "self.wq(", "split_heads(", "self.attend_heads(")
    assert positions == sorted(positions)
    lines = _body(tl.MultiHeadAttention.attend_heads)
    positions = _order(lines, "scaled_dot_product_attention(", "merge_heads(", "self.wo(")
    assert positions == sorted(positions)


def test_add_norm_reads_as_the_two_formulas():
    source = inspect.getsource(tl.AddNorm.call)
    assert "x + self.dropout(output" in source  # pre-LN: x + Dropout(Sublayer(LayerNorm(x)))
    assert "self.norm(x + self.dropout(output" in source  # post-LN: LayerNorm(x + Dropout(Sublayer(x)))
    assert "sublayer(self.norm(x))" in source and "sublayer(x)" in source


def test_the_transformer_call_begins_with_the_model():
    lines = _body(tl.Transformer.call)
    assert lines[0] == "source_ids, target_ids = inputs"
    assert "self.encoder(" in lines[1] and "self.decoder(" in lines[2] and "self.project(" in lines[3]


def test_a_batch_of_mismatched_sentence_pairs_is_still_refused_before_any_work():
    import numpy as np
    import pytest

    model = tl.Transformer.from_preset("tiny", input_vocab_size=20, target_vocab_size=20)
    with pytest.raises(ValueError, match="source_ids has 2 rows but target_ids has 1"):
        model((np.ones((2, 3), "int32"), np.ones((1, 3), "int32")))
