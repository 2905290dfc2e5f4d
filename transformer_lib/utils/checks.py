"""Argument checks shared by the library: errors that say what was wrong and what to do."""

from __future__ import annotations

import math
from numbers import Integral, Real

import keras
import numpy as np


def require_positive_int(name: str, value) -> None:
    """Raise a ValueError unless `value` is an integer >= 1 (bools are not accepted)."""
    if isinstance(value, bool) or not isinstance(value, Integral) or value < 1:
        raise ValueError(f"{name} must be a positive integer, got {value!r}.")


def require_rate(name: str, value) -> None:
    """Raise a ValueError unless `value` is a probability in [0, 1)."""
    if isinstance(value, bool) or not isinstance(value, Real) or not 0 <= value < 1:
        raise ValueError(f"{name} must be a number in [0, 1), got {value!r}.")


def require_share(name: str, value, what: str = "a share of the run", example: str = "0.05 for 5% of its updates",
                  otherwise: str = "") -> float:
    """`value` as a float if it lies strictly between 0 and 1 (0 or 1 would be no share, or all of it);
    else a ValueError: "`name` must be `what` in (0, 1), e.g. `example`; got ...", then `otherwise`."""
    if isinstance(value, bool) or not isinstance(value, Real) or not 0 < value < 1:
        raise ValueError(f"{name} must be {what} in (0, 1), e.g. {example}; got {value!r}.{otherwise}")
    return float(value)


def require_sampling_alpha(value) -> float:
    """`value` if it is a BPE-dropout probability in (0, 1); raise a ValueError that says what to pass otherwise."""
    return require_share("sampling_alpha", value, "a probability", "0.1",
                         " Pass None to train on the one fixed segmentation.")


def require_non_negative_number(name: str, value) -> None:
    """Raise a ValueError unless `value` is a finite real number >= 0 (bools are not accepted)."""
    if isinstance(value, bool) or not isinstance(value, Real) or not math.isfinite(value) or value < 0:
        raise ValueError(f"{name} must be a finite number >= 0, got {value!r}.")


def require_growth(name: str, value) -> None:
    """Raise a ValueError unless `value` is a number >= 1 (a factor by which something grows)."""
    if isinstance(value, bool) or not isinstance(value, Real) or not value >= 1:
        raise ValueError(f"{name} must be >= 1 (1.1: each ~10% larger than the last), got {value!r}.")


def require_learning_rate(name: str, value) -> None:
    """Raise a ValueError unless `value` is a learning rate in (0, 1)."""
    if isinstance(value, bool) or not isinstance(value, Real) or not 0 < value < 1:
        raise ValueError(f"{name} must be a learning rate in (0, 1), got {value!r}.")


def require_max_length(max_length, name: str = "max_length") -> None:
    """A sequence holds START, at least one token and END, so its longest length is an integer >= 3."""
    require_positive_int(name, max_length)
    if max_length < 3:
        raise ValueError(f"{name}={max_length} leaves no room for a token between START and END; use {name} >= 3.")


def check_token_ids(name: str, ids, vocab_size: int) -> None:
    """Raise unless `ids` are integer token ids in [0, vocab_size).

    A cheap check on values that are really there (eager mode): inside a compiled graph the values
    are not known yet and nothing is checked. Without it a float id is silently truncated and a
    negative id reads the embedding row of another token.
    """
    if _not_known_yet(ids):
        return
    values = keras.ops.convert_to_numpy(ids)  # lists, NumPy arrays, eager tensors of any backend or device
    if not np.issubdtype(values.dtype, np.integer):
        raise TypeError(
            f"{name} must be integers, got dtype {values.dtype}. Ids index the vocabulary: make them "
            f"with a tokenizer's encode (or cast exact whole numbers with .astype('int32'))."
        )
    if values.size and (values.min() < 0 or values.max() >= vocab_size):
        bad = values.min() if values.min() < 0 else values.max()
        raise ValueError(
            f"{name} include {int(bad)}, outside this vocabulary of {vocab_size} ids (0..{vocab_size - 1}). "
            f"Encode with the tokenizer the model was built for (its vocab_size must be {vocab_size})."
        )


def _not_known_yet(ids) -> bool:
    """True for a symbolic value: a Keras input, or a tensor inside tf.function or jax.jit."""
    if isinstance(ids, keras.KerasTensor):
        return True
    if keras.backend.backend() == "tensorflow":
        import tensorflow as tf

        return not tf.executing_eagerly()
    if keras.backend.backend() == "jax":
        import jax

        return isinstance(ids, jax.core.Tracer)
    return False


def require_heads_divide(d_model: int, num_heads: int) -> None:
    """d_k = d_model / h must be a whole number (§3.2.2)."""
    require_positive_int("d_model", d_model)
    require_positive_int("num_heads", num_heads)
    if d_model % num_heads:
        raise ValueError(
            f"d_model={d_model} is not divisible by num_heads={num_heads}; d_k would not be an "
            f"integer. Pick num_heads among the divisors of d_model (e.g. "
            f"{', '.join(str(h) for h in _divisors(d_model)[:6])})."
        )


def require_kv_heads_divide(num_heads: int, num_kv_heads) -> None:
    """g = num_kv_heads (None: one per query head) must divide h: each key/value head serves a whole group."""
    if num_kv_heads is None:
        return
    require_positive_int("num_kv_heads", num_kv_heads)
    if num_heads % num_kv_heads:
        raise ValueError(f"num_kv_heads={num_kv_heads} does not divide num_heads={num_heads}: each key/value "
                         f"head serves a whole group of query heads. Use a divisor of {num_heads}.")


def _divisors(n: int) -> list[int]:
    return [k for k in range(1, n + 1) if n % k == 0]


def require_layer_sizes(d_model: int, num_heads: int, dff: int, dropout_rate: float,
                        attention_dropout: float = 0.0, activation_dropout: float = 0.0) -> None:
    """Check the sizes and dropout rates every encoder/decoder layer shares, before any sub-layer is made."""
    require_heads_divide(d_model, num_heads)
    require_positive_int("dff", dff)
    for name, value in (("dropout_rate", dropout_rate), ("attention_dropout", attention_dropout),
                        ("activation_dropout", activation_dropout)):
        require_rate(name, value)


def check_sentence_pairs(inputs) -> None:
    """Raise a ValueError unless a model's `(source_ids, target_ids)` have the same number of rows
    (where both are known): row i of each must be the same sentence pair."""
    if not isinstance(inputs, (tuple, list)) or len(inputs) != 2:
        return  # not a pair: the model's call says what it expects
    source_ids, target_ids = inputs
    source_batch, target_batch = (getattr(ids, "shape", (None,))[0] for ids in (source_ids, target_ids))
    if source_batch is not None and target_batch is not None and source_batch != target_batch:
        raise ValueError(
            f"source_ids has {source_batch} rows but target_ids has {target_batch}; row i of each must be "
            "the same sentence pair (batch them together, as make_batches does)."
        )
