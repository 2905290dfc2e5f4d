"""Chapter 6's checks of Add & Norm and of the decoder layer: each accepts a right answer written
independently (from §3.1, §5.4 and Xiong et al. 2020), lets an unwritten one pass with one line,
names the typical mistakes, and refuses an answer that calls the library's own layer."""

import keras
import numpy as np
import pytest
from answers import LIBRARY, fresh_results  # noqa: F401 (the fixture: each test in a fresh kernel)

import transformer_lib as tl
from transformer_lib import exercises
from transformer_lib.exercises import check_add_norm, check_decoder_layer

# ---------------------------------------------------------------------------------------------
# Add & Norm: the chapter's class, with call written from the two formulas


class AddNorm(keras.layers.Layer):
    def __init__(self, dropout_rate=0.1, norm_first=False, **kwargs):
        super().__init__(**kwargs)
        self.norm_first = norm_first
        self.norm = keras.layers.LayerNormalization(epsilon=1e-6)
        self.dropout = keras.layers.Dropout(dropout_rate)

    def call(self, x, sublayer, training=None):
        if self.norm_first:  # x + Dropout(Sublayer(LayerNorm(x)))
            return x + self.dropout(sublayer(self.norm(x)), training=training)
        return self.norm(x + self.dropout(sublayer(x), training=training))  # LayerNorm(x + Dropout(Sublayer(x)))


class AddNormStub(AddNorm):
    def call(self, x, sublayer, training=None):
        raise NotImplementedError("hint")


class AddNormAlwaysPostLN(AddNorm):
    def call(self, x, sublayer, training=None):
        return self.norm(x + self.dropout(sublayer(x), training=training))


class AddNormPlacementsSwapped(AddNorm):
    def call(self, x, sublayer, training=None):
        self.norm_first = not self.norm_first
        try:
            return super().call(x, sublayer, training)
        finally:
            self.norm_first = not self.norm_first


class AddNormNormalisingBoth(AddNorm):
    def call(self, x, sublayer, training=None):
        return self.norm(x + self.dropout(sublayer(self.norm(x)), training=training))


class AddNormWithoutResidual(AddNorm):
    def call(self, x, sublayer, training=None):
        if self.norm_first:
            return self.dropout(sublayer(self.norm(x)), training=training)
        return self.norm(self.dropout(sublayer(x), training=training))


class AddNormNormalisingTheOutput(AddNorm):
    def call(self, x, sublayer, training=None):
        return x + self.norm(self.dropout(sublayer(x), training=training))


class AddNormWithoutTraining(AddNorm):
    def call(self, x, sublayer, training=None):
        return super().call(x, sublayer, training=False)


class AddNormDroppingTheSum(AddNorm):
    def call(self, x, sublayer, training=None):
        if self.norm_first:
            return self.dropout(x + sublayer(self.norm(x)), training=training)
        return self.norm(self.dropout(x + sublayer(x), training=training))


class AddNormOfTheLibrary(AddNorm):
    def call(self, x, sublayer, training=None):
        return tl.AddNorm.call(self, x, sublayer, training)


# ---------------------------------------------------------------------------------------------
# The decoder layer: the chapter's class, with call written from Figure 1


class DecoderLayer(keras.layers.Layer):
    def __init__(self, d_model, num_heads, dff, dropout_rate=0.1, norm_first=False, **kwargs):
        super().__init__(**kwargs)
        self.self_attention = tl.MultiHeadAttention(d_model, num_heads)
        self.cross_attention = tl.MultiHeadAttention(d_model, num_heads)
        self.feed_forward = tl.FeedForward(d_model, dff)
        self.self_attention_add_norm, self.cross_attention_add_norm, self.feed_forward_add_norm = (
            tl.AddNorm(dropout_rate, norm_first) for _ in range(3))

    def call(self, x, encoder_output, self_attention_mask=None, cross_attention_mask=None, training=None):
        def masked_self_attention(h):
            return self.self_attention(h, h, h, mask=self_attention_mask)[0]

        def cross_attention(h):
            return self.cross_attention(h, encoder_output, encoder_output, mask=cross_attention_mask)

        x = self.self_attention_add_norm(x, masked_self_attention, training=training)
        x, weights = self.cross_attention_add_norm(x, cross_attention, training=training)
        return self.feed_forward_add_norm(x, self.feed_forward, training=training), weights


class DecoderLayerByHand(DecoderLayer):
    """The same layer written without the wrappers' call: the formulas with their norm and dropout."""

    def call(self, x, encoder_output, self_attention_mask=None, cross_attention_mask=None, training=None):
        def wrap(add_norm, x, sublayer):
            if add_norm.norm_first:
                return x + add_norm.dropout(sublayer(add_norm.norm(x)), training=training)
            return add_norm.norm(x + add_norm.dropout(sublayer(x), training=training))

        x = wrap(self.self_attention_add_norm, x, lambda h: self.self_attention(h, h, h, mask=self_attention_mask)[0])
        weights = []
        x = wrap(self.cross_attention_add_norm, x, lambda h: weights.append(
            self.cross_attention(h, encoder_output, encoder_output, mask=cross_attention_mask)) or weights[-1][0])
        return wrap(self.feed_forward_add_norm, x, self.feed_forward), weights[-1][1]


class DecoderLayerStub(DecoderLayer):
    def call(self, x, encoder_output, self_attention_mask=None, cross_attention_mask=None, training=None):
        raise NotImplementedError("hint")


class DecoderLayerWithoutSelfMask(DecoderLayer):
    def call(self, x, encoder_output, self_attention_mask=None, cross_attention_mask=None, training=None):
        return super().call(x, encoder_output, None, cross_attention_mask, training)


class DecoderLayerIgnoringSourcePadding(DecoderLayer):
    def call(self, x, encoder_output, self_attention_mask=None, cross_attention_mask=None, training=None):
        return super().call(x, encoder_output, self_attention_mask, None, training)


class DecoderLayerWithoutDropout(DecoderLayer):
    def call(self, x, encoder_output, self_attention_mask=None, cross_attention_mask=None, training=None):
        return super().call(x, encoder_output, self_attention_mask, cross_attention_mask, False)


class DecoderLayerKeysFromTheDecoder(DecoderLayer):
    def call(self, x, encoder_output, self_attention_mask=None, cross_attention_mask=None, training=None):
        x = self.self_attention_add_norm(x, lambda h: self.self_attention(h, h, h, mask=self_attention_mask)[0],
                                         training=training)
        x, weights = self.cross_attention_add_norm(x, lambda h: self.cross_attention(h, h, h, mask=cross_attention_mask),
                                                   training=training)
        return self.feed_forward_add_norm(x, self.feed_forward, training=training), weights


class DecoderLayerReadingTheOuterX(DecoderLayer):
    """Right in post-LN, where the sub-layer reads x itself; wrong in pre-LN."""

    def call(self, x, encoder_output, self_attention_mask=None, cross_attention_mask=None, training=None):
        x = self.self_attention_add_norm(x, lambda h: self.self_attention(x, x, x, mask=self_attention_mask)[0],
                                         training=training)
        x, weights = self.cross_attention_add_norm(
            x, lambda h: self.cross_attention(x, encoder_output, encoder_output, mask=cross_attention_mask),
            training=training)
        return self.feed_forward_add_norm(x, lambda h: self.feed_forward(x), training=training), weights


class DecoderLayerReadingTheOuterXOnce(DecoderLayer):
    def call(self, x, encoder_output, self_attention_mask=None, cross_attention_mask=None, training=None):
        x = self.self_attention_add_norm(x, lambda h: self.self_attention(h, h, h, mask=self_attention_mask)[0],
                                         training=training)
        x, weights = self.cross_attention_add_norm(
            x, lambda h: self.cross_attention(x, encoder_output, encoder_output, mask=cross_attention_mask),
            training=training)
        return self.feed_forward_add_norm(x, self.feed_forward, training=training), weights


class DecoderLayerReturningSelfWeights(DecoderLayer):
    def call(self, x, encoder_output, self_attention_mask=None, cross_attention_mask=None, training=None):
        x, weights = self.self_attention_add_norm(x, lambda h: self.self_attention(h, h, h, mask=self_attention_mask),
                                                  training=training)
        x, _ = self.cross_attention_add_norm(
            x, lambda h: self.cross_attention(h, encoder_output, encoder_output, mask=cross_attention_mask),
            training=training)
        return self.feed_forward_add_norm(x, self.feed_forward, training=training), weights


class DecoderLayerReturningOnlyX(DecoderLayer):
    def call(self, *args, **kwargs):
        return super().call(*args, **kwargs)[0]


class DecoderLayerOfTheLibrary(DecoderLayer):
    def call(self, x, encoder_output, self_attention_mask=None, cross_attention_mask=None, training=None):
        return tl.DecoderLayer.call(self, x, encoder_output, self_attention_mask, cross_attention_mask, training)


# ---------------------------------------------------------------------------------------------
# The checks


@pytest.mark.parametrize("check, answer", [(check_add_norm, AddNorm), (check_decoder_layer, DecoderLayer),
                                           (check_decoder_layer, DecoderLayerByHand)],
                         ids=["add_norm", "decoder_layer", "decoder_layer_by_hand"])
def test_a_right_answer_is_accepted_and_remembered(check, answer, capsys):
    assert not exercises.passed(check)
    check(answer)
    assert capsys.readouterr().out.startswith("Correct: ")
    assert exercises.passed(check)


@pytest.mark.parametrize("check, stub", [(check_add_norm, AddNormStub), (check_decoder_layer, DecoderLayerStub)],
                         ids=["add_norm", "decoder_layer"])
def test_an_answer_not_written_yet_gets_one_line_and_lets_the_chapter_go_on(check, stub, capsys):
    assert check(stub) is None
    out = capsys.readouterr().out
    assert out.startswith("Not written yet: ") and out.count("\n") == 1, out
    assert not exercises.passed(check)


WRONG = [
    (check_add_norm, AddNormAlwaysPostLN, r"you computed post-LN; norm_first=True is pre-LN"),
    (check_add_norm, AddNormPlacementsSwapped, r"you computed pre-LN; norm_first=False is post-LN"),
    (check_add_norm, AddNormNormalisingBoth, "normalised both the sub-layer's input and the sum"),
    (check_add_norm, AddNormWithoutResidual, "the residual x is not added"),
    (check_add_norm, AddNormNormalisingTheOutput, "applied to the sub-layer's output alone"),
    (check_add_norm, AddNormWithoutTraining, "passing training=training"),
    (check_add_norm, AddNormDroppingTheSum, "dropout reached more than the sub-layer's output"),
    (check_add_norm, AddNormOfTheLibrary, LIBRARY),
    (check_decoder_layer, DecoderLayerWithoutSelfMask, "self-attention mask is missing"),
    (check_decoder_layer, DecoderLayerIgnoringSourcePadding, "source padding is not masked"),
    (check_decoder_layer, DecoderLayerWithoutDropout, "pass training=training"),
    (check_decoder_layer, DecoderLayerKeysFromTheDecoder, "keys and values came from the decoder"),
    (check_decoder_layer, DecoderLayerReadingTheOuterX, r"pre-LN: each sub-layer function must read its argument"),
    (check_decoder_layer, DecoderLayerReadingTheOuterXOnce, "the cross-attention's function must read its argument"),
    (check_decoder_layer, DecoderLayerReturningSelfWeights, "these are the self-attention's weights"),
    (check_decoder_layer, DecoderLayerReturningOnlyX, "should return a pair"),
    (check_decoder_layer, DecoderLayerOfTheLibrary, LIBRARY),
]


@pytest.mark.parametrize("check, answer, message", [pytest.param(*row, id=row[1].__name__) for row in WRONG])
def test_a_typical_mistake_is_refused_and_named(check, answer, message):
    with pytest.raises(AssertionError, match=message):
        check(answer)
    assert not exercises.passed(check)


def test_the_decoder_check_trusts_its_reference_written_from_the_wrapped_sub_layers():
    """The hints' hand-run of the library's sub-layers, without a slip, is tl.DecoderLayer itself."""
    from transformer_lib.book.exercises import layers

    rng = np.random.default_rng(0)
    x, memory, self_mask, cross_mask = layers._inputs(rng)
    for norm_first in (False, True):
        library = layers._library_decoder_layer(norm_first=norm_first)
        out, weights = library(x, memory, self_mask, cross_mask)
        layers._randomise(library, rng)
        out, weights = library(x, memory, self_mask, cross_mask)
        by_hand, by_hand_weights = layers._by_hand(library, x, memory, (self_mask, cross_mask))
        np.testing.assert_allclose(by_hand, np.asarray(out), atol=1e-5)
        np.testing.assert_allclose(by_hand_weights, np.asarray(weights), atol=1e-6)
