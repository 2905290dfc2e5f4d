"""tl.book.kept: a chapter's trainings run once and are kept, per name and settings."""

import json
from pathlib import Path

import keras
import numpy as np
import pytest

from transformer_lib.book.kept import fingerprint, kept_stem, trained_once


def small_model(seed):
    keras.utils.set_random_seed(seed)
    model = keras.Sequential([keras.layers.Dense(3)])
    model.build((None, 4))
    return model


def test_a_training_runs_once_and_its_result_and_weights_come_back(tmp_path, capsys):
    calls = []

    def train():
        calls.append(1)
        trained.layers[0].kernel.assign(np.full((4, 3), 0.5, "float32"))
        return {"accuracy": np.float32(0.75), "history": {"loss": [np.float64(1.5), 0.25]}}

    trained = small_model(0)
    first = trained_once(tmp_path, "classifier, seed 0", {"width": 4, "seed": 0}, train, trained)
    assert calls == [1] and first["kept"] is False
    assert first["accuracy"] == 0.75 and type(first["accuracy"]) is float  # NumPy numbers become Python ones
    assert first["history"] == {"loss": [1.5, 0.25]}

    fresh = small_model(1)
    again = trained_once(tmp_path, "classifier, seed 0", {"seed": 0, "width": 4}, train, fresh)  # key order is no matter
    assert calls == [1] and again["kept"] is True
    assert {k: v for k, v in again.items() if k != "kept"} == {k: v for k, v in first.items() if k != "kept"}
    np.testing.assert_array_equal(fresh.layers[0].kernel.numpy(), np.full((4, 3), 0.5))
    assert "kept from" in capsys.readouterr().out
    assert again["trained"]["minutes"] >= 0 and again["trained"]["date"] == first["trained"]["date"]


def test_other_settings_train_again_beside_the_kept_files(tmp_path):
    runs = []
    for width in (4, 8, 4):
        runs.append(trained_once(tmp_path, "run", {"width": width}, lambda: {"width": width}, verbose=False))
    assert [run["kept"] for run in runs] == [False, False, True]
    assert runs[2]["width"] == 4
    assert len(list(tmp_path.glob("run-*.json"))) == 2  # one file per setting, none overwritten


def test_a_result_alone_is_kept_without_a_model(tmp_path):
    trained_once(tmp_path, "numbers", {}, lambda: {"test_accuracy": 0.5}, verbose=False)
    (record,) = tmp_path.glob("numbers-*.json")
    saved = json.loads(record.read_text())
    assert saved["result"] == {"test_accuracy": 0.5} and saved["settings"] == {} and saved["name"] == "numbers"
    assert not list(tmp_path.glob("*.h5"))


def test_weights_missing_beside_the_record_mean_training_again(tmp_path):
    model = small_model(0)
    trained_once(tmp_path, "model", {}, lambda: {}, model, verbose=False)
    next(tmp_path.glob("*.weights.h5")).unlink()
    assert trained_once(tmp_path, "model", {}, lambda: {}, small_model(0), verbose=False)["kept"] is False


def test_fingerprints_name_settings_and_only_them():
    assert fingerprint({"a": 1, "b": [1, 2]}) == fingerprint({"b": [1, 2], "a": 1})
    assert fingerprint({"a": 1}) != fingerprint({"a": 2})
    assert len(fingerprint({})) == 8
    with pytest.raises(TypeError, match="JSON data"):
        fingerprint({"a": object()})


def test_refusals_say_what_to_do(tmp_path):
    unbuilt = keras.Sequential([keras.layers.Dense(3)])
    with pytest.raises(ValueError, match="build the model first"):
        trained_once(tmp_path, "m", {}, lambda: {}, unbuilt)
    with pytest.raises(TypeError, match="must return a dict"):
        trained_once(tmp_path, "m", {}, lambda: 0.5)
    with pytest.raises(TypeError, match="cannot keep"):
        trained_once(tmp_path, "m", {}, lambda: {"model": object()})
    assert not list(tmp_path.iterdir())  # nothing half-kept
    trained_once(tmp_path, "m", {}, lambda: {}, verbose=False)
    next(tmp_path.glob("m-*.json")).write_text("{ half")
    with pytest.raises(ValueError, match="damaged.*delete it"):
        trained_once(tmp_path, "m", {}, lambda: {})


# The results a chapter keeps in the repository (chapters/results/*-kept/: trainings whose model is not used again,
# so that a run of the chapter from the repository reads them instead of training for hours).
COMMITTED_KEPT = sorted((Path(__file__).resolve().parents[2] / "chapters" / "results").glob("*-kept/*.json"))


def kept_record_problems(path: Path) -> list[str]:
    """Why a chapter would not read `path` as the kept result it claims to be (empty: it would)."""
    record = json.loads(path.read_text())
    missing = {"name", "settings", "result", "date", "machine", "minutes"} - set(record)
    if missing:
        return [f"{path.name}: no {', '.join(sorted(missing))}"]
    stem = kept_stem(path.parent, record["name"], record["settings"]).name
    problems = [] if path.stem == stem else [f"{path.name}: its name and settings make {stem}.json (edited by hand?)"]
    if list(path.parent.glob("*.h5")):
        problems.append(f"{path.parent.name}: weights belong in chapters/runs/, not in the repository")
    return problems


def test_the_kept_record_check_catches_a_hand_edit(tmp_path):
    trained_once(tmp_path, "scratch, 1000 labels, seed 0", {"labels": 1000}, lambda: {"test_accuracy": 0.75},
                 verbose=False)
    (record,) = tmp_path.glob("*.json")
    assert kept_record_problems(record) == []
    saved = json.loads(record.read_text())
    saved["settings"]["labels"] = 250  # a result claimed for other settings
    record.write_text(json.dumps(saved))
    assert "edited by hand" in kept_record_problems(record)[0]


@pytest.mark.skipif(not COMMITTED_KEPT, reason="no chapter keeps results in the repository yet")
@pytest.mark.parametrize("path", COMMITTED_KEPT, ids=lambda path: path.name)
def test_results_kept_in_the_repository_are_what_the_chapter_would_read(path):
    assert kept_record_problems(path) == []
