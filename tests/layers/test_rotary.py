"""`RotaryEmbedding` against float64 NumPy written from the paper's rotation: each pair turned by its position
times its frequency, a score that depends only on the offset between two positions, and the cached step."""

import numpy as np
import pytest

import transformer_lib as tl


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
