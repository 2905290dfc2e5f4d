"""The command line's argument types (argparse `type=`): each turns a string into a value or
refuses it with a line that says what it expected."""

from __future__ import annotations

import argparse
import math
from pathlib import Path


def positive_int(text: str) -> int:
    """argparse type: an integer >= 1."""
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a whole number >= 1, got {text!r}") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"expected a whole number >= 1, got {value}")
    return value


def sequence_length(text: str) -> int:
    """argparse type: a sequence length >= 3 (START, one token, END)."""
    value = positive_int(text)
    if value < 3:
        raise argparse.ArgumentTypeError(f"{value} leaves no room for a token between START and END; use >= 3")
    return value


def non_negative_float(text: str) -> float:
    """argparse type: a finite number >= 0."""
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a number >= 0, got {text!r}") from None
    if not math.isfinite(value) or value < 0:
        raise argparse.ArgumentTypeError(f"expected a finite number >= 0, got {text}")
    return value


def within(value: float, ok: bool, expected: str, text: str) -> float:
    """`value` if `ok`, else an argparse error: expected `expected`, got `text`."""
    if not ok:
        raise argparse.ArgumentTypeError(f"expected {expected}, got {text}")
    return value


def rate(text: str) -> float:
    """argparse type: a number in [0, 1)."""
    value = non_negative_float(text)
    return within(value, value < 1, "a number in [0, 1)", text)


def share(text: str) -> float:
    """argparse type: a share in (0, 1)."""
    value = rate(text)
    return within(value, value > 0, "a share above 0 (0.05: 5%)", text)


def growth(text: str) -> float:
    """argparse type: a factor >= 1."""
    value = non_negative_float(text)
    return within(value, value >= 1, "a number >= 1", text)


def learning_rate(text: str) -> float:
    """argparse type: a learning rate in (0, 1)."""
    value = rate(text)
    return within(value, value > 0, "a learning rate above 0", text)


def output_directory(text: str) -> Path:
    """argparse type: a directory that exists or can be created (not a file)."""
    path = Path(text)
    if path.exists() and not path.is_dir():
        raise argparse.ArgumentTypeError(f"{text} is a file; give a directory for the translator and checkpoints")
    return path
