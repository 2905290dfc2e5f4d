"""The checks of chapters 7 and 8 that ask for a variation of printed code: gradient accumulation
(chapter 7 prints `tl.train_step`) and greedy decoding with a minimum length (chapter 8 prints
`greedy_loop`). Each accepts its right answer, lets a stub pass with one line and names the slips."""

import numpy as np
import pytest
import tensorflow as tf
from answers import (
    LIBRARY,
    Greedy,
    GreedyGoingOnAfterEnd,
    GreedyIgnoringMinLength,
    GreedyOfTheLibrary,
    GreedyOneLonger,
    GreedyOneShorter,
    GreedyStub,
    GreedyWithoutCache,
    fresh_results,  # noqa: F401 (the fixture: each test in a fresh kernel)
)

import transformer_lib as tl
from transformer_lib.exercises import check_accumulated_step, check_greedy_translator, passed
from transformer_lib.data.tokenizer import END_ID, PAD_ID

# ---------------------------------------------------------------------------------------------
# Chapter 7: one update from several batches


def accumulate(model, optimizer, batches, count="all", updates=1, dense=True):
    """The right answer (count="all", updates=1) and its slips: each batch's own mean ("each") halved
    ("mean of means") or not ("sum of means"), one update per batch (updates=2)."""
    all_tokens = sum(float(np.sum(target_out != PAD_ID)) for _, target_out in batches)
    loss, summed = 0.0, None
    for (source, target_in), target_out in batches:
        with tf.GradientTape() as tape:
            logits = model((source, target_in), training=True)
            part = tl.masked_loss(target_out, logits, tokens=all_tokens if count == "all" else None)
            if count == "mean of means":
                part = part / len(batches)
        gradients = tape.gradient(part, model.trainable_variables)
        gradients = [tf.convert_to_tensor(g) for g in gradients] if dense else gradients
        if updates == 2:
            optimizer.apply_gradients(zip(gradients, model.trainable_variables))
        summed = gradients if summed is None else [a + b for a, b in zip(summed, gradients)]
        loss += part
    if updates == 1:
        optimizer.apply_gradients(zip(summed, model.trainable_variables))
    return loss


def one_tape_for_all(model, optimizer, batches):
    """Also right: both forward passes under one tape (more memory, the same update)."""
    tokens = sum(float(np.sum(target_out != PAD_ID)) for _, target_out in batches)
    with tf.GradientTape() as tape:
        loss = sum(tl.masked_loss(out, model(inputs, training=True), tokens=tokens) for inputs, out in batches)
    optimizer.apply_gradients(zip(tape.gradient(loss, model.trainable_variables), model.trainable_variables))
    return loss


@pytest.mark.parametrize("answer", [accumulate, one_tape_for_all], ids=["tape per batch", "one tape"])
def test_gradient_accumulation_accepts_a_right_answer(answer, capsys):
    check_accumulated_step(answer)
    assert capsys.readouterr().out.startswith("Correct: ")
    assert passed(check_accumulated_step)


def test_gradient_accumulation_not_written_yet_gets_one_line(capsys):
    def stub(model, optimizer, batches):
        raise NotImplementedError("hint")

    check_accumulated_step(stub)
    out = capsys.readouterr().out
    assert out.startswith("Not written yet: ") and out.count("\n") == 1
    assert not passed(check_accumulated_step)


@pytest.mark.parametrize("answer, message", [
    (lambda m, o, b: accumulate(m, o, b, count="mean of means"), "mean of the two batches' mean losses"),
    (lambda m, o, b: accumulate(m, o, b, count="each"), "sum of the batches' mean losses"),
    (lambda m, o, b: accumulate(m, o, b)[None], "the shape is"),
    (lambda m, o, b: accumulate(m, o, b, updates=2), "the weights changed 2 times, once per batch"),
    (lambda m, o, b: accumulate(m, o, b, updates=0), "no weight changed"),
    (lambda m, o, b: None, "returned None"),
], ids=["mean of means", "sum of means", "not a scalar", "two updates", "no update", "None"])
def test_gradient_accumulation_names_the_slip(answer, message):
    with pytest.raises(AssertionError, match=message):
        check_accumulated_step(answer)
    assert not passed(check_accumulated_step)


def test_gradient_accumulation_names_a_wrong_loss_with_the_right_update():
    def mean_of_means_reported(model, optimizer, batches):
        return accumulate(model, optimizer, batches) * 0 + sum(
            tl.masked_loss(out, model(inputs, training=False)) for inputs, out in batches) / 2

    with pytest.raises(AssertionError, match="the loss"):
        check_accumulated_step(mean_of_means_reported)


def test_gradient_accumulation_names_a_weighting_slip_even_with_the_right_loss():
    """The loss returned right, the gradients of the mean of means: the weights say so."""
    def right_loss_wrong_update(model, optimizer, batches):
        tokens = sum(float(np.sum(target_out != PAD_ID)) for _, target_out in batches)
        loss = sum(tl.masked_loss(out, model(inputs, training=False), tokens=tokens) for inputs, out in batches)
        accumulate(model, optimizer, batches, count="mean of means")
        return loss

    with pytest.raises(AssertionError, match="as much weight as the 7"):
        check_accumulated_step(right_loss_wrong_update)


def test_gradient_accumulation_refuses_the_librarys_train_step():
    def joined_by_the_library(model, optimizer, batches):
        return sum(tl.train_step(model, optimizer, batch)[0] for batch in batches)

    with pytest.raises(AssertionError, match=LIBRARY):
        check_accumulated_step(joined_by_the_library)


# ---------------------------------------------------------------------------------------------
# Chapter 8: greedy decoding with the cache and a minimum length (the right answer and its slips: answers.py)


def test_greedy_translator_accepts_a_right_answer(capsys):
    check_greedy_translator(Greedy)
    assert capsys.readouterr().out.startswith("Correct: ")
    assert passed(check_greedy_translator)


def test_greedy_translator_not_written_yet_gets_one_line(capsys):
    check_greedy_translator(GreedyStub)
    out = capsys.readouterr().out
    assert out.startswith("Not written yet: ") and out.count("\n") == 1


@pytest.mark.parametrize("answer, message", [
    (GreedyIgnoringMinLength, "END came among the first"),
    (GreedyOneLonger, "off by one: END may be token number"),
    (GreedyOneShorter, "off by one: END may not be among the first"),
    (GreedyGoingOnAfterEnd, "a row goes on after its END"),
    (GreedyWithoutCache, "runs the whole model on the prefix"),
    (GreedyOfTheLibrary, LIBRARY),
], ids=lambda x: getattr(x, "__name__", "message"))
def test_greedy_translator_names_the_slip(answer, message):
    with pytest.raises(AssertionError, match=message):
        check_greedy_translator(answer)
    assert not passed(check_greedy_translator)


def test_the_minimum_length_changes_the_translations_the_check_uses():
    """Every case of the check where min_length > 0 has a row that plain greedy decoding ends early:
    a check that ignored min_length could not tell."""
    from transformer_lib.book.exercises.decoding import CASES, _random_model, reference_greedy

    for seed, scale, min_length in CASES:
        if min_length:
            model, source = _random_model(seed, scale)
            plain = reference_greedy(model, source, 8)
            assert ((plain[:, :min_length] == END_ID).any(axis=1)).any(), (seed, scale, min_length)
