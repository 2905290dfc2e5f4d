"""`SwiGLUFeedForward` against float64 NumPy written from its formula, and its parameters at two thirds of the
ReLU network's `dff`."""

import numpy as np
import pytest

import transformer_lib as tl


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
