"""Chapter 3's attention checks recognise two more common mistakes by name: dividing the scores by
d_k instead of sqrt(d_k), and a softmax over the queries instead of the keys. The rest of these
checks (right answers, stubs, the other mistakes, the library shortcut) is tested in test_exercises.py."""

import keras
import numpy as np
import pytest
from keras import ops

from transformer_lib.exercises import check_attention, check_causal_self_attention, check_self_attention_layer

DIVIDED_BY_D_K = "divided by d_k; Eq. 1 divides them by its square root"
OVER_THE_QUERIES = "the softmax runs over the queries"


def attention(q, k, v, mask=None, divisor="sqrt", axis=-1):
    scores = q @ k.T / (np.sqrt(k.shape[-1]) if divisor == "sqrt" else k.shape[-1])
    if mask is not None:
        scores = scores + mask * -1e9
    weights = np.exp(scores - scores.max(axis=axis, keepdims=True))
    return weights / weights.sum(axis=axis, keepdims=True) @ v


def causal(x, w_q, w_k, w_v, **mistake):
    return attention(x @ w_q, x @ w_k, x @ w_v, np.triu(np.ones((len(x), len(x))), k=1), **mistake)


class SelfAttention(keras.layers.Layer):
    divisor, axis = "sqrt", -1  # the mistakes below change these

    def __init__(self, d_k, **kwargs):
        super().__init__(**kwargs)
        self.d_k = d_k

    def build(self, x_shape):
        self.w_q, self.w_k, self.w_v = (self.add_weight(shape=(x_shape[-1], self.d_k), name=name)
                                        for name in ("w_q", "w_k", "w_v"))

    def call(self, x, attention_mask=None):
        q, k, v = ops.matmul(x, self.w_q), ops.matmul(x, self.w_k), ops.matmul(x, self.w_v)
        scores = ops.matmul(q, ops.swapaxes(k, -1, -2))
        scores = scores / (self.d_k**0.5 if self.divisor == "sqrt" else float(self.d_k))
        if attention_mask is not None:
            scores = scores + ops.cast(attention_mask, scores.dtype) * -1e9
        return ops.matmul(ops.softmax(scores, axis=self.axis), v)


class SelfAttentionDividedByDk(SelfAttention):
    divisor = "d_k"


class SelfAttentionSoftmaxOverQueries(SelfAttention):
    axis = -2


def test_the_right_answers_still_pass(capsys):
    check_attention(attention)
    check_causal_self_attention(causal)
    check_self_attention_layer(SelfAttention)
    assert capsys.readouterr().out.count("Correct:") == 3


@pytest.mark.parametrize("check, answer, message", [
    (check_attention, lambda q, k, v, mask: attention(q, k, v, mask, divisor="d_k"), DIVIDED_BY_D_K),
    (check_attention, lambda q, k, v, mask: attention(q, k, v, mask, axis=-2), OVER_THE_QUERIES),
    (check_causal_self_attention, lambda *a: causal(*a, divisor="d_k"), DIVIDED_BY_D_K),
    (check_causal_self_attention, lambda *a: causal(*a, axis=-2), OVER_THE_QUERIES),
    (check_self_attention_layer, SelfAttentionDividedByDk, DIVIDED_BY_D_K),
    (check_self_attention_layer, SelfAttentionSoftmaxOverQueries, OVER_THE_QUERIES),
], ids=["numpy d_k", "numpy over queries", "causal d_k", "causal over queries", "layer d_k", "layer over queries"])
def test_the_checks_name_the_two_mistakes(check, answer, message):
    with pytest.raises(AssertionError, match=message):
        check(answer)
