import numpy as np
import pytest

from transformer_lib import AddNorm


def layer_norm(x, epsilon=1e-6):
    """LayerNorm with gain 1 and bias 0 (its initial weights), in float64."""
    x = np.asarray(x, np.float64)
    return (x - x.mean(-1, keepdims=True)) / np.sqrt(x.var(-1, keepdims=True) + epsilon)


def test_post_ln_normalizes_the_residual_sum_and_feeds_the_sublayer_x_itself(rng):
    x, w = rng.normal(size=(2, 2, 5, 8)).astype("float32")
    seen = []
    add_norm = AddNorm(dropout_rate=0.5, norm_first=False)
    out = add_norm(x, lambda h: seen.append(np.asarray(h)) or h * w, training=False)
    np.testing.assert_array_equal(seen[0], x)
    np.testing.assert_allclose(np.asarray(out), layer_norm(x + x * w), atol=1e-5)  # LayerNorm(x + Sublayer(x))


def test_pre_ln_normalizes_the_sublayer_input_and_keeps_the_identity_path(rng):
    x, w = rng.normal(size=(2, 2, 5, 8)).astype("float32")
    seen = []
    add_norm = AddNorm(dropout_rate=0.5, norm_first=True)
    out = add_norm(x, lambda h: seen.append(np.asarray(h)) or h * w, training=False)
    np.testing.assert_allclose(seen[0], layer_norm(x), atol=1e-5)
    np.testing.assert_allclose(np.asarray(out), x + layer_norm(x) * w, atol=1e-5)  # x + Sublayer(LayerNorm(x))


@pytest.mark.parametrize("norm_first", [False, True])
def test_what_a_sublayer_returns_beside_its_output_is_passed_on(rng, norm_first):
    x = rng.normal(size=(2, 5, 8)).astype("float32")
    weights = rng.random(size=(2, 3, 5, 5)).astype("float32")
    out, extra = AddNorm(0.1, norm_first)(x, lambda h: (h, weights), training=False)
    assert out.shape == x.shape
    np.testing.assert_array_equal(np.asarray(extra), weights)


def test_dropout_hits_the_sublayer_output_only_while_training(rng):
    x = rng.normal(size=(4, 50, 8)).astype("float32")
    add_norm = AddNorm(dropout_rate=0.5, norm_first=True)
    dropped = np.asarray(add_norm(x, lambda h: np.ones_like(x), training=True)) - x  # the residual x passes untouched
    assert set(np.unique(np.round(dropped, 5))) == {0.0, 2.0}  # inverted dropout: kept values scaled by 2
    assert 0.4 < (dropped == 0).mean() < 0.6
    np.testing.assert_allclose(np.asarray(add_norm(x, lambda h: np.ones_like(x), training=False)) - x, 1.0, atol=1e-6)


@pytest.mark.parametrize("rate", [-0.1, 1.0, "0.1"])
def test_bad_dropout_rate_is_refused(rate):
    with pytest.raises(ValueError, match=r"dropout_rate must be a number in \[0, 1\)"):
        AddNorm(dropout_rate=rate)
