"""Every exercise check is a teacher: it accepts a right answer, lets an unwritten one pass with one
line, refuses typical mistakes (naming the ones it recognises) and refuses an answer that calls the
library's own implementation of what the exercise asks for.

The right answers here and in answers.py are written independently, from the paper, NumPy and keras.ops;
the wrong ones are the slips a student makes. Tables at the top, one per kind of answer; the tests below them.
"""

import keras
import numpy as np
import pytest
import tensorflow as tf
from answers import (
    LIBRARY,
    Greedy,
    GreedyGeneratingPadding,
    GreedyGoingOnAfterEnd,
    GreedyOfTheLibrary,
    GreedyStub,
    GreedyWithoutCache,
    MultiHeadOfTheLibrary,
    SelfAttention,
    attention,
    causal,
    fresh_results,  # noqa: F401 (the fixture: each test in a fresh kernel)
    not_written,
)
from keras import ops

import transformer_lib as tl
from transformer_lib import exercises
from transformer_lib.training import objective
from transformer_lib.data import splits
from transformer_lib.decoding import search as library_decoding
from transformer_lib.book.exercises import _core, decoding
from transformer_lib.exercises import (
    check_accumulated_step,
    check_attention,
    check_beam_step,
    check_causal_self_attention,
    check_combined_mask,
    check_concatenated_encoding,
    check_encoder_layer_parameters,
    check_feed_forward,
    check_fit_step,
    check_greedy_translator,
    check_group_pairs,
    check_length_penalty,
    check_look_ahead_mask,
    check_masked_max,
    check_nucleus_sampling,
    check_merge_heads,
    check_multi_head_attention,
    check_positional_encoding,
    check_schedule,
    check_self_attention_layer,
    check_split_heads,
    check_whole_word_masking,
)
from transformer_lib.data.tokenizer import END_ID, PAD_ID

# ---------------------------------------------------------------------------------------------
# Chapters 1, 2 and 4: data, positional encoding, masks (NumPy)


def union_find_groups(pairs, normalise=True):
    parent = {}

    def root(node):
        parent.setdefault(node, node)
        while parent[node] != node:
            node = parent[node]
        return node

    clean = (lambda text: " ".join(text.split())) if normalise else (lambda text: text)
    for source, target in pairs:
        parent[root("t:" + clean(target))] = root("s:" + clean(source))
    return [root("s:" + clean(source)) for source, _ in pairs]


def encoding(length, depth, swap=False, exponent_per_dimension=False):
    """§3.5: PE(pos, 2i) = sin(pos / 10000^(2i/d)), PE(pos, 2i+1) = cos(the same angle)."""
    pos = np.arange(length)[:, None]
    if exponent_per_dimension:  # the slip: 10000^(j/d) for every dimension j
        angles = pos / 10000 ** (np.arange(depth) / depth)
        return np.where(np.arange(depth) % 2 == 0, np.sin(angles), np.cos(angles))
    angles = pos / 10000 ** (np.arange(0, depth, 2) / depth)
    out = np.zeros((length, depth))
    out[:, 0::2], out[:, 1::2] = (np.cos(angles), np.sin(angles)) if swap else (np.sin(angles), np.cos(angles))
    return out


def concatenated(length, depth, cosines_first=False):
    angles = np.arange(length)[:, None] / 10000 ** (np.arange(0, depth, 2) / depth)
    parts = [np.cos(angles), np.sin(angles)] if cosines_first else [np.sin(angles), np.cos(angles)]
    return np.concatenate(parts, axis=1)


def combined_mask(ids, future=True, padding=True, combine=np.maximum):
    ids = np.asarray(ids)
    blocked_future = np.triu(np.ones((ids.shape[1], ids.shape[1])), k=1) * future
    blocked_padding = (ids == 0).astype(float)[:, None, None, :] * padding
    return combine(np.broadcast_to(blocked_future, (len(ids), 1, *blocked_future.shape)), blocked_padding)


# ---------------------------------------------------------------------------------------------
# Chapter 3: attention (the right answers `attention`, `causal` and `SelfAttention`: answers.py)


class SelfAttentionUnscaled(SelfAttention):
    divisor = None


class SelfAttentionReversedMask(SelfAttention):
    polarity = -1.0


class SelfAttentionIgnoringMask(SelfAttention):
    use_mask = False


class SelfAttentionOfTheLibrary(SelfAttention):
    def call(self, x, attention_mask=None):
        q, k, v = ops.matmul(x, self.w_q), ops.matmul(x, self.w_k), ops.matmul(x, self.w_v)
        return tl.scaled_dot_product_attention(q, k, v, attention_mask)[0]


class SelfAttentionStub(SelfAttention):
    def call(self, x, attention_mask=None):
        raise NotImplementedError("hint")


# ---------------------------------------------------------------------------------------------
# Chapter 5: heads


def split_heads(x, num_heads):
    batch, length, d_model = x.shape
    return x.reshape(batch, length, num_heads, d_model // num_heads).transpose(0, 2, 1, 3)


def merge_heads(x):
    batch, heads, length, d_k = x.shape
    return x.transpose(0, 2, 1, 3).reshape(batch, length, heads * d_k)


class MultiHead(keras.layers.Layer):
    """§3.2.2 from keras.ops: four Dense projections, h heads of Eq. 1, concatenated."""

    transpose, scale, polarity = True, True, 1.0  # the mistakes below change these

    def __init__(self, d_model, num_heads, **kwargs):
        super().__init__(**kwargs)
        self.d_model, self.num_heads, self.d_k = d_model, num_heads, d_model // num_heads
        self.wq, self.wk, self.wv, self.wo = (keras.layers.Dense(d_model) for _ in range(4))

    def split(self, x):
        batch, length = ops.shape(x)[0], ops.shape(x)[1]
        if not self.transpose:
            return ops.reshape(x, (batch, self.num_heads, length, self.d_k))
        return ops.transpose(ops.reshape(x, (batch, length, self.num_heads, self.d_k)), (0, 2, 1, 3))

    def merge(self, x):
        batch, length = ops.shape(x)[0], ops.shape(x)[2]
        if self.transpose:
            x = ops.transpose(x, (0, 2, 1, 3))
        return ops.reshape(x, (batch, length, self.d_model))

    def call(self, query, key, value, attention_mask=None):
        q, k, v = self.split(self.wq(query)), self.split(self.wk(key)), self.split(self.wv(value))
        scores = ops.matmul(q, ops.swapaxes(k, -1, -2))  # (B, h, T, S)
        if self.scale:
            scores = scores / self.d_k**0.5
        if attention_mask is not None:
            mask = ops.cast(attention_mask, scores.dtype)
            scores = scores - 1e9 * (mask if self.polarity > 0 else 1.0 - mask)
        weights = ops.softmax(scores, axis=-1)
        return self.wo(self.merge(ops.matmul(weights, v))), weights


class MultiHeadWithoutTranspose(MultiHead):
    transpose = False


class MultiHeadUnscaled(MultiHead):
    scale = False


class MultiHeadReversedMask(MultiHead):
    polarity = -1.0


class MultiHeadStub(MultiHead):
    def call(self, query, key, value, attention_mask=None):
        raise NotImplementedError("hint")


def library_split(x, num_heads):
    return np.asarray(tl.MultiHeadAttention(x.shape[-1], num_heads).split_heads(x))


def library_merge(x):
    return np.asarray(tl.MultiHeadAttention(x.shape[1] * x.shape[3], x.shape[1]).merge_heads(x))


# ---------------------------------------------------------------------------------------------
# Chapter 6: feed-forward and parameters (Add & Norm and the decoder layer: test_exercises_ch6.py)


def encoder_parameters(d, dff, norms=True, biases=True):
    attention_ = 4 * d * d + (4 * d if biases else 0)
    feed_forward = 2 * d * dff + (dff + d if biases else 0)
    return attention_ + feed_forward + (2 * 2 * d if norms else 0)


def library_parameters(d, dff):
    layer = tl.EncoderLayer(d, 1, dff)
    layer(np.zeros((1, 1, d), "float32"))
    return layer.count_params()


def library_feed_forward(x, w1, b1, w2, b2):
    layer = tl.FeedForward(x.shape[-1], w1.shape[1])
    layer(x)
    layer.set_weights([w1, b1, w2, b2])
    return np.asarray(layer(x))


# ---------------------------------------------------------------------------------------------
# Chapter 7: the schedule and the training step


def lrate(step_num, d_model, warmup_steps):
    return d_model**-0.5 * min(step_num**-0.5, step_num * warmup_steps**-1.5)


def lrate_counted_from_zero(step_num, d_model, warmup_steps):
    with np.errstate(divide="ignore"):  # step_num - 1 = 0 at the first step: inf, then min() takes the warm-up
        step = np.float64(step_num - 1)
        return d_model**-0.5 * min(step**-0.5, step * warmup_steps**-1.5)


def step(model, optimizer, batch, label_smoothing=0.1, count_padding=False, update=True):
    (source, target_in), target_out = batch
    with tf.GradientTape() as tape:
        logits = model((source, target_in), training=True)
        if count_padding:  # every position, padding included, label-smoothed
            loss = keras.losses.CategoricalCrossentropy(from_logits=True, label_smoothing=label_smoothing)(
                ops.one_hot(target_out, logits.shape[-1]), logits)
        else:
            loss = tl.masked_loss(target_out, logits, label_smoothing=label_smoothing)
    if update:
        gradients = tape.gradient(loss, model.trainable_variables)
        optimizer.apply_gradients(zip(gradients, model.trainable_variables))
    return loss


def accumulated(model, optimizer, batches, weigh_by_tokens=True, apply_once=True):
    """Gradient accumulation: one tape per batch, the gradients added, one update (see test_exercises_ch78.py)."""
    tokens = sum(float(np.sum(target_out != PAD_ID)) for _, target_out in batches) if weigh_by_tokens else None
    loss, summed = 0.0, None
    for (source, target_in), target_out in batches:
        with tf.GradientTape() as tape:
            part = tl.masked_loss(target_out, model((source, target_in), training=True), tokens=tokens)
            part = part if weigh_by_tokens else part / len(batches)  # the slip: the mean of the batches' means
        gradients = [tf.convert_to_tensor(g) for g in tape.gradient(part, model.trainable_variables)]
        if not apply_once:
            optimizer.apply_gradients(zip(gradients, model.trainable_variables))
        summed = gradients if summed is None else [a + b for a, b in zip(summed, gradients)]
        loss += part
    if apply_once:
        optimizer.apply_gradients(zip(summed, model.trainable_variables))
    return loss


class FitStep(tl.Transformer):
    options: dict = {}

    def train_step(self, data):
        return {"loss": step(self, self.optimizer, data, **self.options)}


class FitStepWithoutSmoothing(FitStep):
    options = {"label_smoothing": 0.0}


class FitStepWithoutUpdate(FitStep):
    options = {"update": False}


class FitStepNotOverridden(tl.Transformer):
    pass


class FitStepOfTheLibrary(tl.Transformer):
    def train_step(self, data):
        return {"loss": tl.train_step(self, self.optimizer, data)[0]}


class FitStepStub(tl.Transformer):
    def train_step(self, data):
        raise NotImplementedError("hint")


# ---------------------------------------------------------------------------------------------
# Chapter 8: decoding (greedy decoding and its slips: answers.py)


def beam_step(prefixes, scores, log_probs, k, add_scores=True, ban="own pairs"):
    """Written out candidate by candidate: (beam b, token t) is allowed unless the pair (last token
    of b, t) is a pair of neighbours in b's prefix ("own pairs"). The slips: no ban ("none"), the
    pairs of every beam ("any beam's pairs"), every token b already holds ("used tokens")."""
    vocab = log_probs.shape[1]
    pairs_of = [set(zip(prefix[:-1].tolist(), prefix[1:].tolist())) for prefix in prefixes]
    candidates = []
    for b, prefix in enumerate(prefixes):
        last = int(prefix[-1])
        banned = {"own pairs": {t for first, t in pairs_of[b] if first == last},
                  "any beam's pairs": {t for pairs in pairs_of for first, t in pairs if first == last},
                  "used tokens": set(prefix.tolist()), "none": set()}[ban]
        for t in range(vocab):
            if t not in banned:
                candidates.append(((scores[b] if add_scores else 0.0) + log_probs[b, t], b, t))
    best = sorted(candidates, key=lambda c: -c[0])[:k]
    return (np.array([b for _, b, _ in best]), np.array([t for _, _, t in best]),
            np.array([total for total, _, _ in best]))


def best_of_each_beam(prefixes, scores, log_probs, k):
    """The best allowed extension of each beam, the beams then ordered by it."""
    per_beam = [beam_step(prefixes[b : b + 1], scores[b : b + 1], log_probs[b : b + 1], 1) for b in range(k)]
    order = np.argsort([-totals[0] for _, _, totals in per_beam])
    return order, np.array([per_beam[b][1][0] for b in order]), np.array([per_beam[b][2][0] for b in order])


# ---------------------------------------------------------------------------------------------
# Chapter 9: max pooling with the mask, whole-word masking, nucleus sampling


def masked_max(x, ids):
    return np.where((ids != 0)[..., None], x, -np.inf).max(axis=1)


def whole_word_masking(ids, starts, mask_id, rng, by_word=True, decide_by_word=True, rate=0.15, mask_share=0.8,
                       keep_by_word=True):
    """BERT's masking by words, written with a loop over the words (the check vectorises its own)."""
    inputs, labels = ids.copy(), np.zeros_like(ids)
    for row in range(ids.shape[0]):
        position = 0
        while position < ids.shape[1]:
            if ids[row, position] <= END_ID:
                position += 1
                continue
            end = position + 1
            while end < ids.shape[1] and ids[row, end] > END_ID and not starts[row, end]:
                end += 1
            pieces = range(position, end) if by_word else [[p] for p in range(position, end)]
            for group in ([list(pieces)] if by_word else pieces):
                if rng.random() < rate:
                    actions = [rng.random()] * len(group) if decide_by_word else rng.random(len(group))
                    for piece, action in zip(group, actions):
                        labels[row, piece] = ids[row, piece]
                        if action < mask_share:
                            inputs[row, piece] = mask_id
                        elif (action if keep_by_word else rng.uniform(mask_share, 1)) < mask_share + 0.1:
                            inputs[row, piece] = rng.integers(END_ID + 1, mask_id)
            position = end
    return inputs, labels


def nucleus(logits, p, rng, keep_crossing=True, sort=True, renormalise=True):
    probabilities = np.exp(logits - logits.max())
    probabilities /= probabilities.sum()
    order = np.argsort(-probabilities) if sort else np.arange(len(probabilities))
    total = np.cumsum(probabilities[order])
    count = int(np.searchsorted(total, p) + 1) if keep_crossing else max(1, int(np.searchsorted(total, p)))
    kept = order[:count]
    weights = probabilities[kept] / probabilities[kept].sum() if renormalise else np.full(len(kept), 1 / len(kept))
    return int(rng.choice(kept, p=weights))


# ---------------------------------------------------------------------------------------------
# The tables: every check, its right answer, its stub, its typical mistakes, its library shortcut.

RIGHT = {
    check_group_pairs: union_find_groups,
    check_positional_encoding: encoding,
    check_concatenated_encoding: concatenated,
    check_look_ahead_mask: lambda size: np.triu(np.ones((size, size)), k=1),
    check_combined_mask: combined_mask,
    check_attention: attention,
    check_causal_self_attention: causal,
    check_self_attention_layer: SelfAttention,
    check_split_heads: split_heads,
    check_merge_heads: merge_heads,
    check_multi_head_attention: MultiHead,
    check_encoder_layer_parameters: encoder_parameters,
    check_feed_forward: lambda x, w1, b1, w2, b2: np.maximum(0, x @ w1 + b1) @ w2 + b2,
    check_schedule: lrate,
    check_accumulated_step: accumulated,
    check_fit_step: FitStep,
    check_length_penalty: lambda length, alpha: ((5 + length) / 6) ** alpha,
    check_beam_step: beam_step,
    check_greedy_translator: Greedy,
    check_masked_max: masked_max,
    check_whole_word_masking: whole_word_masking,
    check_nucleus_sampling: nucleus,
}

CLASS_STUBS = {
    check_self_attention_layer: SelfAttentionStub,
    check_multi_head_attention: MultiHeadStub,
    check_fit_step: FitStepStub,
    check_greedy_translator: GreedyStub,
}
STUBS = {check: CLASS_STUBS.get(check, not_written) for check in RIGHT}

NO_POWER = "power -1.5"
WRONG = [  # (check, answer, what the message must say)
    (check_group_pairs, lambda pairs: union_find_groups(pairs, normalise=False), "put the pairs at positions"),
    (check_group_pairs, lambda pairs: [source for source, _ in pairs], "put the pairs at positions"),
    (check_group_pairs, lambda pairs: [0], "one label per pair"),
    (check_positional_encoding, lambda n, d: encoding(n, d, swap=True), "sines and cosines are swapped"),
    (check_positional_encoding, lambda n, d: encoding(n, d, exponent_per_dimension=True), "exponent must be 2i/d"),
    (check_concatenated_encoding, encoding, "this is the interleaved encoding"),
    (check_concatenated_encoding, lambda n, d: concatenated(n, d, cosines_first=True),
     r"for length=50, depth=16: the answer differs: entry \(0, 0\) is 1, expected 0"),
    (check_look_ahead_mask, lambda size: 1 - np.triu(np.ones((size, size)), k=1), "polarity is reversed"),
    (check_look_ahead_mask, lambda size: np.triu(np.ones((size, size)), k=0), "a position must see itself"),
    (check_look_ahead_mask, lambda size: np.tril(np.ones((size, size)), k=-1), "blocks the past"),
    (check_combined_mask, lambda ids: combined_mask(ids, padding=False), "padding keys are not blocked"),
    (check_combined_mask, lambda ids: combined_mask(ids, future=False), "future keys are not blocked"),
    (check_combined_mask, lambda ids: combined_mask(ids, combine=np.add), "combine with a maximum"),
    (check_combined_mask, lambda ids: 1 - combined_mask(ids), "polarity is reversed"),
    (check_attention, lambda q, k, v, mask: attention(q, k, v, mask, divisor=None), r"not divided by sqrt\(d_k\)"),
    (check_attention, lambda q, k, v, mask: attention(q, k, v, mask, polarity=-1), "polarity is reversed"),
    (check_attention, lambda q, k, v, mask: attention(q, k, v, mask, use_mask=False), "the mask is ignored"),
    (check_causal_self_attention, lambda *a: causal(*a, use_mask=False), "the mask is ignored"),
    (check_causal_self_attention, lambda *a: causal(*a, k=0), "blocked from itself too"),
    (check_causal_self_attention, lambda *a: causal(*a, transpose=True), "the past is blocked"),
    (check_self_attention_layer, SelfAttentionUnscaled, r"not divided by sqrt\(d_k\)"),
    (check_self_attention_layer, SelfAttentionReversedMask, "polarity is reversed"),
    (check_self_attention_layer, SelfAttentionIgnoringMask, "the mask is ignored"),
    (check_split_heads, lambda x, h: x.reshape(x.shape[0], h, x.shape[1], -1), "split without the transpose"),
    (check_split_heads, lambda x, h: split_heads(x, h)[:, ::-1], r"for x of shape \(2, 5, 12\), 3 heads: the answer"),
    (check_merge_heads, lambda x: x.reshape(x.shape[0], x.shape[2], -1), "merged without the transpose"),
    (check_merge_heads, lambda x: merge_heads(x[:, ::-1]), r"for x of shape \(2, 3, 5, 2\): the answer differs"),
    (check_multi_head_attention, MultiHeadWithoutTranspose, "split without the transpose"),
    (check_multi_head_attention, MultiHeadUnscaled, r"not divided by sqrt\(d_k\)"),
    (check_multi_head_attention, MultiHeadReversedMask, "polarity is reversed"),
    (check_encoder_layer_parameters, lambda d, dff: encoder_parameters(d, dff, norms=False),
     "You left out the two layer norms"),
    (check_encoder_layer_parameters, lambda d, dff: encoder_parameters(d, dff, biases=False), "left out the biases"),
    (check_feed_forward, lambda x, w1, b1, w2, b2: (x @ w1 + b1) @ w2 + b2, "ReLU is missing"),
    (check_feed_forward, lambda x, w1, b1, w2, b2: np.maximum(0, (x @ w1 + b1) @ w2 + b2),
     "after the first map, not the second"),
    (check_schedule, lambda n, d, w: lrate(n + 1, d, w), "off by one: step_num counts from 1"),
    (check_schedule, lrate_counted_from_zero, "off by one: step_num is already counted from 1"),
    (check_schedule, lambda n, d, w: d**-0.5 * min(n**-0.5, n * w**-0.5), NO_POWER),
    (check_accumulated_step, lambda m, o, b: accumulated(m, o, b, weigh_by_tokens=False), "mean of the two batches"),
    (check_accumulated_step, lambda m, o, b: accumulated(m, o, b, apply_once=False), "changed 2 times"),
    (check_accumulated_step, lambda m, o, b: None, "returned None"),
    (check_fit_step, FitStepWithoutSmoothing, "no label smoothing"),
    (check_fit_step, FitStepWithoutUpdate, "no weight changed"),
    (check_fit_step, FitStepNotOverridden, "does not override train_step"),
    (check_length_penalty, lambda length, alpha: (length / 6) ** alpha, "the 5 is missing"),
    (check_length_penalty, lambda length, alpha: (5 + length) / 6 * alpha, "alpha is an exponent"),
    (check_beam_step, best_of_each_beam, "best extension of each beam"),
    (check_beam_step, lambda *a: beam_step(*a, add_scores=False), "scores so far are not added"),
    (check_beam_step, lambda *a: beam_step(*a, ban="none"), "repeats a pair of tokens its own beam already holds"),
    (check_beam_step, lambda *a: beam_step(*a, ban="any beam's pairs"), "pairs that another beam holds"),
    (check_beam_step, lambda *a: beam_step(*a, ban="used tokens"), "every token the beam already holds"),
    (check_greedy_translator, GreedyGoingOnAfterEnd, "a row goes on after its END"),
    (check_greedy_translator, GreedyGeneratingPadding, "must never be generated"),
    (check_greedy_translator, GreedyWithoutCache, "runs the whole model on the prefix"),
    (check_masked_max, lambda x, ids: x.max(axis=1), "a padding position won"),
    (check_masked_max, lambda x, ids: (x * (ids != 0)[..., None]).max(axis=1), "padding became 0"),
    (check_masked_max, lambda x, ids: np.where((ids > END_ID)[..., None], x, -np.inf).max(axis=1),
     "START and END were left out"),
    (check_masked_max, lambda x, ids: np.where((ids != 0)[..., None], x, 0).max(axis=1), "padding became 0"),
    (check_masked_max, lambda x, ids: np.where((ids != 0)[..., None], x, 0).sum(axis=1) / (ids != 0).sum(axis=1)[:, None],
     "the answer differs"),  # the masked mean
    (check_whole_word_masking, lambda ids, s, m, rng: whole_word_masking(ids, s, m, rng, by_word=False),
     "a word was chosen only in part"),
    (check_whole_word_masking, lambda ids, s, m, rng: whole_word_masking(ids, s, m, rng, decide_by_word=False),
     "a chosen word was masked only in part"),
    (check_whole_word_masking, lambda ids, s, m, rng: whole_word_masking(ids, s, m, rng, rate=0.3),
     "chosen words / words"),
    (check_whole_word_masking, lambda ids, s, m, rng: whole_word_masking(ids, s, m, rng, mask_share=0.9),
     "masked words / chosen words"),
    (check_whole_word_masking, lambda ids, s, m, rng: whole_word_masking(ids, s, m, rng, keep_by_word=False),
     "unchanged words / chosen words"),  # masked as a word, but replaced or kept piece by piece
    (check_whole_word_masking, lambda ids, s, m, rng: tl.mask_tokens(ids, m, seed=[1, 2]),
     "a word was chosen only in part"),
    (check_nucleus_sampling, lambda logits, p, rng: nucleus(logits, p, rng, keep_crossing=False), "is kept too"),
    (check_nucleus_sampling, lambda logits, p, rng: nucleus(logits, p, rng, sort=False), "most likely down"),
    (check_nucleus_sampling, lambda logits, p, rng: nucleus(logits, 1.0, rng), "was drawn, but the nucleus"),
    (check_nucleus_sampling, lambda logits, p, rng: nucleus(logits, p, rng, renormalise=False), "in proportion"),
]

LIBRARY_SHORTCUTS = {  # the exercises that ask to write something the library has
    check_group_pairs: lambda pairs: splits.connected_groups(pairs),
    check_positional_encoding: lambda n, d: np.asarray(tl.positional_encoding(n, d)),
    check_look_ahead_mask: lambda size: np.asarray(tl.look_ahead_mask(size)),
    check_combined_mask: lambda ids: np.asarray(tl.decoder_mask(ids)),
    check_attention: lambda q, k, v, mask: np.asarray(tl.scaled_dot_product_attention(q, k, v, mask)[0]),
    check_causal_self_attention: lambda x, wq, wk, wv: attention(x @ wq, x @ wk, x @ wv,
                                                                 np.asarray(tl.look_ahead_mask(len(x)))),
    check_self_attention_layer: SelfAttentionOfTheLibrary,
    check_split_heads: library_split,
    check_merge_heads: library_merge,
    check_multi_head_attention: MultiHeadOfTheLibrary,
    check_encoder_layer_parameters: library_parameters,
    check_feed_forward: library_feed_forward,
    check_schedule: lambda n, d, w: float(objective.TransformerSchedule(d, w)(n - 1)),
    check_accumulated_step: lambda model, optimizer, batches: sum(tl.train_step(model, optimizer, b)[0]
                                                                  for b in batches),
    check_fit_step: FitStepOfTheLibrary,
    check_length_penalty: lambda length, alpha: library_decoding.length_penalty(length, alpha),
    check_greedy_translator: GreedyOfTheLibrary,
}
# Built on an earlier exercise, or no library twin (the library pools by the mean and masks by pieces).
NOTHING_TO_CALL = {check_concatenated_encoding, check_beam_step, check_nucleus_sampling, check_masked_max,
                   check_whole_word_masking}


def named(table):
    return [pytest.param(check, answer, id=check.__name__) for check, answer in table.items()]


# ---------------------------------------------------------------------------------------------
# The checks


def test_every_check_is_tested_with_a_right_answer_a_stub_two_mistakes_and_the_library():
    checks = {getattr(exercises, name) for name in exercises.__all__ if name.startswith("check_")}
    checks.discard(exercises.check_transformer)  # tested with chapter 6's first run, in tests/book/test_first_run.py
    checks.discard(exercises.check_per_head_attention)  # tested in test_exercises_heads_ch5.py
    checks.discard(exercises.check_batch_padding_share)  # tested in test_exercises_ch124.py
    checks -= {exercises.check_add_norm, exercises.check_decoder_layer}  # tested in test_exercises_ch6.py
    checks -= {exercises.check_rotary_embedding, exercises.check_grouped_query_attention,
               exercises.check_online_softmax_update}  # tested in test_exercises_modern.py
    checks.discard(exercises.check_smollm2_with_your_blocks)  # tested in test_exercises_smollm2.py (it needs SmolLM2)
    assert len(checks) == 22 and set(RIGHT) == checks == set(STUBS)
    assert all(sum(check is c for c, _, _ in WRONG) >= 2 for check in checks)
    assert set(LIBRARY_SHORTCUTS) == checks - NOTHING_TO_CALL


@pytest.mark.parametrize("check, answer", named(RIGHT))
def test_a_right_answer_is_accepted_and_remembered(check, answer, capsys):
    assert not exercises.passed(check)
    check(answer)
    assert capsys.readouterr().out.startswith("Correct: ")
    assert exercises.passed(check) and exercises.passed(check.__name__)


@pytest.mark.parametrize("check, stub", named(STUBS))
def test_an_answer_not_written_yet_gets_one_line_and_lets_the_chapter_go_on(check, stub, capsys):
    assert check(stub) is None
    out = capsys.readouterr().out
    assert out.startswith("Not written yet: ") and out.count("\n") == 1, out
    assert not exercises.passed(check)


@pytest.mark.parametrize("check, answer, message",
                         [pytest.param(*row, id=f"{row[0].__name__}-{i}") for i, row in enumerate(WRONG)])
def test_a_typical_mistake_is_refused_and_named(check, answer, message):
    with pytest.raises(AssertionError, match=message):
        check(answer)
    assert not exercises.passed(check)


@pytest.mark.parametrize("check, answer", named(LIBRARY_SHORTCUTS))
def test_an_answer_calling_the_librarys_own_implementation_is_refused(check, answer):
    with pytest.raises(AssertionError, match=LIBRARY):
        check(answer)
    assert not exercises.passed(check)


def test_a_check_fails_again_after_a_right_answer_is_replaced_by_a_wrong_one(capsys):
    check_length_penalty(RIGHT[check_length_penalty])
    assert exercises.passed(check_length_penalty)
    with pytest.raises(AssertionError):
        check_length_penalty(lambda length, alpha: 1.0)
    assert not exercises.passed(check_length_penalty)


def test_the_schedule_check_refuses_step_num_plus_one_even_beyond_the_warm_up():
    """The +1 slip is small after warm-up; the first steps make it obvious, and the check names it."""
    with pytest.raises(AssertionError, match="off by one") as info:
        check_schedule(lambda n, d, w: d**-0.5 * min((n + 1) ** -0.5, (n + 1) * w**-1.5))
    assert "d_model=512, warmup_steps=4000" in str(info.value)


# ---------------------------------------------------------------------------------------------
# What the checks share: compare, refusing library calls, choosing yours or the library's


def test_compare_is_relative_so_tiny_values_ten_percent_off_fail():
    expected = np.array([1e-7, -2e-7, 3e-7])
    with pytest.raises(AssertionError, match="the answer differs"):
        _core.compare("tiny", expected * 1.1, expected, "x=tiny")


def test_compare_accepts_float32_round_off_at_every_scale():
    rng = np.random.default_rng(0)
    for scale in (1e-7, 1.0, 1e6):
        expected = rng.normal(size=(4, 5)) * scale
        _core.compare("round-off", expected.astype("float32"), expected, f"scale {scale}")


def test_compare_judges_entries_near_zero_against_the_arrays_scale():
    _core.compare("near zero", [1.0, 0.0], [1.0, 1e-9], "a vector")
    with pytest.raises(AssertionError):
        _core.compare("near zero", [1.0, 0.0], [1.0, 1e-3], "a vector")


def test_compare_names_the_input_and_shows_both_small_arrays():
    with pytest.raises(AssertionError) as info:
        _core.compare("mask", [[0.0, 1.0], [0.0, 0.0]], [[0.0, 1.0], [1.0, 0.0]], "size=2")
    message = str(info.value)
    assert message.startswith("mask: for size=2: the answer differs: expected\n")
    assert "expected\n[[0., 1.],\n [1., 0.]]\ngot\n[[0., 1.],\n [0., 0.]]" in message


def test_compare_points_at_the_first_wrong_entry_of_a_large_array():
    expected = np.arange(20.0)
    yours = expected.copy()
    yours[[3, 7]] = -1.0
    with pytest.raises(AssertionError, match=r"for n=20: the answer differs: entry \(3,\) is -1, expected 3 "
                                             r"\(2 of 20 entries differ\)"):
        _core.compare("big", yours, expected, "n=20")


def test_compare_says_what_a_recognised_mistake_is_instead_of_numbers():
    expected = np.array([1.0, 2.0])
    with pytest.raises(AssertionError, match="^demo: for x: you doubled it$"):
        _core.compare("demo", expected * 2, expected, "x", hints=[(expected * 3, "tripled"), (expected * 2, "you doubled it")])


def test_compare_reports_a_wrong_shape_and_a_nan():
    with pytest.raises(AssertionError, match=r"the shape is \(3,\), expected \(2,\)"):
        _core.compare("demo", np.zeros(3), np.zeros(2), "x")
    with pytest.raises(AssertionError, match="NaN or infinity"):
        _core.compare("demo", [np.nan, 1.0], [0.0, 1.0], "x")


def test_refusing_library_calls_catches_the_call_and_nothing_else():
    def library_function():
        return 1

    with _core.refuse_library_calls("demo", library_function):
        sum([1, 2])
    with pytest.raises(AssertionError, match=r"demo: your answer calls .*library_function, the library's own"):
        with _core.refuse_library_calls("demo", library_function):
            library_function()
    assert _core.call_answer("demo", lambda: 3, [library_function]) == 3


def test_yours_or_library_picks_yours_only_after_its_check_passed(capsys):
    def mine(length, alpha):
        return ((5 + length) / 6) ** alpha

    library = library_decoding.length_penalty
    assert exercises.yours_or_library(check_length_penalty, mine, library) is library
    assert "Using the library's length_penalty: check_length_penalty has not" in capsys.readouterr().out
    check_length_penalty(not_written)
    assert exercises.yours_or_library(check_length_penalty, mine, library) is library
    with pytest.raises(AssertionError):
        check_length_penalty(lambda length, alpha: length)
    assert exercises.yours_or_library(check_length_penalty, mine, library) is library
    check_length_penalty(mine)
    assert exercises.yours_or_library(check_length_penalty, mine, library) is mine
    assert capsys.readouterr().out.endswith("Using your mine (check_length_penalty accepted it).\n")


# ---------------------------------------------------------------------------------------------
# The greedy check's reference is the library's behaviour, on models that show both slips


@pytest.mark.parametrize("seed, scale", [(1, 1.0), (5, 0.3), (3, 1.0)])
def test_the_greedy_checks_reference_decodes_as_the_library_does(seed, scale):
    model, source = decoding._random_model(seed, scale)
    library = np.asarray(tl.greedy_decode(model, source, 8))
    reference = decoding.reference_greedy(model, source, 8)
    np.testing.assert_array_equal(decoding._padded(library, 8), decoding._padded(reference, 8))


def test_the_greedy_checks_models_make_both_slips_visible():
    """Some rows stop at END and some do not, and some step would generate padding or START if allowed:
    otherwise the check could not tell those slips from a right answer."""
    going_on = generating_padding = False
    for seed, scale, min_length in decoding.CASES:
        model, source = decoding._random_model(seed, scale)

        def greedy(**slip):
            return decoding._padded(decoding.reference_greedy(model, source, 8, min_length=min_length, **slip), 8)

        right = greedy()
        going_on |= not np.array_equal(greedy(stop=False), right)
        generating_padding |= not np.array_equal(greedy(forbid=False), right)
    assert going_on and generating_padding
