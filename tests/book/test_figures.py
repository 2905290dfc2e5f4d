"""The interactive figures (transformer_lib/book/figures/): valid Vega-Lite v5 with the data inline, the
menus and sliders the book promises, data that match independent references, and HTML that needs
nothing from another host. Whether they draw and respond in a browser: tests/test_site_check.py."""

import html
import json
import re
import subprocess
import sys
import types
from pathlib import Path

import numpy as np
import pytest

altair = pytest.importorskip("altair", reason="transformer_lib.book.figures needs altair: pip install -r requirements.txt")

from transformer_lib.book import figures  # noqa: E402
from transformer_lib.layers.masks import decoder_mask, look_ahead_mask, padding_mask  # noqa: E402

ROOT = Path(__file__).resolve().parents[2]


def random_examples(rng, layers=2, heads=3, sizes=((4, 3), (6, 5))):
    """attention_figure's input for sentences of (source, target) token counts `sizes`: random rows
    that sum to 1."""
    def weights(queries, keys):
        w = rng.random((layers, heads, queries, keys))
        return w / w.sum(-1, keepdims=True)

    return [{"sentence": f"sentence {s}", "source_tokens": [f"s{s}_{i}" for i in range(src)],
             "target_tokens": [f"t{s}_{i}" for i in range(tgt)],
             "weights": {"encoder": weights(src, src), "decoder": weights(tgt, tgt), "cross": weights(tgt, src)}}
            for s, (src, tgt) in enumerate(sizes)]


HISTORY = {"epoch": [1, 2, 3], "loss": [4.1, 3.2, 2.9], "accuracy": [0.2, 0.3, 0.35], "seconds": [9.0, 8.5, 8.7],
           "val_loss": [3.9, 3.4, float("nan")], "val_accuracy": [0.25, 0.31, 0.33], "val_score": [1.5, 4.25, 6.0]}

FIGURES = {
    "positional-encoding": lambda: figures.positional_encoding_figure(),
    "masks": lambda: figures.masks_figure(),
    "schedule": lambda: figures.schedule_figure(),
    "training-curves": lambda: figures.training_curves_figure(HISTORY),
    "attention": lambda: figures.attention_figure(random_examples(np.random.default_rng(0))),
}


def walk(node):
    """Every (key, value) pair of a nested spec."""
    if isinstance(node, dict):
        for key, value in node.items():
            yield key, value
            yield from walk(value)
    elif isinstance(node, list):
        for item in node:
            yield from walk(item)


def records(spec) -> list[dict]:
    """The spec's inline data set (the attention figure's is the one its lookup reads from)."""
    data = spec["data"] if "values" in spec["data"] else spec["transform"][1]["from"]["data"]
    return data["values"]


def params(spec) -> dict:
    return {p["name"]: p for p in spec["params"]}


@pytest.mark.parametrize("name", FIGURES)
def test_every_figure_is_valid_vega_lite_with_its_data_inline_and_its_html_needs_no_other_host(name):
    figure = FIGURES[name]()
    spec = figure.chart.to_dict(validate=True)  # raises on anything the Vega-Lite v5 schema refuses
    assert spec["$schema"].endswith(f"/vega-lite/{altair.SCHEMA_VERSION}.json")
    assert records(spec), "the data must be in the spec"
    assert "url" not in dict(walk(spec)), "data must be inline, never fetched from a URL"
    bundle = figure._repr_mimebundle_()
    assert set(bundle) == {"text/html", "application/vnd.vegalite.v5+json", "text/plain"}
    assert bundle["application/vnd.vegalite.v5+json"] == spec
    assert "\n" not in bundle["text/plain"] and bundle["text/plain"].startswith("Interactive figure")
    page = bundle["text/html"]
    assert page.startswith(f'<div class="vega-figure" data-figure="{name}"') and page.endswith("</div>")
    assert "<script src" not in page and "http" not in page
    stored = re.fullmatch(r'.*<script type="application/json">(.*?)</script>.*', page, re.S).group(1)
    assert json.loads(stored) == {k: v for k, v in spec.items() if k != "$schema"}
    assert page.count("<script") == 1 and "<" not in stored  # nothing in the data can end the script element


def test_no_string_of_the_data_can_close_the_script_element():
    examples = random_examples(np.random.default_rng(0), sizes=((2, 2),))
    examples[0]["source_tokens"] = ["</script><script>alert(1)</script>", "&amp;"]
    page = figures.attention_figure(examples).to_html()
    assert page.count("</script>") == 1
    stored = re.search(r'<script type="application/json">(.*?)</script>', page, re.S).group(1)
    assert json.loads(stored)["params"][-1]["value"][0][0] == examples[0]["source_tokens"]


def test_positional_encoding_figure_holds_the_closed_form_formula_and_a_dimension_slider():
    length, depth = 40, 16
    spec = figures.positional_encoding_figure(length, depth).spec()
    assert params(spec)["dimension"]["bind"] == {"input": "range", "min": 0, "max": depth - 1, "step": 1,
                                                 "name": "dimension "}
    pos = np.arange(length, dtype=np.float64)[:, None]
    i = np.arange(depth)[None, :] // 2
    angles = pos / 10000.0 ** (2 * i / depth)
    reference = np.where(np.arange(depth) % 2 == 0, np.sin(angles), np.cos(angles))  # §3.5, float64
    shown = np.full((length, depth), np.nan)
    for record in records(spec):
        shown[record["position"], record["dimension"]] = record["value"]
    np.testing.assert_allclose(shown, reference, atol=6e-5)  # rounded to 4 decimals


def test_masks_figure_holds_the_librarys_masks_for_the_sequence_picked():
    lengths = (4, 2, 5)
    spec = figures.masks_figure(lengths).spec()
    bind = params(spec)["sequence"]["bind"]
    assert bind["input"] == "select" and bind["options"] == [0, 1, 2]
    assert bind["labels"] == ["0: 4 tokens, 1 padding", "1: 2 tokens, 3 padding", "2: 5 tokens, 0 padding"]
    ids = np.array([[3, 9, 4, 4, 0], [5, 6, 0, 0, 0], [1, 2, 3, 4, 5]], np.int32)
    expected = {"padding mask": np.broadcast_to(np.asarray(padding_mask(ids))[:, 0], (3, 5, 5)),
                "look-ahead mask": np.broadcast_to(np.asarray(look_ahead_mask(5)), (3, 5, 5)),
                "combined mask": np.asarray(decoder_mask(ids))[:, 0]}
    shown = {(r["sequence"], r["mask"]): r for r in records(spec)}
    assert sorted({mask for _, mask in shown}) == sorted(expected)
    for (sequence, mask), record in shown.items():
        grid = np.zeros((5, 5))
        grid[record["query"], record["key"]] = record["value"]
        np.testing.assert_array_equal(grid, expected[mask][sequence], err_msg=f"{mask} of sequence {sequence}")
    assert shown[(1, "padding mask")]["value"][:5] == [0, 0, 1, 1, 1]  # 1 = blocked: the padding


def test_schedule_figure_follows_the_formula_of_section_5_3_for_each_choice():
    d_models, warmups, steps = (64, 512), (400, 4000), [1, 10, 399, 400, 401, 4000, 4001, 30000]
    spec = figures.schedule_figure(d_models, warmups, steps).spec()
    assert params(spec)["d_model"]["bind"]["options"] == [64, 512] and params(spec)["d_model"]["value"] == 512
    assert params(spec)["warmup_steps"]["bind"]["options"] == [400, 4000]
    assert params(spec)["warmup_steps"]["value"] == 4000  # the paper's base model first
    assert params(spec)["hover"]["select"] == {"type": "point", "on": "pointerover", "nearest": True,
                                               "fields": ["step"], "clear": "pointerout"}
    curves = {(r["d_model"], r["warmup_steps"]): r for r in records(spec)}
    assert sorted(curves) == [(64, 400), (64, 4000), (512, 400), (512, 4000)]
    for (d, w), record in curves.items():
        s = np.asarray(record["step"], np.float64)
        assert record["step"] == steps
        reference = d**-0.5 * np.minimum(s**-0.5, s * w**-1.5)  # lrate of §5.3, float64
        np.testing.assert_allclose(record["rate"], reference, rtol=1e-3)
        assert record["rate"][steps.index(w)] == pytest.approx((d * w) ** -0.5, rel=1e-3)  # the peak


def test_training_curves_figure_holds_the_history_with_a_tooltip_for_the_epoch_under_the_pointer():
    spec = figures.training_curves_figure(HISTORY).spec()
    series = ["loss", "accuracy", "val_loss", "val_accuracy", "val_score"]  # not "epoch" (the x) nor "seconds"
    assert records(spec) == [{"epoch": e, **{k: HISTORY[k][e - 1] for k in series}} for e in (1, 2)] + [
        {"epoch": 3, **{k: HISTORY[k][2] for k in series}, "val_loss": None}]  # NaN: left out of the line
    hover = params(spec)["epoch_under_pointer"]
    assert hover["select"] == {"type": "point", "on": "pointerover", "nearest": True, "fields": ["epoch"],
                               "clear": "pointerout"}
    assert hover["views"] == ["pointer_0", "pointer_1", "pointer_2"]  # one panel each: loss, accuracy, score
    tooltips = [value for key, value in walk(spec) if key == "tooltip" and isinstance(value, list)]
    assert tooltips and all([t["field"] for t in tooltip] == ["epoch", *series] for tooltip in tooltips)
    with pytest.raises(ValueError, match="lengths differ"):
        figures.training_curves_figure({"loss": [1.0, 2.0], "val_loss": [1.0]})
    with pytest.raises(ValueError, match="missing: \\['bleu'\\]"):
        figures.training_curves_figure(HISTORY, metrics=["bleu"])


def test_attention_figure_shows_the_input_weights_of_the_sentence_layer_and_head_picked():
    examples = random_examples(np.random.default_rng(1))
    spec = figures.attention_figure(examples).spec()
    binds = {name: p["bind"] for name, p in params(spec).items() if "bind" in p}
    assert list(binds) == ["sentence", "kind", "layer", "head"]
    assert all(b["input"] == "select" for b in binds.values())
    assert binds["sentence"]["options"] == [0, 1] and binds["sentence"]["labels"] == ["sentence 0", "sentence 1"]
    assert binds["kind"]["options"] == ["encoder", "decoder", "cross"]
    assert binds["layer"]["options"] == [0, 1] and binds["layer"]["labels"] == ["1", "2"]
    assert binds["head"]["options"] == [0, 1, 2] and binds["head"]["labels"] == ["1", "2", "3"]
    assert params(spec)["tokens"]["value"] == [[e["source_tokens"], e["target_tokens"]] for e in examples]
    matrices = {m["matrix"]: m for m in records(spec)}
    assert len(matrices) == 2 * 3 * 2 * 3  # sentences x kinds x layers x heads
    picked = matrices["1/cross/1/2"]  # sentence 1, cross-attention, layer 2, head 3 (as the menus show them)
    weights = examples[1]["weights"]["cross"][1, 2]  # [target 5, source 6]
    assert (picked["queries"], picked["keys"]) == weights.shape == (5, 6)
    shown = np.reshape(picked["thousandths"], weights.shape) / 1000  # row by row
    np.testing.assert_allclose(shown, weights, atol=5e-4)  # rounded to 3 decimals
    assert spec["data"] == {"sequence": {"start": 0, "stop": 6 * 6, "as": "cell"}}  # one row per cell of the largest


def test_attention_figure_names_an_example_whose_weights_do_not_fit_its_tokens():
    examples = random_examples(np.random.default_rng(0))
    examples[1]["weights"]["cross"] = examples[1]["weights"]["cross"][..., :-1]
    with pytest.raises(ValueError, match=r"Example 1 \('sentence 1'\): cross weights have shape \(2, 3, 5, 5\); "
                                         r"expected \[layers, heads, 5, 6\]"):
        figures.attention_figure(examples)


def test_attention_examples_of_a_translator_hold_every_kind_and_agree_with_the_librarys_cross_attention():
    import transformer_lib as tl
    from transformer_lib.decoding.translator import Translator

    tokenizers = tl.train_tokenizers(tl.load_parallel_corpus("synthetic", "train"), vocab_size=400)
    model = tl.Transformer(2, 16, 2, 32, tokenizers[0].vocab_size, tokenizers[1].vocab_size,
                           dropout_rate=0.0, max_length=16)
    model((np.ones((1, 3), "int32"), np.ones((1, 3), "int32")))  # built, as a trained model is
    translator = Translator(model, *tokenizers, max_length=16)
    sentences = ["сто двадцать три", "семь"]
    examples = figures.attention_examples(translator, sentences)
    for sentence, example in zip(sentences, examples):
        src, tgt = len(example["source_tokens"]), len(example["target_tokens"])
        assert example["sentence"] == sentence and example["translation"] == translator(sentence, beam_size=1)
        weights = example["weights"]
        assert {k: w.shape for k, w in weights.items()} == {
            "encoder": (2, 2, src, src), "decoder": (2, 2, tgt, tgt), "cross": (2, 2, tgt, src)}
        library = translator.attention_weights(sentence)
        assert example["source_tokens"] == library["source_pieces"]
        assert example["target_tokens"] == library["target_pieces"]
        np.testing.assert_allclose(weights["cross"], library["weights"], atol=1e-6)  # the same path through the model
        for w in weights.values():
            np.testing.assert_allclose(w.sum(-1), 1.0, atol=1e-5)
        assert np.all(np.triu(weights["decoder"], k=1) == 0)  # the decoder sees no later target token
    figures.attention_figure(examples).spec()  # and the figure takes them


def test_colab_gets_altairs_own_renderer(monkeypatch):
    monkeypatch.setitem(sys.modules, "google.colab", types.ModuleType("google.colab"))
    bundle = figures.masks_figure()._repr_mimebundle_()
    bundle = bundle[0] if isinstance(bundle, tuple) else bundle
    assert "vega-figure" not in bundle.get("text/html", "")  # our div would stay blank there: no site script


def test_the_package_imports_without_altair_and_figures_says_what_it_needs():
    script = ("import sys; sys.modules['altair'] = None\n"
              "import transformer_lib\n"
              "try:\n    import transformer_lib.book.figures\nexcept ImportError as e:\n    print('ImportError', e)\n")
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, cwd=ROOT, timeout=300)
    assert out.returncode == 0, out.stderr
    assert "ImportError" in out.stdout and "altair" in out.stdout


def test_the_site_serves_the_vega_lite_of_altairs_schema_from_its_own_files():
    import yaml

    packages = re.search(r"^VEGA_PACKAGES := (.*)$", (ROOT / "Makefile").read_text(), re.M).group(1).split()
    versions = dict(p.split("@") for p in packages)
    assert versions["vega-lite"] == altair.SCHEMA_VERSION.lstrip("v")
    assert versions["vega"].startswith("5.") and versions["vega-embed"].startswith("6.")
    fetched = ROOT / "_assets" / "vega" / "packages.txt"  # what `make book` last fetched, if it ran
    assert not fetched.is_file() or fetched.read_text().split() == packages, (
        "_assets/vega holds other versions than the Makefile's VEGA_PACKAGES: `rm -rf _assets/vega && make book`")
    scripts = yaml.safe_load((ROOT / "_config.yml").read_text())["sphinx"]["config"]["html_js_files"]
    assert scripts == ["vega/vega.min.js", "vega/vega-lite.min.js", "vega/vega-embed.min.js", "vega/vega-figures.js",
                       "browser-translator/browser-translator.js"]  # chapter 8's translator, which draws with Vega too
    for script in ("vega-figures.js", "browser-translator.js"):  # our own scripts fetch nothing from another host
        assert "http" not in html.unescape((ROOT / "book_js" / script).read_text())
