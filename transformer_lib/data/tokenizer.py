"""Subword tokenization with SentencePiece BPE (Sennrich et al. 2016; the paper used BPE, §5.1).

The seed articles used `tfds.features.text.SubwordTextEncoder`; that module path no longer exists
(the class survives only as `tfds.deprecated.text`). SentencePiece is maintained, fast, and its
models run inside a TensorFlow graph too (`tensorflow-text`), which export needs.

Reserved ids, the same in every tokenizer of this library:
    0 = padding, 1 = start, 2 = end, 3 = unknown.

Normalization: NFKC Unicode normalization, runs of whitespace collapsed, leading and trailing
whitespace removed (SentencePiece's "nmt_nfkc" rule); `lowercase=True` adds case folding
("nmt_nfkc_cf"). So `decode(encode(text)) == normalize(text)`, not always `text`: an empty string
and a string of spaces both encode to no tokens and decode to "". Characters never seen in
training are not lost: byte fallback spells them as UTF-8 bytes, so they decode exactly.
"""

from __future__ import annotations

import io
import re
import secrets
import warnings
from collections.abc import Iterable, Sequence
from numbers import Integral
from pathlib import Path

import sentencepiece as spm

from transformer_lib.utils.checks import require_positive_int, require_sampling_alpha

PAD_ID, START_ID, END_ID, UNKNOWN_ID = 0, 1, 2, 3
NEVER_GENERATED = (PAD_ID, START_ID)  # a translation never contains padding or a second START


MAX_VOCAB = 2**31 - 1  # sentencepiece reads the size as a 32-bit integer


def require_vocab_size(vocab_size) -> None:
    """A vocabulary size sentencepiece can be asked for: 1 to MAX_VOCAB (the corpus may support fewer:
    `train` then uses the most it supports, with a warning)."""
    require_positive_int("vocab_size", vocab_size)
    if vocab_size > MAX_VOCAB:
        raise ValueError(f"vocab_size={vocab_size:,} is more than sentencepiece can take ({MAX_VOCAB:,}); a corpus "
                         "supports far fewer pieces (a few per thousand words): use e.g. vocab_size=8000.")


class SubwordTokenizer:
    """A trained SentencePiece model with this library's reserved ids.

    Build one with `SubwordTokenizer.train(sentences)` or `SubwordTokenizer.load(path)`.
    """

    def __init__(self, model_proto: bytes):
        self.model_proto = model_proto
        self.processor = spm.SentencePieceProcessor(model_proto=model_proto)
        reserved = (self.processor.pad_id(), self.processor.bos_id(), self.processor.eos_id(), self.processor.unk_id())
        if reserved != (PAD_ID, START_ID, END_ID, UNKNOWN_ID):
            raise ValueError(
                f"This SentencePiece model reserves ids (pad, start, end, unknown) = {reserved}; this library "
                f"needs {(PAD_ID, START_ID, END_ID, UNKNOWN_ID)}. Train it with SubwordTokenizer.train."
            )

    @classmethod
    def train(
        cls,
        sentences: Iterable[str],
        vocab_size: int = 8000,
        lowercase: bool = False,
        byte_fallback: bool = True,
    ) -> "SubwordTokenizer":
        """Learn a BPE vocabulary of `vocab_size` pieces (reserved ids and bytes included).

        If the corpus is too small for `vocab_size`, the largest size it supports is used instead,
        with a warning that says so.
        """
        require_vocab_size(vocab_size)
        sentences = [s for s in sentences if s.strip()]
        if not sentences:
            raise ValueError("Cannot train a tokenizer on an empty corpus (no non-blank sentence).")
        options = dict(
            model_type="bpe",
            pad_id=PAD_ID,
            bos_id=START_ID,
            eos_id=END_ID,
            unk_id=UNKNOWN_ID,
            normalization_rule_name="nmt_nfkc_cf" if lowercase else "nmt_nfkc",
            byte_fallback=byte_fallback,
            character_coverage=1.0,
            minloglevel=2,
        )
        try:
            return cls(_train_model(sentences, vocab_size, options))
        except RuntimeError as error:
            smallest = re.search(r"Vocabulary size is smaller than required_chars\. \d+ vs (\d+)", str(error))
            if smallest is not None:
                raise ValueError(
                    f"vocab_size={vocab_size} cannot hold the reserved ids, the byte pieces and every character "
                    f"of the corpus; use vocab_size >= {smallest.group(1)}."
                ) from None
            largest = re.search(r"Vocabulary size too high \(\d+\)\. Please set it to a value <= (\d+)", str(error))
            if largest is None:
                raise
            clamped = int(largest.group(1))
            warnings.warn(
                f"vocab_size={vocab_size} is more than {len(sentences):,} sentences support; "
                f"using vocab_size={clamped} instead. Pass a smaller vocab_size to silence this.",
                stacklevel=2,
            )
            return cls(_train_model(sentences, clamped, options))

    @classmethod
    def load(cls, path: str | Path) -> "SubwordTokenizer":
        """Load a tokenizer saved with `save`."""
        path = Path(path)
        if not path.is_file():
            raise FileNotFoundError(f"No tokenizer model at {path}; save one with SubwordTokenizer.save(path).")
        try:
            return cls(path.read_bytes())
        except RuntimeError as error:  # sentencepiece's own parse error names neither the file nor a remedy
            raise ValueError(
                f"{path} is not a readable SentencePiece model ({error}); the file is damaged or truncated. "
                "Restore it from the directory it was saved in, or train and save the tokenizer again."
            ) from None

    def save(self, path: str | Path) -> Path:
        """Write the SentencePiece model to `path` (conventionally `<name>.model`)."""
        path = Path(path)
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(self.model_proto)
        return path

    @property
    def vocab_size(self) -> int:
        return self.processor.get_piece_size()

    def encode(self, text: str | Sequence[str], add_start_end: bool = False,
               sampling_alpha: float | None = None, seed: int | None = None) -> list[int] | list[list[int]]:
        """Token ids of one string, or a list of id lists for a list of strings.

        With `add_start_end`, each sequence is wrapped in START_ID ... END_ID. With `sampling_alpha`
        (0 < alpha < 1) each call draws one of the text's segmentations: every merge of the BPE
        vocabulary is skipped with probability alpha (BPE-dropout, Provilkov et al. 2020; sentencepiece's
        subword sampling), so a word comes out in smaller pieces now and then. For training only.
        `seed` fixes the draw (the same seed, the same segmentations); None draws afresh.
        """
        single = isinstance(text, str)
        texts = [text] if single else list(text)
        for t in texts:
            if not isinstance(t, str):
                raise TypeError(f"encode expects str or a list of str, got {type(t).__name__}: {t!r}")
        sampling = {}
        if sampling_alpha is not None:
            # sentencepiece draws from one process-wide seed, re-applied at every call once set (so a call
            # without a fresh seed would repeat the last draw), and in one thread the draw is reproducible
            spm.set_random_generator_seed(secrets.randbits(31) if seed is None else seed)
            sampling = dict(enable_sampling=True, alpha=require_sampling_alpha(sampling_alpha), num_threads=1)
        ids = self.processor.encode(texts, add_bos=add_start_end, add_eos=add_start_end, **sampling)
        return ids[0] if single else ids

    def decode(self, ids: Sequence[int] | Sequence[Sequence[int]]) -> str | list[str]:
        """Text of one id sequence, or a list of texts; padding, start and end ids are skipped."""
        ids = ids.tolist() if hasattr(ids, "tolist") else ids
        single = len(ids) == 0 or isinstance(ids[0], Integral)
        batch = [ids] if single else ids
        texts = self.processor.decode([[int(i) for i in seq if i not in (PAD_ID, START_ID, END_ID)] for seq in batch])
        return texts[0] if single else texts

    def normalize(self, text: str) -> str:
        """The text as the tokenizer sees it: what `decode(encode(text))` gives back."""
        return self.processor.normalize(text).replace("\u2581", " ").strip()

    def pieces(self, text: str) -> list[str]:
        """The subword pieces of `text`, for display ("▁" marks the start of a word)."""
        return self.processor.encode(text, out_type=str)


def _train_model(sentences: list[str], vocab_size: int, options: dict) -> bytes:
    model = io.BytesIO()
    spm.SentencePieceTrainer.train(
        sentence_iterator=iter(sentences), model_writer=model, vocab_size=vocab_size, **options
    )
    return model.getvalue()
