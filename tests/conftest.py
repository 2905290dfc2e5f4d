import os
import shutil

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
# Floating-point sums of a trained outcome depend on how many threads split them (TensorFlow's
# default follows the number of cores): one intra-op thread unless the caller sets another, so a
# test run gives the same numbers on any core count. The trained-outcome tests are measured to hold
# with 1, 2 and 4 threads too (TF_NUM_INTRAOP_THREADS=4 make unit-tests).
os.environ.setdefault("TF_NUM_INTRAOP_THREADS", "1")

from pathlib import Path  # noqa: E402

import keras  # noqa: E402
import numpy as np  # noqa: E402
import pytest  # noqa: E402
import tensorflow as tf  # noqa: E402

# TensorFlow rewrites each graph (Grappler: constant folding, op fusion, ...) before its first run, which
# makes a long run faster but costs 3 to 4 s per trained toy model, more than the training itself (measured
# on a 2-core AMD EPYC: a 2-epoch toy train_translator 18.8-20.3 s without, 21.8-24.6 s with). The tests
# check what the graphs compute, which the rewrite leaves as it is; the chapters, which CI also runs, keep it.
tf.config.optimizer.set_experimental_options({"disable_meta_optimizer": True})


@pytest.fixture(autouse=True)
def _seeded():
    """Every test starts from the same random state, so a failure reproduces."""
    keras.utils.set_random_seed(1234)
    yield


@pytest.fixture
def rng():
    return np.random.default_rng(1234)


def random_ids(rng, batch, length, vocab_size, pad_from=None):
    """Random token ids in [1, vocab_size); row b is padded with 0 from position pad_from[b] on."""
    ids = rng.integers(1, vocab_size, size=(batch, length))
    if pad_from is not None:
        for row, start in enumerate(pad_from):
            ids[row, start:] = 0
    return ids.astype("int32")


def keras_mask_of(tensor):
    """The implicit mask Keras attached to a tensor (e.g. by `Embedding(mask_zero=True)`), or None."""
    return getattr(tensor, "_keras_mask", None)


SHARED_DATA = Path(os.environ.get("TRANSFORMER_BOOK_DATA") or "/nonexistent")
requires_shared_data = pytest.mark.skipif(
    not SHARED_DATA.is_dir(),
    reason="needs the offline corpora: set TRANSFORMER_BOOK_DATA to ../shared/data (CI and `make test` do)",
)


@pytest.fixture(scope="session")
def trained_tiny(tmp_path_factory):
    """The `tiny` preset trained on the synthetic task (numbers in Russian words -> English words),
    saved as a translator directory: a model that really translates, shared by every test that needs
    one. Its trained weights are kept in tests/data/tiny-translator/ (tests/tiny_translator.py says how
    they were trained, and why they can be trusted); each worker gets its own copy, which a test may change."""
    from tiny_translator import trained_tiny_translator

    copy = tmp_path_factory.mktemp("tiny") / "translator"
    shutil.copytree(trained_tiny_translator(), copy)
    return copy
