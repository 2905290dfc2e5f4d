"""The decoder-only model with the switches since 2017 (`ModernLanguageModel`): each switch decodes with the
cache as the whole sequence does, changes what it says it changes, and the model round-trips."""

import keras
import numpy as np
import pytest

import transformer_lib as tl


SWITCHED = {"the paper's block": {}, "pre-LN": dict(norm_first=True), "RMSNorm": dict(rms_norm=True),
            "rotary": dict(rotary=True), "SwiGLU": dict(swiglu=True), "multi-query": dict(num_kv_heads=1),
            "all together": dict(norm_first=True, rms_norm=True, rotary=True, swiglu=True, num_kv_heads=2)}


def modern(**switches):
    from transformer_lib.models.language_model import ModernLanguageModel

    keras.utils.set_random_seed(0)
    return ModernLanguageModel(50, num_layers=2, d_model=16, num_heads=4, dff=32, dropout_rate=0.0, max_length=16,
                               **switches)


@pytest.mark.parametrize("name", SWITCHED)
def test_each_switch_decodes_with_the_cache_as_the_whole_sequence_does(name):
    model = modern(**SWITCHED[name])
    ids = np.array([[1, 5, 6, 7, 8, 9, 2], [1, 10, 11, 12, 13, 14, 15]], np.int32)
    whole = np.asarray(model(ids))
    caches = model.start_cache(2, 16)
    logits, caches = model.step(ids[:, :3], 0, caches)  # a prompt of three, then one token at a time
    steps = [np.asarray(logits)]
    for t in range(3, ids.shape[1]):
        logits, caches = model.step(ids[:, t: t + 1], t, caches)
        steps.append(np.asarray(logits))
    np.testing.assert_allclose(np.concatenate(steps, axis=1), whole, atol=2e-5)
    changed = ids.copy()
    changed[:, -1] = 20
    np.testing.assert_allclose(np.asarray(model(changed))[:, :-1], whole[:, :-1], atol=1e-6)  # causal
    assert len(tl.generate(model, [1, 5, 6], 5, temperature=0)) >= 1


def test_the_switches_change_what_they_say_and_the_model_round_trips():
    counts = {name: modern(**switches) for name, switches in SWITCHED.items()}
    for model in counts.values():
        model(np.ones((1, 4), np.int32))
    paper, all_on = counts["the paper's block"], counts["all together"]
    assert paper.cache_bytes_per_token() == 2 * 2 * 16 * 4  # 2 blocks, keys and values of d_model, float32
    assert counts["multi-query"].cache_bytes_per_token() * 4 == paper.cache_bytes_per_token()  # 4 heads -> 1
    assert all_on.cache_bytes_per_token() * 2 == paper.cache_bytes_per_token()  # 4 heads -> 2
    assert abs(counts["SwiGLU"].count_params() - paper.count_params()) <= 2 * 3 * 16  # per block, one inner unit
    assert counts["RMSNorm"].count_params() == paper.count_params() - 2 * 2 * 16  # no bias in either norm
    clone = type(all_on).from_config(all_on.get_config())
    clone(np.ones((1, 4), np.int32))
    clone.set_weights(all_on.get_weights())
    ids = np.array([[1, 7, 8, 9]], np.int32)
    np.testing.assert_allclose(np.asarray(clone(ids)), np.asarray(all_on(ids)), atol=1e-6)
