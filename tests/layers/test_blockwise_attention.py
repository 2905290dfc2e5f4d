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
