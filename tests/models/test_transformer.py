import keras
import numpy as np
import pytest
from conftest import random_ids

import transformer_lib as tl
from transformer_lib import PRESETS, Decoder, Encoder, Transformer, count_parameters

TINY = dict(num_layers=2, d_model=32, num_heads=4, dff=64, input_vocab_size=50, target_vocab_size=60)


@pytest.mark.parametrize("norm_first", [False, True])
def test_decoder_cannot_see_future_tokens(norm_first, rng):
    model = Transformer(**TINY, norm_first=norm_first)
    source = random_ids(rng, 2, 7, 50, pad_from=[5, 7])
    target = random_ids(rng, 2, 9, 60)
    logits = np.asarray(model((source, target), training=False))
    for t in range(8):
        changed = target.copy()
        changed[:, t + 1 :] = random_ids(rng, 2, 8 - t, 60)  # new tokens after t, padding included
        changed[0, -1] = 0
        new_logits = np.asarray(model((source, changed), training=False))
        np.testing.assert_allclose(new_logits[:, : t + 1], logits[:, : t + 1], atol=1e-5)
        assert not np.allclose(new_logits[:, t + 1 :], logits[:, t + 1 :], atol=1e-5)  # the test can fail


@pytest.mark.parametrize("norm_first", [False, True])
def test_encoder_outputs_at_real_tokens_ignore_appended_padding(norm_first, rng):
    encoder = Encoder(num_layers=2, d_model=32, num_heads=4, dff=64, vocab_size=50, norm_first=norm_first)
    source = random_ids(rng, 3, 6, 50, pad_from=[3, 5, 6])
    more_padding = np.concatenate([source, np.zeros((3, 10), "int32")], axis=1)
    short = np.asarray(encoder(source, training=False))
    long = np.asarray(encoder(more_padding, training=False))
    for row, length in enumerate([3, 5, 6]):
        np.testing.assert_allclose(long[row, :length], short[row, :length], atol=1e-5)


def test_model_output_ignores_source_padding_but_not_source_tokens(rng):
    model = Transformer(**TINY)
    source = random_ids(rng, 2, 5, 50, pad_from=[4, 5])
    target = random_ids(rng, 2, 6, 60)
    logits = np.asarray(model((source, target), training=False))
    padded = np.concatenate([source, np.zeros((2, 4), "int32")], axis=1)
    np.testing.assert_allclose(np.asarray(model((padded, target), training=False)), logits, atol=1e-5)
    source[:, 0] = (source[:, 0] % 49) + 1  # a different real first token
    assert not np.allclose(np.asarray(model((source, target), training=False)), logits, atol=1e-5)


def test_logits_have_the_documented_shape_and_dtype(rng):
    model = Transformer(**TINY)
    logits = model((random_ids(rng, 3, 4, 50), random_ids(rng, 3, 5, 60)))
    assert tuple(logits.shape) == (3, 5, 60) and logits.dtype == "float32"


def paper_parameter_count(num_layers, d_model, dff, vocab_size, **_):
    """Table 3's sizes counted from §3's description, with one shared vocab_size x d_model embedding
    (used by both stacks and the pre-softmax projection, §3.4, no extra bias), LayerNorm with a
    gain and a bias, and biases on every dense layer."""
    attention = 4 * (d_model * d_model + d_model)  # W^Q, W^K, W^V, W^O and their biases
    ffn = (d_model * dff + dff) + (dff * d_model + d_model)
    norm = 2 * d_model
    encoder_layer = attention + ffn + 2 * norm
    decoder_layer = 2 * attention + ffn + 3 * norm
    return vocab_size * d_model + num_layers * (encoder_layer + decoder_layer)


@pytest.mark.parametrize(
    "preset, paper_millions, low, high",
    [
        # base: 63,082,496. Table 3 rounds to "65M" and gives no breakdown; the ~2M gap is about 3%,
        # the size of ~3,900 extra rows in the 37,000-token table, i.e. within what the paper's
        # unpublished details (exact vocabulary size, biases) can account for.
        ("base", 65, 63e6, 65e6),
        # big: 214,245,376, 0.6% above Table 3's "213M" (the same unpublished details, doubled width).
        ("big", 213, 210e6, 215e6),
    ],
)
def test_paper_models_have_the_sizes_of_table_3(preset, paper_millions, low, high):
    sizes = PRESETS[preset].pick("num_layers", "d_model", "num_heads", "dff")
    model = Transformer(**sizes, input_vocab_size=37000, target_vocab_size=37000, share_embeddings=True)
    ours = count_parameters(model)
    print(f"{preset}: {ours:,} parameters (paper: {paper_millions}M)")
    assert ours == paper_parameter_count(**sizes, vocab_size=37000)
    assert low <= ours <= high
    assert abs(ours / (paper_millions * 1e6) - 1) < 0.035


def test_shared_embeddings_are_one_matrix_used_three_times(rng):
    shared = Transformer(**{**TINY, "target_vocab_size": 50}, share_embeddings=True)
    separate = Transformer(**{**TINY, "target_vocab_size": 50})
    source, target = random_ids(rng, 2, 5, 50), random_ids(rng, 2, 4, 50)
    logits = np.asarray(shared((source, target), training=False))
    separate((source, target))
    embedding_size, output_size = 50 * 32, 32 * 50 + 50
    assert count_parameters(separate) - count_parameters(shared) == 2 * embedding_size + output_size - embedding_size
    assert shared.encoder.embedding is shared.decoder.embedding
    # The output projection is x @ E^T with the same matrix E.
    decoder_out, _ = shared.decoder(target, shared.encoder(source, training=False), source, training=False)
    expected = np.asarray(decoder_out) @ np.asarray(shared.encoder.embedding.embeddings).T
    np.testing.assert_allclose(logits, expected, rtol=1e-5, atol=1e-5)


def test_a_tied_output_layer_is_the_target_embedding_with_two_vocabularies(rng):
    tied = Transformer(**TINY, tie_output=True)  # source 50 pieces, target 60
    separate = Transformer(**TINY)
    source, target = random_ids(rng, 2, 5, 50), random_ids(rng, 2, 4, 60)
    logits = np.asarray(tied((source, target), training=False))
    separate((source, target))
    assert tied.final_layer is None and tied.encoder.embedding is not tied.decoder.embedding
    assert count_parameters(separate) - count_parameters(tied) == 32 * 60 + 60  # the output layer's kernel and bias
    decoder_out, _ = tied.decoder(target, tied.encoder(source, training=False), source, training=False)
    expected = np.asarray(decoder_out, np.float64) @ np.asarray(tied.decoder.embedding.embeddings, np.float64).T
    np.testing.assert_allclose(logits, expected, rtol=1e-5, atol=1e-5)


def test_pre_ln_adds_one_final_norm_per_stack(rng):
    post = Transformer(**TINY)
    pre = Transformer(**TINY, norm_first=True)
    batch = (random_ids(rng, 1, 3, 50), random_ids(rng, 1, 3, 60))
    post(batch), pre(batch)
    assert post.encoder.final_norm is None and pre.encoder.final_norm is not None
    assert count_parameters(pre) - count_parameters(post) == 2 * 2 * 32


@pytest.mark.parametrize(
    "options",
    [dict(), dict(norm_first=True, share_embeddings=True, target_vocab_size=50), dict(tie_output=True), dict(activation="gelu"),
     dict(attention_dropout=0.2, activation_dropout=0.3)],
)
def test_saved_model_reloads_with_identical_outputs(options, tmp_path, rng):
    model = Transformer(**{**TINY, **options})
    target_vocab_size = model.hyperparameters["target_vocab_size"]
    batch = (random_ids(rng, 2, 6, 50, pad_from=[4, 6]), random_ids(rng, 2, 5, target_vocab_size))
    expected = np.asarray(model(batch, training=False))
    model.save(tmp_path / "model.keras")
    reloaded = keras.saving.load_model(tmp_path / "model.keras")
    assert type(reloaded) is Transformer and reloaded.get_config() == model.get_config()
    np.testing.assert_array_equal(np.asarray(reloaded(batch, training=False)), expected)
    if options.get("share_embeddings"):
        assert reloaded.encoder.embedding is reloaded.decoder.embedding


LAYERS = {
    "PositionalEmbedding": (lambda: tl.PositionalEmbedding(50, 16, learned_positions=True), "ids"),
    "MultiHeadAttention": (lambda: tl.MultiHeadAttention(16, 4), "qkv"),
    "MultiHeadAttention with attention dropout": (lambda: tl.MultiHeadAttention(16, 4, attention_dropout=0.3), "qkv"),
    "FeedForward": (lambda: tl.FeedForward(16, 40, activation="gelu"), "x"),
    "FeedForward with activation dropout": (lambda: tl.FeedForward(16, 40, activation_dropout=0.3), "x"),
    "EncoderLayer": (lambda: tl.EncoderLayer(16, 4, 40, 0.2, True), "x"),
    "DecoderLayer": (lambda: tl.DecoderLayer(16, 4, 40), "x,ctx"),
    "DecoderLayer with attention and activation dropout": (
        lambda: tl.DecoderLayer(16, 4, 40, attention_dropout=0.1, activation_dropout=0.2), "x,ctx"),
    "Encoder": (lambda: Encoder(2, 16, 4, 40, vocab_size=50, max_length=64), "ids"),
    "Decoder": (lambda: Decoder(2, 16, 4, 40, vocab_size=50, norm_first=True), "ids,ctx,ids"),
    "Decoder sharing an embedding": (  # the shared embedding's own settings must survive saving
        lambda: Decoder(1, 16, 4, 40, vocab_size=50, embedding=tl.PositionalEmbedding(50, 16, 32, learned_positions=True)),
        "ids,ctx,ids",
    ),
}


@pytest.mark.parametrize("name", LAYERS)
def test_every_layer_round_trips_through_config_and_keras_saving(name, tmp_path, rng):
    make, signature = LAYERS[name]
    layer = make()
    values = {
        "ids": random_ids(rng, 2, 6, 50, pad_from=[4, 6]),
        "x": rng.normal(size=(2, 6, 16)).astype("float32"),
        "ctx": rng.normal(size=(2, 6, 16)).astype("float32"),
    }
    args = [values[a] for a in ("x,x,x" if signature == "qkv" else signature).split(",")]
    expected = [np.asarray(t) for t in keras.tree.flatten(layer(*args, training=False))]

    clone = type(layer).from_config(layer.get_config())
    assert clone.get_config() == layer.get_config()

    inputs = [keras.Input(shape=a.shape[1:], dtype=a.dtype) for a in args]
    keras.Model(inputs, layer(*inputs)).save(tmp_path / "layer.keras")
    reloaded = keras.saving.load_model(tmp_path / "layer.keras")
    got = [np.asarray(t) for t in keras.tree.flatten(reloaded(args, training=False))]
    assert len(got) == len(expected)
    for g, e in zip(got, expected):
        np.testing.assert_array_equal(g, e)


def test_add_norm_round_trips_through_config_and_its_norm_weights_load_with_its_layer(tmp_path, rng):
    # AddNorm takes its sub-layer as a function, which a functional model cannot save as an input:
    # its config round-trips here, and its weights travel inside every EncoderLayer/DecoderLayer above.
    add_norm = tl.AddNorm(0.2, norm_first=True)
    clone = tl.AddNorm.from_config(add_norm.get_config())
    assert clone.get_config() == add_norm.get_config() and clone.norm_first and clone.dropout_rate == 0.2
    layer = tl.EncoderLayer(16, 4, 40, 0.2, True)
    x = rng.normal(size=(2, 6, 16)).astype("float32")
    layer(x, training=False)
    layer.attention_add_norm.norm.gamma.assign(rng.normal(size=16).astype("float32"))
    inputs = keras.Input(shape=(6, 16))
    keras.Model(inputs, layer(inputs)).save(tmp_path / "layer.keras")
    reloaded = keras.saving.load_model(tmp_path / "layer.keras")
    np.testing.assert_array_equal(np.asarray(reloaded.layers[-1].attention_add_norm.norm.gamma),
                                  np.asarray(layer.attention_add_norm.norm.gamma))


@pytest.mark.parametrize(
    "kwargs, message",
    [
        (dict(num_heads=5), "d_model=32 is not divisible by num_heads=5"),
        (dict(num_layers=0), "num_layers must be a positive integer"),
        (dict(dff=-1), "dff must be a positive integer"),
        (dict(dropout_rate=1.5), r"dropout_rate must be a number in \[0, 1\)"),
        (dict(attention_dropout=1.0), r"attention_dropout must be a number in \[0, 1\)"),
        (dict(activation_dropout=-0.1), r"activation_dropout must be a number in \[0, 1\)"),
        (dict(input_vocab_size=0), "vocab_size must be a positive integer"),
        (dict(share_embeddings=True), "share_embeddings=True .* needs one joint vocabulary"),
    ],
)
def test_bad_arguments_give_clear_errors(kwargs, message):
    with pytest.raises(ValueError, match=message):
        Transformer(**{**TINY, **kwargs})


def test_unknown_preset_lists_the_known_ones():
    with pytest.raises(ValueError, match=r"Unknown preset 'huge'; choose one of \['base', 'big', 'small', 'tiny', 'wide'\]"):
        Transformer.from_preset("huge", 10, 10)


def copy_task(rng, n):
    """Source: random tokens 3..11; decoder input: start token 1 + the source shifted right."""
    source = rng.integers(3, 12, size=(n, 6)).astype("int32")
    decoder_input = np.concatenate([np.ones((n, 1), "int32"), source[:, :-1]], axis=1)
    return (source, decoder_input), source


def test_a_tiny_model_learns_to_copy_unseen_sequences(rng, record_property):
    """End to end: gradients reach every part, and teacher forcing with the shifted target works."""
    model = Transformer(1, 32, 4, 64, input_vocab_size=12, target_vocab_size=12, dropout_rate=0.0)
    model.compile(
        optimizer=keras.optimizers.Adam(5e-3),
        loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True),
        metrics=["accuracy"],
    )
    model.fit(*copy_task(rng, 512), epochs=12, batch_size=32, verbose=0)
    _, accuracy = model.evaluate(*copy_task(rng, 256), verbose=0)
    record_property("accuracy", accuracy)
    assert accuracy > 0.95  # chance is 1/9


def test_mixed_precision_keeps_masks_finite_and_logits_float32(rng):
    keras.mixed_precision.set_global_policy("mixed_float16")
    try:
        model = Transformer(**TINY)
        logits = model((random_ids(rng, 2, 6, 50, pad_from=[2, 6]), random_ids(rng, 2, 5, 60, pad_from=[3, 5])))
    finally:
        keras.mixed_precision.set_global_policy("float32")
    assert logits.dtype == "float32" and np.isfinite(np.asarray(logits)).all()
    assert model.encoder.stack_layers[0].self_attention.wq.compute_dtype == "float16"


def test_calling_a_sublayer_first_does_not_break_building_the_whole(rng):
    """A reader may try `mha.wq(x)` before `mha(x, x, x)`; the layer must still build."""
    mha = tl.MultiHeadAttention(16, 4)
    x = rng.normal(size=(1, 3, 16)).astype("float32")
    mha.wq(x)
    output, _ = mha(x, x, x)
    assert tuple(output.shape) == (1, 3, 16) and mha.count_params() == 4 * 16 * 17


def test_learned_positions_are_reachable_from_the_transformer_and_survive_saving(tmp_path, rng):
    model = Transformer(1, 16, 2, 32, 30, 30, dropout_rate=0.0, max_length=12, learned_positions=True)
    source, target = random_ids(rng, 2, 5, 30), random_ids(rng, 2, 4, 30)
    logits = np.asarray(model((source, target)))
    positions = [w for w in model.trainable_weights if "position_embedding" in w.path]
    assert len(positions) == 2 and all(tuple(w.shape) == (12, 16) for w in positions)  # one table per stack
    assert model.get_config()["learned_positions"] is True
    model.save(tmp_path / "learned.keras")
    np.testing.assert_allclose(np.asarray(keras.saving.load_model(tmp_path / "learned.keras")((source, target))), logits,
                               atol=1e-6)


def test_a_preset_model_is_built_from_one_config_that_its_saved_config_gives_back():
    model = Transformer.from_preset("tiny", 40, 30, max_length=16)
    assert model.config == tl.TransformerConfig(num_layers=2, d_model=64, num_heads=4, dff=256, input_vocab_size=40,
                                                target_vocab_size=30, dropout_rate=0.1, max_length=16)
    assert model.hyperparameters == {"num_layers": 2, "d_model": 64, "num_heads": 4, "dff": 256, "input_vocab_size": 40,
                                     "target_vocab_size": 30, "dropout_rate": 0.1, "norm_first": False,
                                     "share_embeddings": False, "max_length": 16, "activation": "relu",
                                     "learned_positions": False, "attention_dropout": 0.0, "activation_dropout": 0.0,
                                     "tie_output": False, "rms_norm": False, "rotary": False, "swiglu": False,
                                     "num_kv_heads": None, "use_bias": True, "scale_embeddings": True,
                                     "rotary_base": 10_000.0, "norm_epsilon": 1e-6, "swiglu_dff": None}
    assert Transformer.from_config(model.get_config()).config == model.config
    assert model.encoder.config is model.config and model.decoder.config is model.config  # one config, down to the stacks


@pytest.mark.parametrize("which", ["attention_dropout", "activation_dropout"])
def test_attention_and_activation_dropout_act_in_training_only(which, rng):
    model = Transformer(**{**TINY, "dropout_rate": 0.0, which: 0.5})  # no other dropout
    batch = (random_ids(rng, 2, 6, 50, pad_from=[4, 6]), random_ids(rng, 2, 5, 40))
    inference = np.asarray(model(batch, training=False))
    np.testing.assert_array_equal(np.asarray(model(batch, training=False)), inference)
    assert np.abs(np.asarray(model(batch, training=True)) - inference).max() > 1e-3
    plain = Transformer(**{**TINY, "dropout_rate": 0.0})
    plain(batch)
    plain.set_weights(model.get_weights())  # the same weights: dropout adds none
    np.testing.assert_allclose(np.asarray(plain(batch, training=True)), inference, atol=1e-5)


def test_attention_dropout_drops_weights_in_the_mixing_and_returns_them_whole(rng):
    attention = tl.MultiHeadAttention(16, 4, attention_dropout=0.5)
    x = rng.normal(size=(2, 6, 16)).astype("float32")
    (kept, kept_weights), (dropped, dropped_weights) = attention(x, x, x, training=False), attention(x, x, x, training=True)
    np.testing.assert_allclose(np.asarray(keras.ops.sum(dropped_weights, axis=-1)), 1.0, atol=1e-5)  # for display: rows still sum to 1
    np.testing.assert_allclose(np.asarray(dropped_weights), np.asarray(kept_weights), atol=1e-6)
    assert np.abs(np.asarray(dropped) - np.asarray(kept)).max() > 1e-3  # but the values were mixed with fewer
