import keras
import numpy as np
import pytest

import transformer_lib as tl
from transformer_lib import (
    MultiHeadAttention,
    look_ahead_mask,
    padding_mask,
    scaled_dot_product_attention,
    to_keras_mask,
)


def reference_attention(q, k, v, mask=None):
    """Eq. 1 in float64 NumPy, with blocked scores set to -inf exactly as §3.2.3 describes."""
    q, k, v = (np.asarray(a, np.float64) for a in (q, k, v))
    scores = q @ np.swapaxes(k, -1, -2) / np.sqrt(q.shape[-1])
    if mask is not None:
        scores = np.where(np.broadcast_to(mask, scores.shape) > 0, -np.inf, scores)
    scores = scores - scores.max(axis=-1, keepdims=True)
    weights = np.exp(scores) / np.exp(scores).sum(axis=-1, keepdims=True)
    return weights @ v, weights


@pytest.mark.parametrize("trial", range(6))
@pytest.mark.parametrize("masked", [False, True])
def test_attention_matches_a_float64_reference(trial, masked, rng):
    batch, heads, t, s, d_k, d_v = rng.integers(1, 9, size=6)
    q = rng.normal(size=(batch, heads, t, d_k)).astype("float32")
    k = rng.normal(size=(batch, heads, s, d_k)).astype("float32")
    v = rng.normal(size=(batch, heads, s, d_v)).astype("float32")
    mask = None
    if masked:  # block random keys, but leave at least the first key of every row open
        mask = (rng.random(size=(batch, 1, t, s)) < 0.4).astype("float32")
        mask[..., 0] = 0
    out, weights = scaled_dot_product_attention(q, k, v, mask)
    ref_out, ref_weights = reference_attention(q, k, v, mask)
    np.testing.assert_allclose(np.asarray(weights), ref_weights, atol=1e-6)
    np.testing.assert_allclose(np.asarray(out), ref_out, atol=1e-5)
    np.testing.assert_allclose(np.asarray(weights).sum(axis=-1), 1.0, atol=1e-6)
    if masked:
        assert np.asarray(weights)[np.broadcast_to(mask, weights.shape) > 0].max(initial=0) < 1e-6


def test_blocked_positions_get_zero_weight_under_float16(rng):
    q = rng.normal(size=(2, 4, 6, 8)).astype("float16")
    ids = np.array([[3, 4, 5, 0, 0, 0], [1, 2, 3, 4, 5, 6]])
    mask = np.maximum(np.asarray(padding_mask(ids)), np.asarray(look_ahead_mask(6)))
    out, weights = scaled_dot_product_attention(q, q, q, mask)
    weights = np.asarray(weights, np.float32)
    assert np.isfinite(np.asarray(out, np.float32)).all()
    assert weights[np.broadcast_to(mask, weights.shape) > 0].max() < 1e-6
    np.testing.assert_allclose(weights.sum(axis=-1), 1.0, atol=2e-3)


def copy_weights_into_keras_mha(ours: MultiHeadAttention, theirs: keras.layers.MultiHeadAttention):
    """Our Dense kernels are [d_model, h*d_k]; Keras's EinsumDense kernels are [d_model, h, d_k]."""
    h, d_k, d_model = ours.num_heads, ours.d_k, ours.d_model
    for mine, keras_dense in [
        (ours.wq, theirs.query_dense),
        (ours.wk, theirs.key_dense),
        (ours.wv, theirs.value_dense),
    ]:
        kernel, bias = mine.get_weights()
        keras_dense.set_weights([kernel.reshape(d_model, h, d_k), bias.reshape(h, d_k)])
    kernel, bias = ours.wo.get_weights()
    theirs.output_dense.set_weights([kernel.reshape(h, d_k, d_model), bias])


@pytest.mark.parametrize("d_model, num_heads, t, s", [(16, 4, 5, 7), (24, 3, 6, 6), (32, 8, 1, 9)])
@pytest.mark.parametrize("masked", [False, True])
def test_multi_head_attention_matches_keras_layer(d_model, num_heads, t, s, masked, rng):
    query = rng.normal(size=(3, t, d_model)).astype("float32")
    value = rng.normal(size=(3, s, d_model)).astype("float32")
    ours = MultiHeadAttention(d_model, num_heads)
    theirs = keras.layers.MultiHeadAttention(num_heads, key_dim=d_model // num_heads)
    ours(query, value, value)
    theirs(query, value)
    copy_weights_into_keras_mha(ours, theirs)

    mask = keras_mask = None
    if masked:
        ids = np.array([[1] * s, [1] * (s - 1) + [0], [1] + [0] * (s - 1)])
        mask = padding_mask(ids)
        keras_mask = np.broadcast_to(np.asarray(to_keras_mask(mask)), (3, t, s))
    out, weights = ours(query, value, value, mask=mask)
    ref_out, ref_weights = theirs(query, value, attention_mask=keras_mask, return_attention_scores=True)
    assert tuple(weights.shape) == (3, num_heads, t, s)
    np.testing.assert_allclose(np.asarray(weights), np.asarray(ref_weights), atol=1e-5)
    np.testing.assert_allclose(np.asarray(out), np.asarray(ref_out), atol=1e-5)


@pytest.mark.parametrize("d_model, num_heads", [(512, 8), (64, 1), (64, 64), (1024, 16)])
def test_heads_split_d_model_and_the_layer_has_4_d_model_squared_plus_bias_parameters(d_model, num_heads):
    mha = MultiHeadAttention(d_model, num_heads)
    x = np.zeros((1, 2, d_model), "float32")
    _, weights = mha(x, x, x)
    assert mha.d_k * num_heads == d_model
    assert mha.count_params() == 4 * d_model * (d_model + 1)
    assert tuple(weights.shape) == (1, num_heads, 2, 2)


def test_split_and_merge_heads_are_inverse_and_keep_dimensions_in_order(rng):
    mha = MultiHeadAttention(12, 3)
    x = rng.normal(size=(2, 5, 12)).astype("float32")
    heads = np.asarray(mha.split_heads(x))
    assert heads.shape == (2, 3, 5, 4)
    np.testing.assert_array_equal(heads[:, 1], x[..., 4:8])  # head 1 owns dimensions 4..7
    np.testing.assert_array_equal(np.asarray(mha.merge_heads(heads)), x)


def test_d_model_not_divisible_by_heads_is_a_clear_error():
    with pytest.raises(ValueError, match="d_model=500 is not divisible by num_heads=8; d_k would not be an integer"):
        MultiHeadAttention(500, 8)


# --- grouped-query attention: MultiHeadAttention with fewer key/value heads (num_kv_heads) -----------

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
