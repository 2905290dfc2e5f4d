"""`blockwise_attention`, attention over one block of keys at a time with an online softmax, equals Eq. 1
(`scaled_dot_product_attention`) for every block size and under both masks."""

import numpy as np
import pytest

import transformer_lib as tl


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


def gradients(attention, q, k, v, upstream):
    """The gradients of sum(upstream * attention(q, k, v)) with respect to q, k and v (TensorFlow's autodiff)."""
    import tensorflow as tf

    q, k, v = (tf.constant(x) for x in (q, k, v))
    with tf.GradientTape() as tape:
        tape.watch([q, k, v])
        loss = tf.reduce_sum(upstream * attention(q, k, v))
    return [g.numpy() for g in tape.gradient(loss, [q, k, v])]


@pytest.mark.parametrize("block_size", [1, 3, 16, 64])
def test_the_recomputing_backward_pass_gives_eq_1s_gradients_under_every_mask(rng, block_size):
    ids = np.array([[1, 5, 6, 7, 2, 0, 0, 0, 0, 0, 0], [1, 5, 6, 7, 8, 9, 10, 11, 12, 13, 2]])
    q, k, v = (rng.normal(size=(2, 3, 11, 8)).astype("float32") for _ in range(3))
    upstream = rng.normal(size=(2, 3, 11, 8)).astype("float32")
    one_blocked_row = np.zeros((1, 1, 11, 11), "float32")
    one_blocked_row[..., 4, :] = 1.0  # a query that may see nothing: uniform weights in both
    for mask in (None, tl.padding_mask(ids), tl.decoder_mask(ids), tl.look_ahead_mask(11), one_blocked_row):
        expected = gradients(lambda a, b, c: tl.scaled_dot_product_attention(a, b, c, mask)[0], q, k, v, upstream)
        ours = gradients(lambda a, b, c: tl.blockwise_attention(a, b, c, mask, block_size), q, k, v, upstream)
        for name, mine, reference in zip("qkv", ours, expected):
            np.testing.assert_allclose(mine, reference, rtol=1e-4, atol=1e-5, err_msg=f"d{name}")


def test_the_gradient_is_the_recomputing_backward_pass_not_autodiff_of_the_loop(rng, monkeypatch):
    """Autodiff of the forward loop would give the same numbers while keeping every block's scores: check that
    the backward pass that runs is `blockwise_backward`."""
    from transformer_lib.layers import blockwise_attention as module

    calls = []
    original = module.blockwise_backward
    monkeypatch.setattr(module, "blockwise_backward", lambda *args: calls.append(args[-1]) or original(*args))
    x = rng.normal(size=(1, 6, 4)).astype("float32")
    gradients(lambda a, b, c: tl.blockwise_attention(a, b, c, block_size=2), x, x, x, np.ones_like(x))
    assert calls == [2]
