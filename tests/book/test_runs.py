"""Chapter 7's translator in later chapters (transformer_lib.book.runs): never retrained silently."""

import json

import pytest

import transformer_lib as tl
import transformer_lib.export.saved_model
import transformer_lib.training.recipe
from transformer_lib.book import runs
from transformer_lib.export.saved_model import FILES


@pytest.fixture
def calls(monkeypatch):
    made = []
    monkeypatch.setattr(transformer_lib.export.saved_model, "load_translator", lambda folder: made.append(("load", folder)) or "T")

    def train(folder, recipe):
        made.append(("train", folder))
        folder.mkdir(parents=True)
        (folder / "training.json").write_text("{}")

    monkeypatch.setattr(transformer_lib.training.recipe, "train_translator", train)
    return made


def _run(folder):
    (folder / "checkpoints").mkdir(parents=True)
    (folder / "checkpoints" / "ckpt-1.index").write_text("x")
    (folder / "training.json").write_text(json.dumps({"epochs": 60}))
    for name in FILES:
        (folder / name).write_text("saved")
    return folder


def test_without_a_run_it_stops_and_offers_both_choices_with_their_cost(tmp_path, calls):
    with pytest.raises(RuntimeError) as stopped:
        runs.chapter_7_translator(tmp_path / "runs" / "small", tl.Recipe())
    message = str(stopped.value)
    assert "TRAIN_IF_MISSING = True" in message and "SAVED_TRANSLATOR" in message
    assert f"{runs.MEASURED_CPU['with_validation']:.0f} min" in message and "an estimate" in message
    assert calls == []


def test_it_trains_only_when_asked_and_says_so_first(tmp_path, calls, capsys):
    translator, folder = runs.chapter_7_translator(tmp_path / "small", tl.Recipe(), train=True)
    assert "training one now" in capsys.readouterr().out
    assert calls == [("train", tmp_path / "small"), ("load", tmp_path / "small")] and translator == "T"


def test_a_run_in_place_or_a_saved_copy_is_loaded_not_retrained(tmp_path, calls):
    saved = _run(tmp_path / "drive" / "small")
    assert runs.chapter_7_translator(tmp_path / "small", tl.Recipe(), saved=saved, train=True)[1] == saved
    here = _run(tmp_path / "small")
    assert runs.chapter_7_translator(here, tl.Recipe(), saved=saved)[1] == here
    assert [kind for kind, _ in calls] == ["load", "load"]


def test_a_wrong_saved_folder_is_named(tmp_path, calls):
    with pytest.raises(RuntimeError, match="is not a folder"):
        runs.chapter_7_translator(tmp_path / "small", tl.Recipe(), saved=tmp_path / "nowhere")
    (tmp_path / "empty").mkdir()
    (tmp_path / "empty" / "training.json").write_text("{}")  # a record without the translator's files
    with pytest.raises(RuntimeError, match="holds no saved translator"):
        runs.chapter_7_translator(tmp_path / "small", tl.Recipe(), saved=tmp_path / "empty", train=True)
    assert calls == []


def test_a_copy_keeps_the_translator_not_the_resume_state(tmp_path):
    copy = runs.save_copy(_run(tmp_path / "runs" / "small"), tmp_path / "drive")
    assert sorted(path.name for path in copy.iterdir()) == sorted(["training.json", *FILES])
    with pytest.raises(RuntimeError, match="no finished run"):
        runs.save_copy(tmp_path / "runs" / "other", tmp_path / "drive")


def test_the_cost_scales_with_the_epochs_and_names_what_is_measured():
    epochs = runs.MEASURED_CPU["epochs"]
    full, half = runs.training_cost(tl.Recipe(epochs=epochs)), runs.training_cost(tl.Recipe(epochs=epochs * 2))
    assert "measured" in full and "Colab T4" in full and "estimate" in full
    assert f"{runs.MEASURED_CPU['with_validation']:.0f} min" in full
    assert f"{runs.MEASURED_CPU['with_validation'] * 2:.0f} min" in half
    assert "no timing" in runs.training_cost(tl.Recipe(preset="tiny"))
