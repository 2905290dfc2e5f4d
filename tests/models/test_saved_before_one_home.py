"""Weights written before multi-head and grouped-query attention became one class, and before the key/value
cache had one module, load into today's classes and give the outputs they gave then
(tests/fixtures/saved-before-one-home: its make_fixture.py wrote them at the commit its expected.json names)."""

import json
from pathlib import Path

import keras
import numpy as np
import pytest

import transformer_lib as tl

SAVED = Path(__file__).resolve().parents[1] / "fixtures" / "saved-before-one-home"
RECORD = json.loads((SAVED / "expected.json").read_text())
X, IDS = np.array(RECORD["x"], np.float32), np.array(RECORD["ids"], np.int32)


class Holder(keras.Model):  # the fixture's holder of one attention layer, as the blocks hold theirs
    def __init__(self, attention):
        super().__init__()
        self.attention = attention

    def call(self, x):
        return self.attention(x, x, x)[0]


@pytest.mark.parametrize("name, cls", [("multi_head_attention", tl.MultiHeadAttention),
                                       ("grouped_query_attention", tl.GroupedQueryAttention)])
def test_attention_saved_before_loads_from_its_old_config_and_gives_the_same_output(name, cls):
    saved = RECORD["expected"][name]
    layer = cls.from_config(saved["config"])
    holder = Holder(layer)
    holder(X)
    holder.load_weights(SAVED / f"{name}.weights.h5")
    output = np.asarray(layer(X, X, X, mask=tl.look_ahead_mask(X.shape[1]))[0])
    np.testing.assert_allclose(output, np.array(saved["output"]), atol=1e-5)


@pytest.mark.parametrize("name, cls", [("language_model", tl.LanguageModel),
                                       ("modern_all_off", tl.ModernLanguageModel),
                                       ("modern_all_on", tl.ModernLanguageModel)])
def test_language_model_saved_before_loads_and_gives_the_same_logits_and_continuation(name, cls):
    saved = RECORD["expected"][name]
    model = cls.from_config(saved["config"])
    model(IDS)
    model.load_weights(SAVED / f"{name}.weights.h5")
    np.testing.assert_allclose(np.asarray(model(IDS)), np.array(saved["logits"]), atol=1e-4)
    assert tl.generate(model, IDS[1, :4], 8, temperature=0) == saved["greedy"]
