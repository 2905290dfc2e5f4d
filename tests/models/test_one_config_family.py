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


TRAINED = dict(use_bias=False, scale_embeddings=False, rotary_base=100_000.0, norm_epsilon=1e-5, swiglu_dff=24)


def test_each_setting_of_a_trained_model_reaches_the_layer_it_changes():
    """SmolLM2's settings (`load_gguf`): no biases, unscaled embeddings, its rotary base, its norms' epsilon, SwiGLU's
    inner size given directly; and a model saved with them comes back with them."""
    config = tl.TransformerConfig(**SIZES, **SWITCHED, **TRAINED, input_vocab_size=30)
    model = tl.LanguageModel(config)
    model(IDS)
    layer = model.decoder.stack_layers[0]
    attention = layer.self_attention
    assert [w.name for w in attention.weights] == ["kernel"] * 4  # W^Q, W^K, W^V, W^O and no bias
    assert layer.feed_forward.dff == 24 and layer.feed_forward.gate.kernel.shape == (16, 24)
    norms = [layer.self_attention_add_norm.norm, layer.feed_forward_add_norm.norm, model.decoder.final_norm]
    assert [norm.epsilon for norm in norms] == [1e-5] * 3
    assert layer.rotary.base == 100_000.0
    tokens = np.asarray(model.decoder.embedding.token_embedding(IDS))
    np.testing.assert_array_equal(np.asarray(model.decoder.embed_positions(IDS)), tokens)  # no sqrt(d_model)
    scaled = tl.LanguageModel(config.replace(scale_embeddings=True))
    scaled(IDS)
    scaled.set_weights(model.get_weights())
    np.testing.assert_allclose(np.asarray(scaled.decoder.embed_positions(IDS)), tokens * 4.0, rtol=1e-6)  # sqrt(16)
    again = tl.LanguageModel.from_config(model.get_config())
    again(IDS)
    again.set_weights(model.get_weights())
    assert again.config == model.config  # the vocabulary also the target's (a language model's)
    np.testing.assert_array_equal(outputs(again), outputs(model))


def test_the_rotary_base_and_the_epsilon_change_what_the_model_computes():
    """Each setting is read where it matters: the same weights with another base, epsilon or without the biases
    give other logits."""
    config = tl.TransformerConfig(**SIZES, **SWITCHED, input_vocab_size=30)
    model = tl.LanguageModel(config)
    model(IDS)
    rng = np.random.default_rng(0)
    for weight in model.weights:
        if weight.name == "bias":  # zeros when built: give them values, so that leaving them out shows
            weight.assign(rng.normal(0, 0.5, weight.shape))
    reference = outputs(model)
    for change in (dict(rotary_base=100.0), dict(norm_epsilon=1.0), dict(use_bias=False)):
        other = tl.LanguageModel(config.replace(**change))
        other(IDS)
        kept = {w.path: w for w in model.weights}
        for weight in other.weights:  # the same weights where both have them (use_bias=False has no biases)
            weight.assign(kept[weight.path.replace(other.name, model.name, 1)])
        assert np.abs(outputs(other) - reference).max() > 1e-4, change


def test_a_plain_relu_network_drops_its_biases_too():
    layer = tl.FeedForward(8, 16, use_bias=False)
    layer.build((2, 3, 8))
    assert [w.shape for w in layer.weights] == [(8, 16), (16, 8)]
    assert tl.FeedForward.from_config(layer.get_config()).use_bias is False


@pytest.mark.parametrize("fields, message", [
    (dict(scale_embeddings=False), "scale_embeddings=False needs rotary=True"),
    (dict(swiglu_dff=24), "set swiglu=True"),
    (dict(rotary=True, rotary_base=1.0), "rotary_base must be > 1"),
    (dict(norm_epsilon=-1e-5), "norm_epsilon"),
    (dict(swiglu=True, swiglu_dff=0), "swiglu_dff"),
])
def test_a_trained_setting_that_cannot_hold_is_refused(fields, message):
    with pytest.raises(ValueError, match=message):
        tl.TransformerConfig(**SIZES, **fields)
