"""Checks for chapter 6: a parameter count, the feed-forward network, Add & Norm and the decoder
layer written in Keras."""

from __future__ import annotations

import numpy as np

from transformer_lib.book.exercises._core import call_answer, close, compare, exercise


@exercise("the encoder layer's parameter count",
          "attention 4·d(d+1), feed-forward 2·d·dff + dff + d, two layer norms 2·2d.")
def check_encoder_layer_parameters(fn) -> None:
    """Exercise (chapter 6): `fn(d_model, dff)` counts the parameters of one encoder layer."""
    import keras

    for d_model, dff in [(512, 2048), (64, 256), (12, 7)]:
        expected = 4 * d_model * (d_model + 1) + 2 * d_model * dff + dff + d_model + 4 * d_model
        yours = call_answer("encoder layer parameters", fn, [keras.layers.Layer.count_params], d_model, dff)
        if yours != expected:
            hint = {expected - 4 * d_model: " You left out the two layer norms (a scale and an offset each), or "
                                            "the four attention projections' biases: both come to 4·d_model.",
                    expected - 4 * d_model - dff - d_model: " You left out the biases."}.get(yours, "")
            raise AssertionError(
                f"encoder layer parameters: for d_model={d_model}, dff={dff} you count {yours:,}, the layer has "
                f"{expected:,}.{hint} Count weights and biases of the four attention projections, both "
                "feed-forward layers, and the scale and offset of both layer norms."
            )


@exercise("the feed-forward network", "the same two linear maps with a ReLU between them, at every position separately.")
def check_feed_forward(fn) -> None:
    """Exercise (chapter 6): `fn(x, w1, b1, w2, b2)` is Eq. 2, FFN(x) = max(0, x W1 + b1) W2 + b2."""
    from transformer_lib.layers.feed_forward import FeedForward

    rng = np.random.default_rng(0)
    for shape, dff in [((2, 3, 6), 5), ((1, 2, 4), 8)]:
        x = rng.normal(size=shape)
        w1, b1, w2, b2 = rng.normal(size=(shape[-1], dff)), rng.normal(size=dff), rng.normal(size=(dff, shape[-1])), rng.normal(size=shape[-1])
        expected = np.maximum(0, x @ w1 + b1) @ w2 + b2
        hints = [((x @ w1 + b1) @ w2 + b2, "the ReLU is missing between the two linear maps."),
                 (np.maximum(0, (x @ w1 + b1) @ w2 + b2), "the ReLU belongs after the first map, not the second.")]
        yours = call_answer("feed-forward", fn, [FeedForward], x.copy(), w1, b1, w2, b2)
        compare("feed-forward", yours, expected, f"x of shape {shape}, dff={dff}", hints)


NORM_PLACEMENTS = {False: "post-LN", True: "pre-LN"}


def _layer_norm(x, gain, bias, epsilon=1e-6):
    """LayerNorm over the last axis, in float64: (x - mean) / sqrt(variance + epsilon) * gain + bias."""
    x = np.asarray(x, np.float64)
    return (x - x.mean(-1, keepdims=True)) / np.sqrt(x.var(-1, keepdims=True) + epsilon) * gain + bias


@exercise("Add & Norm", "post-LN LayerNorm(x + Dropout(Sublayer(x))) and pre-LN x + Dropout(Sublayer(LayerNorm(x))), "
          "as tl.AddNorm computes them with the same weights, dropout on the sub-layer's output only.")
def check_add_norm(cls) -> None:
    """Exercise (chapter 6): `cls(dropout_rate, norm_first)` holds `norm` (a LayerNormalization) and
    `dropout`; `call(x, sublayer, training=None)` wraps the function `sublayer` in Add & Norm. The
    check calls it as `layer(x, sublayer=f, training=...)` (Keras takes only tensors by position)."""
    from keras import ops

    from transformer_lib.layers.add_norm import AddNorm

    rng = np.random.default_rng(5)
    x = rng.normal(size=(2, 3, 6)).astype("float32")
    w, b = rng.normal(size=(6, 6)).astype("float32"), rng.normal(size=6).astype("float32")
    gain, bias = 1.0 + rng.normal(scale=0.5, size=6), rng.normal(scale=0.5, size=6)

    def sublayer(h):  # a stand-in for attention or the feed-forward network
        return ops.tanh(ops.matmul(h, w) + b)

    def s(h):
        return np.tanh(np.asarray(h, np.float64) @ w + b)

    def norm(h):
        return _layer_norm(h, gain, bias)

    post, pre = norm(x + s(x)), x + s(norm(x))
    for norm_first in (False, True):
        name, context = f"AddNorm (norm_first={norm_first})", f"x of shape {x.shape}, {NORM_PLACEMENTS[norm_first]}"
        layer = cls(0.0, norm_first)
        call_answer(name, layer, [AddNorm], x, sublayer=sublayer, training=False)  # builds the LayerNorm
        layer.norm.set_weights([gain.astype("float32"), bias.astype("float32")])
        other = "pre-LN" if not norm_first else "post-LN"
        hints = [(pre if not norm_first else post, f"you computed {other}; norm_first={norm_first} is "
                  f"{NORM_PLACEMENTS[norm_first]}: " + ("LayerNorm(x + Dropout(Sublayer(x)))." if not norm_first
                                                         else "x + Dropout(Sublayer(LayerNorm(x))).")),
                 (norm(x + s(norm(x))), "you normalised both the sub-layer's input and the sum: "
                  + ("post-LN normalises the sum only." if not norm_first else
                     "pre-LN leaves the sum x + Sublayer(LayerNorm(x)) unnormalised (the stack ends with one more LayerNorm).")),
                 (norm(s(x)) if not norm_first else s(norm(x)), "the residual x is not added: the sub-layer's output "
                  "is a correction added to x."),
                 (x + norm(s(x)), "the LayerNorm is applied to the sub-layer's output alone; it belongs "
                  + ("around the sum x + Sublayer(x)." if not norm_first else "on the sub-layer's input.")),
                 (s(x), "the answer is the sub-layer's output alone: add x and normalise.")]
        yours = call_answer(name, layer, [AddNorm], x, sublayer=sublayer, training=False)
        compare(name, yours, post if not norm_first else pre, context, hints)
    _check_add_norm_dropout(cls, AddNorm, rng)


def _check_add_norm_dropout(cls, forbidden, rng) -> None:
    """Dropout 0.5 in training, on the sub-layer's output only: with pre-LN and a sub-layer that
    returns ones, output - x holds 0 (dropped) or 2 (kept, scaled by 1 / (1 - 0.5))."""
    from keras import ops

    x = rng.normal(size=(4, 25, 8)).astype("float32")
    layer = cls(0.5, True)
    quiet = np.asarray(call_answer("AddNorm", layer, [forbidden], x, sublayer=ops.ones_like, training=False))
    noisy = np.asarray(call_answer("AddNorm", layer, [forbidden], x, sublayer=ops.ones_like, training=True))
    if np.allclose(quiet, noisy):
        raise AssertionError("AddNorm: with dropout_rate=0.5 and training=True the output equals the one with "
                             "training=False: apply the dropout to the sub-layer's output, passing training=training.")
    if not np.allclose(quiet - x, 1.0, atol=1e-5):
        raise AssertionError("AddNorm: with training=False dropout must do nothing, but pre-LN x + Sublayer(LayerNorm(x)) "
                             "with a sub-layer that returns ones did not give x + 1.")
    kept = np.round(noisy - x, 4)
    if not np.isin(kept, (0.0, 2.0)).all():
        raise AssertionError("AddNorm: dropout reached more than the sub-layer's output (pre-LN, a sub-layer that "
                             "returns ones, dropout 0.5: output - x should be 0 or 2 everywhere): drop the "
                             "sub-layer's output only, before the sum, and leave the residual x alone (§5.4).")


SUBLAYERS = ("self_attention", "cross_attention", "feed_forward")
ADD_NORMS = ("self_attention_add_norm", "cross_attention_add_norm", "feed_forward_add_norm")
TITLE = "DecoderLayer"


def _library_decoder_layer(dropout_rate: float = 0.0, norm_first: bool = False):
    from transformer_lib.layers.decoder import DecoderLayer

    return DecoderLayer(8, 2, 16, dropout_rate, norm_first=norm_first)


def _copy_decoder_weights(layer, library) -> None:
    """The library layer's weights into the student's, part by part (the names of the exercise)."""
    for name in SUBLAYERS:
        getattr(layer, name).set_weights(getattr(library, name).get_weights())
    for name in ADD_NORMS:
        getattr(layer, name).norm.set_weights(getattr(library, name).norm.get_weights())


def _randomise(layer, rng) -> None:
    layer.set_weights([rng.normal(scale=0.5, size=w.shape).astype("float32") + (1.0 if "gamma" in v.path else 0.0)
                       for v, w in zip(layer.weights, layer.get_weights())])


def _inputs(rng):
    """Decoder input `[2, 4, 8]`, encoder output `[2, 5, 8]` and their masks: the second target has
    no padding but a look-ahead mask, the second source two padding positions."""
    from transformer_lib.layers.masks import decoder_mask, padding_mask

    source = np.array([[4, 5, 6, 7, 8], [4, 5, 6, 0, 0]])
    target = np.array([[3, 9, 2, 0], [3, 9, 9, 2]])
    return (rng.normal(size=(2, 4, 8)).astype("float32"), rng.normal(size=(2, 5, 8)).astype("float32"),
            np.asarray(decoder_mask(target)), np.asarray(padding_mask(source)))


def _run(layer, x, memory, masks, training=False):
    """The layer's `(x, cross_weights)`, refusing any other kind of result."""
    out = layer(x, memory, self_attention_mask=masks[0], cross_attention_mask=masks[1], training=training)
    if not isinstance(out, (tuple, list)) or len(out) != 2:
        raise AssertionError(f"{TITLE}: call should return a pair (x, cross-attention weights), as tl.DecoderLayer "
                             "does; the cross-attention returns its weights beside its output.")
    return out


def _by_hand(library, x, memory, masks, *, keys_from="memory", read_x=()):
    """The library's three wrapped sub-layers called in order with a typical slip: the cross-attention's
    keys and values taken from the decoder (`keys_from="decoder"`), or the sub-layers numbered in
    `read_x` (0, 1, 2) reading the `x` outside their function instead of its argument `h` (in pre-LN
    that loses the LayerNorm of the sub-layer's input)."""
    self_mask, cross_mask = masks

    def self_attention(h):
        q = x if 0 in read_x else h
        return library.self_attention(q, q, q, mask=self_mask)[0]

    def cross_attention(h):
        q = x1 if 1 in read_x else h
        kv = memory if keys_from == "memory" else q
        return library.cross_attention(q, kv, kv, mask=cross_mask if keys_from == "memory" else None)

    x1 = library.self_attention_add_norm(x, self_attention)
    x2, weights = library.cross_attention_add_norm(x1, cross_attention)
    x3 = library.feed_forward_add_norm(x2, lambda h: library.feed_forward(x2 if 2 in read_x else h))
    return np.asarray(x3), np.asarray(weights)


def _hints(library, x, memory, masks) -> list:
    hints = []
    if masks[0] is not None:
        hints.append((_by_hand(library, x, memory, (None, masks[1]))[0], "the self-attention mask is missing: a "
                      "target position must not see later ones (pass self_attention_mask to the self-attention)."))
    if masks[1] is not None:
        hints.append((_by_hand(library, x, memory, (masks[0], None))[0], "the source padding is not masked: pass "
                      "cross_attention_mask to the cross-attention."))
    hints.append((_by_hand(library, x, memory, (masks[0], None), keys_from="decoder")[0], "the cross-attention's keys "
                  "and values came from the decoder: its queries come from the decoder, its keys and values from "
                  "encoder_output."))
    for read_x in ((0, 1, 2), (0,), (1,), (2,)):
        which = "each sub-layer function" if len(read_x) == 3 else f"the {SUBLAYERS[read_x[0]].replace('_', '-')}'s function"
        hints.append((_by_hand(library, x, memory, masks, read_x=read_x)[0], f"{which} must read its argument (h, "
                      "which is LayerNorm(x) in pre-LN), not the x outside it."))
    return hints


def _compare_layer(cls, norm_first, rng, forbidden, x, memory, masks) -> None:
    placement = NORM_PLACEMENTS[norm_first]
    layer, library = cls(8, 2, 16, 0.0, norm_first=norm_first), _library_decoder_layer(norm_first=norm_first)
    call_answer(TITLE, _run, forbidden, layer, x, memory, (None, None))  # builds the layer
    _run(library, x, memory, masks)
    _randomise(library, rng)
    _copy_decoder_weights(layer, library)
    contexts = [(f"a batch of 2 with padding and its masks, {placement}", masks), (f"no masks, {placement}", (None, None))]
    for context, these_masks in contexts:
        try:
            yours, weights = call_answer(TITLE, _run, forbidden, layer, x, memory, these_masks)
        except (AssertionError, NotImplementedError):
            raise
        except Exception as error:  # most often: keys from the decoder meet the source mask's length
            without = _by_hand(library, x, memory, (None, None), keys_from="decoder")[0]
            try:
                keys_from_decoder = close(_run(layer, x, memory, (None, None))[0], without)
            except Exception:
                keys_from_decoder = False
            if keys_from_decoder:
                raise AssertionError(f"{TITLE}: for {context}: the cross-attention's keys and values came from the "
                                     "decoder: they are encoder_output, the queries come from the decoder.") from error
            raise
        expected, expected_weights = (np.asarray(out) for out in _run(library, x, memory, these_masks))
        compare(TITLE, yours, expected, context, _hints(library, x, memory, these_masks))
        if np.shape(weights) != expected_weights.shape:
            what = (" (these are the self-attention's weights, [batch, heads, tgt_len, tgt_len])"
                    if np.shape(weights) == (2, 2, 4, 4) else "")
            raise AssertionError(f"{TITLE}: for {context}: the second output has shape {np.shape(weights)}, expected "
                                 f"the cross-attention weights {expected_weights.shape}, [batch, heads, tgt_len, "
                                 f"src_len]{what}.")
        compare(f"{TITLE}: the cross-attention weights", weights, expected_weights, context)
    _compare_gradients(layer, library, x, memory, masks, rng, contexts[0][0])


def _compare_gradients(layer, library, x, memory, masks, rng, context) -> None:
    import tensorflow as tf

    probe = rng.normal(size=(2, 4, 8))
    gradients = []
    for which in (layer, library):
        with tf.GradientTape() as tape:
            loss = tf.reduce_sum(_run(which, x, memory, masks)[0] * probe)
        gradients.append(tape.gradient(loss, [getattr(which, name).wq.kernel if "attention" in name else
                                              getattr(which, name).inner.kernel for name in SUBLAYERS]))
    for name, yours, theirs in zip(SUBLAYERS, *gradients):
        if yours is None:
            raise AssertionError(f"{TITLE}: for {context}: the output does not depend on {name}: call it in its "
                                 "Add & Norm.")
        compare(f"{TITLE}: the gradient of {name}", yours, theirs, context, rtol=1e-3)


def _check_decoder_dropout(cls, forbidden, x, memory, masks) -> None:
    layer = cls(8, 2, 16, 0.5)
    quiet = call_answer(TITLE, _run, forbidden, layer, x, memory, masks, training=False)[0]
    noisy = call_answer(TITLE, _run, forbidden, layer, x, memory, masks, training=True)[0]
    if np.allclose(quiet, noisy):
        raise AssertionError(f"{TITLE}: with dropout_rate=0.5 and training=True the output equals the one with "
                             "training=False: pass training=training to each Add & Norm.")


@exercise("DecoderLayer", "your decoder layer matches tl.DecoderLayer with the same weights, post-LN and pre-LN: "
          "masked self-attention, cross-attention over the encoder output, feed-forward, gradients and dropout included.")
def check_decoder_layer(cls) -> None:
    """Exercise (chapter 6): `cls(d_model, num_heads, dff, dropout_rate, norm_first=False)` with sub-layers
    `self_attention`, `cross_attention`, `feed_forward` and their `tl.AddNorm` wrappers
    `self_attention_add_norm`, `cross_attention_add_norm`, `feed_forward_add_norm` (given); `call(x,
    encoder_output, self_attention_mask=None, cross_attention_mask=None, training=None)` returns
    `(x, cross_weights)`."""
    from transformer_lib.layers.decoder import DecoderLayer
    from transformer_lib.layers.encoder import EncoderLayer
    from transformer_lib.layers.stack import BaseTransformerLayer

    forbidden = [DecoderLayer, EncoderLayer, BaseTransformerLayer]
    rng = np.random.default_rng(6)
    x, memory, self_mask, cross_mask = _inputs(rng)
    for norm_first in (False, True):
        _compare_layer(cls, norm_first, rng, forbidden, x, memory, (self_mask, cross_mask))
    _check_decoder_dropout(cls, forbidden, x, memory, (self_mask, cross_mask))
