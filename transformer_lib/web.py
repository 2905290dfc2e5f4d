"""A saved translator for the browser: its model as two ONNX graphs that onnxruntime-web runs in
the reader's page, with the two SentencePiece models and a manifest (chapter 8's translation box
on the published book).

    python -m transformer_lib export-web --model RUN --out DIR

The graphs are traced from the library's own layers, split where chapter 8's cached decoding
splits the work:

- `encoder.onnx`, once per sentence: source ids `[1, S]` -> each decoder layer's cross-attention
  keys and values `cross_key_i`, `cross_value_i` `[1, h, S, d_k]` and the source padding mask
  `source_mask` `[1, 1, 1, S]` (what `Decoder.start_cache` computes);
- `decoder_step.onnx`, once per generated token: the newest token of each row `token` `[B, 1]` at
  position `offset`, each layer's self-attention cache `self_key_i`, `self_value_i`
  `[B, h, max_length, d_k]`, and the encoder graph's outputs (batch 1: they broadcast over the B
  hypotheses of a beam) -> `logits` `[B, V]`, the caches with this position written
  (`new_self_key_i`, `new_self_value_i`) and the cross-attention weights `cross_weights`
  `[B, layers, h, S]` of this position (for the attention map).

The greedy and beam loops stay outside the graphs, in the page's JavaScript; `OnnxTranslator` is the
same loops in Python, to test the graphs against Keras (`greedy_loop`, `beam_loop`) before a browser
runs them. Weight matrices are stored as int8 with one float scale per column (`quantize_weights`):
four times smaller. The export runs the int8 graphs on the manifest's reference sentences: where
they choose other ids than the Keras model, the Keras model itself must find the two tokens where
the translations part a near tie (`keras_margin` at most `NEAR_TIE`); the manifest then records
both, and the page must reproduce its own graphs' ids.

Needs the optional `web` extra: `pip install "transformer_lib[web]"` (tf2onnx, onnx, onnxruntime).
"""

from __future__ import annotations

import contextlib
import datetime
import gzip
import hashlib
import json
import shutil
from pathlib import Path

import numpy as np

from transformer_lib._checks import require_non_negative_number
from transformer_lib.decoding import NEVER_GENERATED, length_penalty
from transformer_lib.json_records import write_json
from transformer_lib.tokenizer import END_ID, PAD_ID, START_ID

ENCODER, STEP, MANIFEST, PIECES = "encoder.onnx", "decoder_step.onnx", "manifest.json", "target_pieces.json"
PUBLISHED = "book_static/translator"  # in the course repository: what the book's site publishes
OPSET = 17
# Everyday sentences whose ids the page must reproduce (chapter 8's examples and a few more).
REFERENCE_SENTENCES = (
    "Где находится ближайшая станция метро?",
    "Сколько это стоит?",
    "Белый хлеб, пожалуйста.",
    "Мы опоздали на поезд.",
    "Я не знаю, что сказать.",
    "Завтра будет холодно.",
    "Она читает книгу в парке.",
    "Шварценеггер приехал во Владивосток.",
)
# How much better (in nats) the Keras model may find its own choice than the int8 graphs' for the export to
# keep them: int8 weights move the logits by a few hundredths, which tips only choices that were that close.
NEAR_TIE = 0.1


def _require_web_extra():
    try:
        import onnx  # noqa: F401
        import onnxruntime  # noqa: F401
        import tf2onnx  # noqa: F401
    except ImportError as error:
        raise ImportError(f"Exporting for the browser needs tf2onnx, onnx and onnxruntime ({error.name} is missing): "
                          'pip install "transformer_lib[web]".') from None


def decoding_graphs(model, max_length: int):
    """The two `tf.function`s that become the ONNX graphs (see the module's docstring), with their
    input signatures: `(encoder, step)`. Both call the model's own layers."""
    import tensorflow as tf

    layers = model.decoder.stack_layers
    attention = layers[0].self_attention
    heads, d_k = attention.num_heads, attention.d_k

    @tf.function(input_signature=[tf.TensorSpec([1, None], tf.int32, name="source_ids")])
    def encoder(source_ids):
        _, (source_kv, mask) = model.decoder.start_cache(model.encoder(source_ids, training=False), source_ids, 1)
        outputs = {"source_mask": mask}
        for i, (keys, values) in enumerate(source_kv):
            outputs[f"cross_key_{i}"], outputs[f"cross_value_{i}"] = keys, values
        return outputs

    cache = tf.TensorSpec([None, heads, max_length, d_k], tf.float32)
    cross = tf.TensorSpec([1, heads, None, d_k], tf.float32)
    signature = [tf.TensorSpec([None, 1], tf.int32, name="token"), tf.TensorSpec([], tf.int32, name="offset"),
                 *[tf.TensorSpec(spec.shape, spec.dtype, name=f"{kind}_{part}_{i}")
                   for kind, spec in (("self", cache), ("cross", cross)) for i in range(len(layers))
                   for part in ("key", "value")],
                 tf.TensorSpec([1, 1, 1, None], tf.float32, name="source_mask")]

    @tf.function(input_signature=signature)
    def step(token, offset, *tensors):
        count = len(layers)
        caches = [tensors[2 * i: 2 * i + 2] for i in range(count)]
        source_kv = [tensors[2 * count + 2 * i: 2 * count + 2 * i + 2] for i in range(count)]
        mask = tensors[4 * count]
        x = model.decoder.embedding(token, offset=offset)  # Decoder.step, keeping each layer's cross weights
        outputs, weights = {}, []
        for i, (layer, cache, kv) in enumerate(zip(layers, caches, source_kv)):
            x, (keys, values), cross_weights = layer.step(x, offset, cache, kv, mask)
            outputs[f"new_self_key_{i}"], outputs[f"new_self_value_{i}"] = keys, values
            weights.append(cross_weights[:, :, 0])  # (B, h, S)
        outputs["logits"] = model.project(model.decoder.finish(x))[:, -1]  # (B, V)
        outputs["cross_weights"] = tf.stack(weights, axis=1)  # (B, layers, h, S)
        return outputs

    return encoder, step


@contextlib.contextmanager
def _without_reshape_optimizer():
    """tf2onnx 1.17's `reshape_optimizer` merges a Dense layer's reshape with `split_heads`' into one
    wrong Reshape; convert without it."""
    from tf2onnx import optimizer

    saved = dict(optimizer._optimizers)
    optimizer._optimizers.pop("reshape_optimizer", None)
    try:
        yield
    finally:
        optimizer._optimizers.clear()
        optimizer._optimizers.update(saved)


def to_onnx(function):
    """The ONNX `ModelProto` of a `tf.function` with an input signature."""
    import tf2onnx

    with _without_reshape_optimizer():
        proto, _ = tf2onnx.convert.from_function(function, input_signature=function.input_signature, opset=OPSET)
    return proto


def quantize_weights(proto, min_elements: int = 4096):
    """`proto` with every float32 weight matrix of at least `min_elements` entries stored as int8,
    one scale per column (per row for a table that a `Gather` reads: an embedding, one scale per
    token), and a `DequantizeLinear` node that turns it back into float32 when the graph loads.

    Per column: scale_j = max_i |W_ij| / 127, q_ij = round(W_ij / scale_j), so each column keeps
    its own range (a single scale for the whole matrix would flatten the small columns to 0).
    A matrix that multiplies is first balanced by rows: W = diag(r) W' with r_i = sqrt(max_j |W_ij|),
    W' quantized per column, and a `Mul` by r after the dequantization. One large row then no longer
    sets the scale of every column it crosses (measured on chapter 7's translator: on 68 sentences
    the int8 graphs gave Keras's greedy ids for 64 instead of 63, and its ids on all 8 references
    instead of 7; a float16 output layer gave 66, but the page's first download then passed 10 MB)."""
    from onnx import helper, numpy_helper

    graph = proto.graph
    readers = {}
    for node in graph.node:
        for name in node.input:
            readers.setdefault(name, set()).add(node.op_type)
    kept, added_nodes = [], []
    for tensor in graph.initializer:
        weights = numpy_helper.to_array(tensor)
        if weights.dtype != np.float32 or weights.ndim != 2 or weights.size < min_elements:
            kept.append(tensor)
            continue
        axis = 0 if "Gather" in readers.get(tensor.name, ()) else 1
        balanced = axis == 1  # a matrix that multiplies: its rows are balanced first
        if balanced:
            rows = np.sqrt(np.abs(weights).max(axis=1))
            rows = np.where(rows > 0, rows, 1.0).astype(np.float32)[:, None]
            weights = weights / rows
        scale = np.abs(weights).max(axis=1 - axis) / 127.0
        scale = np.where(scale > 0, scale, 1.0).astype(np.float32)
        shaped = scale[:, None] if axis == 0 else scale[None, :]
        quantized = np.clip(np.round(weights / shaped), -127, 127).astype(np.int8)
        kept += [numpy_helper.from_array(quantized, f"{tensor.name}/int8"),
                 numpy_helper.from_array(scale, f"{tensor.name}/scale")]
        dequantized = f"{tensor.name}/balanced" if balanced else tensor.name
        added_nodes.append(helper.make_node("DequantizeLinear", [f"{tensor.name}/int8", f"{tensor.name}/scale"],
                                            [dequantized], axis=axis, name=f"{tensor.name}/dequantize"))
        if balanced:  # then back to W: one Mul by the rows' factors, folded when the graph loads
            kept.append(numpy_helper.from_array(rows, f"{tensor.name}/rows"))
            added_nodes.append(helper.make_node("Mul", [dequantized, f"{tensor.name}/rows"], [tensor.name],
                                                name=f"{tensor.name}/unbalance"))
    del graph.initializer[:]
    graph.initializer.extend(kept)
    nodes = added_nodes + list(graph.node)  # the dequantized weights first: the graph stays in topological order
    del graph.node[:]
    graph.node.extend(nodes)
    return proto


class OnnxTranslator:
    """The exported graphs with the greedy and beam loops around them, in Python and NumPy: the
    same algorithm as `decoding.greedy_loop` and `decoding.beam_loop` for one sentence, and as the
    page's JavaScript. `directory` holds `encoder.onnx` and `decoder_step.onnx` and the manifest, or
    `manifest` gives its `max_length` and `model` sizes (the export, before it writes the manifest)."""

    def __init__(self, directory: str | Path, manifest: dict | None = None):
        import onnxruntime

        directory = Path(directory)
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

    For greedy search this is the very choice that went the other way (so it is >= 0). A beam search
    weighs whole hypotheses, and a small gap where the two part says that the model found both
    continuations about as likely there; a broken graph parts from it at tokens the model finds far
    apart. A small margin is a near tie, which int8 weights may tip either way."""
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
    from transformer_lib.decoding import beam_search, greedy_decode

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


def published_folder(start: str | Path | None = None) -> Path | None:
    """The course's `book_static/translator/` (the translator its published page loads) when this runs
    inside a clone of the course, looked for from `start` (default: the current folder) upwards;
    None elsewhere (a fresh Colab runtime), where there is no published folder to write into."""
    from transformer_lib.course_files import local_course_file

    manifest = local_course_file(f"{PUBLISHED}/{MANIFEST}", start)
    return None if manifest is None else manifest.parent


def _sizes(model) -> dict:
    """The model's sizes that the page's loops need (the caches' shapes, the vocabularies)."""
    attention = model.decoder.stack_layers[0].self_attention
    return {"num_layers": len(model.decoder.stack_layers), "num_heads": attention.num_heads, "d_k": attention.d_k,
            "d_model": model.hyperparameters["d_model"], "source_vocab_size": model.hyperparameters["input_vocab_size"],
            "target_vocab_size": model.hyperparameters["target_vocab_size"]}


def _file_entry(path: Path) -> dict:
    """A file's size, its size as a server sends it compressed (gzip), and its sha256 (the page checks it)."""
    data = path.read_bytes()
    return {"bytes": len(data), "gzip_bytes": len(gzip.compress(data, 9)), "sha256": hashlib.sha256(data).hexdigest()}


def export_web(model_dir: str | Path, out: str | Path, references=REFERENCE_SENTENCES, quantize: bool = True,
               about: dict | None = None, beam_alpha: float | None = None, tie: float = NEAR_TIE) -> dict:
    """Write the browser translator of the saved translator `model_dir` into `out`: the two graphs,
    `source.model`, `target.model`, `target_pieces.json` (the pieces by id) and `manifest.json` (sizes,
    file sizes and sums, and for each of `references` its source ids and the exported graphs' greedy
    and beam-4 ids, which the page must reproduce). `about`: what the page says of the model (e.g. its
    run and test BLEU), stored as is. `beam_alpha`: the length penalty the page's beam search uses
    (default: the saved translator's `alpha`; chapter 8 chooses it on the validation split). Returns the manifest.

    The files are written into a folder beside `out` first, and the graphs run there in onnxruntime
    (`OnnxTranslator`) on every reference, greedy and beam 4, beside the Keras model. int8 weights can
    tip a close choice: where the graphs' ids differ from the Keras model's, the Keras model's own
    `keras_margin` between the two must be at most `tie` nats; the manifest's row then keeps the Keras
    translation as well (`keras_greedy`, `keras_greedy_ids`; `keras_beam4`, ...) and its `near_ties`
    lists each such case with its margin. A larger difference is not a near tie but a broken export:
    it fails and says so, and `out` is left as it was, rather than publish a translator that disagrees
    with the book (`tie=0`: any difference fails). Only a checked export replaces `out`'s files."""
    _require_web_extra()
    if beam_alpha is not None:
        require_non_negative_number("beam_alpha", beam_alpha)
    require_non_negative_number("tie", tie)
    from transformer_lib.export import load_translator

    translator = load_translator(model_dir)
    beam_alpha = translator.alpha if beam_alpha is None else beam_alpha
    final = Path(out)
    final.parent.mkdir(parents=True, exist_ok=True)
    out = final.parent / f".{final.name}.export"  # the new files, until they pass the check below
    shutil.rmtree(out, ignore_errors=True)
    out.mkdir()
    try:
        manifest = _write_and_check(translator, model_dir, out, references, quantize, about, beam_alpha, tie)
    except BaseException:
        shutil.rmtree(out, ignore_errors=True)
        raise
    final.mkdir(exist_ok=True)
    for name in [*manifest["files"], MANIFEST]:
        (out / name).replace(final / name)
    shutil.rmtree(out)
    return manifest


def _write_and_check(translator, model_dir, out: Path, references, quantize: bool, about, beam_alpha,
                     tie: float) -> dict:
    """`export_web`'s files in `out`, checked against the Keras model's ids; returns the manifest."""
    import onnx

    model, max_length = translator.model, translator.max_length
    encoder, step = decoding_graphs(model, max_length)
    for name, function in ((ENCODER, encoder), (STEP, step)):
        proto = to_onnx(function)
        onnx.save(quantize_weights(proto) if quantize else proto, out / name)
    for side in ("source", "target"):
        shutil.copyfile(Path(model_dir) / f"{side}.model", out / f"{side}.model")
    # every target piece by id, for the attention map's labels (the page's SentencePiece has no id_to_piece)
    processor = translator.target_tokenizer.processor
    pieces = [processor.id_to_piece(i) for i in range(translator.target_tokenizer.vocab_size)]
    (out / PIECES).write_text(json.dumps(pieces, ensure_ascii=False) + "\n", encoding="utf-8")

    decode = translator.target_tokenizer.decode
    onnx_translator = OnnxTranslator(out, {"max_length": max_length, "model": _sizes(model)})  # before the manifest
    rows, near_ties, broken = [], [], []
    for text in references:
        source_ids = [int(i) for i in translator.encode_sources([text])[0]]
        row = {"text": text, "source_ids": source_ids}
        for key, beam_size in (("greedy", 1), ("beam4", 4)):
            keras = keras_ids(translator, text, beam_size, beam_alpha)
            page = (onnx_translator.greedy(source_ids) if beam_size == 1
                    else onnx_translator.beam(source_ids, beam_size, beam_alpha))
            row[f"{key}_ids"], row[key] = page, decode([page])[0]
            if page != keras:
                row[f"keras_{key}_ids"], row[f"keras_{key}"] = keras, decode([keras])[0]
                margin = keras_margin(translator, source_ids, keras, page)
                case = {"text": text, "search": key, "keras": row[f"keras_{key}"], "page": row[key],
                        "margin": round(margin, 4)}
                (near_ties if margin <= tie else broken).append(case)
        rows.append(row)
    if broken:
        first = broken[0]
        raise ValueError(
            f"The exported graphs translate {len({case['text'] for case in broken})} of {len(rows)} reference "
            f"sentences differently from the Keras model, and not by a near tie (first: {first['text']!r}, "
            f"{first['search']}: Keras {first['keras']!r}, the graphs {first['page']!r}; the Keras model prefers "
            f"its own by {first['margin']:.3f} nats, more than tie={tie})"
            + ("; export with quantize=False (--float32) to keep the float weights." if quantize else "."))
    files = [ENCODER, STEP, "source.model", "target.model", PIECES]
    manifest = {
        "format": 1, "written": datetime.date.today().isoformat(), "model_dir": Path(model_dir).name,
        "about": about or {},
        "max_length": max_length, "beam_alpha": float(beam_alpha),
        "model": _sizes(model),
        "ids": {"pad": PAD_ID, "start": START_ID, "end": END_ID, "never_generated": list(NEVER_GENERATED)},
        "source_script": translator.source_script,  # as Unicode names it ("CYRILLIC"): warn about text without it
        "weights": "int8, one scale per column (DequantizeLinear)" if quantize else "float32",
        "files": {name: _file_entry(out / name) for name in files},
        "references": rows,
        "near_tie_nats": tie, "near_ties": near_ties,  # where the graphs chose otherwise than Keras, and by how little
    }
    write_json(out / MANIFEST, manifest, indent=1)  # whole or not at all: the page reads it first
    return manifest
