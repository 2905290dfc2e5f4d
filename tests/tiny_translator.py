"""The trained tiny translator that the tests share, trained once and kept on disk.

It is the `tiny` preset trained on the synthetic task (numbers in Russian words -> English words) for 30
epochs: every measured run (seeds 0 and 1; 1, 2 and 4 threads; a 2-core AMD EPYC) translates all 512
held-out numbers exactly, and 20 epochs still give 98.4%. Training it takes about two minutes of one
core, and each pytest worker used to train its own copy.

Now it is kept in .pytest_cache/trained-tiny/KEY/, where KEY is a hash of everything the result
depends on: the settings below, this file, every source file of transformer_lib, and the TensorFlow
and Keras versions. Change any of them and the next run trains afresh; two workers that need it at once
take a file lock, so one trains and the other waits for its result. `make unit-tests` runs this file
first (`python tests/tiny_translator.py`), on every core, so that no worker waits. The thread count is
not part of KEY: the tests that use the translator are measured to hold with 1, 2 and 4 threads.
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
SETTINGS = {"preset": "tiny", "corpus": "synthetic", "vocab_size": 400, "batch_tokens": 1024, "max_length": 24,
            "epochs": 30, "warmup_steps": 300, "d_model_for_schedule": 64, "dropout_rate": 0.0, "seed": 0}


def cache_key() -> str:
    """A hash of the settings, this file, the library's source and the TensorFlow/Keras versions."""
    import keras
    import tensorflow as tf

    digest = hashlib.sha256(json.dumps(SETTINGS, sort_keys=True).encode())
    digest.update(f"tensorflow {tf.__version__} keras {keras.__version__}".encode())
    digest.update(Path(__file__).read_bytes())
    for path in sorted((ROOT / "transformer_lib").rglob("*.py")):
        digest.update(path.relative_to(ROOT).as_posix().encode() + b"\0" + path.read_bytes())
    return digest.hexdigest()[:16]


def train_into(directory: Path) -> None:
    """Train the translator with SETTINGS and save it in `directory` (a new folder)."""
    import keras

    import transformer_lib as tl
    from transformer_lib.decoding import Translator
    from transformer_lib.export import save_translator
    from transformer_lib.objective import make_optimizer
    from transformer_lib.training import train

    keras.utils.set_random_seed(SETTINGS["seed"])
    pairs = tl.load_parallel_corpus(SETTINGS["corpus"], "train")
    tokenizers = tl.train_tokenizers(pairs, vocab_size=SETTINGS["vocab_size"])
    batches = tl.make_batches(pairs, tokenizers, batch_tokens=SETTINGS["batch_tokens"],
                              max_length=SETTINGS["max_length"], verbose=False)
    model = tl.Transformer.from_preset(SETTINGS["preset"], tokenizers[0].vocab_size, tokenizers[1].vocab_size,
                                       dropout_rate=SETTINGS["dropout_rate"])
    optimizer = make_optimizer(SETTINGS["d_model_for_schedule"], warmup_steps=SETTINGS["warmup_steps"])
    train(model, batches, epochs=SETTINGS["epochs"], optimizer=optimizer, verbose=0)
    save_translator(Translator(model, *tokenizers, max_length=SETTINGS["max_length"]), directory)


@contextlib.contextmanager
def locked(path: Path):
    with open(path, "w") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)  # released when the file closes, also if this process dies
        yield


def trained_tiny_translator(cache: Path = CACHE) -> Path:
    """The folder of the trained translator, trained first if no finished copy for this KEY is kept.
    Treat it as read-only: copy it before changing a file in it."""
    folder = cache / cache_key()
    done = folder / "trained.json"
    if not done.is_file():
        cache.mkdir(parents=True, exist_ok=True)
        with locked(cache / f"{folder.name}.lock"):
            if not done.is_file():  # nobody finished it while this process waited for the lock
                shutil.rmtree(folder, ignore_errors=True)
                start = time.perf_counter()
                train_into(folder / "translator")
                threads = os.environ.get("TF_NUM_INTRAOP_THREADS", "TensorFlow's default")
                done.write_text(json.dumps({"settings": SETTINGS, "seconds": round(time.perf_counter() - start, 1),
                                            "intra_op_threads": threads}) + "\n")
    return folder / "translator"


if __name__ == "__main__":
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
    sys.path.insert(0, str(ROOT))
    began = time.perf_counter()
    where = trained_tiny_translator()
    print(f"trained tiny translator: {where} ({json.loads((where.parent / 'trained.json').read_text())['seconds']} s "
          f"to train; ready after {time.perf_counter() - began:.0f} s)")
