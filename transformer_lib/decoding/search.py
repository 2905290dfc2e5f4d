"""Turning a trained model into translations: greedy and beam search with a key/value cache.

The decoder is autoregressive: token t + 1 depends on tokens 0..t. The simple way re-runs the whole
decoder over the prefix for every new token, which costs O(t) positions at step t. But the keys and
values that earlier positions contribute to self-attention never change (the look-ahead mask means
position i never sees later tokens), so we cache them: each step then runs the decoder for one
position only. The cache has a slot for every position from the start and each step writes its
own, so no tensor changes shape inside the loops: they need no shape invariants and compile with
XLA. The encoder output's cross-attention keys and values, and the source padding mask, are
computed once per sentence.

Beam search (§6.1: beam size 4, length penalty alpha = 0.6, from Wu et al. 2016):
score(Y) = log P(Y | X) / lp(Y),  lp(Y) = ((5 + |Y|) / 6) ** alpha.
"""

from __future__ import annotations

import numpy as np
import tensorflow as tf
from keras import ops

from transformer_lib.utils.checks import (
    check_token_ids,
    require_non_negative_number,
    require_positive_int,
)
from transformer_lib.utils.memory_budget import decoding_bytes, require_fits
from transformer_lib.data.tokenizer import END_ID, NEVER_GENERATED, PAD_ID, START_ID


_ANY_IDS_AND_LENGTH = (tf.TensorSpec([None, None], tf.int32), tf.TensorSpec([], tf.int32))


def _run_compiled(model, name: str, loop, source_ids, max_length: int, jit_compile: bool) -> np.ndarray:
    """`loop(source_ids, max_length)` run as one graph. Each model keeps one `tf.function` per purpose,
    traced once for any batch size and length and reused across calls. XLA needs `max_length` as a constant, so with
    `jit_compile` each length gets its own function (and XLA compiles once per input shape)."""
    functions = model.__dict__.setdefault("_decoding_functions", {})
    if jit_compile:
        key = f"{name}/xla/{max_length}"
        if key not in functions:
            functions[key] = tf.function(lambda s: loop(s, max_length), jit_compile=True, reduce_retracing=True)
        return functions[key](source_ids).numpy()
    if name not in functions:  # any batch, any source length: traced once
        functions[name] = tf.function(loop, input_signature=_ANY_IDS_AND_LENGTH)
    return functions[name](source_ids, tf.constant(max_length, tf.int32)).numpy()


def _ensure_built(model, source_ids) -> None:
    """Build the whole model at once (a one-token forward pass) before parts of it run alone."""
    if not model.built:
        model((source_ids[:1], np.full((1, 1), START_ID, np.int32)), training=False)


def require_within_positions(model, max_length: int) -> None:
    """A decoding length must fit the positions the model was built with."""
    positions = model.config.max_length
    if max_length > positions:
        raise ValueError(f"max_length={max_length} is more than the model's {positions} positions; "
                         f"use max_length <= {positions}.")


def _check_decoding_inputs(model, source_ids, max_length, beam_size: int = 1) -> np.ndarray:
    """The source ids as int32 `[batch, src_len]`, after checking what a decoding call was given.

    The ids are checked here, in Python, because the compiled loop cannot: there a negative id reads
    another token's embedding and one past the vocabulary fails deep inside the graph. So is the
    memory the decoding will take (`memory_budget.decoding_bytes`), before it starts."""
    require_positive_int("max_length", max_length)
    require_within_positions(model, max_length)
    source_ids = np.asarray(source_ids)
    if source_ids.ndim != 2 or not np.issubdtype(source_ids.dtype, np.integer):
        raise ValueError(f"source_ids must be int [batch, src_len], got {source_ids.dtype} of shape {source_ids.shape}.")
    check_token_ids("source_ids", source_ids, model.config.input_vocab_size)  # before int32 could wrap them
    source_ids = source_ids.astype(np.int32)
    _ensure_built(model, source_ids)
    batch, length = source_ids.shape
    if beam_size > 1:  # before the work: a beam too wide for this machine's memory is refused with the widest that fits
        require_fits("beam_size", beam_size, lambda k: decoding_bytes(model.config, batch, k, max_length, length),
                     f" for {batch} sentence(s) and max_length={max_length}")
    else:
        require_fits("len(source_ids)", batch, lambda n: decoding_bytes(model.config, n, 1, max_length, length),
                     f" with max_length={max_length}")
    return source_ids




def _never_generated_bias(vocab_size: int):
    """`[vocab]`: -inf for the ids in NEVER_GENERATED, 0 elsewhere; added to the logits."""
    bias = np.zeros(vocab_size, np.float32)
    bias[list(NEVER_GENERATED)] = -np.inf
    return tf.constant(bias)


def greedy_decode(model, source_ids, max_length: int = 64, use_cache: bool = True,
                  jit_compile: bool = False) -> np.ndarray:
    """The most likely next token, one at a time, for a batch of sources.

    Args:
        model: a `Transformer`.
        source_ids: int `[batch, src_len]`, 0 = padding (as `make_batches` gives them).
        max_length: most tokens generated per sentence (END included).
        use_cache: False re-runs the decoder over the whole prefix at every step (the slow way,
            kept to show and test that the cache changes nothing).
        jit_compile: compile the loop with XLA (cached loop only): the first call per input shape
            takes seconds to compile, later ones run several times faster on a CPU.

    Returns:
        int32 `[batch, <= max_length]` target ids without START; each row stops at its END and
        is padded with 0 after it.
    """
    if jit_compile and not use_cache:
        raise ValueError("jit_compile=True needs use_cache=True: re-running the decoder over a growing "
                         "prefix changes shapes at every step, which XLA cannot compile.")
    source_ids = _check_decoding_inputs(model, source_ids, max_length)
    return _run_compiled(model, f"greedy/{use_cache}", lambda s, n: greedy_loop(model, s, n, use_cache),
                         source_ids, max_length, jit_compile)


def most_likely(logits, t):
    """Greedy decoding's choice of the next token: the most likely one, `[batch]`."""
    return tf.argmax(logits, axis=-1, output_type=tf.int32)


def greedy_loop(model, source_ids, max_length, use_cache: bool = True, pick=most_likely):
    """The loop of `greedy_decode`, in TensorFlow ops so that it runs as one graph (and serves
    from a SavedModel); `max_length` may be a scalar tensor. `pick(logits, t)` chooses the next tokens
    (the most likely; `sampled_decode` draws them instead).

    Every loop variable keeps its shape: `tokens` has a column for every step, the caches a slot for
    every position. With a constant `max_length` the loop compiles with XLA.
    """
    batch = tf.shape(source_ids)[0]
    caches, source = model.decoder.start_cache(model.encoder(source_ids, training=False), source_ids, max_length)
    never = _never_generated_bias(model.config.target_vocab_size)
    tokens = tf.concat([tf.fill([batch, 1], START_ID), tf.fill([batch, max_length], PAD_ID)], axis=1)
    finished = tf.zeros([batch], tf.bool)
    steps = tf.constant(0)
    for t in tf.range(max_length):
        if use_cache:  # one new position through the decoder, reusing the keys and values of the others
            x, caches = model.decoder.step(tf.gather(tokens, [t], axis=1), t, caches, source)
            logits = model.project(x)[:, -1]
        else:  # the whole prefix again
            logits = model((source_ids, tokens[:, : t + 1]), training=False)[:, -1]
        next_ids = pick(tf.cast(logits, tf.float32) + never, t)  # (batch,)
        next_ids = tf.where(finished, PAD_ID, next_ids)
        tokens = ops.slice_update(tokens, (0, t + 1), next_ids[:, None])  # same shape, one more column filled
        finished = finished | (next_ids == END_ID)
        steps = t + 1
        if tf.reduce_all(finished):
            break
    return tokens[:, 1 : steps + 1]


def sampled_decode(model, source_ids, max_length: int = 64, temperature: float = 1.0, seed: int = 0) -> np.ndarray:
    """`greedy_decode`, but each next token is drawn from softmax(logits / temperature) (sampling, as
    back-translation uses it: Edunov et al. 2018). The same `seed` draws the same tokens; the result as
    `greedy_decode`'s."""
    if not temperature > 0:
        raise ValueError(f"temperature={temperature!r}: give a positive number (1.0 samples the model's own "
                         "probabilities; for the most likely tokens use greedy_decode).")
    source_ids = _check_decoding_inputs(model, source_ids, max_length)
    functions = model.__dict__.setdefault("_decoding_functions", {})
    key = f"sampled/{float(temperature)}"
    if key not in functions:  # the seed is an input: one trace serves every seed
        def loop(s, n, seed_value):
            def draw(logits, t):
                ids = tf.random.stateless_categorical(logits / temperature, 1, seed=tf.stack([seed_value, t]))
                return tf.cast(ids[:, 0], tf.int32)
            return greedy_loop(model, s, n, pick=draw)
        functions[key] = tf.function(loop, input_signature=[*_ANY_IDS_AND_LENGTH, tf.TensorSpec([], tf.int32)])
    return functions[key](source_ids, tf.constant(max_length, tf.int32), tf.constant(seed, tf.int32)).numpy()


def length_penalty(length, alpha: float):
    """lp(Y) = ((5 + |Y|) / 6) ** alpha (Wu et al. 2016); alpha = 0 turns it off."""
    return ((5.0 + length) / 6.0) ** alpha


def beam_search(model, source_ids, beam_size: int = 4, alpha: float = 0.6, max_length: int = 64,
                jit_compile: bool = False) -> np.ndarray:
    """The best of `beam_size` hypotheses kept at every step, by length-normalized log-probability.

    Returns int32 `[batch, <= max_length]` like `greedy_decode`; `beam_size=1` gives exactly the
    greedy result. The whole search runs as one TensorFlow graph (`beam_loop`), compiled with XLA
    if `jit_compile` (as in `greedy_decode`).
    """
    require_positive_int("beam_size", beam_size)
    require_non_negative_number("alpha", alpha)
    source_ids = _check_decoding_inputs(model, source_ids, max_length, beam_size)
    return _run_compiled(model, f"beam/{beam_size}/{float(alpha)!r}",
                         lambda s, n: beam_loop(model, s, n, beam_size, float(alpha)), source_ids, max_length, jit_compile)


def beam_loop(model, source_ids, max_length, beam_size: int, alpha: float):
    """The loop of `beam_search` in TensorFlow ops. Hypothesis j of sentence i is row i * k + j."""
    batch, k = tf.shape(source_ids)[0], beam_size
    sources = tf.repeat(source_ids, k, axis=0)  # (batch * k, src_len): beams of a sentence are neighbours
    caches, source = model.decoder.start_cache(model.encoder(sources, training=False), sources, max_length)
    vocab = model.config.target_vocab_size
    never = _never_generated_bias(vocab)
    only_padding = tf.where(tf.range(vocab) == PAD_ID, 0.0, -np.inf)  # what a finished hypothesis may add

    tokens = tf.concat([tf.fill([batch * k, 1], START_ID), tf.fill([batch * k, max_length], PAD_ID)], axis=1)
    scores = tf.tile(tf.constant([0.0] + [-np.inf] * (k - 1)), [batch])  # all beams start equal: one alive
    finished = tf.zeros([batch * k], tf.bool)
    lengths = tf.zeros([batch * k], tf.int32)
    steps = tf.constant(0)
    for t in tf.range(max_length):
        x, caches = model.decoder.step(tf.gather(tokens, [t], axis=1), t, caches, source)
        log_probs = tf.nn.log_softmax(tf.cast(model.project(x)[:, -1], tf.float32) + never)  # (batch * k, vocab)
        log_probs = tf.where(finished[:, None], only_padding, log_probs)  # finished: padding, at no cost
        candidates = tf.reshape(scores[:, None] + log_probs, [batch, k * vocab])
        # The k best of k * vocab candidates per sentence (ties go to the lower index).
        top = tf.math.top_k(candidates, k)
        rows = tf.shape(finished)  # (batch * k,), with its static size when known: no shape invariants
        beam = tf.reshape(tf.range(batch)[:, None] * k + top.indices // vocab, rows)  # which row each extends
        next_ids = tf.reshape(top.indices % vocab, rows)
        scores = tf.reshape(top.values, rows)
        tokens = ops.slice_update(tf.gather(tokens, beam), (0, t + 1), next_ids[:, None])
        caches = tf.nest.map_structure(lambda cache: tf.gather(cache, beam), caches)
        was_finished = tf.gather(finished, beam)
        lengths = tf.where(was_finished, tf.gather(lengths, beam), t + 1)
        finished = was_finished | (next_ids == END_ID)
        steps = t + 1
        if tf.reduce_all(finished):
            break
    normalized = tf.reshape(scores / length_penalty(tf.cast(lengths, tf.float32), alpha), [batch, k])
    chosen = tf.range(batch) * k + tf.argmax(normalized, axis=1, output_type=tf.int32)
    return tf.gather(tokens, chosen)[:, 1 : steps + 1]
