"""Checks for the chapter "Since 2017": the rotary embedding, grouped-query attention and the online softmax, in NumPy;
and SmolLM2 run with the student's rotary embedding and RMSNorm."""

from __future__ import annotations

import functools

import numpy as np

from transformer_lib.book.exercises._core import call_answer, compare, exercise


def reference_rotary(x, offset=0, base=10_000.0, pairs="adjacent", sign=1.0, exponent=2.0):
    """Pairs (2i, 2i + 1) of `x` `[length, d]` at position offset + t rotated by (offset + t) * base^(-2i/d),
    in float64. The other arguments give what common mistakes compute: pairs (i, i + d/2), the rotation
    the other way, or base^(-i/d)."""
    x = np.asarray(x, float)
    length, d = x.shape
    theta = base ** (-exponent * np.arange(d // 2) / d)
    angles = (offset + np.arange(length))[:, None] * theta[None, :]
    cos, sin = np.cos(angles), sign * np.sin(angles)
    first, second = (x[:, 0::2], x[:, 1::2]) if pairs == "adjacent" else (x[:, : d // 2], x[:, d // 2:])
    out = np.empty_like(x)
    rotated = (first * cos - second * sin, first * sin + second * cos)
    if pairs == "adjacent":
        out[:, 0::2], out[:, 1::2] = rotated
    else:
        out[:, : d // 2], out[:, d // 2:] = rotated
    return out


def _library_rotary():
    from transformer_lib.layers.rotary import RotaryEmbedding

    return [RotaryEmbedding]


@exercise("the rotary embedding", "your rotation turns each pair by its position, so a score depends only on the offset.")
def check_rotary_embedding(fn) -> None:
    """Exercise: `fn(x, offset)` rotates the pairs (2i, 2i + 1) of each row t of `x` `[length, d]` by the
    angle (offset + t) * 10000^(-2i/d), in NumPy."""
    rng = np.random.default_rng(7)
    x = rng.normal(size=(6, 8))
    for offset in (0, 3):
        context = f"x of shape {x.shape} at offset {offset}"
        yours = call_answer("rotary", fn, _library_rotary(), x.copy(), offset)
        hints = [(reference_rotary(x, offset, pairs="halves"), "the pairs are (i, i + d/2); this exercise pairs the "
                  "neighbours (2i, 2i + 1), as chapter 2's sines and cosines: x[:, 0::2] and x[:, 1::2]."),
                 (reference_rotary(x, offset, sign=-1.0), "the rotation turns the wrong way: the first feature of a "
                  "pair becomes a cos - b sin, the second a sin + b cos."),
                 (reference_rotary(x, offset, exponent=1.0), "the frequencies are 10000^(-i/d); pair i turns at "
                  "10000^(-2i/d), as chapter 2's pair i."),
                 (reference_rotary(x, 0), "the offset is ignored: row t stands at position offset + t.")]
        compare("rotary", yours, reference_rotary(x, offset), context, hints if offset else hints[:3])
    q, k = rng.normal(size=(1, 8)), rng.normal(size=(1, 8))
    scores = {}
    for m, n in ((0, 2), (5, 7), (11, 13), (4, 4), (9, 9)):
        rotated_q = call_answer("rotary", fn, _library_rotary(), q.copy(), m)
        rotated_k = call_answer("rotary", fn, _library_rotary(), k.copy(), n)
        scores[m, n] = float(np.asarray(rotated_q)[0] @ np.asarray(rotated_k)[0])
    for pair, same in (((5, 7), (0, 2)), ((11, 13), (0, 2)), ((9, 9), (4, 4))):
        if not np.isclose(scores[pair], scores[same], rtol=1e-6, atol=1e-9):
            raise AssertionError(f"rotary: q at {pair[0]} and k at {pair[1]} score {scores[pair]:.6f}, but at "
                                 f"{same[0]} and {same[1]} (the same offset) {scores[same]:.6f}: a score must "
                                 "depend only on the offset.")


def reference_gqa(x, w_q, w_k, w_v, w_o, num_heads, num_kv_heads, group_of=None):
    """Self-attention of `x` `[T, d_model]` with h query heads and g key/value heads, in float64: query head
    i reads key/value head `group_of(i)` (i // (h / g); `i % g` is a common mistake)."""
    x = np.asarray(x, float)
    d_k = w_q.shape[1] // num_heads
    group_of = group_of or (lambda i: i // (num_heads // num_kv_heads))
    q, k, v = x @ w_q, x @ w_k, x @ w_v
    heads = []
    for i in range(num_heads):
        j = group_of(i)
        qi, kj, vj = q[:, i * d_k:(i + 1) * d_k], k[:, j * d_k:(j + 1) * d_k], v[:, j * d_k:(j + 1) * d_k]
        scores = qi @ kj.T / np.sqrt(d_k)
        p = np.exp(scores - scores.max(-1, keepdims=True))
        heads.append(p / p.sum(-1, keepdims=True) @ vj)
    return np.concatenate(heads, axis=-1) @ w_o


def _library_attention():
    from transformer_lib.layers.attention import GroupedQueryAttention, MultiHeadAttention, scaled_dot_product_attention

    return [GroupedQueryAttention, MultiHeadAttention, scaled_dot_product_attention]


@exercise("grouped-query attention", "your h query heads share g key/value heads in order, and g = h is multi-head attention.")
def check_grouped_query_attention(fn) -> None:
    """Exercise: `fn(x, w_q, w_k, w_v, w_o, num_heads, num_kv_heads)` is self-attention over `x`
    `[T, d_model]` (no biases, no mask) in NumPy: `w_q` and `w_o` `[d_model, d_model]`, `w_k` and `w_v`
    `[d_model, num_kv_heads * d_k]`; query head i reads key/value head i // (num_heads / num_kv_heads)."""
    rng = np.random.default_rng(8)
    d_model, heads = 8, 4
    x = rng.normal(size=(5, d_model))
    for kv_heads in (4, 2, 1):  # multi-head attention first, then grouped, then multi-query
        d_k = d_model // heads
        w_q, w_o = rng.normal(size=(d_model, d_model)), rng.normal(size=(d_model, d_model))
        w_k, w_v = rng.normal(size=(d_model, kv_heads * d_k)), rng.normal(size=(d_model, kv_heads * d_k))
        args = (w_q, w_k, w_v, w_o, heads, kv_heads)
        context = f"{heads} query heads and {kv_heads} key/value head(s), x of shape {x.shape}"
        hints = [(reference_gqa(x, *args, group_of=lambda i, g=kv_heads: i % g),
                  "query head i reads key/value head i % g; the heads of a group sit next to each other, so it "
                  "reads head i // (h / g) (np.repeat, not np.tile).")] if 1 < kv_heads < heads else []
        yours = call_answer("grouped-query attention", fn, _library_attention(), x.copy(), *(a.copy() if
                            isinstance(a, np.ndarray) else a for a in args))
        compare("grouped-query attention", yours, reference_gqa(x, *args), context, hints)


def reference_update(state, scores, values, rescale_sum=True, rescale_acc=True):
    """The online softmax's update in float64 (`rescale_*=False`: what forgetting one rescaling gives)."""
    m, l, acc = (np.asarray(a, float) for a in state)
    m_new = np.maximum(m, scores.max(-1, keepdims=True))
    p = np.exp(scores - m_new)
    factor = np.exp(m - m_new)
    return (m_new, (l * factor if rescale_sum else l) + p.sum(-1, keepdims=True),
            (acc * factor if rescale_acc else acc) + p @ values)


def _run_blocks(update, scores, values, size):
    t = scores.shape[0]
    state = (np.full((t, 1), -np.inf), np.zeros((t, 1)), np.zeros((t, values.shape[1])))
    for start in range(0, scores.shape[1], size):
        state = update(state, scores[:, start:start + size], values[start:start + size])
    return np.asarray(state[2]) / np.asarray(state[1])


@exercise("the online softmax", "block by block, your running maximum, sum and values give softmax(scores) @ values.")
def check_online_softmax_update(fn) -> None:
    """Exercise: `fn(state, scores, values)` with `state = (m [T, 1], l [T, 1], acc [T, d_v])`, a block's
    `scores` `[T, block]` and `values` `[block, d_v]`, returns the new state (NumPy)."""
    from transformer_lib.layers.blockwise_attention import blockwise_attention, online_softmax_update

    rng = np.random.default_rng(9)
    scores, values = rng.normal(size=(3, 10)) * 3, rng.normal(size=(10, 4))
    scores[:, 7] += 6  # a large score comes late: what was kept must be rescaled
    weights = np.exp(scores - scores.max(-1, keepdims=True))
    expected = weights / weights.sum(-1, keepdims=True) @ values
    for size in (4, 1, 10):
        def update(state, block_scores, block_values):
            return call_answer("online softmax", fn, [online_softmax_update, blockwise_attention],
                               tuple(np.copy(a) for a in state), block_scores.copy(), block_values.copy())

        hints = [(_run_blocks(lambda *a: reference_update(*a, rescale_acc=False), scores, values, size),
                  "the running sum of the values is not rescaled: multiply acc by exp(m - m_new) too."),
                 (_run_blocks(lambda *a: reference_update(*a, rescale_sum=False), scores, values, size),
                  "the running sum l is not rescaled: multiply it by exp(m - m_new) before adding the block's.")]
        compare("online softmax", _run_blocks(update, scores, values, size), expected,
                f"10 keys in blocks of {size} (the largest score in the second block)", hints)


def reference_rms_norm(x, gain, epsilon, inside=True):
    """RMSNorm over the last axis in float64: x / sqrt(mean(x^2) + epsilon) * gain (`inside=False`: the epsilon
    added after the square root, a common slip)."""
    x = np.asarray(x, float)
    mean_square = (x ** 2).mean(-1, keepdims=True)
    root = np.sqrt(mean_square + epsilon) if inside else np.sqrt(mean_square) + epsilon
    return x / root * np.asarray(gain, float)


# A passage for the next-token comparison (written for the course): 100 positions or more with SmolLM2's tokenizer.
SMOLLM2_PASSAGE = (
    "The translator of this course reads a Russian sentence and writes it in English, one token at a time. "
    "Its encoder turns the source into vectors, and its decoder looks at them through cross-attention while it "
    "writes. A language model keeps only the decoder: it reads a text from left to right and, at every position, "
    "guesses the next token. Trained on enough text, it learns spelling, grammar, facts about the world and the "
    "shape of a conversation, so that a short question is followed by a helpful answer."
)


class _YourRotary:
    """A NumPy `rotary(x, offset, base)` called where the library calls its `RotaryEmbedding`: on queries or keys
    `[batch, heads, length, d_k]`, at an offset; one `[length, d_k]` matrix at a time."""

    def __init__(self, fn, base: float):
        self.fn, self.base = fn, base

    def __call__(self, x, offset=0):
        from keras import ops

        x = ops.convert_to_numpy(x)
        rows = [[np.asarray(call_answer("rotary", self.fn, _library_rotary(), x[b, h].copy(), int(offset), self.base))
                 for h in range(x.shape[1])] for b in range(x.shape[0])]
        return ops.convert_to_tensor(np.array(rows, dtype=x.dtype))


class _YourNorm:
    """A NumPy `rms_norm(x, gain, epsilon)` called where the library calls one of its RMSNorm layers."""

    def __init__(self, fn, norm):
        self.fn, self.gain, self.epsilon = fn, norm.gain.numpy(), norm.epsilon

    def __call__(self, x):
        from keras import ops

        from transformer_lib.layers.rms_norm import RMSNorm

        x = ops.convert_to_numpy(x)
        out = call_answer("RMSNorm", self.fn, [RMSNorm], x.copy(), self.gain.copy(), self.epsilon)
        return ops.convert_to_tensor(np.asarray(out, dtype=x.dtype))


@functools.cache
def _smollm2():
    """SmolLM2-135M-Instruct and its tokenizer, loaded once per process (the check restores the model's own blocks)."""
    from transformer_lib.models.gguf import load_gguf

    return load_gguf()


def _swap_blocks(model, rotary, rms_norm):
    """Put the student's functions in every layer of `model` (in place of its RotaryEmbedding and RMSNorm layers);
    returns a function that puts the library's back. Plain attribute writes, past Keras's tracking, so that the
    model's weights stay exactly as they were."""
    layers = model.decoder.stack_layers
    places = [(layer, "rotary") for layer in layers]
    places += [(add_norm, "norm") for layer in layers for add_norm in (layer.self_attention_add_norm,
                                                                       layer.feed_forward_add_norm)]
    places.append((model.decoder, "final_norm"))
    kept = [(owner, name, getattr(owner, name)) for owner, name in places]
    for owner, name, original in kept:
        mine = _YourRotary(rotary, original.base) if name == "rotary" else _YourNorm(rms_norm, original)
        object.__setattr__(owner, name, mine)

    def restore():
        for owner, name, original in kept:
            object.__setattr__(owner, name, original)

    return restore


@exercise("your blocks in SmolLM2", "SmolLM2, a trained model of 2024, reads and writes with your rotary embedding and "
          "RMSNorm in all its layers.")
def check_smollm2_with_your_blocks(rotary, rms_norm, model=None, tokenizer=None) -> None:
    """Exercise: `rotary(x, offset, base)` as exercise 1's, with the base as an argument (SmolLM2's is 100,000), and
    `rms_norm(x, gain, epsilon)` (NumPy, over the last axis). SmolLM2 (`model`, `tokenizer` as `tl.load_gguf()`
    returns them; loaded once per process when not given) runs with them in all 30 layers, and its next-token choices over a passage must agree with the library's at 99%
    of the positions or more. If they do not, the check prints what the model with them answers to a question,
    then tests each function alone to say which one is wrong."""
    from keras import ops

    if model is None or tokenizer is None:
        model, tokenizer = _smollm2()
    ids = np.array([tokenizer.encode(SMOLLM2_PASSAGE)], np.int32)
    expected = ops.convert_to_numpy(model(ids, training=False))[0].argmax(-1)
    restore = _swap_blocks(model, rotary, rms_norm)
    try:
        choices = ops.convert_to_numpy(model(ids, training=False))[0].argmax(-1)
        agreement = float((choices == expected).mean())
        if agreement < 0.99:
            from transformer_lib.models.gguf import chat_prompt
            from transformer_lib.models.language_model import generate

            question = "What is the capital of France?"
            answer = tokenizer.decode(generate(model, tokenizer.encode(chat_prompt(question)), 16, temperature=0))
    finally:
        restore()
    if agreement < 0.99:
        raise AssertionError(
            f"your blocks in SmolLM2: its next-token choices agree with the library's at {agreement:.0%} of "
            f"{len(expected)} positions (99% needed). Asked {question!r}, the model with your blocks answers "
            f"{answer!r}. {_which_block_is_wrong(rotary, rms_norm)}")
    print(f"SmolLM2 with your blocks: next-token choices equal to the library's at {agreement:.1%} of "
          f"{len(expected)} positions (99% needed).")


def _which_block_is_wrong(rotary, rms_norm) -> str:
    """Each function alone against its reference: the first difference found, with its hint if it is a known slip."""
    rng = np.random.default_rng(10)
    x, gain = rng.normal(size=(5, 8)), rng.normal(size=8)
    try:
        compare("rotary", call_answer("rotary", rotary, _library_rotary(), x.copy(), 3, 100_000.0),
                reference_rotary(x, 3, base=100_000.0), "x of shape (5, 8) at offset 3, base 100,000",
                [(reference_rotary(x, 3), "the base is ignored: theta_i = base^(-2i/d), and SmolLM2's is 100,000."),
                 (reference_rotary(x, 3, base=100_000.0, pairs="halves"), "the pairs are (i, i + d/2); SmolLM2's file, "
                  "as llama.cpp reads it, pairs the neighbours (2i, 2i + 1)."),
                 (reference_rotary(x, 3, base=100_000.0, sign=-1.0), "the rotation turns the wrong way.")])
        compare("RMSNorm", call_answer("RMSNorm", rms_norm, [], x.copy(), gain.copy(), 1e-5),
                reference_rms_norm(x, gain, 1e-5), "x of shape (5, 8), epsilon 1e-5",
                [(reference_rms_norm(x, np.ones(8), 1e-5), "the gain is left out: multiply by it, feature by feature."),
                 (reference_rms_norm(x, gain, 1e-5, inside=False), "epsilon goes inside the square root.")])
    except AssertionError as error:
        return f"Alone, {error}"
    return ("Each function alone gives the right numbers on a small input, so look at what differs inside the "
            "model: the offset of each new token, the dtype you return, the axis you average over.")
