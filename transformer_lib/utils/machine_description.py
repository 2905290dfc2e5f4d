"""What a result was computed on: one line naming the hardware and the software, for training
records (`training.json`) and the chapters' first lines."""

from __future__ import annotations

import os
import platform
from pathlib import Path


def describe_machine() -> str:
    """The hardware and software a result came from, e.g.
    "x86_64, CPU only (2 cores, AMD EPYC with AVX2); TensorFlow 2.21.0"."""
    import tensorflow as tf

    gpus = tf.config.list_physical_devices("GPU")
    device = f"{len(gpus)} GPU(s)" if gpus else f"CPU only ({os.cpu_count()} cores, {cpu_model()})"
    return f"{platform.machine()}, {device}; TensorFlow {tf.__version__}"


def cpu_model(cpuinfo: str | None = None) -> str:
    """The CPU's model name and the widest vector instructions it offers, e.g. "AMD EPYC with AVX-512".

    Two CPUs of one name can differ a lot: matrix products run up to twice as fast with AVX-512 as with
    AVX2 alone, so the name without the instructions does not say how fast a run was. Read from
    `cpuinfo` (the text of Linux's /proc/cpuinfo, read when not given); elsewhere, what `platform` knows.
    """
    name, vector = cpu_name_and_vector(cpuinfo)
    return f"{name} with {vector}" if vector else name


def cpu_name_and_vector(cpuinfo: str | None = None) -> tuple[str, str | None]:
    """`cpu_model`'s two parts: the model name, and "AVX-512", "AVX2" or None."""
    if cpuinfo is None:
        try:
            cpuinfo = Path("/proc/cpuinfo").read_text()
        except OSError:
            cpuinfo = ""
    fields = {}
    for line in cpuinfo.splitlines():
        key, _, value = line.partition(":")
        fields.setdefault(key.strip(), value.strip())  # the first processor's
    name = fields.get("model name") or platform.processor() or platform.machine()
    flags = set(fields.get("flags", "").split())
    return name, "AVX-512" if "avx512f" in flags else "AVX2" if "avx2" in flags else None
