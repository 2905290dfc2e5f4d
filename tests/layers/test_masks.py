import keras
from conftest import keras_mask_of
import numpy as np
import pytest

from transformer_lib import (
    MultiHeadAttention,
    decoder_mask,
    from_keras_mask,
    look_ahead_mask,
    padding_mask,
    scaled_dot_product_attention,
    to_keras_mask,
)


def test_look_ahead_mask_blocks_exactly_the_future():
    expected = np.array(
        [
            [0, 1, 1, 1, 1],
            [0, 0, 1, 1, 1],
            [0, 0, 0, 1, 1],
            [0, 0, 0, 0, 1],
            [0, 0, 0, 0, 0],
        ],
        dtype=np.float32,
    )
    mask = np.asarray(look_ahead_mask(5))
    assert mask.dtype == np.float32
    np.testing.assert_array_equal(mask, expected)


def test_padding_mask_marks_padding_with_one_and_broadcasts_over_heads_and_queries():
    ids = np.array([[7, 6, 0, 0], [1, 2, 3, 0], [4, 5, 6, 7]])
    mask = np.asarray(padding_mask(ids))
    assert mask.shape == (3, 1, 1, 4) and mask.dtype == np.float32
    np.testing.assert_array_equal(mask[:, 0, 0], [[0, 0, 1, 1], [0, 0, 0, 1], [0, 0, 0, 0]])


def test_decoder_mask_is_look_ahead_or_padding():
    ids = np.array([[5, 9, 0], [1, 2, 3]])
    mask = np.asarray(decoder_mask(ids))
    assert mask.shape == (2, 1, 3, 3)
    np.testing.assert_array_equal(mask[0, 0], [[0, 1, 1], [0, 0, 1], [0, 0, 1]])
    np.testing.assert_array_equal(mask[1, 0], [[0, 1, 1], [0, 0, 1], [0, 0, 0]])


def test_conversion_to_keras_flips_the_polarity():
    ids = np.array([[7, 6, 0], [1, 0, 0]])
    keras_mask = np.asarray(to_keras_mask(padding_mask(ids)))
    assert keras_mask.dtype == bool and keras_mask.shape == (2, 1, 3)
    np.testing.assert_array_equal(keras_mask[:, 0], ids != 0)
    np.testing.assert_array_equal(np.asarray(to_keras_mask(look_ahead_mask(3))), np.tril(np.ones((3, 3), bool)))


def test_keras_embedding_mask_converts_to_our_padding_mask():
    ids = np.array([[7, 6, 0], [1, 0, 0]])
    embedded = keras.layers.Embedding(10, 4, mask_zero=True)(ids)
    converted = from_keras_mask(keras_mask_of(embedded))
    np.testing.assert_array_equal(np.asarray(converted), np.asarray(padding_mask(ids)))


def test_attention_refuses_a_boolean_mask_instead_of_guessing_its_polarity():
    q = np.ones((1, 2, 4), "float32")
    with pytest.raises(TypeError, match="1.0 = blocked"):
        scaled_dot_product_attention(q, q, q, mask=np.array([[True, False]]))
    with pytest.raises(TypeError, match="from_keras_mask expects a boolean"):
        from_keras_mask(np.zeros((1, 2), "float32"))


@pytest.mark.parametrize("bad", [0, -3, 2.0])
def test_bad_look_ahead_size_is_refused(bad):
    with pytest.raises(ValueError, match="size must be a positive integer"):
        look_ahead_mask(bad)


def test_padding_mask_wants_a_batch_of_sequences():
    with pytest.raises(ValueError, match=r"shape \[batch, seq\]"):
        padding_mask(np.array([1, 2, 0]))


def test_multi_head_attention_ignores_implicit_keras_masks(rng):
    """An input carrying a Keras mask (True = keep) must not be read as our mask (1.0 = blocked)."""
    ids = np.array([[3, 4, 0, 0], [5, 6, 7, 0]])
    x = keras.layers.Embedding(10, 8, mask_zero=True)(ids)
    assert keras_mask_of(x) is not None
    plain = keras.ops.convert_to_tensor(np.asarray(x))  # same values, no Keras mask
    mha = MultiHeadAttention(d_model=8, num_heads=2)
    out_masked, w_masked = mha(x, x, x)
    out_plain, w_plain = mha(plain, plain, plain)
    np.testing.assert_array_equal(np.asarray(w_masked), np.asarray(w_plain))
    np.testing.assert_array_equal(np.asarray(out_masked), np.asarray(out_plain))
    assert keras_mask_of(out_masked) is None
