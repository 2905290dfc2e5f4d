"""The changes since 2017, each against an independent reference: float64 NumPy written from the papers'
formulas, Keras's own layers, or the 2017 layer it must equal in its special case."""

import keras
import numpy as np
import pytest

import transformer_lib as tl


@pytest.fixture
def rng():
    return np.random.default_rng(0)


# --- RMSNorm ------------------------------------------------------------------------------------------

def rms_norm_reference(x, gain, epsilon):
    x = np.asarray(x, np.float64)
    return x / np.sqrt(np.mean(x**2, axis=-1, keepdims=True) + epsilon) * gain


def test_rms_norm_divides_by_the_root_mean_square_and_keeps_the_mean(rng):
    x = rng.normal(3.0, 2.0, size=(2, 5, 8)).astype("float32")  # a mean far from 0: LayerNorm would remove it
    norm = tl.RMSNorm(epsilon=1e-6)
    norm(x)
    gain = rng.normal(size=8).astype("float32")
    norm.set_weights([gain])
    ours = np.asarray(norm(x))
    np.testing.assert_allclose(ours, rms_norm_reference(x, gain, 1e-6), rtol=1e-5, atol=1e-6)
    assert np.all(np.sign(ours.mean(axis=-1)) == np.sign((x * gain).mean(axis=-1)))  # not centred


def test_rms_norm_equals_keras_rms_normalization(rng):
    x = rng.normal(size=(3, 7, 16)).astype("float32")
    ours, theirs = tl.RMSNorm(epsilon=1e-5), keras.layers.RMSNormalization(epsilon=1e-5)
    ours(x), theirs(x)
    gain = rng.normal(size=16).astype("float32")
    ours.set_weights([gain])
    theirs.set_weights([gain])
    np.testing.assert_allclose(np.asarray(ours(x)), np.asarray(theirs(x)), rtol=1e-5, atol=1e-5)


def test_rms_norm_keeps_a_zero_vector_at_zero_and_round_trips():
    norm = tl.RMSNorm(epsilon=1e-3)
    assert np.all(np.asarray(norm(np.zeros((1, 2, 4), "float32"))) == 0)
    clone = tl.RMSNorm.from_config(norm.get_config())
    assert clone.epsilon == 1e-3
    with pytest.raises(ValueError, match="epsilon"):
        tl.RMSNorm(epsilon=-1.0)


# --- rotary position embeddings -----------------------------------------------------------------------

def rotary_reference(x, offset=0, base=10_000.0):
    """Each pair (2i, 2i+1) at position t times the 2x2 rotation by t * base^(-2i/d), in float64."""
    x = np.asarray(x, np.float64)
    length, d = x.shape[-2], x.shape[-1]
    out = np.empty_like(x)
    for t in range(length):
        for i in range(d // 2):
            angle = (offset + t) * base ** (-2 * i / d)
            c, s = np.cos(angle), np.sin(angle)
            a, b = x[..., t, 2 * i], x[..., t, 2 * i + 1]
            out[..., t, 2 * i], out[..., t, 2 * i + 1] = c * a - s * b, s * a + c * b
    return out


def test_rotary_embedding_rotates_each_pair_by_position_times_its_frequency(rng):
    x = rng.normal(size=(2, 3, 6, 8)).astype("float32")  # (B, h, T, d_k)
    rope = tl.RotaryEmbedding()
    np.testing.assert_allclose(np.asarray(rope(x)), rotary_reference(x), rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(np.asarray(rope(x, offset=5)), rotary_reference(x, offset=5), rtol=1e-4, atol=1e-5)
    np.testing.assert_allclose(np.linalg.norm(np.asarray(rope(x)), axis=-1), np.linalg.norm(x, axis=-1), rtol=1e-5)


def test_a_rotated_score_depends_only_on_the_offset_between_positions(rng):
    d, rope = 16, tl.RotaryEmbedding()
    q, k = rng.normal(size=d).astype("float32"), rng.normal(size=d).astype("float32")

    def at(vector, position):  # the vector rotated as if it stood at `position`
        rows = np.zeros((1, position + 1, d), np.float32)
        rows[0, position] = vector
        return np.asarray(rope(rows))[0, position]

    def score(m, n):  # q at position m, k at position n
        return float(at(q, m) @ at(k, n))

    for gap in (0, 1, 5):
        scores = [score(m, m + gap) for m in (0, 3, 11)]
        np.testing.assert_allclose(scores, scores[0], rtol=1e-4, atol=1e-4)
    assert abs(score(0, 1) - score(0, 5)) > 1e-3  # while another offset scores otherwise


def test_the_cached_step_at_an_offset_equals_the_row_of_the_whole_sequence(rng):
    x = rng.normal(size=(1, 9, 8)).astype("float32")
    rope = tl.RotaryEmbedding()
    whole = np.asarray(rope(x))
    for t in (0, 4, 8):
        np.testing.assert_allclose(np.asarray(rope(x[:, t: t + 1], offset=t))[0, 0], whole[0, t], atol=1e-6)


def test_rotary_embedding_refuses_an_odd_width_and_a_bad_base():
    with pytest.raises(ValueError, match="odd"):
        tl.RotaryEmbedding()(np.ones((1, 2, 5), "float32"))
    with pytest.raises(ValueError, match="base"):
        tl.RotaryEmbedding(base=1.0)


# --- SwiGLU -------------------------------------------------------------------------------------------

def test_swiglu_is_swish_of_the_gate_times_the_up_projection_then_down(rng):
    layer = tl.SwiGLUFeedForward(8, 12)
    x = rng.normal(size=(2, 3, 8)).astype("float32")
    layer(x)
    w_gate, w_up, w_down = (rng.normal(size=w.shape).astype("float32") for w in layer.get_weights())
    layer.set_weights([w_gate, w_up, w_down])
    z = x.astype(np.float64) @ w_gate
    expected = ((z / (1 + np.exp(-z))) * (x.astype(np.float64) @ w_up)) @ w_down
    np.testing.assert_allclose(np.asarray(layer(x)), expected, rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("d_model, dff", [(64, 256), (128, 512), (512, 2048)])
def test_swiglu_at_two_thirds_of_dff_has_the_relu_networks_parameters(d_model, dff):
    relu = tl.FeedForward(d_model, dff)
    relu.build((None, None, d_model))
    swiglu = tl.SwiGLUFeedForward(d_model, tl.SwiGLUFeedForward.same_parameters_as(d_model, dff))
    swiglu.build((None, None, d_model))
    assert relu.count_params() == 2 * d_model * dff + dff + d_model
    assert abs(swiglu.count_params() - relu.count_params()) <= 3 * d_model  # one inner unit more or less
    assert abs(swiglu.dff / dff - 2 / 3) < 0.01


# --- grouped-query attention --------------------------------------------------------------------------

def test_with_as_many_key_value_heads_as_query_heads_it_is_multi_head_attention(rng):
    d_model, heads = 16, 4
    q, kv = rng.normal(size=(2, 5, d_model)).astype("float32"), rng.normal(size=(2, 7, d_model)).astype("float32")
    mask = tl.padding_mask(np.array([[1, 5, 6, 2, 0, 0, 0], [1, 5, 6, 7, 8, 9, 2]]))
    gqa, mha = tl.GroupedQueryAttention(d_model, heads, heads), tl.MultiHeadAttention(d_model, heads)
    gqa(q, kv, kv), mha(q, kv, kv)
    gqa.set_weights(mha.get_weights())  # the same four projections, in the same order
    (ours, our_weights), (theirs, their_weights) = gqa(q, kv, kv, mask=mask), mha(q, kv, kv, mask=mask)
    np.testing.assert_allclose(np.asarray(ours), np.asarray(theirs), rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(np.asarray(our_weights), np.asarray(their_weights), atol=1e-6)


def gqa_reference(x, weights, num_heads, num_kv_heads):
    """Float64, one query head at a time: head i reads key/value head i // (num_heads / num_kv_heads)."""
    wq, bq, wk, bk, wv, bv, wo, bo = (np.asarray(w, np.float64) for w in weights)
    x = np.asarray(x, np.float64)
    d_k = wq.shape[1] // num_heads
    q, k, v = x @ wq + bq, x @ wk + bk, x @ wv + bv
    heads = []
    for i in range(num_heads):
        j = i // (num_heads // num_kv_heads)
        qi, kj, vj = q[..., i * d_k:(i + 1) * d_k], k[..., j * d_k:(j + 1) * d_k], v[..., j * d_k:(j + 1) * d_k]
        scores = qi @ np.swapaxes(kj, -1, -2) / np.sqrt(d_k)
        p = np.exp(scores - scores.max(-1, keepdims=True))
        heads.append((p / p.sum(-1, keepdims=True)) @ vj)
    return np.concatenate(heads, axis=-1) @ wo + bo


@pytest.mark.parametrize("num_kv_heads", [1, 2])
def test_grouped_and_multi_query_attention_share_key_value_heads_in_order(rng, num_kv_heads):
    x = rng.normal(size=(2, 6, 16)).astype("float32")
    layer = tl.GroupedQueryAttention(16, 4, num_kv_heads)
    layer(x, x, x)
    layer.set_weights([rng.normal(size=w.shape).astype("float32") * 0.3 for w in layer.get_weights()])
    np.testing.assert_allclose(np.asarray(layer(x, x, x)[0]), gqa_reference(x, layer.get_weights(), 4, num_kv_heads),
                               rtol=1e-4, atol=1e-4)
    assert layer.wk.kernel.shape == (16, num_kv_heads * 4)  # only g heads of keys are projected (and cached)


def test_the_key_value_cache_shrinks_by_the_number_of_query_heads_per_key_value_head():
    full = tl.GroupedQueryAttention(512, 8, 8).cache_bytes_per_token()
    assert full == 2 * 512 * 4  # keys and values of every head, float32: chapter 8's cache
    assert tl.GroupedQueryAttention(512, 8, 2).cache_bytes_per_token() * 4 == full
    assert tl.GroupedQueryAttention(512, 8, 1).cache_bytes_per_token() * 8 == full


def test_grouped_query_attention_refuses_groups_that_do_not_divide_and_round_trips():
    with pytest.raises(ValueError, match="does not divide num_heads=8"):
        tl.GroupedQueryAttention(64, 8, 3)
    layer = tl.GroupedQueryAttention(64, 8, 2, attention_dropout=0.1)
    assert tl.GroupedQueryAttention.from_config(layer.get_config()).get_config() == layer.get_config()


# --- blockwise attention with an online softmax -------------------------------------------------------

@pytest.mark.parametrize("block_size", [1, 3, 4, 16, 64])
def test_blockwise_attention_equals_eq_1_for_every_block_size(rng, block_size):
    q = rng.normal(size=(2, 3, 5, 8)).astype("float32")
    k, v = rng.normal(size=(2, 3, 13, 8)).astype("float32"), rng.normal(size=(2, 3, 13, 6)).astype("float32")
    expected, _ = tl.scaled_dot_product_attention(q, k, v)
    ours = tl.blockwise_attention(q, k, v, block_size=block_size)
    np.testing.assert_allclose(np.asarray(ours), np.asarray(expected), rtol=1e-5, atol=1e-5)


def test_blockwise_attention_follows_the_padding_and_look_ahead_masks(rng):
    ids = np.array([[1, 5, 6, 7, 2, 0, 0, 0, 0], [1, 5, 6, 7, 8, 9, 10, 11, 2]])
    x = rng.normal(size=(2, 2, 9, 4)).astype("float32")
    for mask in (tl.padding_mask(ids), tl.decoder_mask(ids)):
        expected, _ = tl.scaled_dot_product_attention(x, x, x, mask)
        np.testing.assert_allclose(np.asarray(tl.blockwise_attention(x, x, x, mask, block_size=2)),
                                   np.asarray(expected), rtol=1e-5, atol=1e-5)


def test_the_online_softmax_update_rescales_what_it_kept_when_a_larger_score_comes():
    # one query, two blocks of one key each: scores 1 then 3, values 10 then 20
    state = (np.full((1, 1), -np.inf, np.float32), np.zeros((1, 1), np.float32), np.zeros((1, 1), np.float32))
    state = tl.layers.blockwise_attention.online_softmax_update(state, np.array([[1.0]], np.float32),
                                                                np.array([[10.0]], np.float32))
    m, l, acc = tl.layers.blockwise_attention.online_softmax_update(state, np.array([[3.0]], np.float32),
                                                                    np.array([[20.0]], np.float32))
    weights = np.exp([1.0, 3.0]) / np.exp([1.0, 3.0]).sum()
    assert float(np.asarray(m)[0, 0]) == 3.0
    np.testing.assert_allclose(float(np.asarray(l)[0, 0]), np.exp(1 - 3) + 1, rtol=1e-6)
    np.testing.assert_allclose(float(np.asarray(acc)[0, 0] / np.asarray(l)[0, 0]), weights @ [10, 20], rtol=1e-6)


def test_blockwise_attention_refuses_what_it_cannot_do():
    x = np.ones((1, 4, 8), "float32")
    with pytest.raises(ValueError, match="block_size"):
        tl.blockwise_attention(x, x, x, block_size=0)
    with pytest.raises(TypeError, match="boolean mask"):
        tl.blockwise_attention(x, x, x, mask=np.ones((1, 4, 4), bool))


# --- the decoder-only model with the switches ---------------------------------------------------------

SWITCHED = {"the paper's block": {}, "pre-LN": dict(norm_first=True), "RMSNorm": dict(rms_norm=True),
            "rotary": dict(rotary=True), "SwiGLU": dict(swiglu=True), "multi-query": dict(num_kv_heads=1),
            "all together": dict(norm_first=True, rms_norm=True, rotary=True, swiglu=True, num_kv_heads=2)}


def modern(**switches):
    from transformer_lib.models.language_model import ModernLanguageModel

    keras.utils.set_random_seed(0)
    return ModernLanguageModel(50, num_layers=2, d_model=16, num_heads=4, dff=32, dropout_rate=0.0, max_length=16,
                               **switches)


@pytest.mark.parametrize("name", SWITCHED)
def test_each_switch_decodes_with_the_cache_as_the_whole_sequence_does(name):
    model = modern(**SWITCHED[name])
    ids = np.array([[1, 5, 6, 7, 8, 9, 2], [1, 10, 11, 12, 13, 14, 15]], np.int32)
    whole = np.asarray(model(ids))
    caches = model.start_cache(2, 16)
    logits, caches = model.step(ids[:, :3], 0, caches)  # a prompt of three, then one token at a time
    steps = [np.asarray(logits)]
    for t in range(3, ids.shape[1]):
        logits, caches = model.step(ids[:, t: t + 1], t, caches)
        steps.append(np.asarray(logits))
    np.testing.assert_allclose(np.concatenate(steps, axis=1), whole, atol=2e-5)
    changed = ids.copy()
    changed[:, -1] = 20
    np.testing.assert_allclose(np.asarray(model(changed))[:, :-1], whole[:, :-1], atol=1e-6)  # causal
    assert len(tl.generate(model, [1, 5, 6], 5, temperature=0)) >= 1


def test_the_switches_change_what_they_say_and_the_model_round_trips():
    counts = {name: modern(**switches) for name, switches in SWITCHED.items()}
    for model in counts.values():
        model(np.ones((1, 4), np.int32))
    paper, all_on = counts["the paper's block"], counts["all together"]
    assert paper.cache_bytes_per_token() == 2 * 2 * 16 * 4  # 2 blocks, keys and values of d_model, float32
    assert counts["multi-query"].cache_bytes_per_token() * 4 == paper.cache_bytes_per_token()  # 4 heads -> 1
    assert all_on.cache_bytes_per_token() * 2 == paper.cache_bytes_per_token()  # 4 heads -> 2
    assert abs(counts["SwiGLU"].count_params() - paper.count_params()) <= 2 * 3 * 16  # per block, one inner unit
    assert counts["RMSNorm"].count_params() == paper.count_params() - 2 * 2 * 16  # no bias in either norm
    clone = type(all_on).from_config(all_on.get_config())
    clone(np.ones((1, 4), np.int32))
    clone.set_weights(all_on.get_weights())
    ids = np.array([[1, 7, 8, 9]], np.int32)
    np.testing.assert_allclose(np.asarray(clone(ids)), np.asarray(all_on(ids)), atol=1e-6)
