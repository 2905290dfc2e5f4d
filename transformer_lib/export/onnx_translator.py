"""The exported graphs run in Python (onnxruntime) with the page's greedy and beam loops around them,
to test them against the Keras model before a browser runs them: `OnnxTranslator`, and where the two
part, how much the Keras model itself prefers its own choice (`keras_margin`: a near tie, which int8
weights may tip, or a broken graph).
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np

from transformer_lib.data.tokenizer import END_ID, NEVER_GENERATED, PAD_ID, START_ID
from transformer_lib.decoding.search import length_penalty
from transformer_lib.export.graphs import ENCODER, MANIFEST, STEP


class OnnxTranslator:
    """The exported graphs with the greedy and beam loops around them, in Python and NumPy: the
    same algorithm as `search.greedy_loop` and `search.beam_loop` (transformer_lib.decoding) for one sentence, and as the
    page's JavaScript. `directory` holds `encoder.onnx` and `decoder_step.onnx` and the manifest, or
    `manifest` gives its `max_length` and `model` sizes (the export, before it writes the manifest)."""

    def __init__(self, directory: str | Path, manifest: dict | None = None):
        import onnxruntime

        directory = Path(directory)
        self.directory, self.tokenizers = directory, None  # the tokenizers load on the first call
        self.manifest = manifest or json.loads((directory / MANIFEST).read_text())
        options = onnxruntime.SessionOptions()
        options.intra_op_num_threads = 1  # as the page: one thread
        # as the page: the int8 weights are turned back into float32 once, when the graph loads (without
        # this, onnxruntime fuses DequantizeLinear into integer matrix products that quantize the inputs too)
        options.add_session_config_entry("session.disable_quant_qdq", "1")
        self.encoder = onnxruntime.InferenceSession(str(directory / ENCODER), options)
        self.step = onnxruntime.InferenceSession(str(directory / STEP), options)
        self.outputs = [output.name for output in self.step.get_outputs()]

    def start(self, source_ids):
        """The encoder graph's outputs for one sentence's ids (START ... END)."""
        names = [output.name for output in self.encoder.get_outputs()]
        return dict(zip(names, self.encoder.run(None, {"source_ids": np.array([source_ids], np.int32)})))

    def empty_caches(self, rows: int) -> dict:
        size = self.manifest["model"]
        shape = (rows, size["num_heads"], self.manifest["max_length"], size["d_k"])
        return {f"self_{part}_{i}": np.zeros(shape, np.float32)
                for i in range(size["num_layers"]) for part in ("key", "value")}

    def run_step(self, tokens, offset: int, caches: dict, source: dict) -> tuple[np.ndarray, dict, np.ndarray]:
        """One decoder step for the rows' newest `tokens`: `(logits [B, V], caches, cross_weights)`."""
        feeds = {"token": np.asarray(tokens, np.int32)[:, None], "offset": np.array(offset, np.int32), **caches, **source}
        results = dict(zip(self.outputs, self.step.run(None, feeds)))
        caches = {name[len("new_"):]: value for name, value in results.items() if name.startswith("new_")}
        return results["logits"], caches, results["cross_weights"]

    @staticmethod
    def never_generated(logits):
        logits = logits.astype(np.float32).copy()
        logits[..., list(NEVER_GENERATED)] = -np.inf
        return logits

    def greedy(self, source_ids) -> list[int]:
        """The greedy translation's ids (END included if it came), like `greedy_loop`."""
        source, caches, token, ids = self.start(source_ids), self.empty_caches(1), START_ID, []
        for t in range(self.manifest["max_length"]):
            logits, caches, _ = self.run_step([token], t, caches, source)
            token = int(np.argmax(self.never_generated(logits)[0]))
            ids.append(token)
            if token == END_ID:
                break
        return ids

    def beam(self, source_ids, beam_size: int = 4, alpha: float = 0.6) -> list[int]:
        """The beam search's ids, like `beam_loop` for one sentence (ties to the lower index)."""
        k, max_length = beam_size, self.manifest["max_length"]
        source, caches = self.start(source_ids), self.empty_caches(k)
        tokens = np.full((k, max_length + 1), PAD_ID, np.int32)
        tokens[:, 0] = START_ID
        scores = np.array([0.0] + [-np.inf] * (k - 1), np.float32)
        finished, lengths, steps = np.zeros(k, bool), np.zeros(k, np.int32), 0
        for t in range(max_length):
            logits, caches, _ = self.run_step(tokens[:, t], t, caches, source)
            log_probs = _log_softmax(self.never_generated(logits))
            only_padding = np.where(np.arange(log_probs.shape[1]) == PAD_ID, 0.0, -np.inf).astype(np.float32)
            log_probs = np.where(finished[:, None], only_padding, log_probs)
            candidates = (scores[:, None] + log_probs).reshape(-1)
            best = np.argsort(-candidates, kind="stable")[:k]  # k best, ties to the lower index
            beam, next_ids = best // log_probs.shape[1], best % log_probs.shape[1]
            scores = candidates[best]
            tokens = tokens[beam]
            tokens[:, t + 1] = next_ids
            caches = {name: value[beam] for name, value in caches.items()}
            was_finished = finished[beam]
            lengths = np.where(was_finished, lengths[beam], t + 1)
            finished = was_finished | (next_ids == END_ID)
            steps = t + 1
            if finished.all():
                break
        normalized = scores / length_penalty(lengths, alpha)
        row = tokens[int(np.argmax(normalized)), 1: steps + 1]
        return [int(i) for i in row[: _through_end(row)]]

    def __call__(self, texts: str | list[str], beam_size: int = 4, alpha: float | None = None) -> str | list[str]:
        """The page's translations of `texts`, as a reader of the page gets them: its tokenizers, its loops
        (greedy for `beam_size` 1, else beam search with `alpha`, by default the manifest's `beam_alpha`), a
        text longer than `max_length` pieces cut to its beginning (with a warning, as `Translator` does).
        Called like a `Translator`, so `evaluate_bleu(OnnxTranslator(folder), pairs)` scores the page."""
        from transformer_lib.data.tokenizer import SubwordTokenizer
        from transformer_lib.decoding.translator import cut_to_fit

        if self.tokenizers is None:
            self.tokenizers = tuple(SubwordTokenizer.load(self.directory / f"{side}.model") for side in ("source", "target"))
        single, longest = isinstance(texts, str), self.manifest["max_length"]
        alpha = self.manifest.get("beam_alpha", 0.6) if alpha is None else alpha
        rows = cut_to_fit(self.tokenizers[0].encode([texts] if single else list(texts), add_start_end=True), longest)
        found = [self.greedy(row) if beam_size == 1 else self.beam(row, beam_size, alpha) for row in rows]
        translations = [self.tokenizers[1].decode(ids) for ids in found]  # decode leaves END out
        return translations[0] if single else translations


def _log_softmax(x):
    shifted = x - x.max(axis=-1, keepdims=True)
    return shifted - np.log(np.exp(shifted).sum(axis=-1, keepdims=True))


def _through_end(ids) -> int:
    """How many ids to keep: up to and including the first END (all if none)."""
    ids = list(ids)
    return ids.index(END_ID) + 1 if END_ID in ids else len(ids)


def _keras_log_probs(model, source_ids, ids) -> np.ndarray:
    """`[len(ids), V]`: the Keras model's log-probabilities at each position of `ids` (teacher forcing:
    one pass over START + ids[:-1]), with the ids that no search generates excluded, as the searches do."""
    prefix = np.array([[START_ID, *ids[:-1]]], np.int32)
    logits = np.array(model((np.array([source_ids], np.int32), prefix), training=False)[0], np.float64)
    logits[:, list(NEVER_GENERATED)] = -np.inf
    return _log_softmax(logits)


def keras_margin(translator, source_ids, keras: list[int], page: list[int]) -> float:
    """How much the Keras model of `translator` prefers its own translation `keras` where the page's
    `page` parts from it (both ids through END, of the sentence `source_ids`), in nats: at the first
    position where the two differ, the log-probability of the Keras token minus that of the page's,
    after their common prefix. 0 for the same ids.

    For greedy search this is the very choice that went the other way (so it is >= 0): a small margin is a
    near tie, which int8 weights may tip, and a broken graph parts from the model at tokens it finds far
    apart. A beam search ranks whole hypotheses by their totals (the finished ones divided by the length
    penalty), so what int8 weights tip there is a comparison of two totals, and the translations can part at
    tokens far apart, or with a negative margin: for beam search this says where the two part and by how
    much the model prefers its token there, not how close the tipped comparison was (chapter 8 prints both
    searches' margins on validation sentences)."""
    keras, page = [int(i) for i in keras], [int(i) for i in page]
    if keras == page:
        return 0.0
    t = next((i for i, (a, b) in enumerate(zip(keras, page)) if a != b), None)
    if t is None:
        raise ValueError("Two translations of one sentence that differ part at some position; these do not "
                         f"({keras} and {page}): one is a prefix of the other.")
    log_probs = _keras_log_probs(translator.model, source_ids, keras)
    return float(log_probs[t, keras[t]] - log_probs[t, page[t]])


def keras_ids(translator, text: str, beam_size: int = 1, alpha: float | None = None) -> list[int]:
    """The target ids the Keras model of `translator` chooses for `text` (greedy for `beam_size` 1,
    else beam search with length penalty `alpha`, by default the translator's own), through END: what `OnnxTranslator.greedy` / `.beam` must give for the same ids."""
    from transformer_lib.decoding.search import beam_search, greedy_decode

    model, max_length = translator.model, translator.max_length
    source_ids = translator.encode_sources([text])
    if beam_size == 1:
        ids = greedy_decode(model, source_ids, max_length)[0]
    else:
        ids = beam_search(model, source_ids, beam_size, translator.alpha if alpha is None else alpha, max_length)[0]
    return [int(i) for i in ids[: _through_end(ids)]]


def margins(translator, folder: str | Path, texts, beam_size: int = 1, alpha: float | None = None) -> list:
    """For each of `texts`: None where the exported graphs in `folder` (run by onnxruntime with the page's
    loops) choose exactly the ids the Keras model of `translator` chooses, with the same search; else
    the Keras model's `keras_margin` between its choice and theirs (a small one: a near tie that the
    int8 weights tipped)."""
    alpha = translator.alpha if alpha is None else alpha
    in_page = OnnxTranslator(folder)
    found = []
    for text in texts:
        source_ids = [int(i) for i in translator.encode_sources([text])[0]]
        page = in_page.greedy(source_ids) if beam_size == 1 else in_page.beam(source_ids, beam_size, alpha)
        keras = keras_ids(translator, text, beam_size, alpha)
        found.append(None if page == keras else keras_margin(translator, source_ids, keras, page))
    return found


def agreement(translator, folder: str | Path, texts, beam_size: int = 1, alpha: float | None = None) -> list[bool]:
    """For each of `texts`: do the exported graphs in `folder` choose exactly the Keras model's ids (`margins`)?"""
    return [margin is None for margin in margins(translator, folder, texts, beam_size, alpha)]
