import numpy as np
import pytest

from transformer_lib import AddNorm


def layer_norm(x, epsilon=1e-6):
    """LayerNorm with gain 1 and bias 0 (its initial weights), in float64."""
    x = np.asarray(x, np.float64)
    return (x - x.mean(-1, keepdims=True)) / np.sqrt(x.var(-1, keepdims=True) + epsilon)


def test_post_ln_normalizes_the_residual_sum(rng):
    x, y = rng.normal(size=(2, 2, 5, 8)).astype("float32")
    add_norm = AddNorm(dropout_rate=0.5, norm_first=False)
    np.testing.assert_array_equal(np.asarray(add_norm.sublayer_input(x)), x)
    np.testing.assert_allclose(np.asarray(add_norm(x, y, training=False)), layer_norm(x + y), atol=1e-5)


def test_pre_ln_normalizes_the_sublayer_input_and_keeps_the_identity_path(rng):
    x, y = rng.normal(size=(2, 2, 5, 8)).astype("float32")
    add_norm = AddNorm(dropout_rate=0.5, norm_first=True)
    np.testing.assert_allclose(np.asarray(add_norm.sublayer_input(x)), layer_norm(x), atol=1e-5)
    np.testing.assert_allclose(np.asarray(add_norm(x, y, training=False)), x + y, atol=1e-6)


def test_dropout_hits_the_sublayer_output_only_while_training(rng):
    x = rng.normal(size=(4, 50, 8)).astype("float32")
    y = np.ones_like(x)
    add_norm = AddNorm(dropout_rate=0.5, norm_first=True)
    dropped = np.asarray(add_norm(x, y, training=True)) - x  # the residual x passes untouched
    assert set(np.unique(np.round(dropped, 5))) == {0.0, 2.0}  # inverted dropout: kept values scaled by 2
    assert 0.4 < (dropped == 0).mean() < 0.6


@pytest.mark.parametrize("rate", [-0.1, 1.0, "0.1"])
def test_bad_dropout_rate_is_refused(rate):
    with pytest.raises(ValueError, match=r"dropout_rate must be a number in \[0, 1\)"):
        AddNorm(dropout_rate=rate)
