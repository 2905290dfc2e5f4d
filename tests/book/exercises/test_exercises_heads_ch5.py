"""Chapter 5's per-head exercise: h heads with their own W_i^Q, W_i^K, W_i^V (Dense(d_k) each), as the
paper writes §3.2.2. Its check accepts a right answer, lets a stub pass with one line, names the
typical mistakes and refuses a layer that wraps the library's."""

import keras
import pytest
from answers import MultiHeadOfTheLibrary
from keras import ops

import transformer_lib as tl
from transformer_lib import exercises
from transformer_lib.exercises import check_per_head_attention


class PerHead(keras.layers.Layer):
    """The right answer, with knobs for the slips a student makes."""

    shared = reverse = skip_wo = reverse_mask = False

    def __init__(self, d_model, num_heads, **kwargs):
        super().__init__(**kwargs)
        self.d_model, self.num_heads, self.d_k = d_model, num_heads, d_model // num_heads
        self.wq = [keras.layers.Dense(self.d_k) for _ in range(num_heads)]
        self.wk = [keras.layers.Dense(self.d_k) for _ in range(num_heads)]
        self.wv = [keras.layers.Dense(self.d_k) for _ in range(num_heads)]
        self.wo = keras.layers.Dense(d_model)

    def call(self, query, key, value, attention_mask=None):
        mask = None if attention_mask is None else attention_mask[:, 0]  # one head: [B, T or 1, S]
        if mask is not None and self.reverse_mask:
            mask = 1.0 - mask
        outputs, weights = [], []
        for i in range(self.num_heads):
            j = 0 if self.shared else i
            if self.shared:  # build every head's layers, but project with head 1's
                self.wq[i](query), self.wk[i](key), self.wv[i](value)
            out, w = tl.scaled_dot_product_attention(self.wq[j](query), self.wk[j](key), self.wv[j](value), mask)
            outputs.append(out)
            weights.append(w)
        if self.reverse:
            outputs = outputs[::-1]
        merged = ops.concatenate(outputs, axis=-1)
        if self.skip_wo:
            self.wo(merged)  # built, but not used
            return merged, ops.stack(weights, axis=1)
        return self.wo(merged), ops.stack(weights, axis=1)


class Shared(PerHead):
    shared = True


class Reversed(PerHead):
    reverse = True


class WithoutWo(PerHead):
    skip_wo = True


class ReversedMask(PerHead):
    reverse_mask = True


class OneDense(PerHead):
    """Right numbers, but one Dense(d_model) for all the queries, sliced: not what the exercise asks."""

    def __init__(self, d_model, num_heads, **kwargs):
        super().__init__(d_model, num_heads, **kwargs)
        self.wq = keras.layers.Dense(d_model)

    def call(self, query, key, value, attention_mask=None):
        mask = None if attention_mask is None else attention_mask[:, 0]
        q, d_k = self.wq(query), self.d_k
        heads = [tl.scaled_dot_product_attention(q[..., i * d_k:(i + 1) * d_k], self.wk[i](key), self.wv[i](value),
                                                 mask) for i in range(self.num_heads)]
        merged = ops.concatenate([out for out, _ in heads], axis=-1)
        return self.wo(merged), ops.stack([w for _, w in heads], axis=1)


class Stub(keras.layers.Layer):
    def __init__(self, d_model, num_heads, **kwargs):
        super().__init__(**kwargs)
        raise NotImplementedError("a list comprehension gives one Dense per head")


def test_h_separate_heads_with_the_column_blocks_of_one_projection_are_accepted(capsys):
    check_per_head_attention(PerHead)
    assert capsys.readouterr().out.startswith("Correct: ")
    assert exercises.passed(check_per_head_attention)


def test_an_unwritten_layer_gets_one_line(capsys):
    assert check_per_head_attention(Stub) is None
    out = capsys.readouterr().out
    assert out.startswith("Not written yet: ") and out.count("\n") == 1, out
    assert not exercises.passed(check_per_head_attention)


@pytest.mark.parametrize("answer, message", [
    (Shared, "every head uses head 1's projections"),
    (Reversed, "concatenated in the reverse order"),
    (WithoutWo, "W\\^O is missing"),
    (ReversedMask, "polarity is reversed"),
    (OneDense, r"layer.wq should be a list of num_heads=2 keras.layers.Dense\(d_k\)"),
], ids=lambda x: getattr(x, "__name__", None))
def test_a_typical_mistake_is_refused_and_named(answer, message):
    with pytest.raises(AssertionError, match=message):
        check_per_head_attention(answer)
    assert not exercises.passed(check_per_head_attention)


def test_a_layer_wrapping_the_librarys_is_refused():
    with pytest.raises(AssertionError, match="the library's own implementation"):
        check_per_head_attention(MultiHeadOfTheLibrary)
