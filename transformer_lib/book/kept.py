"""Trainings a chapter runs once and keeps (chapter 9 trains 20-odd models).

`trained_once(run_dir, name, settings, train, model)` runs `train()` the first time and keeps what
it returns (a dict of numbers: accuracies, a history) and, when given, the model's weights, in
`run_dir` under `name` and a fingerprint of `settings`. A later run of the chapter with the same
settings loads them instead of training again, and says when and where they were trained and what
that took. Changed settings train afresh, into files of their own: nothing kept is overwritten.
"""

from __future__ import annotations

import datetime
import hashlib
import json
import os
import re
import time
from collections.abc import Callable
from pathlib import Path

from transformer_lib.utils.json_records import read_json, write_json
from transformer_lib.utils.machine_description import describe_machine


def fingerprint(settings: dict) -> str:
    """Eight hex digits that name `settings`: equal settings give equal digits, in any run and key order."""
    try:
        text = json.dumps(settings, sort_keys=True)
    except TypeError as error:
        raise TypeError(f"settings must be JSON data (numbers, strings, lists, dicts) to be named: {error}") from None
    return hashlib.sha256(text.encode()).hexdigest()[:8]


def kept_stem(run_dir, name: str, settings: dict) -> Path:
    """Where `trained_once` keeps `name` trained with `settings`: run_dir/NAME-FINGERPRINT (the name's letters
    and digits), to which it adds `.json` and `.weights.h5`."""
    return Path(run_dir) / f"{re.sub(r'[^A-Za-z0-9]+', '-', name).strip('-')}-{fingerprint(settings)}"


def as_json_data(result: dict, name: str) -> dict:
    """`result` with NumPy numbers and arrays (Keras histories hold them) as plain Python ones, so that
    a result trained now and one read back from its file are the same."""
    def plain(value):
        if hasattr(value, "tolist"):  # a NumPy scalar or array, or a tensor converted to one
            return value.tolist()
        raise TypeError(f"trained_once({name!r}): train() returned a {type(value).__name__}, which a JSON file "
                        "cannot keep; return numbers, strings, lists and dicts.")
    if not isinstance(result, dict):
        raise TypeError(f"trained_once({name!r}): train() must return a dict (of numbers, lists...), not "
                        f"{type(result).__name__}.")
    return json.loads(json.dumps(result, default=plain))


def trained_once(run_dir, name: str, settings: dict, train: Callable[[], dict], model=None,
                 verbose: bool = True) -> dict:
    """What `train()` returns, computed once per `name` and `settings` and kept in `run_dir`.

    `train()` trains (`model`, if given) and returns a dict of JSON data. It is kept in
    `run_dir/NAME-FINGERPRINT.json` (the name's letters and digits) with the settings, the minutes it
    took, the date and the machine; `model`'s weights beside it (`.weights.h5`). When both are there,
    `model` gets the kept weights instead. NumPy numbers in the dict become Python ones, as a kept
    dict's are. The dict returned has two more keys: `kept` (True when loaded, False when trained now)
    and `trained` (date, machine and minutes of the training).
    """
    if model is not None and not model.built:
        raise ValueError(f"trained_once({name!r}): build the model first (call it on a batch), so that kept "
                         "weights can be loaded into it.")
    stem = kept_stem(run_dir, name, settings)
    record_path, weights_path = Path(f"{stem}.json"), Path(f"{stem}.weights.h5")
    if record_path.is_file() and (model is None or weights_path.is_file()):
        record = read_json(record_path, f"delete it to train {name!r} again")
        if model is not None:
            model.load_weights(weights_path)
        trained = {key: record[key] for key in ("date", "machine", "minutes")}
        if verbose:
            print(f"{name}: kept from {trained['date']} ({trained['minutes']:.1f} min on {trained['machine']}); "
                  f"not trained again (delete {record_path} to retrain)")
        return {**record["result"], "kept": True, "trained": trained}
    start = time.perf_counter()
    result = as_json_data(train(), name)
    trained = {"date": datetime.date.today().isoformat(), "machine": describe_machine(),
               "minutes": round((time.perf_counter() - start) / 60, 2)}
    stem.parent.mkdir(parents=True, exist_ok=True)
    if model is not None:  # the weights first, whole: a record on disk means its weights are complete
        partial = Path(f"{stem}.partial.weights.h5")
        model.save_weights(partial)
        os.replace(partial, weights_path)
    write_json(record_path, {"name": name, "settings": settings, "result": result, **trained}, indent=1)
    return {**result, "kept": False, "trained": trained}
