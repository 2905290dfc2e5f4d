import subprocess
import sys

import pytest

from transformer_lib.__main__ import build_parser, main


def test_help_lists_every_command_and_option():
    parser = build_parser()
    text = parser.format_help()
    assert all(command in text for command in ("train", "translate", "evaluate"))
    commands = parser._subparsers._group_actions[0].choices
    expected = {
        "train": ["--corpus", "--preset", "--out", "--epochs", "--vocab-size", "--joint-vocab", "--batch-tokens",
                  "--batch-size", "--bucket-growth", "--shuffle-batches", "--peak-rate", "--max-length", "--warmup-steps", "--warmup-ratio", "--dropout-rate", "--label-smoothing",
                  "--average-last", "--norm-first", "--mixed-precision", "--xla", "--seed"],
        "translate": ["--model", "--beam-size", "--alpha", "sentences"],
        "evaluate": ["--model", "--corpus", "--split", "--beam-size", "--alpha", "--limit"],
    }
    for command, options in expected.items():
        help_text = commands[command].format_help()
        for option in options:
            assert option in help_text, (command, option)


def test_help_runs_as_a_module():
    result = subprocess.run([sys.executable, "-m", "transformer_lib", "--help"], capture_output=True, text=True)
    assert result.returncode == 0 and "usage: python -m transformer_lib" in result.stdout


def test_translate_and_evaluate_a_saved_translator(trained_tiny, capsys):
    translations = main(["translate", "--model", str(trained_tiny), "--beam-size", "1", "сто", "две тысячи"])
    assert capsys.readouterr().out.splitlines() == translations and len(translations) == 2
    result = main(["evaluate", "--model", str(trained_tiny), "--corpus", "synthetic", "--limit", "30"])
    printed = capsys.readouterr().out
    assert f"BLEU {result['bleu']:.2f}" in printed and "nrefs:1" in printed and result["sentences"] == 30


def test_train_writes_a_translator_that_translate_can_load(tmp_path, capsys):
    out = tmp_path / "run"
    summary = main(["train", "--corpus", "synthetic/small", "--preset", "tiny", "--epochs", "1", "--vocab-size", "400",
                    "--batch-tokens", "4096", "--warmup-steps", "50", "--out", str(out)])
    assert len(summary["history"]["loss"]) == 1 and (out / "model.keras").is_file()
    assert not summary["joint_vocab"] and summary["dropout_rate"] == 0.2 and summary["warmup"] == 50
    assert summary["weights"]["chosen"] in summary["weights"]["scores"] and len(summary["history"]["val_score"]) == 1
    assert (out / "checkpoints" / "checkpoint").is_file() and (out / "training.json").is_file()
    capsys.readouterr()
    assert len(main(["translate", "--model", str(out), "сто"])) == 1


@pytest.mark.parametrize("option, value", [("--dropout-rate", "1.5"), ("--label-smoothing", "-0.1"), ("--warmup-ratio", "1"),
                                           ("--warmup-ratio", "0")])
def test_rates_outside_0_1_are_rejected_by_the_parser(capsys, option, value):
    with pytest.raises(SystemExit):
        main(["train", option, value, "--out", "x"])
    assert f"argument {option}: expected a" in capsys.readouterr().err


def test_warm_up_given_twice_is_refused(capsys, tmp_path):
    with pytest.raises(SystemExit):
        main(["train", "--warmup-steps", "100", "--warmup-ratio", "0.1", "--out", str(tmp_path / "x")])
    assert "give --warmup-steps or --warmup-ratio, not both" in capsys.readouterr().err
    assert not (tmp_path / "x").exists()  # refused before any work


def test_unknown_preset_is_rejected_by_the_parser(capsys):
    with pytest.raises(SystemExit):
        main(["train", "--preset", "huge", "--out", "x"])
    assert "invalid choice: 'huge'" in capsys.readouterr().err
