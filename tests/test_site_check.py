"""The checks of tools/site_check.py on tiny sites: links, the student edition, and (in a real
browser) the interactive figures. The whole check runs on the book in `make site-check`."""

import copy
import json
import shutil
import sys
from pathlib import Path

import numpy as np
import pytest
from PIL import Image

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tools"))

from site_check import CHROMIUM, broken_links, check_site, student_edition_problems  # noqa: E402

BASE = "http://127.0.0.1:8000"


def test_links_to_missing_pages_or_anchors_are_reported_and_others_pass(tmp_path):
    (tmp_path / "chapters").mkdir()
    (tmp_path / "index.html").write_text('<h1 id="top">Intro</h1>')
    (tmp_path / "chapters" / "01_data.html").write_text('<section id="bucketing">...</section>')
    (tmp_path / "_static").mkdir()
    (tmp_path / "_static" / "logo.png").write_bytes(b"png")
    hrefs = [
        f"{BASE}/index.html#top",
        f"{BASE}/chapters/01_data.html#bucketing",
        f"{BASE}/_static/logo.png",
        f"{BASE}/",
        "https://colab.research.google.com/github/x/y/blob/main/chapters/01_data.ipynb",  # not ours to follow
        f"{BASE}/chapters/02_positional_encoding.html",  # missing page
        f"{BASE}/chapters/01_data.html#padding",  # missing anchor
    ]
    assert broken_links(tmp_path, BASE, hrefs) == [
        f"{BASE}/chapters/02_positional_encoding.html",
        f"{BASE}/chapters/01_data.html#padding",
    ]


def test_chapters_must_hand_out_the_student_edition_by_colab_and_download(tmp_path):
    colab = "https://colab.research.google.com/github/x/y/blob/main"
    (tmp_path / "_sources" / "chapters").mkdir(parents=True)
    download = tmp_path / "_sources" / "chapters" / "03_attention.ipynb"
    download.write_text('{"source": ["raise NotImplementedError(\\"hint\\")"]}')
    page = "chapters/03_attention.html"
    assert student_edition_problems(tmp_path, page, [f"{colab}/student/chapters/03_attention.ipynb"]) == []
    assert student_edition_problems(tmp_path, page, []) == ["no Colab launch link"]
    full = f"{colab}/chapters/03_attention.ipynb"
    assert student_edition_problems(tmp_path, page, [full]) == [f"Colab link not to the student edition: {full}"]
    other = f"{colab}/student/chapters/05_multi_head_attention.ipynb"
    assert student_edition_problems(tmp_path, page, [other]) == [f"Colab link not to the student edition: {other}"]
    download.write_text('{"source": ["# BEGIN SOLUTION\\n"]}')
    assert student_edition_problems(tmp_path, page, [f"{colab}/student/chapters/03_attention.ipynb"]) == [
        "the download _sources/chapters/03_attention.ipynb holds solutions (make book builds the site from the student edition)"]


# --- Interactive figures (transformer_lib.book.figures) in a real browser ---

VEGA_ASSETS = ROOT / "_assets" / "vega"
needs_vega = pytest.mark.skipif(
    not (VEGA_ASSETS / "vega-embed.min.js").is_file(),
    reason="the figures' scripts come from npm at build time: run `make _assets/vega/packages.txt` (or `make book`)")
TRANSLATOR_ASSETS = ROOT / "_assets" / "browser-translator"
needs_translator_runtime = pytest.mark.skipif(
    not (TRANSLATOR_ASSETS / "packages.txt").is_file(),
    reason="the translator's runtime comes from npm at build time: run `make _assets/browser-translator/packages.txt`")
needs_chromium = pytest.mark.skipif(not Path(CHROMIUM).exists(),
                                    reason=f"no Chromium at {CHROMIUM}: install Debian's `chromium` (.ci/run does)")


def figure_site(tmp_path, figures_html: list[str]) -> Path:
    """A one-page site holding `figures_html`, loading the scripts that the book's _config.yml names
    from a copy of _assets (our own script from its committed source, book_js/)."""
    import yaml

    site = tmp_path / "html"
    shutil.copytree(VEGA_ASSETS, site / "_static" / "vega")
    shutil.copy(ROOT / "book_js" / "vega-figures.js", site / "_static" / "vega" / "vega-figures.js")
    if TRANSLATOR_ASSETS.is_dir():  # the translator's runtime (loaded on click) and its script
        shutil.copytree(TRANSLATOR_ASSETS, site / "_static" / "browser-translator")
    (site / "_static" / "browser-translator").mkdir(parents=True, exist_ok=True)
    shutil.copy(ROOT / "book_js" / "browser-translator.js", site / "_static" / "browser-translator" / "browser-translator.js")
    scripts = yaml.safe_load((ROOT / "_config.yml").read_text())["sphinx"]["config"]["html_js_files"]
    head = "".join(f'<script src="_static/{script}"></script>' for script in scripts)
    (site / "index.html").write_text(f'<!doctype html><html><head><meta charset="utf-8">{head}</head>'
                                     f'<body>{"".join(figures_html)}</body></html>')
    return site


def random_attention_examples(lengths, layers: int, heads: int) -> list[dict]:
    """`attention_figure`'s examples with random weights (each row sums to 1): sentence s has
    `lengths[s]` = (source, target) tokens, named s{s}.{i} and t{s}.{i}."""
    rng = np.random.default_rng(0)
    return [{"sentence": f"sentence {s}", "source_tokens": [f"s{s}.{i}" for i in range(src)],
             "target_tokens": [f"t{s}.{i}" for i in range(tgt)],
             "weights": {kind: rng.dirichlet(np.ones(k), size=(layers, heads, q)) for kind, (q, k) in
                         {"encoder": (src, src), "decoder": (tgt, tgt), "cross": (tgt, src)}.items()}}
            for s, (src, tgt) in enumerate(lengths)]


@needs_vega
@needs_chromium
def test_every_figure_draws_and_each_of_its_menus_and_sliders_changes_it(tmp_path):
    figures = pytest.importorskip("transformer_lib.book.figures", reason="needs altair: pip install -r requirements.txt")
    examples = random_attention_examples([(4, 3), (6, 5)], layers=2, heads=2)
    pages = [figures.positional_encoding_figure(16, 8).to_html(), figures.masks_figure().to_html(),
             figures.schedule_figure().to_html(),
             figures.training_curves_figure({"loss": [3.0, 2.0, 1.5], "val_loss": [3.1, 2.4, 2.2]}).to_html(),
             # two panels side by side, as chapter 9 draws them: the middle of the figure is the gap between them
             figures.training_curves_figure({"loss": [0.5, 0.3, 0.2], "accuracy": [0.7, 0.8, 0.9],
                                             "val_loss": [0.4, 0.4, 0.5], "val_accuracy": [0.8, 0.8, 0.7]}).to_html(),
             figures.attention_figure(examples).to_html()]
    assert check_site(figure_site(tmp_path, pages)) == []


@needs_vega
@needs_chromium
def test_a_figure_that_is_not_drawn_or_a_menu_that_changes_nothing_is_reported(tmp_path):
    figures = pytest.importorskip("transformer_lib.book.figures", reason="needs altair: pip install -r requirements.txt")
    broken_menu = figures.masks_figure().spec()
    broken_menu["params"].append({"name": "unused", "value": 0,
                                  "bind": {"input": "select", "options": [0, 1], "name": "unused"}})
    invalid = copy.deepcopy(broken_menu)
    invalid["transform"] = [{"filter": "datum.sequence === nowhere"}]  # a parameter the spec does not define
    static = {"data": {"values": [{"epoch": 1, "loss": 3.0}, {"epoch": 2, "loss": 2.0}]}, "mark": "line",
              "encoding": {"x": {"field": "epoch", "type": "quantitative"}, "y": {"field": "loss", "type": "quantitative"}}}
    pages = [figures.figure_html(broken_menu, "broken-menu", "a menu bound to nothing"),
             figures.figure_html(invalid, "invalid", "a filter on an undefined parameter"),
             figures.figure_html(static, "static", "no menu, no slider, no hover")]
    problems = check_site(figure_site(tmp_path, pages))
    assert "index.html: figure static: it has no menu or slider, and the pointer over it changes nothing" in problems
    assert "index.html: figure broken-menu: setting unused to 1 did not change the chart" in problems
    assert "index.html: figure invalid: it could not be drawn (see the console error)" in problems
    assert any(p.startswith("index.html: console error: vega-figure invalid:") for p in problems)
    assert not any("figure broken-menu: setting sequence" in p for p in problems)  # its own menu works


@needs_vega
@needs_chromium
def test_a_figure_too_wide_for_a_phones_column_is_reported_and_the_books_are_laid_out_to_fit(tmp_path):
    figures = pytest.importorskip("transformer_lib.book.figures", reason="needs altair: pip install -r requirements.txt")
    # 30 columns of 30 px each: a heatmap keeps its step size in the narrow layout, so it cannot fit 390 px
    cells = [{"x": x, "y": y, "v": (x * y) % 7} for x in range(30) for y in range(3)]
    wide = {"data": {"values": cells}, "mark": "rect", "width": {"step": 30},
            "params": [{"name": "pick", "value": 0, "bind": {"input": "select", "options": [0, 1]}}],
            "encoding": {"x": {"field": "x", "type": "ordinal"}, "y": {"field": "y", "type": "ordinal"},
                         "color": {"field": "v", "type": "quantitative"},
                         "opacity": {"condition": {"test": "datum.y === pick", "value": 1}, "value": 0.5}}}
    problems = check_site(figure_site(tmp_path, [figures.figure_html(wide, "wide", "a heatmap 900 px wide"),
                                                 figures.schedule_figure().to_html(),  # 587 px on a desktop
                                                 figures.masks_figure().to_html()]))  # three facets side by side
    assert problems == ["index.html: figure wide is wider than its column on a phone"], problems


@needs_vega
@needs_chromium
def test_the_attention_heatmap_in_the_browser_shows_the_weights_of_the_sentence_layer_and_head_picked(tmp_path):
    import functools
    import http.server
    import threading

    from playwright.sync_api import sync_playwright
    from site_check import FLAGS, QuietHandler

    figures = pytest.importorskip("transformer_lib.book.figures", reason="needs altair: pip install -r requirements.txt")
    examples = random_attention_examples([(4, 3), (7, 5)], layers=2, heads=3)
    site = figure_site(tmp_path, [figures.attention_figure(examples).to_html()])
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), functools.partial(QuietHandler, directory=str(site)))
    threading.Thread(target=server.serve_forever, daemon=True).start()
    cells = """() => {
        const cells = [];
        (function walk(node) {
            if (node.marktype === 'rect' && node.role === 'mark') {
                node.items.forEach(item => cells.push([item.datum.query, item.datum.key, item.datum.weight]));
            }
            (node.items || []).forEach(walk);
        })(document.querySelector('div.vega-figure').vegaView.scenegraph().root);
        return cells;
    }"""
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=CHROMIUM, args=FLAGS)
        page = browser.new_page()
        page.goto(f"http://127.0.0.1:{server.server_address[1]}/index.html", wait_until="networkidle")
        page.wait_for_function("() => document.querySelector('div.vega-figure').vegaView !== undefined")
        for name, label in (("sentence", "sentence 1"), ("kind", "cross-attention: target queries, source keys"),
                            ("layer", "2"), ("head", "3")):
            page.locator(f".vega-bind:has(.vega-bind-name:text-is('{name}')) select").select_option(label=label)
        page.wait_for_function(f"() => ({cells})().length === 5 * 7")
        shown = np.zeros((5, 7))
        for query, key, weight in page.evaluate(cells):
            shown[query, key] = weight
        labels = page.evaluate("[...document.querySelectorAll('div.vega-figure svg .role-axis-label text')]"
                               ".map(t => t.textContent)")
        browser.close()
    server.shutdown()
    np.testing.assert_allclose(shown, examples[1]["weights"]["cross"][1, 2], atol=5e-4)  # [target, source]
    assert {f"s1.{i}" for i in range(7)} | {f"t1.{i}" for i in range(5)} <= set(labels)  # the tokens on the axes


PIXEL = ("data:image/png;base64,iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg==")


@needs_chromium
def test_each_readers_rule_fails_on_a_tiny_site_that_breaks_it_and_a_clean_page_passes(tmp_path):
    head = '<!doctype html><html><head><meta charset="utf-8"><meta name="viewport" content="width=device-width"></head>'
    lines = "\n".join(f"Epoch {i}/60: loss {1 / i:.4f}" for i in range(1, 121))
    sidebar = '<nav class="bd-sidebar-primary" style="visibility: hidden">Contents</nav>'
    opens = "<script>document.querySelector('.primary-toggle').onclick = () => " \
            "document.querySelector('.bd-sidebar-primary').style.visibility = 'visible';</script>"
    pages = {
        "clean": f'<img src="{PIXEL}" alt="A one-pixel picture.">'
                 '<div class="cell_output"><img src="_static/fits.png" alt="A figure at its own size."></div>'
                 '<p>A table:</p><table><tr><td>ours</td><td>14.9</td></tr></table>'
                 f'<div class="cell_output"><pre>{lines}</pre></div>'  # tall text in a box that scrolls
                 f'<style>div.cell_output pre {{ max-height: 30em; overflow: auto; }}</style>'
                 f'<button class="primary-toggle">menu</button>{sidebar}{opens}',
        "raw-table": "<p>| recipe | minutes |</p><p>|---|---:|</p><p>| ours | 14.9 |</p>",
        "marker": "<pre># NBVAL_CHECK_OUTPUT\nshow_source(tl.train)</pre>",
        "solution": "<pre>def lrate(step):\n    # BEGIN SOLUTION\n    return step ** -0.5\n    # END SOLUTION</pre>",
        "wall": f'<div class="cell_output"><pre>{lines}</pre></div>',
        "sideways": '<p><code style="white-space: nowrap">' + "tf.config.experimental." * 3 + "</code></p>",  # ~600 px
        "dead-toggle": f'<button class="primary-toggle">menu</button>{sidebar}',
        "script-error": "<script>const THEBE_JS_URL = 1;</script><script>const THEBE_JS_URL = 2;</script>",
        "alt-path": f'<img src="{PIXEL}" alt="../_images/0f3a.png"><img src="{PIXEL}" alt="">',
        "vega-unused": '<script src="_static/vega/vega.min.js"></script><p>No figure here.</p>',
        # a figure drawn 1500 px wide in a 700 px column (chapter 7's curves were): its text at 47%
        "shrunk-figure": '<div style="width: 700px; max-width: 100%"><div class="cell_output">'
                         '<img src="_static/wide.png" alt="Three panels of curves." style="max-width: 100%"></div></div>',
        "heavy": '<script src="_static/icons.js"></script><p>Icons drawn twice.</p>',  # 4.5 MB
    }
    (tmp_path / "_static" / "vega").mkdir(parents=True)
    (tmp_path / "_static" / "vega" / "vega.min.js").write_text("// the real one is 1 MB")
    Image.new("RGB", (1500, 10), "white").save(tmp_path / "_static" / "wide.png")
    (tmp_path / "_static" / "icons.js").write_text("//" + "x" * 4_500_000)
    Image.new("RGB", (300, 10), "white").save(tmp_path / "_static" / "fits.png")
    for name, body in pages.items():
        (tmp_path / f"{name}.html").write_text(f"{head}<body>{body}</body></html>")
    problems = check_site(tmp_path)
    by_page = {name: sorted(p.split(": ", 1)[1] for p in problems if p.startswith(f"{name}.html: ")) for name in pages}
    assert by_page["clean"] == []
    assert by_page["raw-table"] == ["a table shown as raw Markdown: |---|---:|"]
    assert by_page["marker"] == ["test marker shown: NBVAL_"]
    assert by_page["solution"] == ["test marker shown: BEGIN SOLUTION", "test marker shown: END SOLUTION"]
    assert len(by_page["wall"]) == 1 and by_page["wall"][0].startswith("an output's text ")
    assert len(by_page["sideways"]) == 1 and by_page["sideways"][0].startswith("the page scrolls sideways on a phone (")
    assert by_page["dead-toggle"] == ["the sidebar toggle changes nothing on a desktop",
                                      "the sidebar toggle changes nothing on a phone"]
    assert by_page["script-error"] and all(p.startswith("script error") and "THEBE_JS_URL" in p
                                           for p in by_page["script-error"])
    assert by_page["alt-path"] == ["an image whose alt text is a file name, not what it shows: ",
                                   "an image whose alt text is a file name, not what it shows: ../_images/0f3a.png"]
    assert by_page["vega-unused"] == ["the figures' scripts (Vega) load on a page without a figure"]
    assert by_page["shrunk-figure"] == ["a figure shown at 47% of its width, its text under 9 px (draw it at the "
                                        "column's width, 7.5 inches): Three panels of curves."]
    assert by_page["heavy"] == ["the page loads 4.5 MB (at most 4 MB): icons.js 4.5 MB, heavy.html 0.0 MB"]
    assert len(problems) == sum(map(len, by_page.values()))  # nothing else was reported


# --- The translator in the page (book_js/browser-translator.js, transformer_lib.export.web) in a real browser ---


@pytest.fixture(scope="module")
def exported_tiny(trained_tiny, tmp_path_factory):
    """The tiny synthetic translator exported for the page, its references four held-out numbers."""
    web = pytest.importorskip("transformer_lib.export.web")
    pytest.importorskip("tf2onnx", reason="the web extra is not installed")
    import transformer_lib as tl

    folder = tmp_path_factory.mktemp("translator")
    references = [source for source, _ in tl.load_parallel_corpus("synthetic", "test")[:4]]
    web.export_web(trained_tiny, folder, references=references, about={"run": "tiny synthetic", "test_bleu": 99.0})
    return folder


def translator_site(tmp_path, exported: Path) -> Path:
    from transformer_lib.book.browser_translator import browser_translator

    widget = browser_translator(exported, sentence="сто двадцать три")._repr_html_()
    site = figure_site(tmp_path, [widget])
    shutil.copytree(exported, site / "_static" / "translator")
    return site


@needs_vega
@needs_translator_runtime
@needs_chromium
def test_the_translator_in_the_page_gives_pythons_ids_and_survives_hostile_input(tmp_path, exported_tiny):
    site = translator_site(tmp_path, exported_tiny)
    assert "Tatoeba test BLEU 99.00" in (site / "index.html").read_text()  # the page says which model it runs
    assert check_site(site) == []


@needs_vega
@needs_translator_runtime
@needs_chromium
def test_a_damaged_or_missing_model_file_gives_a_clear_message_in_the_page(tmp_path, exported_tiny):
    site = translator_site(tmp_path / "damaged", exported_tiny)
    model = site / "_static" / "translator" / "encoder.onnx"
    model.write_bytes(model.read_bytes()[:1000])  # a download cut short
    problems = check_site(site)
    assert any("translator: it says: The translator could not be loaded: encoder.onnx is damaged" in p for p in problems), problems
    site = translator_site(tmp_path / "missing", exported_tiny)
    (site / "_static" / "translator" / "decoder_step.onnx").unlink()
    problems = check_site(site)
    assert any("could not be loaded: decoder_step.onnx is missing (HTTP 404)" in p for p in problems), problems


@needs_vega
@needs_translator_runtime
@needs_chromium
def test_the_site_check_catches_a_translator_that_disagrees_with_python(tmp_path, exported_tiny):
    """A manifest whose ids are not what the graphs give (as after exporting one model and shipping
    another) is reported, sentence by sentence."""

    site = translator_site(tmp_path, exported_tiny)
    manifest_file = site / "_static" / "translator" / "manifest.json"
    manifest = json.loads(manifest_file.read_text())
    manifest["references"][1]["beam4_ids"] = [5, 2]
    manifest_file.write_text(json.dumps(manifest, ensure_ascii=False))
    problems = check_site(site)
    assert len([p for p in problems if "translator:" in p]) == 1
    assert f"{manifest['references'][1]['text']!r} with beam 4 gives ids" in problems[0] and "Python [5, 2]" in problems[0]


@needs_translator_runtime
@needs_chromium
def test_the_browser_benchmark_times_the_page_and_counts_its_first_download(tmp_path, exported_tiny):
    from benchmarks.browser_translator import main as browser_benchmark

    record = browser_benchmark(["--model", str(exported_tiny), "--repeats", "1", "--out", str(tmp_path / "b.json")])
    assert record == json.loads((tmp_path / "b.json").read_text())
    # the first click downloads the runtime and every model file, nothing else
    assert set(record["first_use_downloads"]) == {"ort.wasm.min.js", "ort-wasm-simd-threaded.mjs", "ort-wasm-simd-threaded.wasm",
                                                  "sentencepiece.min.js", "encoder.onnx", "decoder_step.onnx",
                                                  "source.model", "target.model", "target_pieces.json"}
    assert record["first_use_gzip_mb"] < record["first_use_mb"]
    assert len(record["warm"]["beam4"]["per_sentence_ms"]) == record["sentences"] == 4
    assert set(record["cold_ms"]) == {"greedy", "beam4"} and all(ms > 0 for ms in record["cold_ms"].values())


def test_the_widget_escapes_its_text_and_says_which_model_it_runs():
    from transformer_lib.book.browser_translator import BrowserTranslator

    manifest = {"about": {"run": "chapter 7's run <b>x</b>", "test_bleu": 35.123}, "weights": "int8, one scale per column",
                "model": {"num_layers": 4, "d_model": 128, "num_heads": 8}}
    page = BrowserTranslator(manifest, sentence="</textarea><script>alert(1)</script>", beam_size=2)._repr_html_()
    assert "<script>" not in page and "&lt;/textarea&gt;&lt;script&gt;" in page and "<b>" not in page
    assert "Tatoeba test BLEU 35.12 (beam 4, alpha 0.6, in Python)" in page and "4 layers of width 128, 8 heads" in page
    assert '<option value="2" selected>beam 2</option>' in page and '<option value="1">greedy</option>' in page
    with pytest.raises(ValueError, match=r"beam_size must be 1 \(greedy\) to 8"):
        BrowserTranslator(manifest, beam_size=9)
