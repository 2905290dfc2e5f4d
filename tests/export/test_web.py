"""The browser translator (`transformer_lib.export.web`): the exported ONNX graphs, run by onnxruntime with
the greedy and beam loops the page uses, against the Keras model they come from."""

import json
from pathlib import Path

import numpy as np
import pytest

pytest.importorskip("tf2onnx", reason="the web extra (tf2onnx, onnx, onnxruntime) is not installed")

import transformer_lib as tl
from transformer_lib.export import web
from transformer_lib.decoding.search import beam_search, greedy_decode
from transformer_lib.export.saved_model import load_translator, save_translator
from transformer_lib.data.tokenizer import END_ID, START_ID

# held-out numbers of the synthetic task (Russian words), long and short
SENTENCES = [source for source, _ in tl.load_parallel_corpus("synthetic", "test")[:12]]


@pytest.fixture(scope="module")
def exported(trained_tiny, tmp_path_factory):
    """The tiny translator exported twice: float32 weights and int8 weights."""
    out = {}
    for kind, quantize in (("float32", False), ("int8", True)):
        folder = tmp_path_factory.mktemp(kind)
        manifest = web.export_web(trained_tiny, folder, references=SENTENCES[:4], quantize=quantize,
                                  about={"run": "tiny synthetic"})
        out[kind] = (folder, manifest)
    return out


@pytest.fixture(scope="module")
def keras_translator(trained_tiny):
    return load_translator(trained_tiny)


def through_end(ids):
    ids = [int(i) for i in ids]
    return ids[: ids.index(END_ID) + 1] if END_ID in ids else ids


def test_step_logits_along_the_greedy_path_equal_a_full_keras_pass(exported, keras_translator):
    """At every position of the greedy translation, the step graph's logits are those of the whole
    Keras model run on the prefix (no cache: an independent path through the same weights)."""
    onnx_translator = web.OnnxTranslator(exported["float32"][0])
    model = keras_translator.model
    for text in SENTENCES[:3]:
        source_ids = keras_translator.encode_sources([text])
        ids = onnx_translator.greedy(source_ids[0])
        source, caches = onnx_translator.start(source_ids[0]), onnx_translator.empty_caches(1)
        prefix = [START_ID, *ids[:-1]]
        full = np.asarray(model((source_ids, np.array([prefix], np.int32)), training=False))[0]  # (len, vocab)
        for t, token in enumerate(prefix):
            logits, caches, _ = onnx_translator.run_step([token], t, caches, source)
            np.testing.assert_allclose(logits[0], full[t], atol=1e-4)


@pytest.mark.parametrize("kind", ["float32", "int8"])
def test_greedy_and_beam_ids_equal_the_keras_models(exported, keras_translator, kind):
    onnx_translator = web.OnnxTranslator(exported[kind][0])
    model, max_length = keras_translator.model, keras_translator.max_length
    for text in SENTENCES:
        source_ids = keras_translator.encode_sources([text])
        assert onnx_translator.greedy(source_ids[0]) == through_end(greedy_decode(model, source_ids, max_length)[0]), text
        for beam_size in (2, 4):
            expected = through_end(beam_search(model, source_ids, beam_size, 0.6, max_length)[0])
            assert onnx_translator.beam(source_ids[0], beam_size, 0.6) == expected, (text, beam_size)


def test_the_cross_attention_weights_are_those_chapter_8_draws(exported, keras_translator):
    onnx_translator = web.OnnxTranslator(exported["float32"][0])
    text = SENTENCES[0]
    source_ids = keras_translator.encode_sources([text])[0]
    ids = onnx_translator.greedy(source_ids)
    source, caches, rows = onnx_translator.start(source_ids), onnx_translator.empty_caches(1), []
    for t, token in enumerate([START_ID, *ids[:-1]]):
        _, caches, weights = onnx_translator.run_step([token], t, caches, source)
        rows.append(weights[0])  # (layers, heads, source_len)
    translation = keras_translator.target_tokenizer.decode([ids])[0]
    expected = keras_translator.attention_weights(text, translation)["weights"]  # (layers, heads, tgt, src)
    np.testing.assert_allclose(np.stack(rows, axis=2), expected, atol=1e-5)
    np.testing.assert_allclose(np.stack(rows).sum(-1), 1.0, atol=1e-5)


def test_the_manifest_holds_what_the_page_needs(exported, keras_translator, trained_tiny):
    folder, manifest = exported["int8"]
    assert json.loads((folder / "manifest.json").read_text()) == manifest
    assert manifest["max_length"] == keras_translator.max_length and manifest["about"] == {"run": "tiny synthetic"}
    assert manifest["model"]["target_vocab_size"] == keras_translator.target_tokenizer.vocab_size
    for name, entry in manifest["files"].items():
        data = (folder / name).read_bytes()
        assert entry["bytes"] == len(data) and len(entry["sha256"]) == 64
    for side in ("source", "target"):  # the page tokenizes with the very SentencePiece models of the run
        assert (folder / f"{side}.model").read_bytes() == (trained_tiny / f"{side}.model").read_bytes()
    for row in manifest["references"]:
        assert row["source_ids"] == [int(i) for i in keras_translator.encode_sources([row["text"]])[0]]
        for key, beam_size in (("greedy", 1), ("beam4", 4)):  # the Keras translation, or a recorded near tie
            assert row.get(f"keras_{key}", row[key]) == keras_translator(row["text"], beam_size=beam_size)
        assert row["greedy_ids"][-1] == END_ID
    assert manifest["near_ties"] == [] and manifest["near_tie_nats"] == web.NEAR_TIE  # none on these sentences
    # int8 weights: about a quarter of the float graphs' bytes
    floats = exported["float32"][1]["files"]
    for name in (web.ENCODER, web.STEP):
        assert manifest["files"][name]["bytes"] < 0.45 * floats[name]["bytes"]


def test_quantized_weights_keep_each_columns_own_range():
    from onnx import TensorProto, helper, numpy_helper

    rng = np.random.default_rng(0)
    weights = rng.normal(size=(64, 96)).astype(np.float32)
    weights[:, 0] *= 1e-3  # a column of small numbers: one scale for the whole matrix would round it to 0
    weights[:, 1] = 0.0
    weights[3, :] *= 20.0  # one large row: without balancing, it would set every column's scale
    table = rng.normal(size=(100, 64)).astype(np.float32)
    graph = helper.make_graph(
        [helper.make_node("MatMul", ["x", "w"], ["y"]), helper.make_node("Gather", ["table", "ids"], ["rows"])],
        "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 64]),
              helper.make_tensor_value_info("ids", TensorProto.INT64, [3])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 96]),
         helper.make_tensor_value_info("rows", TensorProto.FLOAT, [3, 64])],
        initializer=[numpy_helper.from_array(weights, "w"), numpy_helper.from_array(table, "table")])
    proto = web.quantize_weights(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)]))
    stored = {tensor.name: numpy_helper.to_array(tensor) for tensor in proto.graph.initializer}
    assert stored["w/int8"].dtype == np.int8 and stored["w/scale"].shape == (96,) and stored["w/rows"].shape == (64, 1)
    assert stored["table/scale"].shape == (100,) and "table/rows" not in stored  # Gather: one scale per row (token)
    # the stored numbers, written out: W ≈ rows * (int8 * column scale)
    restored = stored["w/rows"] * (stored["w/int8"] * stored["w/scale"][None, :])
    # each entry within half a step of its own row and column (the small column included)
    assert np.all(np.abs(restored - weights) <= stored["w/rows"] * stored["w/scale"][None, :] / 2 + 1e-6)
    assert np.abs(restored[:, 0] - weights[:, 0]).max() < 0.01 * np.abs(weights[:, 0]).max()  # 1% of its range
    assert np.all(restored[:, 1] == 0)
    # balancing pays: the error of the other rows is smaller than with the large row setting each column's scale
    plain = np.maximum(np.abs(weights).max(axis=0), 1e-30) / 127  # (column 1 is all zeros)
    plain_error = np.abs(np.round(weights / plain) * plain - weights)
    others = np.arange(64) != 3
    assert np.abs(restored - weights)[others].mean() < 0.5 * plain_error[others].mean()
    import onnxruntime

    options = onnxruntime.SessionOptions()
    options.add_session_config_entry("session.disable_quant_qdq", "1")  # as the page runs it
    session = onnxruntime.InferenceSession(proto.SerializeToString(), options)
    x, ids = rng.normal(size=(1, 64)).astype(np.float32), np.array([0, 5, 99])
    y, rows = session.run(None, {"x": x, "ids": ids})
    np.testing.assert_allclose(y, x @ restored, rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(rows, (stored["table/int8"] * stored["table/scale"][:, None])[ids], atol=1e-6)


def test_an_export_that_disagrees_with_keras_is_refused_and_leaves_the_folder_as_it_was(trained_tiny, tmp_path,
                                                                                       monkeypatch):
    page = tmp_path / "page"
    web.export_web(trained_tiny, page, references=SENTENCES[:1], quantize=False)  # a good export, published
    before = {path.name: path.read_bytes() for path in page.iterdir()}
    monkeypatch.setattr(web.OnnxTranslator, "beam", lambda self, ids, k, alpha: [5, END_ID])
    with pytest.raises(ValueError, match=r"translate 2 of 2 reference sentences differently.*--float32"):
        web.export_web(trained_tiny, page, references=SENTENCES[:2])
    assert {path.name: path.read_bytes() for path in page.iterdir()} == before  # not a byte of the refused one
    assert [path.name for path in tmp_path.iterdir()] == ["page"]  # and nothing of it beside the folder


def test_keras_margin_is_the_models_own_gap_where_the_two_translations_part(keras_translator):
    model = keras_translator.model
    source_ids = [int(i) for i in keras_translator.encode_sources([SENTENCES[0]])[0]]
    greedy = through_end(greedy_decode(model, np.array([source_ids]), keras_translator.max_length)[0])
    # the runner-up at the second position, then END: the margin is the gap between the two logits there
    # (log-probabilities differ by what the logits differ by), read from the model run on that prefix alone
    logits = np.asarray(model((np.array([source_ids], np.int32), np.array([[START_ID, greedy[0]]], np.int32)),
                              training=False), np.float64)[0, 1]
    logits[[0, START_ID]] = -np.inf  # never generated: PAD (0) and START
    runner_up = int(np.argsort(-logits)[1])
    other = [greedy[0], runner_up, END_ID]
    margin = web.keras_margin(keras_translator, source_ids, greedy, other)
    assert margin == pytest.approx(logits[greedy[1]] - logits[runner_up], abs=1e-4) and margin >= 0
    assert web.keras_margin(keras_translator, source_ids, other, greedy) == pytest.approx(-margin, abs=1e-5)
    assert web.keras_margin(keras_translator, source_ids, greedy, greedy) == 0.0
    with pytest.raises(ValueError, match="one is a prefix of the other"):
        web.keras_margin(keras_translator, source_ids, greedy, greedy[:-1])


def test_a_near_tie_is_published_with_both_translations_and_a_wider_gap_is_refused(trained_tiny, tmp_path,
                                                                                    monkeypatch):
    """Where int8 weights tip a choice the model itself finds close, the page keeps its own ids (it must
    reproduce them) and the manifest the Keras translation beside them; beyond `tie`, the export fails."""
    keras = load_translator(trained_tiny)
    monkeypatch.setattr(web.OnnxTranslator, "beam", lambda self, ids, k, alpha: [5, END_ID])
    monkeypatch.setattr(web, "keras_margin", lambda *args: 0.04)  # as if the model found [5, END] almost as good
    manifest = web.export_web(trained_tiny, tmp_path / "page", references=SENTENCES[:2])
    text = SENTENCES[0]
    row = manifest["references"][0]
    assert row["beam4_ids"] == [5, END_ID] and row["beam4"] == keras.target_tokenizer.decode([[5, END_ID]])[0]
    assert row["keras_beam4"] == keras(text, beam_size=4) and row["keras_beam4_ids"] == through_end(
        beam_search(keras.model, keras.encode_sources([text]), 4, keras.alpha, keras.max_length)[0])
    assert "keras_greedy" not in row  # greedy agreed
    assert manifest["near_ties"][0] == {"text": text, "search": "beam4", "keras": row["keras_beam4"],
                                        "page": row["beam4"], "margin": 0.04}
    assert len(manifest["near_ties"]) == 2
    assert json.loads((tmp_path / "page" / web.MANIFEST).read_text())["near_ties"] == manifest["near_ties"]
    with pytest.raises(ValueError, match=r"2 of 2 reference sentences differently.*not by a near tie.*0\.040 nats, "
                                         r"more than tie=0\.03"):
        web.export_web(trained_tiny, tmp_path / "strict", references=SENTENCES[:2], tie=0.03)
    assert sorted(path.name for path in tmp_path.iterdir()) == ["page"]  # nothing of the refused export


def test_without_the_web_extra_the_export_says_what_to_install(monkeypatch, tmp_path, trained_tiny):
    import builtins

    real_import = builtins.__import__

    def no_tf2onnx(name, *args, **kwargs):
        if name == "tf2onnx":
            raise ImportError("No module named 'tf2onnx'", name="tf2onnx")
        return real_import(name, *args, **kwargs)

    monkeypatch.setattr(builtins, "__import__", no_tf2onnx)
    with pytest.raises(ImportError, match=r'tf2onnx is missing.*pip install "transformer_lib\[web\]"'):
        web.export_web(trained_tiny, tmp_path)


def test_a_folder_without_a_translator_is_refused(tmp_path):
    with pytest.raises(FileNotFoundError, match="not a saved translator"):
        web.export_web(tmp_path / "nothing", tmp_path / "out")


def test_the_command_line_exports_and_reports_bad_options(trained_tiny, tmp_path, capsys):
    from transformer_lib.__main__ import main

    (tmp_path / "refs.txt").write_text(f"{SENTENCES[0]}\n\n{SENTENCES[1]}\n", encoding="utf-8")
    manifest = main(["export-web", "--model", str(trained_tiny), "--out", str(tmp_path / "page"),
                     "--references", str(tmp_path / "refs.txt"), "--about", '{"run": "tiny"}'])
    assert manifest["about"] == {"run": "tiny"} and (tmp_path / "page" / web.STEP).is_file()
    assert [row["text"] for row in manifest["references"]] == SENTENCES[:2]  # the blank line is no sentence
    assert "reference sentences checked against the model" in capsys.readouterr().out
    with pytest.raises(SystemExit) as stop:
        main(["export-web", "--model", str(trained_tiny), "--out", str(tmp_path / "x"), "--tie", "-1"])
    assert stop.value.code == 2 and "--tie" in capsys.readouterr().err
    with pytest.raises(SystemExit) as stop:
        main(["export-web", "--model", str(trained_tiny), "--out", str(tmp_path / "x"), "--about", "{run}"])
    assert stop.value.code == 2 and "--about is not JSON" in capsys.readouterr().err


def test_the_published_translator_is_chapter_8s_and_whole():
    # Issue #43: chapter 8's full run exports chapter 7's translator into book_static/translator (committed,
    # at most 8 MB); the page says which run it is and its test BLEU, which must be chapter 8's stored score.
    import hashlib
    import re

    import nbformat

    root = Path(__file__).resolve().parents[2]
    folder = root / "book_static" / "translator"
    manifest = json.loads((folder / "manifest.json").read_text(encoding="utf-8"))
    notebook = nbformat.read(root / "chapters" / "08_translating.ipynb", as_version=4)
    text = "".join(output.get("text", "") + output.get("data", {}).get("text/plain", "")
                   for cell in notebook.cells if cell.cell_type == "code" for output in cell.outputs)
    stored = re.search(r"^beam 4(?:, alpha [\d.]+)?\s+BLEU\s+([\d.]+)", text, re.M)
    assert stored and manifest["about"]["test_bleu"] == float(stored.group(1))
    assert manifest["about"]["run"] in text  # the widget's line, printed by the export cell
    total = 0
    for name, entry in manifest["files"].items():
        data = (folder / name).read_bytes()
        assert len(data) == entry["bytes"] and hashlib.sha256(data).hexdigest() == entry["sha256"], name
        total += len(data)
    assert total + (folder / "manifest.json").stat().st_size <= 8_000_000
    assert len(manifest["references"]) == 8 and all(row["greedy_ids"] and row["beam4_ids"] for row in manifest["references"])


def test_agreement_counts_sentences_whose_page_ids_equal_keras_ids(exported, keras_translator, monkeypatch):
    folder = exported["int8"][0]
    for beam_size in (1, 4):
        assert web.agreement(keras_translator, folder, SENTENCES[:3], beam_size) == [True] * 3  # see the test above
    monkeypatch.setattr(web.OnnxTranslator, "beam", lambda self, ids, k, alpha: [5, END_ID])
    assert web.agreement(keras_translator, folder, SENTENCES[:3], 4) == [False] * 3
    assert web.agreement(keras_translator, folder, SENTENCES[:3], 1) == [True] * 3
    found = web.margins(keras_translator, folder, SENTENCES[:3], 4)  # where they differ: by how much, for Keras
    for text, margin in zip(SENTENCES[:3], found):
        source_ids = [int(i) for i in keras_translator.encode_sources([text])[0]]
        keras = web.keras_ids(keras_translator, text, 4)
        assert margin == web.keras_margin(keras_translator, source_ids, keras, [5, END_ID])
    assert web.margins(keras_translator, folder, SENTENCES[:3], 1) == [None] * 3


def test_the_page_searches_with_the_length_penalty_it_was_exported_with(trained_tiny, tmp_path, monkeypatch):
    """beam_alpha goes into the manifest, and both the Keras references and the check of the exported
    graphs search with it (the tiny model is too sure of itself for alpha to change its choices, so the
    searches are watched)."""
    import transformer_lib.decoding.search as decoding

    alphas = []
    keras_beam, onnx_beam = decoding.beam_search, web.OnnxTranslator.beam
    monkeypatch.setattr(decoding, "beam_search", lambda model, ids, k, alpha, *rest: alphas.append(("keras", alpha))
                        or keras_beam(model, ids, k, alpha, *rest))
    monkeypatch.setattr(web.OnnxTranslator, "beam", lambda self, ids, k, alpha: alphas.append(("onnx", alpha))
                        or onnx_beam(self, ids, k, alpha))
    manifest = web.export_web(trained_tiny, tmp_path, references=SENTENCES[:2], quantize=False, beam_alpha=1.5)
    assert manifest["beam_alpha"] == 1.5
    assert sorted(alphas) == [("keras", 1.5)] * 2 + [("onnx", 1.5)] * 2
    with pytest.raises(ValueError, match="beam_alpha"):
        web.export_web(trained_tiny, tmp_path / "negative", references=SENTENCES[:1], beam_alpha=-0.5)


def test_without_beam_alpha_the_export_searches_with_the_saved_translators_alpha(trained_tiny, tmp_path):
    saved = load_translator(trained_tiny)
    saved.alpha = 1.25
    copy = tmp_path / "translator"
    save_translator(saved, copy)
    assert web.export_web(copy, tmp_path / "page", references=SENTENCES[:1], quantize=False)["beam_alpha"] == 1.25


def test_the_page_translates_and_scores_like_a_translator(exported, keras_translator):
    """Called like a Translator, the float32 graphs give the Keras translator's texts (greedy and beam), cut a
    too long text as it does, and evaluate_bleu scores them to the same BLEU."""
    page = web.OnnxTranslator(exported["float32"][0])
    assert page(SENTENCES, beam_size=1) == keras_translator(SENTENCES, beam_size=1)
    assert page(SENTENCES[0], beam_size=4, alpha=0.6) == keras_translator(SENTENCES[0], beam_size=4, alpha=0.6)
    long_text = " ".join(SENTENCES * 4)
    with pytest.warns(UserWarning, match="cut to fit") as caught:
        cut = page(long_text, beam_size=1)
    assert caught[0].filename == __file__  # the warning names the caller's line
    with pytest.warns(UserWarning, match="cut to fit"):
        assert cut == keras_translator(long_text, beam_size=1)
    pairs = tl.load_parallel_corpus("synthetic", "test")[:12]
    ours, theirs = (tl.evaluate_bleu(t, pairs, beam_size=4, alpha=0.6, verbose=False) for t in (page, keras_translator))
    assert ours["translations"] == theirs["translations"] and ours["bleu"] == pytest.approx(theirs["bleu"])
