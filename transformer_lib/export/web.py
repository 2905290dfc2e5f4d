"""A saved translator for the browser: its model as two ONNX graphs that onnxruntime-web runs in
the reader's page, with the two SentencePiece models and a manifest (chapter 8's translation box
on the published book).

    python -m transformer_lib export-web --model RUN --out DIR

The export is in four modules: `graphs` traces the library's own layers into the two ONNX graphs
(`encoder.onnx`, once per sentence; `decoder_step.onnx`, once per generated token, with chapter 8's
key/value cache), `quantize` stores their weights as int8, `onnx_translator` runs them in Python
against the Keras model, and this one writes and checks the folder the page loads.

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

import datetime
import gzip
import hashlib
import json
import shutil
from pathlib import Path

from transformer_lib.data.tokenizer import END_ID, NEVER_GENERATED, PAD_ID, START_ID
from transformer_lib.export.graphs import ENCODER, MANIFEST, PIECES, STEP, decoding_graphs, require_web_extra, to_onnx
from transformer_lib.export.onnx_translator import (  # noqa: F401 (agreement, margins: the chapters' and tests' web.X)
    OnnxTranslator,
    agreement,
    keras_ids,
    keras_margin,
    margins,
)
from transformer_lib.export.quantize import quantize_weights
from transformer_lib.utils.checks import require_non_negative_number
from transformer_lib.utils.json_records import write_json

PUBLISHED = "book_static/translator"  # in the course repository: what the book's site publishes
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
# How much better (in nats) the Keras model may find its own token than the int8 graphs' where their translations
# part (`keras_margin`) for the export to keep them: greedy choices that int8 weights tip are that close. A beam
# search ranks whole hypotheses, and a tipped tie of two totals can part at tokens further apart, so for beam
# search this limit is stricter than a near tie (see `keras_margin`).
NEAR_TIE = 0.1


def _sizes(model) -> dict:
    """The model's sizes that the page's loops need (the caches' shapes, the vocabularies)."""
    attention = model.decoder.stack_layers[0].self_attention
    return {"num_layers": len(model.decoder.stack_layers), "num_heads": attention.num_heads, "d_k": attention.d_k,
            "d_model": model.config.d_model, "source_vocab_size": model.config.input_vocab_size,
            "target_vocab_size": model.config.target_vocab_size}


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
    require_web_extra()
    if beam_alpha is not None:
        require_non_negative_number("beam_alpha", beam_alpha)
    require_non_negative_number("tie", tie)
    from transformer_lib.export.saved_model import load_translator

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
