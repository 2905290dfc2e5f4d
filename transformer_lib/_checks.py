"""Argument checks shared by the layers: errors that say what was wrong and what to do."""

from __future__ import annotations

from numbers import Integral, Real


def require_positive_int(name: str, value) -> None:
    """Raise a ValueError unless `value` is an integer >= 1 (bools are not accepted)."""
    if isinstance(value, bool) or not isinstance(value, Integral) or value < 1:
        raise ValueError(f"{name} must be a positive integer, got {value!r}.")


def require_rate(name: str, value) -> None:
    """Raise a ValueError unless `value` is a probability in [0, 1)."""
    if isinstance(value, bool) or not isinstance(value, Real) or not 0 <= value < 1:
        raise ValueError(f"{name} must be a number in [0, 1), got {value!r}.")


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


def _divisors(n: int) -> list[int]:
    return [k for k in range(1, n + 1) if n % k == 0]


def require_layer_sizes(d_model: int, num_heads: int, dff: int, dropout_rate: float) -> None:
    """Check the sizes every encoder/decoder layer shares, before any sub-layer is made."""
    require_heads_divide(d_model, num_heads)
    require_positive_int("dff", dff)
    require_rate("dropout_rate", dropout_rate)


def build_unbuilt(layer, *shapes) -> None:
    """Build a sub-layer from its parent's `build` unless it is built already (a reader may have
    called it on its own first, e.g. `mha.wq(x)`); Keras refuses to build a layer twice."""
    if not layer.built:
        layer.build(*shapes)
