"""The key/value cache (`transformer_lib.layers.kv_cache`) as the decoder uses it: cached steps give the
logits of a full decoder pass, each step writes its own slot of the preallocated cache and nothing else."""

import numpy as np
import pytest
from conftest import random_ids

import transformer_lib as tl


def random_model(**options):
    return tl.Transformer(2, 32, 4, 64, 50, 40, dropout_rate=0.0, **options)


@pytest.mark.parametrize("options", [dict(), dict(norm_first=True), dict(learned_positions=True)])
def test_cached_steps_give_the_logits_of_a_full_decoder_pass(options, rng):
    model = random_model(**options)
    source = random_ids(rng, 3, 6, 50, pad_from=[4, 6, 2])
    target = random_ids(rng, 3, 7, 40)
    full = np.asarray(model((source, target), training=False))  # (3, 7, vocab)
    caches, source_part = model.decoder.start_cache(model.encoder(source, training=False), source, 7)
    for t in range(7):
        x, caches = model.decoder.step(target[:, t : t + 1], t, caches, source_part)
        np.testing.assert_allclose(np.asarray(model.project(x))[:, 0], full[:, t], atol=1e-5)
    assert caches[0][0].shape == (3, 4, 7, 8)  # keys of all 7 positions, per head


def test_each_step_writes_its_own_slot_of_a_preallocated_cache_and_nothing_else(rng):
    model = random_model()
    source = random_ids(rng, 2, 5, 50, pad_from=[3, 5])
    target = random_ids(rng, 2, 4, 40)
    caches, source_part = model.decoder.start_cache(model.encoder(source, training=False), source, 10)
    before = [np.asarray(keys) for keys, _ in caches]
    for t in range(4):
        x, caches = model.decoder.step(target[:, t : t + 1], t, caches, source_part)
        for layer, (keys, values) in enumerate(caches):
            keys, values = np.asarray(keys), np.asarray(values)
            assert keys.shape == values.shape == (2, 4, 10, 8)  # the shape never changes
            assert np.abs(keys[:, :, t]).sum() > 0 and np.abs(values[:, :, t]).sum() > 0  # slot t written
            assert not keys[:, :, t + 1 :].any() and not values[:, :, t + 1 :].any()  # later slots untouched
            np.testing.assert_array_equal(keys[:, :, :t], before[layer][:, :, :t])  # earlier slots kept
            before[layer] = keys


@pytest.mark.parametrize("offset, count", [(0, 1), (3, 1), (9, 1), (0, 10), (2, 3), (7, 3)])
def test_write_slots_replaces_exactly_the_new_slots(offset, count, rng):
    from transformer_lib.layers.kv_cache import write_slots

    cache = rng.normal(size=(2, 3, 10, 4)).astype(np.float32)
    new = rng.normal(size=(2, 3, count, 4)).astype(np.float32)
    expected = cache.copy()
    expected[:, :, offset : offset + count] = new  # NumPy's slice assignment as the reference
    np.testing.assert_array_equal(np.asarray(write_slots(cache, offset, new)), expected)
    import tensorflow as tf  # and with the offset as a tensor inside a graph, as the decoding loops give it

    traced = tf.function(lambda c, o, n: write_slots(c, o, n))
    np.testing.assert_array_equal(np.asarray(traced(cache, tf.constant(offset), new)), expected)
