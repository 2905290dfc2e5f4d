"""The recipe as one object (`Recipe`): checked when made, changed by name, saved with a run and
compared before a resume; and the command line that builds it."""

import json

import pytest

import transformer_lib as tl
from transformer_lib.__main__ import build_parser, main, recipe_from
from transformer_lib.training.recipe import Recipe


def test_changes_by_name_are_checked_and_listed():
    recipe = Recipe().replace(warmup_steps=2000, peak_rate=0.002)
    assert recipe.changes() == {"warmup_steps": 2000, "peak_rate": 0.002}
    assert recipe.changes(recipe) == {} and Recipe().changes() == {}
    with pytest.raises(TypeError, match="Recipe has no setting warmup; its settings: corpus, preset"):
        Recipe().replace(warmup=1000)
    with pytest.raises(dataclasses_error()):
        recipe.epochs = 3  # frozen: a change makes a new recipe


def dataclasses_error():
    import dataclasses

    return dataclasses.FrozenInstanceError


@pytest.mark.parametrize("changes, message", [
    (dict(epochs=0), "epochs must be a positive integer"),
    (dict(batch_tokens=None), "exactly one of batch_tokens"),
    (dict(batch_size=64, batch_tokens=512), "exactly one of batch_tokens"),
    (dict(warmup_steps=None), "warmup_steps updates or for warmup_ratio"),
    (dict(warmup_ratio=1.5), r"warmup_ratio must be a share of the run in \(0, 1\)"),
    (dict(warmup_ratio=0.0), r"warmup_ratio must be a share of the run in \(0, 1\)"),
    (dict(peak_rate=0.0), "peak_rate must be a learning rate in"),
    (dict(bucket_growth=0.5), "bucket_growth must be >= 1"),
    (dict(label_smoothing=1.0), "label_smoothing must be a number in"),
    (dict(max_length=2), "max_length=2 leaves no room"),
    (dict(preset="huge"), "huge"),
    (dict(attention_dropout=1.0), "attention_dropout must be a number in"),
    (dict(sampling_alpha=0.0), r"sampling_alpha must be a probability in \(0, 1\)"),
    (dict(sampling_alpha=1.0), r"sampling_alpha must be a probability in \(0, 1\)"),
])
def test_a_bad_setting_is_refused_when_the_recipe_is_made(changes, message):
    with pytest.raises(ValueError, match=message):
        Recipe().replace(**changes)


def test_a_share_of_the_run_replaces_the_fixed_warm_up_and_sentences_replace_tokens():
    recipe = Recipe().replace(warmup_ratio=0.1, batch_size=64)
    assert (recipe.warmup_steps, recipe.batch_tokens) == (None, None)
    assert recipe.warmup(20_000) == 2000 and Recipe(warmup_steps=700).warmup(20_000) == 700
    assert recipe.batching()["batch_size"] == 64


def test_the_optimizer_follows_the_recipes_warm_up_and_peak():
    schedule = Recipe().replace(warmup_steps=100, peak_rate=0.002).optimizer(128, 1000)._learning_rate
    rates = [float(schedule(n - 1)) for n in (50, 100, 400)]
    assert rates == pytest.approx([0.001, 0.002, 0.001], rel=1e-5)  # half-way up, the peak, 1/sqrt(4) of it
    paper = Recipe().replace(warmup_steps=100).optimizer(128, 1000)._learning_rate
    assert float(paper(99)) == pytest.approx((128 * 100) ** -0.5, rel=1e-6)


def test_the_command_line_builds_the_default_recipe_with_the_options_given():
    parser = build_parser()
    assert recipe_from(parser.parse_args(["train", "--out", "x"])) == Recipe()
    args = parser.parse_args(["train", "--out", "x", "--warmup-ratio", "0.05", "--no-shuffle-batches", "--dropout-rate",
                              "0.3", "--batch-size", "32", "--peak-rate", "0.003", "--bucket-growth", "1.2"])
    assert recipe_from(args).changes() == {
        "warmup_steps": None, "warmup_ratio": 0.05, "dropout_rate": 0.3, "batch_size": 32, "batch_tokens": None,
        "peak_rate": 0.003, "bucket_growth": 1.2, **({"shuffle_batches": False} if Recipe().shuffle_batches else {})}


def test_subword_sampling_is_a_setting_of_the_recipe_and_of_the_command_line():
    from transformer_lib.training.recipe import training_data

    args = build_parser().parse_args(["train", "--out", "x", "--sampling-alpha", "0.1", "--attention-dropout", "0.1",
                                      "--activation-dropout", "0.2"])
    assert recipe_from(args).changes() == {"sampling_alpha": 0.1, "attention_dropout": 0.1, "activation_dropout": 0.2}
    off = recipe_from(build_parser().parse_args(["train", "--out", "x", "--sampling-alpha", "0"]))
    assert off.sampling_alpha is None  # 0 turns sampling off, whatever the default recipe does
    model = recipe_from(args).replace(preset="tiny").model((tl.SubwordTokenizer.train(["a b"] * 9, 300),) * 2)
    assert (model.hyperparameters["attention_dropout"], model.hyperparameters["activation_dropout"]) == (0.1, 0.2)
    recipe = Recipe(corpus="synthetic", vocab_size=400, max_length=40)
    val_pairs = tl.load_parallel_corpus("synthetic", "validation")

    def tokens(recipe):
        _, train_ds, val_ds = training_data(recipe, val_pairs, verbose=False)
        count = lambda dataset: sum(int((s > 0).sum() + (t > 0).sum()) for (s, _), t in dataset.as_numpy_iterator())
        return count(train_ds), count(val_ds)

    (fixed_train, fixed_val), (sampled_train, sampled_val) = tokens(recipe), tokens(recipe.replace(sampling_alpha=0.3))
    assert sampled_train > 1.1 * fixed_train  # the training sentences are sampled ...
    assert sampled_val == fixed_val  # ... the validation sentences never


def test_the_command_line_chooses_either_layer_norm_placement():
    parser = build_parser()
    post = recipe_from(parser.parse_args(["train", "--out", "x", "--no-norm-first"]))
    pre = recipe_from(parser.parse_args(["train", "--out", "x", "--norm-first"]))
    assert (post.norm_first, pre.norm_first) == (False, True)
    assert post.model is not None and post.changes(pre) == {"norm_first": False}


def test_batch_tokens_and_batch_size_together_are_refused(capsys, tmp_path):
    with pytest.raises(SystemExit):
        main(["train", "--batch-tokens", "512", "--batch-size", "32", "--out", str(tmp_path / "x")])
    assert "give --batch-tokens or --batch-size, not both" in capsys.readouterr().err
    assert not (tmp_path / "x").exists()


def test_a_run_records_its_whole_recipe_and_refuses_to_resume_with_another(tmp_path):
    recipe = Recipe(corpus="synthetic/small", preset="tiny", epochs=1, vocab_size=400, batch_tokens=4096, max_length=24,
                    warmup_steps=50)
    out = tmp_path / "run"
    summary = tl.train_translator(out, recipe, verbose=0)
    saved = json.loads((out / "checkpoints" / "settings.json").read_text())
    assert {name: saved[name] for name in recipe.to_dict() if name in saved} == {
        name: value for name, value in recipe.to_dict().items() if name not in Recipe.NOT_SHAPING}
    assert summary["epochs"] == 1 and summary["shuffle_batches"] == recipe.shuffle_batches
    with pytest.raises(ValueError, match="bucket_growth=1.1 before, 1.5 now"):
        tl.train_translator(out, recipe, epochs=2, bucket_growth=1.5, verbose=0)
    saved.pop("shuffle_batches")  # a run from before shuffled batches: it did not shuffle them
    (out / "checkpoints" / "settings.json").write_text(json.dumps(saved))
    with pytest.raises(ValueError, match="shuffle_batches=None before"):
        tl.train_translator(out, recipe, epochs=2, verbose=0)
    saved = {**saved, "shuffle_batches": recipe.shuffle_batches}
    del saved["tie_output"]  # a run from before tie_output: its output layer was its own
    (out / "checkpoints" / "settings.json").write_text(json.dumps(saved))
    with pytest.raises(ValueError, match="tie_output=False before, True now"):
        tl.train_translator(out, recipe, epochs=2, tie_output=True, verbose=0)
    assert tl.train_translator(out, recipe, epochs=2, verbose=0)["history"]["epoch"] == [1, 2]  # resumed


def test_training_for_a_log_file_prints_one_plain_line_per_epoch(capsys):
    pairs = tl.load_parallel_corpus("synthetic", "validation")
    tokenizers = tl.train_tokenizers(pairs, 400)
    batches = tl.make_batches(pairs, tokenizers, batch_tokens=2048, max_length=24, verbose=False)
    model = tl.Transformer.from_preset("tiny", tokenizers[0].vocab_size, tokenizers[1].vocab_size, max_length=24)
    tl.train(model, batches, batches, epochs=2, optimizer=tl.make_optimizer(64, 10), verbose=2)
    lines = capsys.readouterr().out.splitlines()
    assert len(lines) == 2 and lines[0].startswith("Epoch 1/2: ") and lines[1].startswith("Epoch 2/2: ")
    assert all("\r" not in line and "\x1b" not in line and "val_loss" in line for line in lines)


def test_the_command_line_trains_with_one_line_per_epoch_when_its_output_is_not_a_terminal(monkeypatch, tmp_path):
    seen = {}
    monkeypatch.setattr("transformer_lib.training.recipe.train_translator",
                        lambda out, recipe, **options: seen.update(options, recipe=recipe))
    main(["train", "--out", str(tmp_path / "run"), "--epochs", "3"])  # pytest captures stdout: not a terminal
    assert seen["verbose"] == 2 and seen["recipe"] == Recipe(epochs=3)
    monkeypatch.setattr("sys.stdout.isatty", lambda: True)
    main(["train", "--out", str(tmp_path / "run")])
    assert seen["verbose"] == 1


def test_chapter_7_trains_the_default_recipe_unchanged():
    # Issue #42: one recipe everywhere. Chapter 7's stored full run prints its recipe setting by setting.
    import re
    from pathlib import Path

    import nbformat

    notebook = nbformat.read(Path(__file__).resolve().parents[2] / "chapters" / "07_training.ipynb", as_version=4)
    printed = next("".join(output.get("text", "") for output in cell.outputs) for cell in notebook.cells
                   if cell.cell_type == "code" and "changed from tl.Recipe()" in "".join(
                       output.get("text", "") for output in cell.outputs))
    assert "changed from tl.Recipe(): nothing" in printed
    settings = dict(re.findall(r"^  (\w+) +(\S+)$", printed, re.M))
    assert settings == {name: str(value) for name, value in Recipe().to_dict().items()}
    # and what the issue asked of it: the everyday data, dropout 0.2, the last five epochs averaged
    assert (settings["corpus"], settings["dropout_rate"], settings["average_last"]) == ("tatoeba+smartool/rus-eng", "0.2", "5")
