"""Raw text in, translated text out: the `Translator` wraps a trained model, its two tokenizers and
the searches of `search` (greedy, or beam with a length penalty), and gives the cross-attention
weights of a translation for plotting (chapter 8).
"""

from __future__ import annotations

import warnings

import numpy as np

from transformer_lib.data.tokenizer import END_ID, PAD_ID, START_ID, SubwordTokenizer
from transformer_lib.decoding.search import beam_search, greedy_decode, require_within_positions, sampled_decode
from transformer_lib.decoding.text_checks import as_text_list, main_script, warn_unusual_text
from transformer_lib.utils.checks import require_max_length, require_non_negative_number, require_positive_int


def cut_to_fit(rows: list[list[int]], max_length: int, stacklevel: int = 3) -> list[list[int]]:
    """Token rows (START ... END) with every row longer than `max_length` cut to its first
    `max_length - 1` tokens and an END, warning once how many were cut. `Translator` and the page's
    `OnnxTranslator` both cut this way, so a long text translates the same in Python and in the page."""
    too_long = [i for i, row in enumerate(rows) if len(row) > max_length]
    if too_long:
        warnings.warn(
            f"{len(too_long)} sentence(s) longer than max_length={max_length} tokens were cut "
            f"to fit (first: #{too_long[0]}); translate shorter pieces for a full translation.",
            stacklevel=stacklevel,
        )
    return [row if len(row) <= max_length else row[: max_length - 1] + [END_ID] for row in rows]


class Translator:
    """Raw text in, translated text out.

    Args:
        model: a trained `Transformer`.
        source_tokenizer, target_tokenizer: the tokenizers it was trained with (their sizes must
            be the model's vocabulary sizes).
        max_length: longest source (in tokens, START and END included) and longest translation;
            at least 3 and at most the model's `max_length` positions.
        alpha: the length penalty's exponent for beam search when a call gives none (0.6 as in the
            paper; chapter 8 chooses it on the validation split). An attribute, `translator.alpha`.
    """

    def __init__(self, model, source_tokenizer: SubwordTokenizer, target_tokenizer: SubwordTokenizer,
                 max_length: int = 64, alpha: float = 0.6):
        require_max_length(max_length)
        require_within_positions(model, max_length)
        for side, tokenizer, key in (("source", source_tokenizer, "input_vocab_size"),
                                     ("target", target_tokenizer, "target_vocab_size")):
            if tokenizer.vocab_size != getattr(model.config, key):
                raise ValueError(
                    f"The {side} tokenizer has {tokenizer.vocab_size} pieces but the model's {key} is "
                    f"{getattr(model.config, key)}: "
                    "they were not trained together. Use the tokenizers the model was trained with."
                )
        self.model = model
        self.source_tokenizer = source_tokenizer
        self.target_tokenizer = target_tokenizer
        self.max_length = max_length
        self.alpha = alpha
        self.source_script = main_script(source_tokenizer)

    @property
    def alpha(self) -> float:
        """The length penalty's exponent that beam search uses when a call gives none."""
        return self._alpha

    @alpha.setter
    def alpha(self, value: float) -> None:
        require_non_negative_number("alpha", value)
        self._alpha = float(value)

    def encode_sources(self, texts: list[str]) -> np.ndarray:
        """Token ids `[batch, len]` (START ... END, 0-padded); too long sentences are cut, with a warning."""
        ids = cut_to_fit(self.source_tokenizer.encode(texts, add_start_end=True), self.max_length, stacklevel=4)
        width = max(len(row) for row in ids)
        return np.array([row + [PAD_ID] * (width - len(row)) for row in ids], np.int32)

    def __call__(self, texts: str | list[str], beam_size: int = 4, alpha: float | None = None,
                 temperature: float | None = None, seed: int = 0):
        """Translate one string (returns a string) or a list of strings (returns a list), greedily
        (`beam_size=1`) or with beam search and length penalty `alpha` (default: `self.alpha`), or,
        given a `temperature`, by sampling each token (`sampled_decode`, reproducible by `seed`).

        Blank input translates to "" without running the model. A sentence with no letter of the
        script the source tokenizer was trained on, or with control characters, is translated
        with a warning that says so.
        """
        require_positive_int("beam_size", beam_size)
        alpha = self.alpha if alpha is None else alpha
        require_non_negative_number("alpha", alpha)
        single = isinstance(texts, str)
        texts = [texts] if single else as_text_list(texts)
        results = [""] * len(texts)
        todo = [i for i, text in enumerate(texts) if text.strip()]
        if todo:
            warn_unusual_text([texts[i] for i in todo], self.source_script, todo)
            sources = self.encode_sources([texts[i] for i in todo])
            if temperature is not None:
                ids = sampled_decode(self.model, sources, self.max_length, temperature, seed)
            elif beam_size == 1:
                ids = greedy_decode(self.model, sources, self.max_length)
            else:
                ids = beam_search(self.model, sources, beam_size, alpha, self.max_length)
            for i, text in zip(todo, self.target_tokenizer.decode(ids.tolist())):
                results[i] = text
        return results[0] if single else results

    def attention_weights(self, text: str, translation: str | None = None) -> dict:
        """Cross-attention of every layer and head for one sentence, for plotting.

        Returns a dict with `source_pieces`, `target_pieces` and `weights`, a NumPy array
        `[layers, heads, target_len, source_len]` (START/END included on both sides).
        """
        translation = self(text, beam_size=1) if translation is None else translation
        sources = self.encode_sources([text])
        ids = self.target_tokenizer.encode(translation)[: self.max_length - 1]  # re-encoded text can come out longer
        target = np.array([[START_ID, *ids, END_ID]], np.int32)
        encoder_output = self.model.encoder(sources, training=False)
        _, weights = self.model.decoder(target[:, :-1], encoder_output, sources, training=False)
        return {
            "source_pieces": ["<s>", *self.source_tokenizer.pieces(text)[: sources.shape[1] - 2], "</s>"],  # cut as encoded
            "target_pieces": ["<s>", *self.target_tokenizer.pieces(translation)][: target.shape[1] - 1],
            "weights": np.stack([np.asarray(w[0]) for w in weights]),
        }
