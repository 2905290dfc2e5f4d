import math

from conftest import keras_mask_of
import numpy as np
import pytest

from transformer_lib import PositionalEmbedding, positional_encoding


def paper_formula(pos: int, dim: int, d_model: int) -> float:
    """§3.5, one entry at a time: PE(pos, 2i) = sin(pos / 10000^(2i/d)), PE(pos, 2i+1) = cos(...)."""
    i = dim // 2
    angle = pos / 10000 ** (2 * i / d_model)
    return math.sin(angle) if dim % 2 == 0 else math.cos(angle)


@pytest.mark.parametrize("length, depth", [(50, 128), (2048, 512), (7, 9)])
def test_encoding_equals_the_closed_form_at_random_entries(length, depth, rng):
    pe = np.asarray(positional_encoding(length, depth))
    assert pe.shape == (length, depth) and pe.dtype == np.float32
    for pos, dim in zip(rng.integers(0, length, 200), rng.integers(0, depth, 200)):
        assert pe[pos, dim] == pytest.approx(paper_formula(int(pos), int(dim), depth), abs=1e-6)


def test_even_dimensions_are_sines_and_odd_dimensions_cosines():
    pe = np.asarray(positional_encoding(10, 16))
    np.testing.assert_array_equal(pe[0, 0::2], 0.0)  # sin(0)
    np.testing.assert_array_equal(pe[0, 1::2], 1.0)  # cos(0)


@pytest.mark.parametrize("length, depth", [(0, 8), (8, 0), (-1, 8), (8, 2.5), (True, 8)])
def test_bad_sizes_are_refused_with_a_clear_error(length, depth):
    with pytest.raises(ValueError, match="must be a positive integer"):
        positional_encoding(length, depth)


def test_embedding_is_scaled_by_sqrt_d_model_and_adds_the_encoding(rng):
    layer = PositionalEmbedding(vocab_size=30, d_model=16, max_length=12)
    ids = rng.integers(0, 30, size=(3, 10))
    out = np.asarray(layer(ids))
    table = np.asarray(layer.embeddings)
    expected = table[ids] * 4.0 + np.asarray(positional_encoding(12, 16))[:10]
    np.testing.assert_allclose(out, expected, rtol=1e-6, atol=1e-6)


def test_learned_positions_add_one_trainable_vector_per_position():
    fixed = PositionalEmbedding(30, 16, max_length=12)
    learned = PositionalEmbedding(30, 16, max_length=12, learned_positions=True)
    for layer in (fixed, learned):
        layer(np.ones((1, 5), "int32"))
    assert len(fixed.trainable_weights) == 1
    assert sum(np.prod(w.shape) for w in learned.trainable_weights) == 30 * 16 + 12 * 16


def test_sequence_longer_than_max_length_is_refused():
    layer = PositionalEmbedding(30, 16, max_length=4)
    with pytest.raises(ValueError, match="exceeds max_length=4"):
        layer(np.ones((1, 5), "int32"))


def test_embedding_attaches_no_keras_mask():
    out = PositionalEmbedding(30, 16)(np.array([[3, 4, 0, 0]]))
    assert keras_mask_of(out) is None
