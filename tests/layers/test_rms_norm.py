"""`RMSNorm` against float64 NumPy written from its formula, and against Keras's own `RMSNormalization`."""

import keras
import numpy as np
import pytest

import transformer_lib as tl


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
