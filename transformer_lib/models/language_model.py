"""The decoder alone (GPT's idea; Radford et al. 2018): a language model that reads a text left to
right and, at every position, predicts the next token. Chapter 9.

The translator's decoder has three sublayers: masked self-attention, cross-attention to the encoder
and the feed-forward network. Without an encoder there is nothing to attend across, so a decoder-only
layer keeps the other two; and because it still predicts each token from the ones before it, the
look-ahead mask stays (with the padding mask of the keys: `decoder_mask`). Trained on plain text, with
the text itself as the labels shifted by one, it needs no labels at all.

    model = LanguageModel(vocab_size=8000)
    inputs, targets = next_token_pairs(ids)          # ids[:, :-1] and ids[:, 1:]
    model.compile(optimizer="adam", loss=MaskedLoss(label_smoothing=0.0))
    generate(model, prompt_ids, 40, temperature=0.8, top_k=20, seed=0)   # with chapter 8's key/value cache
"""

from __future__ import annotations

import keras
import numpy as np
from keras import ops

from transformer_lib.config import one_stack_config, one_stack_fields
from transformer_lib.utils.sublayers import build_unbuilt
from transformer_lib.layers.decoder_only import DecoderOnly
from transformer_lib.data.tokenizer import END_ID, NEVER_GENERATED, PAD_ID, START_ID
from transformer_lib.models.legacy_weights import load_modern_block_weights, modern_block_layout


LANGUAGE_MODEL = dict(num_layers=2, d_model=128, num_heads=4, dff=512, dropout_rate=0.1, norm_first=True, max_length=256)


@keras.saving.register_keras_serializable(package="transformer_lib")
class LanguageModel(keras.Model):
    """A decoder-only language model: `DecoderOnly` and an output layer tied to its embedding (§3.4).
    Chapter 9 trains it as GPT-2 did (pre-LN); the chapter "Since 2017" switches on the rest of today's block.

    Args:
        config: a `TransformerConfig` (its `input_vocab_size` is the vocabulary), with the switches since 2017
            (`rms_norm`, `rotary`, `swiglu`, `num_kv_heads`) among its fields; or, as a convenience,
        vocab_size: tokens it reads and predicts (0 = padding, 1 = START, 2 = END), then any field of
            `TransformerConfig` by name (the first four also in order): `LanguageModel(8000, num_layers=4)`.
            The defaults are chapter 9's: 2 layers of width 128, 4 heads, dff 512, dropout 0.1, pre-LN,
            windows of 256 tokens.

    Call arguments:
        token_ids: int `[batch, len]`, 0 = padding.
        training: enables dropout.

    Returns float32 logits `[batch, len, vocab_size]`: at position t, the scores of the token at t + 1.
    `start_cache` and `step` give `generate` chapter 8's key/value cache.
    """

    defaults = LANGUAGE_MODEL

    def __init__(self, *config, **kwargs):
        config, kwargs = one_stack_config(config, kwargs, self.defaults, target=True)
        super().__init__(**kwargs)
        self.config = config
        self.decoder = DecoderOnly(config, vocab_size=config.input_vocab_size, name="decoder")

    @property
    def hyperparameters(self) -> dict:
        """`vocab_size` and the config's other fields: what `get_config` saves beside Keras's own keys."""
        return one_stack_fields(self.config)

    def build(self, token_ids_shape):
        build_unbuilt(self.decoder, token_ids_shape)

    def call(self, token_ids, training=None):
        x = self.decoder(token_ids, training=training)  # (batch, len, d_model)
        return ops.cast(self.decoder.embedding.tied_logits(x), "float32")  # (batch, len, vocab)

    def step(self, token_ids, offset, caches):
        """`call` for the newest token(s) `[batch, new]` at `offset`, ..., with the key/value caches
        of `start_cache`: `(logits [batch, new, vocab], caches)`. Each token costs one position."""
        x, caches = self.decoder.step(token_ids, offset, caches)
        return ops.cast(self.decoder.embedding.tied_logits(x), "float32"), caches

    def start_cache(self, batch: int, max_length: int | None = None):
        return self.decoder.start_cache(batch, max_length or self.config.max_length)

    def cache_bytes_per_token(self, bytes_per_number: int = 4) -> int:
        """What each generated token adds to the key/value cache, over all layers."""
        return sum(layer.self_attention.cache_bytes_per_token(bytes_per_number) for layer in self.decoder.stack_layers)

    def load_weights(self, filepath, *args, **kwargs):
        """Keras's `load_weights`; a `.weights.h5` file saved by the since-2017 model before it became this
        class (its blocks in a list of its own) is read into the same weights here."""
        if str(filepath).endswith(".weights.h5") and modern_block_layout(filepath):
            return load_modern_block_weights(self, filepath)
        return super().load_weights(filepath, *args, **kwargs)

    def get_config(self):
        return {**super().get_config(), **self.hyperparameters}


@keras.saving.register_keras_serializable(package="transformer_lib")
class ModernLanguageModel(LanguageModel):
    """`LanguageModel` with the defaults of the chapter "Since 2017": every switch off, post-LN included,
    so that the block is the paper's (§3.1 without cross-attention) until a switch says otherwise."""

    defaults = {**LANGUAGE_MODEL, "norm_first": False}


def next_token_pairs(token_ids):
    """`(inputs, targets)` for a language model from int `[batch, len]` ids (START ... END, 0-padded):
    `inputs = ids[:, :-1]`, `targets = ids[:, 1:]`, so that position t is asked for token t + 1."""
    token_ids = np.asarray(token_ids)
    if token_ids.ndim != 2 or token_ids.shape[1] < 2:
        raise ValueError(f"next_token_pairs needs ids of shape [batch, len] with len >= 2, got shape {token_ids.shape}.")
    return token_ids[:, :-1], token_ids[:, 1:]


def next_token(logits, temperature: float = 1.0, top_k: int | None = None, rng: np.random.Generator | None = None) -> int:
    """Choose the next token from one position's `logits` `[vocab]`.

    temperature 0: the most likely token (greedy). Otherwise sample from softmax(logits / temperature)
    (below 1 sharper, above 1 flatter), among the `top_k` most likely tokens only when given. Padding
    and START are never chosen.
    """
    logits = np.asarray(logits, np.float64).copy()
    logits[list(NEVER_GENERATED)] = -np.inf
    if temperature == 0:
        return int(np.argmax(logits))
    if top_k is not None:
        kth_best = np.sort(logits)[-top_k]
        logits[logits < kth_best] = -np.inf  # ties with the k-th best stay in
    scaled = logits / temperature
    probabilities = np.exp(scaled - scaled.max())
    probabilities /= probabilities.sum()
    return int((rng or np.random.default_rng()).choice(len(probabilities), p=probabilities))


def generate(model: LanguageModel, prompt_ids, max_new_tokens: int, temperature: float = 1.0,
             top_k: int | None = None, seed: int | None = None, compiled: bool = False) -> list[int]:
    """Continue `prompt_ids` (START first) by up to `max_new_tokens` tokens, stopping after END.

    The prompt goes through the model once (`step` with all its positions at offset 0), then each new
    token costs one position: chapter 8's key/value cache. `temperature`, `top_k`: as in `next_token`;
    `seed` makes the sampling repeatable. `compiled`: run each step as a TensorFlow graph (`compiled_step`),
    which pays for a large model (SmolLM2: about 15 times faster per token on a CPU than op by op). Returns
    the new ids (END included if it came).
    """
    prompt = [int(i) for i in np.asarray(prompt_ids).reshape(-1)]
    vocab_size, max_length = model.config.target_vocab_size, model.config.max_length
    if not prompt or prompt[0] != START_ID:
        raise ValueError(f"A prompt starts with START (id {START_ID}), as the training texts did; got {prompt[:5]}.")
    if PAD_ID in prompt:
        raise ValueError(f"A prompt holds no padding (id {PAD_ID}): give one text's ids, not a padded batch row.")
    if max_new_tokens < 1 or len(prompt) + max_new_tokens > max_length:
        raise ValueError(f"max_new_tokens must be >= 1 and the prompt ({len(prompt)} tokens) plus max_new_tokens "
                         f"({max_new_tokens}) at most the model's max_length ({max_length}).")
    if temperature < 0:
        raise ValueError(f"temperature must be >= 0 (0 = greedy), got {temperature}.")
    if top_k is not None and not 1 <= top_k <= vocab_size:
        raise ValueError(f"top_k must be between 1 and the vocabulary size {vocab_size}, or None; got {top_k}.")
    rng = np.random.default_rng(seed)
    step = compiled_step(model) if compiled else model.step
    caches = model.start_cache(1, len(prompt) + max_new_tokens)
    logits, caches = step(np.array([prompt], np.int32), 0, caches)  # the whole prompt at once
    new = []
    for offset in range(len(prompt), len(prompt) + max_new_tokens):
        token = next_token(ops.convert_to_numpy(logits)[0, -1], temperature, top_k, rng)
        new.append(token)
        if token == END_ID or offset + 1 == len(prompt) + max_new_tokens:
            break
        logits, caches = step(np.array([[token]], np.int32), offset, caches)
    return new


def compiled_step(model: LanguageModel):
    """`model.step` as TensorFlow graphs kept on the model, each traced once: one for a prompt of any length, one
    for a single new token (whose cache write is the cheaper one), for caches of any length."""
    import tensorflow as tf

    functions = model.__dict__.setdefault("_decoding_functions", {})
    if "step" not in functions:
        layers = [layer.self_attention for layer in model.decoder.stack_layers]
        caches = [(tf.TensorSpec([None, a.num_kv_heads, None, a.d_k], model.compute_dtype),) * 2 for a in layers]
        graphs = {new: tf.function(model.step, input_signature=[tf.TensorSpec([None, new], tf.int32),
                                                                 tf.TensorSpec([], tf.int32), caches])
                  for new in (1, None)}
        functions["step"] = lambda ids, offset, caches: graphs[1 if np.shape(ids)[1] == 1 else None](
            tf.constant(ids, tf.int32), tf.constant(offset, tf.int32), [tuple(c) for c in caches])
    return functions["step"]
