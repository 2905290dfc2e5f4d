"""Memory a piece of work will need, estimated before it starts: a beam, a length or a batch too
big for this machine is refused at once, with the largest that fits, instead of being killed by
the system (with other jobs) after minutes of work.

The estimates count the big float32 arrays generously (every activation a step keeps, every
cache a decoding loop carries), so what they refuse cannot fit; they are meant to be right within
a factor of two or so, which is what a limit needs. Only the host's memory is checked: on a GPU
TensorFlow stops at once with its own out-of-memory error, without taking the machine down.
"""

from __future__ import annotations

import functools
import math
from pathlib import Path

FLOAT = 4  # bytes
USABLE = 0.9  # of the memory that is free: leave some for everything else


def available_bytes() -> int | None:
    """Memory this process can still take: Linux's MemAvailable, or less if a container (cgroup)
    limits it; None where neither can be read, or where the work runs on a GPU (then nothing is refused)."""
    if _on_gpu():
        return None
    free = []
    try:
        for line in Path("/proc/meminfo").read_text().splitlines():
            if line.startswith("MemAvailable:"):
                free.append(int(line.split()[1]) * 1024)
    except (OSError, ValueError, IndexError):
        pass
    try:
        limit = Path("/sys/fs/cgroup/memory.max").read_text().strip()
        used = int(Path("/sys/fs/cgroup/memory.current").read_text())
        if limit != "max":
            free.append(int(limit) - used)
    except (OSError, ValueError):
        pass
    return min(free) if free else None


@functools.cache
def _on_gpu() -> bool:
    import tensorflow as tf

    return bool(tf.config.list_physical_devices("GPU"))


def decoding_bytes(config, sentences: int, beam_size: int, max_length: int, source_length: int) -> float:
    """The bytes, estimated, of a model with `config` (a `TransformerConfig`): greedy decoding (`beam_size` 1) or beam search of `sentences` sentences: every hypothesis
    keeps its own self-attention cache of `max_length` positions and the encoder's output in every
    layer, and scores the whole target vocabulary at every step."""
    rows, layers, d = sentences * beam_size, config.num_layers, config.d_model
    caches = 2 * layers * rows * (max_length + source_length) * d  # keys and values, self and cross
    step = rows * (3 * config.target_vocab_size + config.num_heads * (max_length + source_length) + 4 * d)
    return FLOAT * (caches + step + rows * source_length * d)


def training_bytes(config, batch_tokens: int, max_length: int) -> float:
    """The bytes, estimated, of one training step of a model with `config` (a `TransformerConfig`) on `batch_tokens` tokens per side in sentences up to `max_length` long: the
    activations backpropagation keeps in every layer, the attention weights, the logits, and the
    weights with their gradients and Adam's two moments."""
    d, dff, heads, layers = config.d_model, config.dff, config.num_heads, config.num_layers
    encoder = 10 * d + 2 * dff + 3 * heads * max_length  # per token and layer
    decoder = 15 * d + 2 * dff + 6 * heads * max_length  # two attentions
    activations = batch_tokens * layers * (encoder + decoder) + 4 * batch_tokens * config.target_vocab_size
    embeddings = (config.input_vocab_size + config.target_vocab_size) * d
    weights = embeddings + layers * (12 * d * d + 4 * d * dff) + d * config.target_vocab_size
    return FLOAT * (activations + 4 * weights)


def require_fits(name: str, value: int, estimate, what: str = "") -> None:
    """Refuse `name=value` if `estimate(value)` (bytes, growing with value) is more than the usable
    free memory; the message gives the largest value that fits."""
    free = available_bytes()
    if free is None:
        return
    budget = USABLE * free
    needed = estimate(value)
    if needed <= budget:
        return
    low, high = 0, value  # the largest that fits lies in [low, high)
    while high - low > 1:
        middle = (low + high) // 2
        low, high = (middle, high) if estimate(middle) <= budget else (low, middle)
    advice = f"use {name} <= {low:,}" if low >= 1 else f"even {name}=1 does not fit: free memory first"
    raise ValueError(f"{name}={value:,}{what} would need about {_gb(needed)} of memory, and about {_gb(budget)} "
                     f"is free for it: {advice}.")


def _gb(size: float) -> str:
    return f"{size / 2**30:,.1f} GB" if size < 2**50 else f"10^{math.log10(size / 2**30):.0f} GB"
