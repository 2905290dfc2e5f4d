"""What a result was computed on: one line naming the hardware and the software, for training
records (`training.json`) and the chapters' first lines."""

from __future__ import annotations

import os
import platform


def describe_machine() -> str:
    """The hardware and software a result came from, e.g. "x86_64, CPU only (2 cores); TensorFlow 2.21.0"."""
    import tensorflow as tf

    gpus = tf.config.list_physical_devices("GPU")
    device = f"{len(gpus)} GPU(s)" if gpus else f"CPU only ({os.cpu_count()} cores)"
    return f"{platform.machine()}, {device}; TensorFlow {tf.__version__}"
