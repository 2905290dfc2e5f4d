"""Chapter 3's attention checks recognise two more common mistakes by name: dividing the scores by
d_k instead of sqrt(d_k), and a softmax over the queries instead of the keys. The rest of these
checks (right answers, stubs, the other mistakes, the library shortcut) is tested in test_exercises.py,
with the same right answers (answers.py)."""

import pytest
from answers import SelfAttention, attention, causal

from transformer_lib.exercises import check_attention, check_causal_self_attention, check_self_attention_layer

DIVIDED_BY_D_K = "divided by d_k; Eq. 1 divides them by its square root"
OVER_THE_QUERIES = "the softmax runs over the queries"


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
