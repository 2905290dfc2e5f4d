"""Every model takes its `TransformerConfig`, and the changes since 2017 are fields of it: building from a
config or from the same sizes by name gives the same model, a saved config gives it back, and a setting a
model cannot honour is refused, not dropped."""

import keras
import numpy as np
import pytest

import transformer_lib as tl

SIZES = dict(num_layers=1, d_model=16, num_heads=4, dff=32, dropout_rate=0.0, max_length=16)
SWITCHED = dict(norm_first=True, rms_norm=True, rotary=True, swiglu=True, num_kv_heads=2)
IDS = np.array([[1, 5, 9, 4, 2, 0], [1, 7, 7, 3, 8, 2]], np.int32)


def outputs(model):
    output = model(IDS, training=False)
    return np.asarray(output[0] if isinstance(output, tuple) else output)


@pytest.mark.parametrize("cls, switches", [(tl.LanguageModel, SWITCHED), (tl.ModernLanguageModel, SWITCHED),
                                           (tl.TransformerClassifier, dict(rms_norm=True, swiglu=True)),
                                           (tl.MaskedLanguageModel, dict(num_kv_heads=2, activation="gelu"))])
def test_a_model_from_its_config_is_the_model_from_the_same_fields_by_name(cls, switches):
    config = tl.TransformerConfig(**SIZES, **switches, input_vocab_size=30)
    keras.utils.set_random_seed(0)
    from_config = cls(config)
    keras.utils.set_random_seed(0)
    by_name = cls(30, **SIZES, **switches)
    assert from_config.config.replace(target_vocab_size=None) == by_name.config.replace(target_vocab_size=None)
    np.testing.assert_array_equal(outputs(from_config), outputs(by_name))
    again = cls.from_config(from_config.get_config())
    assert again.config == from_config.config
    with pytest.raises(TypeError, match="not both"):
        cls(config, d_model=32)


def test_each_switch_since_2017_reaches_the_block_it_changes():
    model = tl.LanguageModel(tl.TransformerConfig(**SIZES, **SWITCHED, input_vocab_size=30))
    model(IDS)
    layer = model.decoder.stack_layers[0]
    assert isinstance(layer.self_attention_add_norm.norm, tl.RMSNorm) and isinstance(model.decoder.final_norm, tl.RMSNorm)
    assert isinstance(layer.feed_forward, tl.SwiGLUFeedForward) and layer.rotary is not None
    assert layer.self_attention.num_kv_heads == 2 and model.cache_bytes_per_token() == 2 * 2 * 4 * 4
    plain = tl.LanguageModel(30, **SIZES)
    plain(IDS)
    assert isinstance(plain.decoder.stack_layers[0].self_attention_add_norm.norm, keras.layers.LayerNormalization)
    assert plain.decoder.stack_layers[0].rotary is None  # chapter 9: pre-LN, its final norm a LayerNorm
    assert isinstance(plain.decoder.final_norm, keras.layers.LayerNormalization)


def test_the_translator_takes_the_switches_it_can_and_refuses_rotary_positions():
    config = tl.TransformerConfig(**SIZES, rms_norm=True, swiglu=True, num_kv_heads=1, input_vocab_size=30,
                                  target_vocab_size=30)
    model = tl.Transformer(config)
    assert tl.greedy_decode(model, IDS[:1], max_length=6).shape[0] == 1
    with pytest.raises(ValueError, match="rotary"):
        tl.Transformer(config.replace(rotary=True))
    with pytest.raises(ValueError, match="num_kv_heads=3 does not divide"):
        config.replace(num_kv_heads=3)
