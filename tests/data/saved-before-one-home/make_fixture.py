"""Writes this folder's weights and expected outputs with the library of the commit named in expected.json:
the attention layers and the decoder-only language models as they were before they became one class each.
tests/models/test_saved_before_one_home.py loads them with today's library.

    python tests/data/saved-before-one-home/make_fixture.py   (run at that commit, from the repository root)
"""

import json
import subprocess
from pathlib import Path

import keras
import numpy as np

import transformer_lib as tl

HERE = Path(__file__).parent
rng = np.random.default_rng(0)
x = rng.normal(size=(2, 5, 16)).astype("float32")
ids = np.array([[1, 7, 9, 4, 30, 2, 0, 0], [1, 12, 3, 3, 44, 21, 8, 2]], np.int32)
mask = np.asarray(tl.look_ahead_mask(5))

class Holder(keras.Model):
    """A model that holds one attention layer as `attention`, as the library's blocks do, so that its weights can
    be saved (a layer alone has no save_weights)."""

    def __init__(self, attention):
        super().__init__()
        self.attention = attention

    def call(self, x):
        return self.attention(x, x, x)[0]


layers = {"multi_head_attention": lambda: tl.MultiHeadAttention(16, 4),
          "grouped_query_attention": lambda: tl.GroupedQueryAttention(16, 4, 2)}
models = {"language_model": lambda: tl.LanguageModel(50, num_layers=2, d_model=16, num_heads=4, dff=32, max_length=16),
          "modern_all_off": lambda: tl.ModernLanguageModel(50, num_layers=2, d_model=16, num_heads=4, dff=32,
                                                           max_length=16),
          "modern_all_on": lambda: tl.ModernLanguageModel(50, num_layers=2, d_model=16, num_heads=4, dff=32,
                                                          max_length=16, norm_first=True, rms_norm=True, rotary=True,
                                                          swiglu=True, num_kv_heads=2)}
expected = {}
for name, make in layers.items():
    keras.utils.set_random_seed(1)
    layer = make()
    holder = Holder(layer)
    holder(x)
    holder.save_weights(HERE / f"{name}.weights.h5")
    expected[name] = {"config": layer.get_config(), "output": np.asarray(layer(x, x, x, mask=mask)[0]).tolist()}
for name, make in models.items():
    keras.utils.set_random_seed(2)
    model = make()
    model(ids)
    model.save_weights(HERE / f"{name}.weights.h5")
    expected[name] = {"config": model.get_config(), "logits": np.asarray(model(ids)).tolist(),
                      "greedy": tl.generate(model, ids[1, :4], 8, temperature=0)}
commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True).stdout.strip()
record = {"what": "weights written by the library before one attention class, one cache and one decoder-only model; "
                  "the outputs that library gave on `x` (the attention layers, with chapter 3's look-ahead mask) and "
                  "on `ids` (the language models: logits, and the greedy continuation of ids[1, :4], 8 tokens)",
          "written_by_commit": commit, "command": "python tests/data/saved-before-one-home/make_fixture.py",
          "x": x.tolist(), "ids": ids.tolist(), "expected": expected}
(HERE / "expected.json").write_text(json.dumps(record) + "\n")
