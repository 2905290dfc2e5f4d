import os

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

from pathlib import Path  # noqa: E402

import keras  # noqa: E402
import numpy as np  # noqa: E402
import pytest  # noqa: E402


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
