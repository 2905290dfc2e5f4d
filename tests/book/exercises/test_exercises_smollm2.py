"""The SmolLM2 exercise of the chapter "Since 2017": a right answer (written here independently: complex numbers for
the rotation) passes, a stub gets one line, and a wrong rotation makes the real model answer nonsense, which the
check prints with the reason."""

import numpy as np
import pytest
from answers import fresh_results, rotary  # noqa: F401 (the fixture: each test in a fresh kernel)

import transformer_lib as tl
from transformer_lib.exercises import check_smollm2_with_your_blocks


@pytest.fixture(scope="module")
def smollm2():
    return tl.load_gguf()


def rms_norm(x, gain, epsilon):
    return x * gain / np.sqrt(np.mean(x * x, axis=-1, keepdims=True) + epsilon)


def test_a_right_answer_runs_smollm2_as_the_library_does(smollm2, capsys):
    weights = [w.numpy().copy() for w in smollm2[0].weights[:3]]
    check_smollm2_with_your_blocks(rotary, rms_norm, *smollm2)
    out = capsys.readouterr().out
    assert "Correct: " in out and "equal to the library's at 100.0%" in out, out
    assert tl.exercises.passed(check_smollm2_with_your_blocks)
    model = smollm2[0]
    assert isinstance(model.decoder.stack_layers[0].rotary, tl.RotaryEmbedding)  # the library's blocks are back
    assert isinstance(model.decoder.final_norm, tl.RMSNorm)
    for before, after in zip(weights, model.weights[:3]):
        np.testing.assert_array_equal(before, after.numpy())


def test_a_stub_gets_one_line(capsys):
    from transformer_lib.book.exercises.modern import _smollm2

    def stub(*args):
        raise NotImplementedError

    check_smollm2_with_your_blocks(stub, rms_norm)  # as the chapter's check cell calls it: the check loads SmolLM2
    out = capsys.readouterr().out
    assert out.startswith("Not written yet: ") and out.count("\n") == 1, out
    assert isinstance(_smollm2()[0].decoder.stack_layers[0].rotary, tl.RotaryEmbedding)  # its own blocks are back


@pytest.mark.parametrize("wrong, reason", [
    (lambda x, offset, base=10_000.0: rotary(x, offset, base, pairs="halves"), "the pairs are \\(i, i \\+ d/2\\)"),
    (lambda x, offset, base=10_000.0: rotary(x, offset), "the base is ignored"),
])
def test_a_wrong_rotation_makes_the_model_talk_nonsense_and_the_check_says_why(smollm2, wrong, reason):
    with pytest.raises(AssertionError, match=reason) as error:
        check_smollm2_with_your_blocks(wrong, rms_norm, *smollm2)
    message = str(error.value)
    # the library's SmolLM2 answers "The capital of France is Paris."; with a wrong rotation it does not
    assert "Asked 'What is the capital of France?'" in message and "The capital of France is Paris." not in message
    assert not tl.exercises.passed(check_smollm2_with_your_blocks)
    assert isinstance(smollm2[0].decoder.stack_layers[0].rotary, tl.RotaryEmbedding)
