"""What each change since 2017 is worth on chapter 9's language model, all else equal (the chapter "Since 2017").

Every variant is `tl.ModernLanguageModel` with the same sizes, trained on the same windows of IMDB training
reviews with the same budget and seed: "2017" is the paper's block, "pre-LN", "RMSNorm", "rotary", "SwiGLU"
and "GQA" switch one change on, "2024" all of them. `study_data` makes the tokenizer and the windows once;
`train_variant` trains one variant from one seed and returns its row of the table.
"""

from __future__ import annotations

import time

import keras
import numpy as np

from transformer_lib.data.imdb import load_imdb, sampled_windows, train_review_tokenizer
from transformer_lib.models.language_model import ModernLanguageModel, next_token_pairs
from transformer_lib.training.objective import MaskedLoss, TransformerSchedule, perplexity

VARIANTS = {
    "2017": {},
    "pre-LN": dict(norm_first=True),
    "RMSNorm": dict(rms_norm=True),
    "rotary": dict(rotary=True),
    "SwiGLU": dict(swiglu=True),
    "GQA": dict(num_kv_heads=2),
    "2024": dict(norm_first=True, rms_norm=True, rotary=True, swiglu=True, num_kv_heads=2),
}
FULL = dict(sample=False, vocab_size=8000, window=128, windows=5000, validation_windows=2000, epochs=2,
            num_layers=2, d_model=128, num_heads=4, dff=512, batch_size=32, peak_rate=2e-3, warmup=200,
            prompt="This movie was", new_tokens=30)
QUICK = dict(FULL, sample=True, vocab_size=1000, window=64, windows=400, validation_windows=200, epochs=1,
             d_model=32, dff=64, warmup=20, new_tokens=12)
TOY = dict(QUICK, windows=64, validation_windows=32, window=32, d_model=16, dff=32, new_tokens=4)


def study_data(settings: dict):
    """`(tokenizer, train, validation)`: a subword tokenizer of the training reviews, and `(inputs, targets)`
    of `windows` training and `validation_windows` validation windows (validation reviews are other movies)."""
    train = load_imdb("train", sample=settings["sample"])
    tokenizer = train_review_tokenizer(train, settings["vocab_size"])
    validation = load_imdb("validation", sample=settings["sample"])

    def pairs(reviews, count, seed):
        ids = tokenizer.encode([text for text, _ in reviews])
        return next_token_pairs(sampled_windows(ids, settings["window"], count, seed))

    return (tokenizer, pairs(train, settings["windows"], seed=0),
            pairs(validation, settings["validation_windows"], seed=1))


def train_variant(name: str, seed: int, settings: dict, vocab_size: int, train, validation):
    """One variant of `VARIANTS` from one seed: `(row, model)`, the row holding its validation perplexity,
    parameters, training speed in real tokens per second, and key/value cache bytes per generated token."""
    if name not in VARIANTS:
        raise ValueError(f"unknown variant {name!r}: choose one of {', '.join(VARIANTS)}.")
    keras.utils.set_random_seed(seed)
    model = ModernLanguageModel(vocab_size, settings["num_layers"], settings["d_model"], settings["num_heads"],
                                settings["dff"], dropout_rate=0.1, max_length=settings["window"], **VARIANTS[name])
    schedule = TransformerSchedule(settings["d_model"], settings["warmup"], peak_rate=settings["peak_rate"])
    model.compile(optimizer=keras.optimizers.Adam(schedule, clipnorm=1.0), loss=MaskedLoss(label_smoothing=0.0))
    model(train[0][:1])  # built: its parameters can be counted
    start = time.perf_counter()
    model.fit(*train, batch_size=settings["batch_size"], epochs=settings["epochs"], shuffle=True, verbose=0)
    seconds = time.perf_counter() - start
    tokens = int(np.sum(train[1] != 0)) * settings["epochs"]
    return {"variant": name, "switches": VARIANTS[name], "seed": seed,
            "val_perplexity": round(perplexity(model, validation), 2),
            "parameters": int(model.count_params()), "tokens_per_second": round(tokens / seconds),
            "cache_bytes_per_token": model.cache_bytes_per_token(), "train_minutes": round(seconds / 60, 2)}, model
