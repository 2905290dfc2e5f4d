"""Chapter 9's reading of the benchmark records: fine-tunings grouped by the length of the pretraining
they started from (`transformer_lib.book.records`)."""

import pytest

from transformer_lib.book.records import accuracy_by_pretraining_epochs, benchmark_record

RATES = {"pretrained": 1e-3, "scratch": 3e-4}


def pretraining(epochs, folder):
    return {"command": f"python -m benchmarks.bert_labels_cpu --pretrain-epochs {epochs} --windows random "
                       f"--save {folder} --out x.json"}


def row(model, accuracies, lr, labels=1000, saved=None, clip="global"):
    return {"model": model, "lr": lr, "labels": labels, "clip": clip, "saved": saved,
            "runs": [{"seed": seed, "test_accuracy": a} for seed, a in enumerate(accuracies)]}


PRETRAININGS = {"four": pretraining(4, "chapters/runs/09-four"), "eight": pretraining(8, "/elsewhere/09-eight")}


def test_runs_are_grouped_by_the_epochs_of_the_pretraining_their_model_started_from():
    rows = [row("scratch", [0.70, 0.72], 3e-4),
            row("pretrained", [0.80], 1e-3, saved="/work/main/chapters/runs/09-eight"),  # the folder's name counts
            row("pretrained", [0.78, 0.79], 1e-3, saved="chapters/runs/09-four"),
            row("pretrained", [0.81], 1e-3, saved="/tmp/09-four"),
            row("scratch", [0.60], 1e-3),  # another learning rate: the benchmark's own search
            row("pretrained", [0.50], 3e-4, saved="chapters/runs/09-four"),
            row("pretrained", [0.90], 1e-3, saved="chapters/runs/09-other"),  # a pretraining not given
            row("pretrained", [0.65], 1e-3, labels=250, saved="chapters/runs/09-four"),  # another setting
            row("scratch", [0.40], 3e-4, clip="per weight")]
    by_epochs = accuracy_by_pretraining_epochs({"rows": rows}, PRETRAININGS, RATES, labels=1000, clip="global")
    assert by_epochs == {0: [0.70, 0.72], 4: [0.78, 0.79, 0.81], 8: [0.80]}
    assert list(by_epochs) == [0, 4, 8]


def test_a_setting_the_rows_do_not_have_and_a_pretraining_without_its_folder_are_refused():
    rows = {"rows": [row("scratch", [0.7], 3e-4)]}
    with pytest.raises(ValueError, match="no batch_size; they have model, lr"):
        accuracy_by_pretraining_epochs(rows, PRETRAININGS, RATES, batch_size=32)
    with pytest.raises(ValueError, match="'unsaved' has no --save"):
        accuracy_by_pretraining_epochs(rows, {"unsaved": {"command": "python -m x --pretrain-epochs 4"}}, RATES)


def test_the_committed_records_give_the_chapters_three_pretraining_lengths():
    """The 8-epoch fine-tunings are those the benchmark appended in commit a546c27 (seeds 0-2)."""
    by_epochs = accuracy_by_pretraining_epochs(
        benchmark_record("bert_finetune_protocol"),
        {name: benchmark_record(name) for name in ("bert_labels_cpu_random", "bert_pretraining_random_amd",
                                                   "bert_pretraining_random8_avx2")},
        RATES, labels=1000, protocol="reviews", clip="global", size=[2, 128, 4, 512], epochs=20, patience=4)
    assert {epochs: len(runs) for epochs, runs in by_epochs.items()} == {0: 6, 4: 6, 8: 3}
    assert by_epochs[8] == pytest.approx([0.8220, 0.8312, 0.8236], abs=5e-5)
