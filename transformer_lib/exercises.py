"""Automatic checks for the book's exercises: call `check_<name>(your_function)`.

Each check compares your function with the library's own implementation on several inputs and
either prints a short confirmation or raises an AssertionError that says what differs.
"""

from __future__ import annotations

import numpy as np

from transformer_lib.masks import look_ahead_mask, padding_mask
from transformer_lib.positional_encoding import positional_encoding


def _compare(name: str, yours, expected, context: str) -> None:
    yours, expected = np.asarray(yours), np.asarray(expected)
    if yours.shape != expected.shape:
        raise AssertionError(f"{name}: for {context} the shape is {yours.shape}, expected {expected.shape}.")
    if not np.allclose(yours, expected, atol=1e-5):
        where = tuple(int(i) for i in np.argwhere(~np.isclose(yours, expected, atol=1e-5))[0])
        raise AssertionError(
            f"{name}: for {context} entry {where} is {yours[where]:.6g}, expected {expected[where]:.6g}."
        )


def check_concatenated_encoding(fn) -> None:
    """Exercise (chapter 2): `fn(length, depth)` puts all sines first, then all cosines."""
    for length, depth in [(5, 4), (50, 16), (7, 32)]:
        interleaved = np.asarray(positional_encoding(length, depth))
        expected = np.concatenate([interleaved[:, 0::2], interleaved[:, 1::2]], axis=1)
        _compare("concatenated encoding", fn(length, depth), expected, f"length={length}, depth={depth}")
    print("Correct: the same numbers as the interleaved encoding, with the dimensions reordered.")


def check_combined_mask(fn) -> None:
    """Exercise (chapter 3): `fn(target_ids)` combines the look-ahead and padding masks."""
    for ids in ([[5, 6, 0]], [[1, 2, 3, 4], [7, 0, 0, 0]]):
        ids = np.array(ids)
        expected = np.maximum(np.asarray(look_ahead_mask(ids.shape[1])), np.asarray(padding_mask(ids)))
        _compare("combined mask", fn(ids), expected, f"target_ids={ids.tolist()}")
    print("Correct: a key is blocked when it is in the future or when it is padding.")


def check_attention(fn) -> None:
    """Exercise (chapter 4): `fn(q, k, v, mask)` in NumPy returns Eq. 1's output (mask: 1.0 = blocked)."""
    from transformer_lib.attention import scaled_dot_product_attention

    rng = np.random.default_rng(0)
    for t, s, d in [(2, 3, 4), (5, 5, 8)]:
        q, k, v = rng.normal(size=(t, d)), rng.normal(size=(s, d)), rng.normal(size=(s, d))
        mask = np.zeros((t, s))
        mask[:, -1] = 1.0
        for m in (None, mask):
            expected, _ = scaled_dot_product_attention(q.astype("float32"), k.astype("float32"), v.astype("float32"), m)
            _compare("attention", fn(q, k, v, m), expected, f"{t} queries, {s} keys, d_k={d}, mask={'none' if m is None else 'last key blocked'}")
    print("Correct: your attention matches Eq. 1, masked and unmasked.")


def check_split_heads(fn) -> None:
    """Exercise (chapter 5): `fn(x, num_heads)` turns `[batch, length, d_model]` into `[batch, heads, length, d_k]`."""
    from transformer_lib.attention import MultiHeadAttention

    rng = np.random.default_rng(0)
    for batch, length, d_model, heads in [(1, 3, 8, 2), (2, 5, 12, 3)]:
        x = rng.normal(size=(batch, length, d_model)).astype("float32")
        expected = MultiHeadAttention(d_model, heads).split_heads(x)
        _compare("split heads", fn(x, heads), expected, f"x of shape {x.shape}, {heads} heads")
    print("Correct: each head gets its own slice of d_model, for every position.")


def check_padding_share(fn) -> None:
    """Exercise (chapter 1): `fn(batch)` returns the share of padding (id 0) in one `[batch, len]` array."""
    import tensorflow as tf

    from transformer_lib.data import padding_fraction

    for rows in ([[1, 5, 2, 0], [1, 2, 0, 0]], [[1, 7, 7, 2]], [[1, 2, 0, 0, 0, 0]]):
        batch = np.array(rows, np.int32)
        dataset = tf.data.Dataset.from_tensors(((batch, batch), batch))  # the same array as source and target
        _compare("padding share", fn(batch), padding_fraction(dataset), f"batch={rows}")
    print("Correct: that is the fraction of the computation spent on padding.")


def check_encoder_layer_parameters(fn) -> None:
    """Exercise (chapter 6): `fn(d_model, dff)` counts the parameters of one encoder layer."""
    from transformer_lib.encoder import EncoderLayer

    for d_model, heads, dff in [(512, 8, 2048), (64, 4, 256), (12, 3, 7)]:
        layer = EncoderLayer(d_model, heads, dff)
        layer.build((None, None, d_model))
        yours, expected = fn(d_model, dff), layer.count_params()
        if yours != expected:
            raise AssertionError(
                f"encoder layer parameters: for d_model={d_model}, dff={dff} you count {yours:,}, the layer has "
                f"{expected:,}. Count weights and biases of the four attention projections, both feed-forward "
                "layers, and the scale and offset of both layer norms."
            )
    print("Correct: attention 4·d(d+1), feed-forward 2·d·dff + dff + d, two layer norms 2·2d.")


def check_schedule(fn) -> None:
    """Exercise (chapter 7): `fn(step_num, d_model, warmup_steps)` is the §5.3 learning rate (step_num from 1)."""
    from transformer_lib.objective import TransformerSchedule

    for d_model, warmup in [(512, 4000), (128, 1000)]:
        steps = np.array([1, 2, warmup // 2, warmup, warmup + 1, 10 * warmup])
        expected = TransformerSchedule(d_model, warmup)(steps - 1)  # Keras counts updates from 0
        yours = np.array([fn(int(step), d_model, warmup) for step in steps])
        _compare("learning rate", yours, expected, f"steps {steps.tolist()}, d_model={d_model}, warmup_steps={warmup}")
    print("Correct: a linear warm-up to (d_model * warmup_steps)^-0.5, then decay as 1/sqrt(step).")


def check_length_penalty(fn) -> None:
    """Exercise (chapter 8): `fn(length, alpha)` is the GNMT length penalty used to rank beams."""
    from transformer_lib.decoding import length_penalty

    for length in (1, 5, 12, 40):
        for alpha in (0.0, 0.6, 1.0):
            _compare("length penalty", fn(length, alpha), length_penalty(length, alpha), f"length={length}, alpha={alpha}")
    print("Correct: lp = ((5 + length) / 6) ** alpha; alpha = 0 turns it off.")


def check_masked_mean(fn) -> None:
    """Exercise (chapter 9): `fn(x, token_ids)` averages `x` `[batch, len, d]` over the non-padding positions."""
    from transformer_lib.classifier import masked_mean

    rng = np.random.default_rng(0)
    for ids in ([[5, 6, 7, 0, 0]], [[4, 0, 0, 0], [9, 8, 7, 6]]):
        ids = np.array(ids)
        x = rng.normal(size=(*ids.shape, 3)).astype("float32")
        _compare("masked mean", fn(x, ids), masked_mean(x, ids), f"token_ids={ids.tolist()}")
    print("Correct: padding neither counts in the sum nor in the number of positions.")


def check_train_step(fn) -> None:
    """Exercise (chapter 7): `fn(model, optimizer, batch)` makes one update and returns the batch's loss.

    It runs beside the library's `train_step` on two copies of one tiny model (no dropout, so both
    see the same forward pass), on a batch with padding, and compares the loss and every weight after
    the update.
    """
    import keras

    from transformer_lib.model import Transformer
    from transformer_lib.objective import make_optimizer
    from transformer_lib.training import train_step

    rng = np.random.default_rng(0)
    source = np.array([[1, 5, 6, 7, 2], [1, 8, 2, 0, 0]], np.int32)
    target = np.array([[1, 9, 10, 11, 2], [1, 12, 2, 0, 0]], np.int32)
    batch = ((source, target[:, :-1]), target[:, 1:])
    models = []
    for _ in range(2):
        model = Transformer(num_layers=1, d_model=16, num_heads=2, dff=32, input_vocab_size=20,
                            target_vocab_size=20, dropout_rate=0.0)
        model(batch[0])
        models.append(model)
    weights = [rng.normal(scale=0.1, size=w.shape).astype("float32") for w in models[0].get_weights()]
    for model in models:
        model.set_weights(weights)
    yours_optimizer, reference_optimizer = make_optimizer(16, 10), make_optimizer(16, 10)
    yours = fn(models[0], yours_optimizer, batch)
    expected, _ = train_step(models[1], reference_optimizer, batch)
    if yours is None:
        raise AssertionError("train step: your function returned None; return the loss of the batch.")
    _compare("train step: the loss", float(keras.ops.convert_to_numpy(yours)), float(expected),
             "a batch of 2 pairs, 3 of the 10 target positions padding (use tl.masked_loss: padding must not count)")
    if all(np.array_equal(w, v) for w, v in zip(weights, models[0].get_weights())):
        raise AssertionError("train step: no weight changed. Take the gradients with the tape and call "
                             "optimizer.apply_gradients(zip(gradients, model.trainable_variables)).")
    for variable, mine, theirs in zip(models[0].weights, models[0].get_weights(), models[1].get_weights()):
        _compare(f"train step: weight {variable.path} after the update", mine, theirs,
                 "one update of Adam with the §5.3 schedule")
    print("Correct: the same loss and the same weights after the update as tl.train_step.")


def _partition(labels) -> set[frozenset[int]]:
    """The groups of positions that share a label, whatever the labels are."""
    groups: dict = {}
    for position, label in enumerate(labels):
        groups.setdefault(label, set()).add(position)
    return {frozenset(group) for group in groups.values()}


def check_group_pairs(fn) -> None:
    """Exercise (chapter 1): `fn(pairs)` gives each pair a group label; pairs that share a source or a
    target sentence (whitespace normalised), directly or through a chain of pairs, share a label."""
    from transformer_lib.splits import connected_groups

    cases = [
        [("Я не знаю.", "I don't know."), ("Не знаю.", "I don't know."), ("Привет!", "Hi!")],
        [("a", "x"), ("b", "y"), ("b", "x"), ("c", "z"), ("d", "z"), ("e", "w")],  # a-x-b-y chain; c-z-d; e alone
        [("Он  здесь.", "He is here."), ("Он здесь.", "He's here."), ("Она здесь.", "He's here. ")],  # spaces differ
        [("one", "same"), ("two", "other"), ("three", "same"), ("two", "more")],
    ]
    for pairs in cases:
        yours = list(fn(pairs))
        if len(yours) != len(pairs):
            raise AssertionError(f"group pairs: {len(yours)} labels for {len(pairs)} pairs {pairs}; give one label per pair.")
        expected = _partition(connected_groups(pairs))
        if _partition(yours) != expected:
            wrong = sorted(sorted(group) for group in _partition(yours) - expected)[0]
            raise AssertionError(
                f"group pairs: for {pairs} you put the pairs at positions {wrong} in one group; the groups "
                f"should be {sorted(sorted(group) for group in expected)} (pairs sharing a normalised source or "
                "target sentence, and every pair linked to them through such a chain)."
            )
    print("Correct: those groups can go to different splits without one sentence in two of them.")


def check_positional_encoding(fn) -> None:
    """Exercise (chapter 2): `fn(length, depth)` in NumPy is §3.5's encoding, sines at even dimensions."""
    for length, depth in [(4, 2), (10, 8), (50, 64)]:
        _compare("positional encoding", fn(length, depth), positional_encoding(length, depth),
                 f"length={length}, depth={depth}")
    print("Correct: PE(pos, 2i) = sin(pos / 10000^(2i/d)), PE(pos, 2i+1) = cos(pos / 10000^(2i/d)).")


def check_look_ahead_mask(fn) -> None:
    """Exercise (chapter 3): `fn(size)` blocks (1.0) every key after the query's own position."""
    for size in (1, 2, 5):
        _compare("look-ahead mask", fn(size), look_ahead_mask(size), f"size={size}")
    print("Correct: position i sees positions 0..i, and 1.0 marks the ones it may not see.")


def check_causal_self_attention(fn) -> None:
    """Exercise (chapter 4): `fn(x, w_q, w_k, w_v)` is self-attention over `x` `[length, d]` with the
    look-ahead mask: Eq. 1 on Q = x W_q, K = x W_k, V = x W_v."""
    from transformer_lib.attention import scaled_dot_product_attention

    rng = np.random.default_rng(1)
    for length, d, d_k in [(3, 4, 2), (6, 8, 8)]:
        x = rng.normal(size=(length, d)).astype("float32")
        w = [rng.normal(size=(d, d_k)).astype("float32") for _ in range(3)]
        expected, _ = scaled_dot_product_attention(x @ w[0], x @ w[1], x @ w[2], look_ahead_mask(length))
        _compare("causal self-attention", fn(x, *w), expected, f"x of shape {x.shape}, d_k={d_k}")
    print("Correct: every position attends to itself and the positions before it, never after.")


def check_merge_heads(fn) -> None:
    """Exercise (chapter 5): `fn(x)` turns `[batch, heads, length, d_k]` back into `[batch, length, heads * d_k]`."""
    from transformer_lib.attention import MultiHeadAttention

    rng = np.random.default_rng(0)
    for batch, heads, length, d_k in [(1, 2, 3, 4), (2, 3, 5, 2)]:
        x = rng.normal(size=(batch, heads, length, d_k)).astype("float32")
        expected = MultiHeadAttention(heads * d_k, heads).merge_heads(x)
        _compare("merge heads", fn(x), expected, f"x of shape {x.shape}")
    print("Correct: the heads' outputs side by side again, head 1's d_k values first, for every position.")


def check_feed_forward(fn) -> None:
    """Exercise (chapter 6): `fn(x, w1, b1, w2, b2)` is Eq. 2, FFN(x) = max(0, x W1 + b1) W2 + b2."""
    from transformer_lib.feed_forward import FeedForward

    rng = np.random.default_rng(0)
    for shape, dff in [((1, 2, 4), 8), ((2, 3, 6), 5)]:
        x = rng.normal(size=shape).astype("float32")
        layer = FeedForward(shape[-1], dff)
        layer.build(x.shape)
        weights = [rng.normal(size=w.shape).astype("float32") for w in layer.get_weights()]
        layer.set_weights(weights)  # inner kernel, inner bias, outer kernel, outer bias
        _compare("feed-forward", fn(x, *weights), layer(x), f"x of shape {shape}, dff={dff}")
    print("Correct: the same two linear maps with a ReLU between them, at every position separately.")


def check_beam_step(fn) -> None:
    """Exercise (chapter 8): `fn(scores, log_probs, k)` keeps the `k` best of the k x V extensions.

    `scores` `[k]` are the beams' total log-probabilities, `log_probs` `[k, V]` the next token's.
    Returns `(beams, tokens, new_scores)`, each `[k]`, best first: which beam each survivor extends,
    with which token, and its new total.
    """
    import tensorflow as tf

    rng = np.random.default_rng(0)
    for k, vocab in [(2, 5), (3, 7), (4, 4)]:
        scores = -rng.uniform(0, 3, size=k).astype("float32")
        log_probs = np.log(rng.dirichlet(np.ones(vocab), size=k)).astype("float32")
        totals = (scores[:, None] + log_probs).reshape(-1)  # beam b, token t -> candidate b * V + t
        best = tf.math.top_k(totals, k)  # the library's beam_loop picks its survivors with top_k too
        expected = (best.indices.numpy() // vocab, best.indices.numpy() % vocab, best.values.numpy())
        beams, tokens, new_scores = (np.asarray(part) for part in fn(scores, log_probs, k))
        context = f"k={k}, V={vocab}, scores={np.round(scores, 3).tolist()}"
        _compare("beam step: the new scores", new_scores, expected[2], context)
        _compare("beam step: the beams extended", beams, expected[0], context)
        _compare("beam step: the tokens", tokens, expected[1], context)
    print("Correct: the k best continuations of all beams together, not the best of each beam.")


def check_bert_masking(fn) -> None:
    """Exercise (chapter 9): `fn(token_ids, mask_id, rng)` is BERT's masking in NumPy: 15% of the real
    tokens (ids above END) chosen; of those 80% become `mask_id`, 10% a random real token, 10% stay.
    Returns `(inputs, labels)`: labels hold the original id where chosen, 0 elsewhere.

    Masking is random, so the check compares shares on a large batch with those of the library's
    `bert.mask_tokens` on the same batch, and checks the rules that hold for every token.
    """
    from transformer_lib.bert import mask_tokens
    from transformer_lib.tokenizer import END_ID

    rng = np.random.default_rng(0)
    mask_id, rows, length = 500, 2000, 60  # ~9,000 chosen: shares within 0.03 at 5 sigma
    lengths = rng.integers(3, length + 1, size=rows)
    ids = np.zeros((rows, length), np.int32)
    for row, n in enumerate(lengths):
        ids[row, :n] = [1, *rng.integers(END_ID + 1, mask_id, size=n - 2), 2]
    inputs, labels = (np.asarray(part) for part in fn(ids.copy(), mask_id, np.random.default_rng(1)))
    if inputs.shape != ids.shape or labels.shape != ids.shape:
        raise AssertionError(f"BERT masking: inputs {inputs.shape} and labels {labels.shape}, expected both {ids.shape}.")
    chosen = labels != 0
    special = ids <= END_ID
    rules = [
        (chosen & special, "a padding, START or END position was chosen; only real tokens (ids above END) may be"),
        (chosen & (labels != ids), "a label is not the original id of its position"),
        (~chosen & (inputs != ids), "a position that was not chosen changed; only chosen ones may"),
        (chosen & ((inputs <= END_ID) | (inputs > mask_id)), "a chosen position holds neither the mask id nor a real token"),
    ]
    for broken, message in rules:
        if broken.any():
            row, position = (int(i) for i in np.argwhere(broken)[0])
            raise AssertionError(f"BERT masking: {message} (row {row}, position {position}: id {ids[row, position]}, "
                                 f"input {inputs[row, position]}, label {labels[row, position]}).")
    real = ~special
    expected_inputs, expected_labels = (np.asarray(part) for part in mask_tokens(ids, mask_id, seed=[3, 4]))
    reference = expected_labels != 0

    def shares(inputs, chosen):
        return {"chosen / real tokens": chosen[real].mean(), "mask id / chosen": (inputs[chosen] == mask_id).mean(),
                "unchanged / chosen": (inputs[chosen] == ids[chosen]).mean()}

    yours_shares, library_shares = shares(inputs, chosen), shares(expected_inputs, reference)
    for name, yours in yours_shares.items():
        expected = library_shares[name]
        if abs(yours - expected) > 0.03:
            raise AssertionError(f"BERT masking: {name} is {yours:.3f}; the library gives {expected:.3f} "
                                 "(15% chosen; of those 80% masked, 10% random, 10% kept).")
    print("Correct: 15% of the real tokens chosen, 80/10/10 masked, random, kept; labels only where chosen.")
