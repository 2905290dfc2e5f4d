"""The trained tiny translator that the tests share: trained once, its weights kept in the repository.

It is the `tiny` preset trained on the synthetic task (numbers in Russian words -> English words) for 30
epochs: every measured run (seeds 0 and 1; 1, 2 and 4 threads; a 2-core AMD EPYC) translates all 512
held-out numbers exactly, and 20 epochs still give 98.4%. Training it takes about two minutes of one
core (147 s of CPU in `make test`'s profile of 2026-12-05, about a tenth of the unit tests' CPU), and
until then every test run trained it again.

Now its trained weights and two tokenizers are kept in tests/fixtures/tiny-translator/ (2 MB), with
trained.json saying how, when and on what machine they were trained and how many held-out numbers they
translated exactly. `trained_tiny_translator()` assembles a translator folder from them with the
library as it is now (the model built from the preset, the weights loaded, `save_translator`), kept in
.pytest_cache/trained-tiny/KEY/, where KEY is a hash of those files, this file, every source file of
transformer_lib and the TensorFlow and Keras versions; two workers that need it at once take a file lock,
so one assembles it (a few seconds) and the other waits. The weights themselves are checked by the tests
that use them: tests/decoding/test_decoding.py asks the assembled translator for the 512 held-out numbers
(it needs 97% exact), and a test compares trained.json's settings with SETTINGS below.

Change SETTINGS, or change the model so that the kept weights no longer fit it (loading then fails and
names this command), and train them again:

    python tools/tiny_translator.py --write      # about two minutes; commit tests/fixtures/tiny-translator/
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import json
import os
import shutil
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
CACHE = ROOT / ".pytest_cache" / "trained-tiny"
KEPT = ROOT / "tests" / "fixtures" / "tiny-translator"  # the trained weights, both tokenizers, trained.json
KEPT_FILES = ("model.weights.h5", "source.model", "target.model", "trained.json")
SETTINGS = {"preset": "tiny", "corpus": "synthetic", "vocab_size": 400, "batch_tokens": 1024, "max_length": 24,
            "epochs": 30, "warmup_steps": 300, "d_model_for_schedule": 64, "dropout_rate": 0.0, "seed": 0}
WRITE = "python tools/tiny_translator.py --write"


def cache_key(kept: Path = KEPT) -> str:
    """A hash of the kept files, this file, the library's source and the TensorFlow/Keras versions."""
    import keras
    import tensorflow as tf

    digest = hashlib.sha256(json.dumps(SETTINGS, sort_keys=True).encode())
    digest.update(f"tensorflow {tf.__version__} keras {keras.__version__}".encode())
    digest.update(Path(__file__).read_bytes())
    for name in KEPT_FILES:
        path = kept / name
        digest.update(name.encode() + b"\0" + (path.read_bytes() if path.is_file() else b"missing"))
    for path in sorted((ROOT / "transformer_lib").rglob("*.py")):
        digest.update(path.relative_to(ROOT).as_posix().encode() + b"\0" + path.read_bytes())
    return digest.hexdigest()[:16]


def kept_record(kept: Path = KEPT) -> dict:
    """trained.json of the kept weights, after checking that they were trained with SETTINGS."""
    missing = [name for name in KEPT_FILES if not (kept / name).is_file()]
    if missing:
        raise FileNotFoundError(f"{kept} lacks {', '.join(missing)}: train the tiny translator again with `{WRITE}`.")
    record = json.loads((kept / "trained.json").read_text())
    if record["settings"] != SETTINGS:
        changed = sorted(k for k in {*SETTINGS, *record["settings"]} if SETTINGS.get(k) != record["settings"].get(k))
        raise RuntimeError(f"The kept tiny translator was trained with other settings ({', '.join(changed)} differ "
                           f"from SETTINGS): train it again with `{WRITE}`.")
    return record


def write_kept(kept: Path = KEPT) -> dict:
    """Train the translator with SETTINGS and keep its weights, tokenizers and record in `kept`."""
    import datetime
    import subprocess

    import keras
    import numpy as np
    import tensorflow as tf

    import transformer_lib as tl
    from transformer_lib.decoding.translator import Translator
    from transformer_lib.utils.machine_description import describe_machine
    from transformer_lib.training.objective import make_optimizer
    from transformer_lib.training.loop import train

    start = time.perf_counter()
    keras.utils.set_random_seed(SETTINGS["seed"])
    pairs = tl.load_parallel_corpus(SETTINGS["corpus"], "train")
    tokenizers = tl.train_tokenizers(pairs, vocab_size=SETTINGS["vocab_size"])
    batches = tl.make_batches(pairs, tokenizers, batch_tokens=SETTINGS["batch_tokens"],
                              max_length=SETTINGS["max_length"], verbose=False)
    model = tl.Transformer.from_preset(SETTINGS["preset"], tokenizers[0].vocab_size, tokenizers[1].vocab_size,
                                       dropout_rate=SETTINGS["dropout_rate"])
    optimizer = make_optimizer(SETTINGS["d_model_for_schedule"], warmup_steps=SETTINGS["warmup_steps"])
    train(model, batches, epochs=SETTINGS["epochs"], optimizer=optimizer, verbose=0)
    seconds = time.perf_counter() - start
    test = tl.load_parallel_corpus(SETTINGS["corpus"], "test")
    translations = Translator(model, *tokenizers, max_length=SETTINGS["max_length"])([s for s, _ in test], beam_size=1)
    exact = int(np.sum([t == reference for t, (_, reference) in zip(translations, test)]))
    kept.mkdir(parents=True, exist_ok=True)
    model.save_weights(kept / "model.weights.h5")
    tokenizers[0].save(kept / "source.model")
    tokenizers[1].save(kept / "target.model")
    commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=ROOT, capture_output=True, text=True).stdout
    record = {"settings": SETTINGS, "command": WRITE, "train_seconds": round(seconds, 1),
              "date": datetime.datetime.now().astimezone().isoformat(timespec="seconds"),
              "machine": describe_machine(), "tensorflow": tf.__version__, "keras": keras.__version__,
              "commit": commit.strip(), "intra_op_threads": os.environ.get("TF_NUM_INTRAOP_THREADS", "TensorFlow's default"),
              "held_out_exact": f"{exact} of {len(test)} test numbers translated exactly (greedy)"}
    (kept / "trained.json").write_text(json.dumps(record, indent=1, ensure_ascii=False) + "\n")
    return record


def assemble_into(directory: Path, kept: Path = KEPT) -> None:
    """A translator folder in `directory` (a new folder), from the kept weights and tokenizers, saved by
    the library as it is now."""
    import numpy as np

    import transformer_lib as tl
    from transformer_lib.decoding.translator import Translator
    from transformer_lib.export.saved_model import save_translator

    kept_record(kept)
    tokenizers = [tl.SubwordTokenizer.load(kept / f"{side}.model") for side in ("source", "target")]
    model = tl.Transformer.from_preset(SETTINGS["preset"], tokenizers[0].vocab_size, tokenizers[1].vocab_size,
                                       dropout_rate=SETTINGS["dropout_rate"])
    model((np.ones((1, 4), np.int32), np.ones((1, 4), np.int32)))  # built: every weight exists
    try:
        model.load_weights(kept / "model.weights.h5")
    except (ValueError, KeyError) as error:
        first_line = str(error).strip().splitlines()[0]  # Keras goes on to list every layer
        raise RuntimeError(f"The kept tiny translator's weights do not fit the model as it is now ({first_line}): "
                           f"train it again with `{WRITE}`.") from error
    save_translator(Translator(model, *tokenizers, max_length=SETTINGS["max_length"]), directory)


@contextlib.contextmanager
def locked(path: Path):
    with open(path, "w") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)  # released when the file closes, also if this process dies
        yield


def trained_tiny_translator(cache: Path = CACHE, kept: Path = KEPT) -> Path:
    """The folder of the trained translator, assembled first if no finished copy for this KEY is kept.
    Treat it as read-only: copy it before changing a file in it."""
    folder = cache / cache_key(kept)
    done = folder / "assembled.json"
    if not done.is_file():
        cache.mkdir(parents=True, exist_ok=True)
        with locked(cache / f"{folder.name}.lock"):
            if not done.is_file():  # nobody finished it while this process waited for the lock
                shutil.rmtree(folder, ignore_errors=True)
                start = time.perf_counter()
                assemble_into(folder / "translator", kept)
                done.write_text(json.dumps({"from": str(kept), "seconds": round(time.perf_counter() - start, 1)}) + "\n")
    return folder / "translator"


if __name__ == "__main__":
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
    sys.path.insert(0, str(ROOT))
    if sys.argv[1:] == ["--write"]:
        print(json.dumps(write_kept(), indent=1, ensure_ascii=False))
    else:
        began = time.perf_counter()
        where = trained_tiny_translator()
        print(f"the tiny translator, assembled from {KEPT}: {where} (ready after {time.perf_counter() - began:.0f} s)")
