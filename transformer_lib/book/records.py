"""The committed benchmark records a chapter reads (`benchmarks/*.json`), and the questions it asks them.

`benchmark_record(name)` reads `benchmarks/NAME.json` wherever the chapter runs (`course_file`).
`accuracy_by_pretraining_epochs(fine_tunings, pretrainings, learning_rates, **setting)` answers chapter 9's
"how long to pretrain": the test accuracies of the fine-tuning benchmark's runs at one setting, grouped by
how many epochs the model they started from was pretrained (0 for the models trained from scratch).
"""

from __future__ import annotations

import json
from pathlib import PurePath

from transformer_lib.book.course_files import course_file


def benchmark_record(name: str) -> dict:
    """`benchmarks/NAME.json`, as committed (in Colab, the copy in the course repository)."""
    return json.loads(course_file(f"benchmarks/{name}.json").read_text())


def _option(command: list[str], option: str, record: str) -> str:
    if option not in command[:-1]:
        raise ValueError(f"the pretraining record {record!r} has no {option} in its command {' '.join(command)!r}: "
                         "give the records of benchmarks.bert_labels_cpu runs that saved their model")
    return command[command.index(option) + 1]


def accuracy_by_pretraining_epochs(fine_tunings: dict, pretrainings: dict[str, dict], learning_rates: dict[str, float],
                                 **setting) -> dict[int, list[float]]:
    """Epochs of pretraining (0: from scratch) -> the test accuracy of every fine-tuning run at `setting`.

    Args:
        fine_tunings: the record of `benchmarks.bert_finetune_protocol` (its `rows`: one a model, setting
            and learning rate, with the accuracy of each seed in `runs`).
        pretrainings: name -> record of a `benchmarks.bert_labels_cpu` run that pretrained and saved a model;
            its command says for how many epochs (`--pretrain-epochs`) and in which folder (`--save`).
        learning_rates: the learning rate of each kind of model ("pretrained", "scratch"); rows at another
            rate belong to the benchmark's own search and are left out.
        setting: the values the rows must have (e.g. labels=1000, protocol="reviews", clip="global").

    A pretrained row whose saved model none of `pretrainings` made is left out (another pretraining).
    """
    epochs_of = {}  # the folder a pretraining saved its model in -> its epochs
    for name, record in pretrainings.items():
        command = record["command"].split()
        epochs_of[PurePath(_option(command, "--save", name)).name] = int(_option(command, "--pretrain-epochs", name))
    unknown = sorted(set(setting) - set(fine_tunings["rows"][0])) if fine_tunings["rows"] else []
    if unknown:
        raise ValueError(f"the fine-tuning rows have no {', '.join(unknown)}; they have {', '.join(fine_tunings['rows'][0])}")
    by_epochs: dict[int, list[float]] = {}
    for row in fine_tunings["rows"]:
        if any(row[key] != value for key, value in setting.items()) or row["lr"] != learning_rates.get(row["model"]):
            continue
        if row["model"] == "pretrained":
            saved = PurePath(row["saved"]).name
            if saved not in epochs_of:
                continue
            epochs = epochs_of[saved]
        else:
            epochs = 0
        by_epochs.setdefault(epochs, []).extend(run["test_accuracy"] for run in row["runs"])
    return dict(sorted(by_epochs.items()))
