"""The checks of the chapter "Since 2017" are teachers too: each accepts an answer written from the paper,
lets a stub pass with one line, names the typical slips, and refuses the library's own implementation.
The right answers here are written independently (complex numbers for the rotation; a loop over the query
heads; the running maximum written out)."""

import numpy as np
import pytest
from answers import LIBRARY, fresh_results, not_written, rotary  # noqa: F401 (the fixture: each test in a fresh kernel)

import transformer_lib as tl
from transformer_lib import exercises
from transformer_lib.book.exercises import _core
from transformer_lib.exercises import check_grouped_query_attention, check_online_softmax_update, check_rotary_embedding


def gqa(x, w_q, w_k, w_v, w_o, h, g, order="repeat", scale=True):
    d_k = w_q.shape[1] // h
    q, k, v = x @ w_q, x @ w_k, x @ w_v
    out = np.zeros((len(x), h * d_k))
    for i in range(h):
        j = i // (h // g) if order == "repeat" else i % g
        s = q[:, i * d_k:(i + 1) * d_k] @ k[:, j * d_k:(j + 1) * d_k].T / (np.sqrt(d_k) if scale else 1.0)
        p = np.exp(s - s.max(axis=1, keepdims=True))
        out[:, i * d_k:(i + 1) * d_k] = (p / p.sum(axis=1, keepdims=True)) @ v[:, j * d_k:(j + 1) * d_k]
    return out @ w_o


def update(state, scores, values, fix_sum=True, fix_values=True):
    """The running maximum, sum and weighted values, written out; `fix_*=False` forgets one rescaling."""
    m, l, acc = state
    biggest = np.maximum(m, scores.max(axis=1, keepdims=True))
    p = np.exp(scores - biggest)
    correction = np.exp(m - biggest)  # what was kept was scaled by exp(-m); it must be by exp(-biggest)
    return (biggest, (l * correction if fix_sum else l) + p.sum(axis=1, keepdims=True),
            (acc * correction if fix_values else acc) + p @ values)


RIGHT = {check_rotary_embedding: rotary, check_grouped_query_attention: gqa, check_online_softmax_update: update}
WRONG = [
    (check_rotary_embedding, lambda x, offset: rotary(x, offset, pairs="halves"), "the pairs are"),
    (check_rotary_embedding, lambda x, offset: rotary(x, offset, turn=-1), "turns the wrong way"),
    (check_rotary_embedding, lambda x, offset: rotary(x, offset, step=1), "10000\\^\\(-i/d\\)"),
    (check_rotary_embedding, lambda x, offset: rotary(x, 0), "the offset is ignored"),
    (check_rotary_embedding, lambda x, offset: np.asarray(x) + tl.positional_encoding(offset + len(x), x.shape[1])
     .numpy()[offset:], "the answer differs"),  # chapter 2's sinusoids added: no rotation at all
    (check_grouped_query_attention, lambda *a: gqa(*a, order="tile"), "np.repeat, not np.tile"),
    (check_grouped_query_attention, lambda *a: gqa(*a, scale=False), "the answer differs"),  # no sqrt(d_k)
    (check_online_softmax_update, lambda *a: update(*a, fix_values=False), "acc is not rescaled|running sum of the values"),
    (check_online_softmax_update, lambda *a: update(*a, fix_sum=False), "running sum l is not rescaled"),
]


def test_every_check_of_the_chapter_is_tested_with_a_right_answer_and_two_mistakes():
    assert set(RIGHT) == {check_rotary_embedding, check_grouped_query_attention, check_online_softmax_update}
    assert all(sum(check is c for c, _, _ in WRONG) >= 2 for check in RIGHT)


@pytest.mark.parametrize("check", list(RIGHT), ids=lambda c: c.__name__)
def test_a_right_answer_is_accepted_and_a_stub_gets_one_line(check, capsys):
    check(RIGHT[check])
    assert capsys.readouterr().out.startswith("Correct: ") and exercises.passed(check)
    _core.RESULTS.clear()
    check(not_written)
    out = capsys.readouterr().out
    assert out.startswith("Not written yet: ") and out.count("\n") == 1 and not exercises.passed(check)


@pytest.mark.parametrize("check, answer, message", [pytest.param(*row, id=f"{row[0].__name__}-{i}")
                                                     for i, row in enumerate(WRONG)])
def test_a_typical_mistake_is_refused_and_named(check, answer, message):
    with pytest.raises(AssertionError, match=message):
        check(answer)
    assert not exercises.passed(check)


def test_the_librarys_own_layers_are_refused():
    with pytest.raises(AssertionError, match=LIBRARY):
        check_rotary_embedding(lambda x, offset: np.asarray(tl.RotaryEmbedding()(x.astype("float32"), offset=offset)))
    with pytest.raises(AssertionError, match=LIBRARY):
        check_online_softmax_update(lambda state, s, v: tl.layers.blockwise_attention.online_softmax_update(
            tuple(a.astype("float32") for a in state), s.astype("float32"), v.astype("float32")))

    def library_gqa(x, wq, wk, wv, wo, h, g):
        layer = tl.GroupedQueryAttention(x.shape[1], h, g)
        layer(x[None], x[None], x[None])
        layer.set_weights([wq, np.zeros(wq.shape[1]), wk, np.zeros(wk.shape[1]), wv, np.zeros(wv.shape[1]), wo,
                           np.zeros(wo.shape[1])])
        return np.asarray(layer(x[None], x[None], x[None])[0])[0]

    with pytest.raises(AssertionError, match=LIBRARY):
        check_grouped_query_attention(library_gqa)
