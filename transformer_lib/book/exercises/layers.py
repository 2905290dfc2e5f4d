"""Checks for chapter 6: the feed-forward network, a parameter count, and the encoder and decoder
layers written in Keras."""

from __future__ import annotations

import numpy as np

from transformer_lib.book.exercises._core import call_answer, compare, exercise


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
    from transformer_lib.feed_forward import FeedForward

    rng = np.random.default_rng(0)
    for shape, dff in [((2, 3, 6), 5), ((1, 2, 4), 8)]:
        x = rng.normal(size=shape)
        w1, b1, w2, b2 = rng.normal(size=(shape[-1], dff)), rng.normal(size=dff), rng.normal(size=(dff, shape[-1])), rng.normal(size=shape[-1])
        expected = np.maximum(0, x @ w1 + b1) @ w2 + b2
        hints = [((x @ w1 + b1) @ w2 + b2, "the ReLU is missing between the two linear maps."),
                 (np.maximum(0, (x @ w1 + b1) @ w2 + b2), "the ReLU belongs after the first map, not the second.")]
        yours = call_answer("feed-forward", fn, [FeedForward], x.copy(), w1, b1, w2, b2)
        compare("feed-forward", yours, expected, f"x of shape {shape}, dff={dff}", hints)


NORMS = {"encoder": {"norm1": "attention_add_norm", "norm2": "feed_forward_add_norm"},
         "decoder": {"norm1": "self_attention_add_norm", "norm2": "cross_attention_add_norm",
                     "norm3": "feed_forward_add_norm"}}
SUBLAYERS = {"encoder": ["self_attention", "feed_forward"],
             "decoder": ["self_attention", "cross_attention", "feed_forward"]}


def _library_layer(kind: str, dropout_rate: float = 0.0, norm_first: bool = False):
    from transformer_lib.decoder import DecoderLayer
    from transformer_lib.encoder import EncoderLayer

    return (EncoderLayer if kind == "encoder" else DecoderLayer)(8, 2, 16, dropout_rate, norm_first=norm_first)


def _copy_layer_weights(kind: str, layer, library) -> None:
    """The library layer's weights into the student's, sub-layer by sub-layer (names of the exercise)."""
    for name in SUBLAYERS[kind]:
        getattr(layer, name).set_weights(getattr(library, name).get_weights())
    for name, library_name in NORMS[kind].items():
        getattr(layer, name).set_weights(getattr(library, library_name).norm.get_weights())


def _randomise(layer, rng) -> None:
    layer.set_weights([rng.normal(scale=0.5, size=w.shape).astype("float32") + (1.0 if "gamma" in v.path else 0.0)
                       for v, w in zip(layer.weights, layer.get_weights())])


def _inputs(rng):
    from transformer_lib.masks import decoder_mask, padding_mask

    source = np.array([[4, 5, 6, 7, 8], [4, 5, 6, 0, 0]])
    target = np.array([[3, 9, 2, 0], [3, 9, 9, 2]])
    return (rng.normal(size=(2, 4, 8)).astype("float32"), rng.normal(size=(2, 5, 8)).astype("float32"),
            np.asarray(decoder_mask(target)), np.asarray(padding_mask(source)))


def _run(kind, layer, args, masks, training=False):
    x = args[1] if kind == "encoder" else args[0]
    if kind == "encoder":
        return layer(x, padding_mask=masks[1], training=training)
    out = layer(x, args[1], self_attention_mask=masks[0], cross_attention_mask=masks[1], training=training)
    if not isinstance(out, (tuple, list)) or len(out) != 2:
        raise AssertionError("DecoderLayer: call should return a pair (x, cross-attention weights), as tl.DecoderLayer does.")
    return out[0]


def _forbidden():
    from transformer_lib.add_norm import AddNorm
    from transformer_lib.decoder import DecoderLayer
    from transformer_lib.encoder import BaseTransformerLayer, EncoderLayer

    return [EncoderLayer, DecoderLayer, BaseTransformerLayer, AddNorm]


def _layer_hints(kind, library, args, masks) -> list:
    pre_ln = _library_layer(kind, norm_first=True)
    _run(kind, pre_ln, args, masks)
    pre_ln.set_weights(library.get_weights())
    hints = [(_run(kind, pre_ln, args, masks), "you normalised the sub-layer's input (pre-LN); the paper's "
              "layer is post-LN: x = LayerNorm(x + Dropout(Sublayer(x))).")]
    hints += [(_run(kind, library, args, (masks[0], None)), "the source padding is not masked: pass the padding mask "
               "to the attention over the source.")]
    if kind == "decoder":
        hints += [(_run(kind, library, args, (None, masks[1])), "the self-attention mask is missing: a target position must "
                   "not see later ones (self_attention_mask).")]
    return hints


def _check_layer(kind: str, cls) -> None:
    import tensorflow as tf

    title = "EncoderLayer" if kind == "encoder" else "DecoderLayer"
    rng = np.random.default_rng(6)
    x, memory, self_mask, cross_mask = _inputs(rng)
    args, masks = (x, memory), (self_mask, cross_mask)
    layer, library = cls(8, 2, 16, 0.0), _library_layer(kind)
    call_answer(title, _run, _forbidden(), kind, layer, args, masks)
    _run(kind, library, args, masks)
    _randomise(library, rng)
    _copy_layer_weights(kind, layer, library)
    contexts = [("a batch of 2 with padding, its masks", masks), ("no masks", (None, None))]
    for context, these_masks in contexts:
        yours = call_answer(title, _run, _forbidden(), kind, layer, args, these_masks)
        hints = _layer_hints(kind, library, args, these_masks) if these_masks[1] is not None else ()
        compare(title, yours, _run(kind, library, args, these_masks), context, hints)
    probe = rng.normal(size=(2, 5 if kind == "encoder" else 4, 8))
    gradients = []
    for which in (layer, library):
        with tf.GradientTape() as tape:
            loss = tf.reduce_sum(_run(kind, which, args, masks) * probe)
        gradients.append(tape.gradient(loss, [getattr(which, name).wq.kernel if "attention" in name else
                                              getattr(which, name).inner.kernel for name in SUBLAYERS[kind]]))
    for name, yours, theirs in zip(SUBLAYERS[kind], *gradients):
        compare(f"{title}: the gradient of {name}", yours, theirs, contexts[0][0], rtol=1e-3)
    _check_dropout(title, kind, cls, args, masks)


def _check_dropout(title, kind, cls, args, masks) -> None:
    layer = cls(8, 2, 16, 0.5)
    quiet = _run(kind, layer, args, masks, training=False)
    noisy = _run(kind, layer, args, masks, training=True)
    if np.allclose(quiet, noisy):
        raise AssertionError(f"{title}: with dropout_rate=0.5 and training=True the output equals the one with "
                             "training=False: apply dropout to each sub-layer's output (passing training=training) "
                             "before the residual sum.")


@exercise("EncoderLayer", "your encoder layer matches tl.EncoderLayer with the same weights, masks, gradients "
          "and dropout included.")
def check_encoder_layer(cls) -> None:
    """Exercise (chapter 6): `cls(d_model, num_heads, dff, dropout_rate)` with sub-layers `self_attention`,
    `feed_forward`, `norm1`, `norm2`, `dropout1`, `dropout2`; `call(x, padding_mask=None, training=None)`."""
    _check_layer("encoder", cls)


@exercise("DecoderLayer", "your decoder layer matches tl.DecoderLayer with the same weights: all three masks "
          "in place, gradients and dropout included.")
def check_decoder_layer(cls) -> None:
    """Exercise (chapter 6): `cls(d_model, num_heads, dff, dropout_rate)` with sub-layers `self_attention`,
    `cross_attention`, `feed_forward`, `norm1..3`, `dropout1..3`; `call(x, encoder_output,
    self_attention_mask=None, cross_attention_mask=None, training=None)` returns `(x, cross_weights)`."""
    _check_layer("decoder", cls)
