"""The real-browser check of the built book (`make test` runs it after `jupyter-book build`).

Serves _build/html on localhost, opens every page in headless Chromium (Debian's `chromium`, driven
by Playwright) as a reader would, at a desktop's width (1366 px) and a phone's (390 px), and fails on:
console errors and uncaught script errors, failed requests, a script from another host, maths left
as raw TeX, images that did not load, an interactive figure (transformer_lib.book.figures) that is not
drawn or whose menu or slider changes nothing, a chapter page whose Colab link or download is not the
student edition, widget placeholder text, a link to a page or anchor of the site that does not
exist, and what a reader should never meet (`reader_problems`): a Markdown table left as raw text,
nbval's markers, an output's text taller than a screen, an image without an alt text that says what it
shows, the figures' scripts on a page without a figure, a page heavier than 4 MB, a figure whose text
is shrunk under 9 px, a page that scrolls sideways, a figure wider than its column, or a sidebar
toggle that opens nothing; on a page with the translator (book_js/browser-translator.js), translations
whose ids are not Python's, and hostile input that hangs the page or shows up as markup
(`translator_problems`). A screenshot of every page lands in _build/screenshots/. Before the browser opens, every page's text is searched for the key's solutions
(`leaked_solutions`): the published site is built from the student edition (`make book`).

    python tools/site_check.py [_build/html]
"""

from __future__ import annotations

import functools
import html.parser
import http.server
import json
import re
import shutil
import sys
import threading
import urllib.parse
from pathlib import Path

CHROMIUM = "/usr/bin/chromium"
FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking"]
WIDGET_PLACEHOLDERS = ("Loading widget", "Error displaying widget")
DESKTOP, PHONE = {"width": 1366, "height": 900}, {"width": 390, "height": 844}
# nbval reads its cell tags too, and the solution markers are the student edition's markup (book_ext/)
MARKERS = ("NBVAL_", "BEGIN SOLUTION", "END SOLUTION")
# A Markdown table's separator row (|---|:--:|) in the text a reader sees: the table was not rendered.
RAW_TABLE = re.compile(r"^[ \t]*\|?(?:[ \t]*:?-{3,}:?[ \t]*\|)+[ \t]*(?::?-{3,}:?[ \t]*)?$", re.MULTILINE)
TALLEST_OUTPUT = 900  # px: an output's text taller than a screen must scroll in a shorter box
# A figure drawn by matplotlib (10-point text at 100 dpi: 13.9 px) shown at less than this share of
# its width on a desktop has text under 9 px: draw it at the column's width (7.5 inches). On a
# phone every figure shrinks to the column, and a reader zooms in.
SMALLEST_SCALE = 0.65
# What a page may load in all (bytes, decoded): the heaviest chapter loads about 3.6 MB (MathJax 1.2,
# the figures' scripts 0.8, the theme and its icon fonts 0.8, the page and its images).
PAGE_BUDGET = 4_000_000
ROOT = Path(__file__).resolve().parent.parent
SHORTEST_LEAK = 20  # characters: shorter solution lines (`return x`) say nothing about the answer


def check_site(html: Path) -> list[str]:
    from playwright.sync_api import sync_playwright

    handler = functools.partial(QuietHandler, directory=str(html))
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    base = f"http://127.0.0.1:{server.server_address[1]}"
    shots = html.parent / "screenshots"
    shots.mkdir(exist_ok=True)
    problems: list[str] = []
    pages = sorted(p.relative_to(html).as_posix() for p in html.rglob("*.html")
                   if not p.relative_to(html).as_posix().startswith(("_static/", "_sources/", "genindex", "search")))
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=CHROMIUM, args=FLAGS)
        for page_path in pages:
            page = browser.new_page(viewport=DESKTOP)
            errors: list[str] = []
            page.on("console", lambda m, errors=errors: errors.append(f"console error: {m.text}")
                    if m.type == "error" and not m.text.startswith("Failed to load resource") else None)
            page.on("pageerror", lambda e, errors=errors: errors.append(f"script error: {e}"))
            page.on("requestfailed", lambda r, errors=errors: errors.append(f"request failed: {r.url}"))
            page.on("dialog", lambda d, errors=errors: (errors.append(f"a dialog opened: {d.message}"), d.dismiss()))
            page.on("response", lambda r, errors=errors: errors.append(f"HTTP {r.status}: {r.url}")
                    if r.status >= 400 and not r.url.endswith("/favicon.ico") else None)  # browsers ask for one
            page.goto(f"{base}/{page_path}", wait_until="networkidle")
            page.wait_for_timeout(500)  # MathJax typesets after load
            scripts = page.evaluate("[...document.scripts].map(s => s.src).filter(src => src)")
            errors += [f"script from another host: {src}" for src in scripts if not src.startswith(base + "/")]
            errors += figure_problems(page)
            text = page.inner_text("body")
            if "\\(" in text or "$$" in text:
                errors.append("maths not rendered (raw TeX in the page)")
            if page.locator("mjx-container").count() == 0 and page.locator("div.math, span.math").count() > 0:
                errors.append("maths not typeset by MathJax")
            broken = page.evaluate("[...document.images].filter(i => !i.complete || i.naturalWidth === 0).map(i => i.src)")
            errors += [f"image not loaded: {src}" for src in broken]
            if page_path.startswith("chapters/"):
                colab = page.evaluate("[...document.querySelectorAll(\"a[href*='colab.research.google.com']\")].map(a => a.href)")
                errors += student_edition_problems(html, page_path, colab)
            errors += [f"widget placeholder: {p}" for p in WIDGET_PLACEHOLDERS if p in text]
            hrefs = page.evaluate("[...document.querySelectorAll('a[href]')].map(a => a.href)")
            errors += [f"broken link: {href}" for href in broken_links(html, base, hrefs)]
            page.screenshot(path=str(shots / (page_path.replace("/", "_").removesuffix(".html") + ".png")), full_page=True)
            errors += reader_problems(page, "desktop")  # it clicks the sidebar toggle, and weighs the page
            errors += translator_problems(page, html)  # after the weighing: its click downloads the model
            page.close()
            phone = browser.new_page(viewport=PHONE)
            phone.on("pageerror", lambda e, errors=errors: errors.append(f"script error on a phone: {e}"))
            phone.goto(f"{base}/{page_path}", wait_until="networkidle")
            phone.wait_for_timeout(500)
            phone.screenshot(path=str(shots / (page_path.replace("/", "_").removesuffix(".html") + "-phone.png")), full_page=True)
            errors += layout_problems(phone, "phone")
            phone.close()
            problems += [f"{page_path}: {e}" for e in errors]
        browser.close()
    server.shutdown()
    print(f"site check: {len(pages)} pages, {len(problems)} problem(s); screenshots in {shots}")
    return problems


# What a page shows its reader (JavaScript run in the page).
_OUTPUT_HEIGHTS = f"""() => [...document.querySelectorAll('div.cell_output pre')]
    .filter(o => o.getBoundingClientRect().height > {TALLEST_OUTPUT})
    .map(o => Math.round(o.getBoundingClientRect().height))"""
_SIDEWAYS = "() => [document.documentElement.scrollWidth, document.documentElement.clientWidth]"
# an alt text that is empty or a file's name (myst-nb's default is the image's path)
_PATH_ALTS = r"""() => [...document.images].map(i => i.alt)
    .filter(a => a.trim() === '' || /^\S*[\\/]\S*$/.test(a) || /\.(png|jpe?g|svg|gif)$/i.test(a))"""
_VEGA_WITHOUT_FIGURE = r"""() => [...document.scripts].some(s => /\/vega\/vega[^/]*\.js/.test(s.src))
    && !document.querySelector('div.vega-figure, div.browser-translator')"""  # the translator's map is Vega-Lite too
# everything the page loaded (it is served from localhost, so the sizes are known), and the three largest
_LOADED = "[...performance.getEntriesByType('navigation'), ...performance.getEntriesByType('resource')]"
_LOADED_BYTES = f"() => {_LOADED}.reduce((total, entry) => total + entry.decodedBodySize, 0)"
_HEAVIEST = f"""() => {_LOADED}.sort((a, b) => b.decodedBodySize - a.decodedBodySize).slice(0, 3)
    .map(entry => [entry.name.split('/').pop().split('?')[0], entry.decodedBodySize])"""
_SHRUNK_FIGURES = f"""() => [...document.querySelectorAll('div.cell_output img')]
    .filter(i => i.naturalWidth && i.getBoundingClientRect().width < {SMALLEST_SCALE} * i.naturalWidth)
    .map(i => [i.alt, i.getBoundingClientRect().width / i.naturalWidth])"""
_FIGURES_SETTLED = """() => [...document.querySelectorAll('div.vega-figure')]
    .every(f => f.classList.contains('vega-figure-drawn') || f.classList.contains('vega-figure-error'))"""
_WIDE_FIGURES = """() => [...document.querySelectorAll('div.vega-figure')]
    .filter(f => { const c = f.querySelector('svg.marks, canvas');
                   return c && c.getBoundingClientRect().width > f.getBoundingClientRect().width + 1; })
    .map(f => f.dataset.figure || '?')"""
_SIDEBAR = """() => { const s = document.querySelector('.bd-sidebar-primary');
    if (!s) return null;
    const r = s.getBoundingClientRect();
    return getComputedStyle(s).visibility !== 'hidden' && r.width > 0 && r.right > 0 && r.left < window.innerWidth; }"""


def reader_problems(page, width: str) -> list[str]:
    """What a reader of the open `page` should never meet: a Markdown table shown as raw text, nbval's
    markers, an output's text (a log, a listing) taller than a screen, an image whose alt text is
    empty or a file name, the figures' scripts (about 1 MB) on a page without a figure, on a desktop
    a page that loads more than `PAGE_BUDGET` and a figure shrunk so much that its text reads under
    9 px (`SMALLEST_SCALE`), and `layout_problems`."""
    problems = []
    text = page.inner_text("body")
    problems += [f"a table shown as raw Markdown: {match.group(0).strip()}" for match in RAW_TABLE.finditer(text)][:3]
    content = page.content()
    problems += [f"test marker shown: {marker}" for marker in MARKERS if marker in content]
    problems += [f"an output's text {height} px tall (a wall: give it a box that scrolls)" for height in page.evaluate(_OUTPUT_HEIGHTS)]
    problems += [f"an image whose alt text is a file name, not what it shows: {alt}" for alt in page.evaluate(_PATH_ALTS)]
    if page.evaluate(_VEGA_WITHOUT_FIGURE):
        problems.append("the figures' scripts (Vega) load on a page without a figure")
    if width == "desktop":
        loaded = page.evaluate(_LOADED_BYTES)
        if loaded > PAGE_BUDGET:
            problems.append(f"the page loads {loaded / 1e6:.1f} MB (at most {PAGE_BUDGET / 1e6:.0f} MB): "
                            + ", ".join(f"{name} {size / 1e6:.1f} MB" for name, size in page.evaluate(_HEAVIEST)))
        problems += [f"a figure shown at {scale:.0%} of its width, its text under 9 px (draw it at the column's "
                     f"width, 7.5 inches): {alt[:60]}" for alt, scale in page.evaluate(_SHRUNK_FIGURES)]
    return problems + layout_problems(page, width)


def layout_problems(page, width: str) -> list[str]:
    """The open `page` scrolls sideways (more than 2 px: a reader's thumb finds it), an interactive
    figure is wider than its column (once drawn: book_js/vega-figures.js lays a figure out again
    for a narrow column), or a visible primary-sidebar toggle that, clicked, does not show or hide
    the sidebar."""
    from playwright.sync_api import TimeoutError as PlaywrightTimeout

    problems = []
    try:
        page.wait_for_function(_FIGURES_SETTLED, timeout=5000)
    except PlaywrightTimeout:
        pass  # figure_problems says which figure was not drawn
    problems += [f"figure {name} is wider than its column on a {width}" for name in page.evaluate(_WIDE_FIGURES)]
    scroll_width, client_width = page.evaluate(_SIDEWAYS)
    if scroll_width > client_width + 2:
        problems.append(f"the page scrolls sideways on a {width} ({scroll_width} px of content in {client_width})")
    toggles = page.locator(".primary-toggle:visible")
    if toggles.count():
        before = page.evaluate(_SIDEBAR)
        toggles.first.click()
        page.wait_for_timeout(500)
        if page.evaluate(_SIDEBAR) == before:
            problems.append(f"the sidebar toggle changes nothing on a {width}")
        page.keyboard.press("Escape")
    return problems


# The translator in the page (book_js/browser-translator.js): what the site check types into it.
HOSTILE_INPUTS = {
    "nothing": "",
    "5,000 characters": ("Я люблю читать книги. " * 230)[:5000],
    "HTML": "<img src=x onerror=alert(1)> <b>жирный</b> <script>alert(2)</script>",
    "emoji": "Я люблю 🍕 и 🐈‍⬛!",
    "Latin text": "The quick brown fox jumps over the lazy dog.",
}
_TRANSLATOR = "document.querySelector('div.browser-translator')"
_TRANSLATE_IDS = f"""async ([text, beam]) => {{
    const result = await {_TRANSLATOR}.browserTranslator.translateText(text, beam);
    return {{source: result.source.ids, ids: result.ids}};
}}"""
_IDLE = f"() => !{_TRANSLATOR}.querySelector('button.translate').disabled"
_MARKUP = f"() => {_TRANSLATOR}.querySelectorAll('img, b, script:not([src])').length"


def translator_problems(page, html: Path, timeout_ms: int = 60_000) -> list[str]:
    """What is wrong with the translator of an open `page`, if it has one (`<div class="browser-translator">`):
    used as a reader uses it, the first reference sentence of its manifest typed and Translate
    clicked, must show the translation Python gave; then every reference, greedy and beam 4, must
    give Python's ids exactly (`manifest.json`, written by `python -m transformer_lib export-web`);
    and hostile input (`HOSTILE_INPUTS`) must neither hang the page nor show up as markup (a console
    error or a dialog is caught by `check_site`). A model that does not load is reported with the
    message the page shows."""
    from playwright.sync_api import TimeoutError as PlaywrightTimeout

    if page.locator("div.browser-translator").count() == 0:
        return []
    widget = page.locator("div.browser-translator").first
    try:
        page.wait_for_selector("div.browser-translator-ready, div.browser-translator-error", timeout=15_000)
    except PlaywrightTimeout:
        return ["translator: not ready 15 s after the page loaded"]

    def typed(text: str, beam: int) -> str | None:
        """Type `text`, pick the beam, click Translate: None, or what went wrong."""
        widget.locator("textarea").fill(text)
        widget.locator("select.method").select_option(str(beam))
        widget.locator("button.translate").click()
        try:
            page.wait_for_function(_IDLE, timeout=timeout_ms)
        except PlaywrightTimeout:
            return f"still translating after {timeout_ms / 1000:.0f} s (the page hangs)"
        if "browser-translator-error" in (widget.get_attribute("class") or ""):
            return f"it says: {widget.locator('.status').inner_text()}"
        return None

    manifest_file = html / "_static" / "translator" / "manifest.json"
    if not manifest_file.is_file():
        return [f"translator: no {manifest_file.relative_to(html)} in the site"]
    references = json.loads(manifest_file.read_text(encoding="utf-8"))["references"]
    trouble = typed(references[0]["text"], 1)
    if trouble:
        return [f"translator: {trouble}"]
    problems = []
    shown = widget.locator(".translation").inner_text()
    if shown != references[0]["greedy"]:
        problems.append(f"translator: {references[0]['text']!r} shown as {shown!r}, Python gives {references[0]['greedy']!r}")
    for row in references:
        for beam, key in ((1, "greedy_ids"), (4, "beam4_ids")):
            got = page.evaluate(_TRANSLATE_IDS, [row["text"], beam])
            if got["source"] != row["source_ids"] or got["ids"] != row[key]:
                problems.append(f"translator: {row['text']!r} with {'greedy decoding' if beam == 1 else 'beam 4'} gives "
                                f"ids {got['ids']} from source ids {got['source']}, Python {row[key]} from {row['source_ids']}")
    for name, text in HOSTILE_INPUTS.items():
        trouble = typed(text, 8)
        if trouble:
            problems.append(f"translator, given {name}: {trouble}")
        elif page.evaluate(_MARKUP):
            problems.append(f"translator, given {name}: the input shows up as markup in the page")
    return problems


# JavaScript run in the page; `i` is a figure's index among the page's div.vega-figure, `j` an input's.
_FIGURE = "document.querySelectorAll('div.vega-figure')[i]"
_DRAWN = f"""i => {{
    const figure = {_FIGURE};
    if (figure.classList.contains('vega-figure-error')) return 'error';
    const chart = figure.querySelector('svg.marks, canvas');
    return chart && chart.getBoundingClientRect().width > 0 && chart.getBoundingClientRect().height > 0;
}}"""
_PICTURE = f"""i => {{
    const chart = {_FIGURE}.querySelector('svg.marks, canvas');
    return chart.tagName === 'CANVAS' ? chart.toDataURL() : chart.innerHTML;
}}"""
_INPUTS = f"i => {_FIGURE}.querySelectorAll('.vega-bind select, .vega-bind input[type=range]').length"
_CHANGE = f"""([i, j]) => {{
    const input = {_FIGURE}.querySelectorAll('.vega-bind select, .vega-bind input[type=range]')[j];
    const name = input.closest('.vega-bind').querySelector('.vega-bind-name');
    if (input.tagName === 'SELECT') {{
        if (input.options.length < 2) return null;
        input.selectedIndex = (input.selectedIndex + 1) % input.options.length;
    }} else {{
        if (input.min === input.max) return null;
        input.value = Number(input.value) === Number(input.max) ? input.min : input.max;
    }}
    input.dispatchEvent(new Event('input', {{bubbles: true}}));
    input.dispatchEvent(new Event('change', {{bubbles: true}}));
    return [name ? name.textContent.trim() : input.name, input.value];
}}"""


def figure_problems(page, timeout_ms: int = 5000) -> list[str]:
    """What is wrong with the interactive figures of an open Playwright `page`: every
    `<div class="vega-figure">` (transformer_lib.book.figures, drawn by book_js/vega-figures.js) must
    show a chart (an svg or canvas of nonzero size) within `timeout_ms`, and each of its menus and
    sliders, set to another value, must change what the chart shows within `timeout_ms`; a figure
    with neither must change when the pointer moves over it (a hover highlight)."""
    from playwright.sync_api import TimeoutError as PlaywrightTimeout

    problems = []
    for i in range(page.locator("div.vega-figure").count()):
        name = page.locator("div.vega-figure").nth(i).get_attribute("data-figure") or f"number {i + 1}"
        try:
            drawn = page.wait_for_function(_DRAWN, arg=i, timeout=timeout_ms).json_value()
        except PlaywrightTimeout:
            drawn = False
        if drawn is not True:
            why = ("it could not be drawn (see the console error)" if drawn == "error"
                   else f"no chart after {timeout_ms} ms")
            problems.append(f"figure {name}: {why}")
            continue
        inputs = page.evaluate(_INPUTS, i)
        if inputs == 0 and not _hovering_changes(page, i, timeout_ms):  # explored with the pointer instead
            problems.append(f"figure {name}: it has no menu or slider, and the pointer over it changes nothing")
        for j in range(inputs):
            before = page.evaluate(_PICTURE, i)
            changed = page.evaluate(_CHANGE, [i, j])
            if changed is None:
                continue  # a menu of one option, or a slider of one value: nothing to change it to
            if not _picture_changes(page, i, before, timeout_ms):
                problems.append(f"figure {name}: setting {changed[0]} to {changed[1]} did not change the chart")
    return problems


def _picture_changes(page, i: int, before: str, timeout_ms: float) -> bool:
    """Whether figure `i` shows something other than `before` (its `_PICTURE`) within `timeout_ms`."""
    from playwright.sync_api import TimeoutError as PlaywrightTimeout

    try:
        page.wait_for_function(f"([i, before]) => ({_PICTURE})(i) !== before", arg=[i, before], timeout=timeout_ms)
    except PlaywrightTimeout:
        return False
    return True


# Where the pointer goes over a figure without menus, as fractions of its width and height: the middle
# first, then the middle of each column of panels (the middle of two panels side by side is the gap).
HOVER_POINTS = ((0.5, 0.5), (0.25, 0.5), (0.75, 0.5), (0.25, 0.25), (0.75, 0.25))


def _hovering_changes(page, i: int, timeout_ms: int) -> bool:
    """Whether moving the pointer over figure `i` changes what it shows, at one of HOVER_POINTS."""
    chart = page.locator("div.vega-figure").nth(i).locator("svg.marks, canvas").first
    box = chart.bounding_box()
    before = page.evaluate(_PICTURE, i)
    for x, y in HOVER_POINTS:
        chart.hover(position={"x": box["width"] * x, "y": box["height"] * y})
        if _picture_changes(page, i, before, timeout_ms / len(HOVER_POINTS)):
            return True
    return False


def student_edition_problems(html: Path, page_path: str, colab_hrefs: list[str]) -> list[str]:
    """What keeps chapter `page_path` (e.g. chapters/07_training.html) from handing out the student
    edition: no Colab link, a Colab link to another notebook than student/<chapter>.ipynb, or a
    downloadable notebook (_sources/<chapter>.ipynb) that still holds a solution."""
    notebook = page_path.removesuffix(".html") + ".ipynb"
    problems = [] if colab_hrefs else ["no Colab launch link"]
    problems += [f"Colab link not to the student edition: {href}" for href in colab_hrefs
                 if not href.endswith(f"/student/{notebook}")]
    download = html / "_sources" / notebook
    if download.is_file() and "BEGIN SOLUTION" in download.read_text(errors="replace"):
        problems.append(f"the download _sources/{notebook} holds solutions (make book builds the site from the student edition)")
    return problems


def broken_links(html: Path, base: str, hrefs: list[str]) -> list[str]:
    """The links among `hrefs` (absolute URLs) into the site at `base` whose page is missing from
    `html`, or whose #anchor names no element of that page. Links elsewhere are not followed."""
    broken = []
    for href in dict.fromkeys(hrefs):
        if not href.startswith(base + "/"):
            continue
        url = urllib.parse.urlsplit(href)
        path = html / urllib.parse.unquote(url.path).lstrip("/")
        if url.path.endswith("/"):
            path = path / "index.html"
        if not path.is_file():
            broken.append(href)
        elif url.fragment and path.suffix == ".html":
            anchor = urllib.parse.unquote(url.fragment)
            if f'id="{anchor}"' not in _read(path) and f'name="{anchor}"' not in _read(path):
                broken.append(href)
    return broken


@functools.cache
def _read(path: Path) -> str:
    return path.read_text(errors="replace")


def leaked_solutions(html: Path, key: Path = ROOT / "chapters", student: Path = ROOT / "student" / "chapters") -> list[str]:
    """The lines of the key's solutions (`key`'s chapters: the code between the solution markers and the
    text of the Solution admonitions) that some page of the site at `html` shows, as "page: line".
    A line the student edition (`student`) holds anywhere, in a cell or a stored output, is no leak (a
    library listing shown by `show_source`, say), nor is a line shorter than SHORTEST_LEAK characters."""
    sys.path.insert(0, str(ROOT / "tools"))
    from student_edition import BEGIN, END, SOLUTION_ADMONITION

    published = _collapse(" ".join(_notebook_text(path) for path in sorted(student.glob("*.ipynb"))))
    lines = set()
    for path in sorted(key.glob("*.ipynb")):
        for cell in json.loads(path.read_text())["cells"]:
            source = "".join(cell["source"])
            if cell["cell_type"] == "code":
                inside = False
                for line in source.split("\n"):
                    inside = (inside or bool(BEGIN.match(line))) and not END.match(line)
                    if inside and not BEGIN.match(line):
                        lines.add(_collapse(line))
            else:
                for block in SOLUTION_ADMONITION.findall(source):
                    lines.update(_collapse(part) for line in block.split("\n")[1:-1]  # inside the fence
                                 for part in re.split(r"[$`*\[\]()]", line))  # plain text between the markup
    lines = sorted(line for line in lines if len(line) >= SHORTEST_LEAK and line not in published)
    leaks = []
    for page in sorted(html.rglob("*.html")):
        text = _collapse(_page_text(page.read_text(errors="replace")))
        leaks += [f"{page.relative_to(html).as_posix()}: {line}" for line in lines if line in text]
    return leaks


def _collapse(text: str) -> str:
    return " ".join(text.split())


def _notebook_text(path: Path) -> str:
    """Every cell's source and every stored output's text in the notebook at `path`."""
    parts = []
    for cell in json.loads(path.read_text())["cells"]:
        parts.append("".join(cell["source"]))
        for output in cell.get("outputs", []):
            parts.append("".join(output.get("text", "")))
            parts += ["".join(value) if isinstance(value, list) else str(value)
                      for value in output.get("data", {}).values()]
    return "\n".join(parts)


class _TextOf(html.parser.HTMLParser):
    """The text of an HTML page as a reader can see it (no scripts or styles), entities decoded."""

    def __init__(self):
        super().__init__(convert_charrefs=True)
        self.parts, self._skip = [], 0

    def handle_starttag(self, tag, attrs):
        self._skip += tag in ("script", "style")

    def handle_endtag(self, tag):
        self._skip -= tag in ("script", "style") and self._skip > 0

    def handle_data(self, data):
        if not self._skip:
            self.parts.append(data)


SMART_QUOTES = str.maketrans({"\u2018": "'", "\u2019": "'", "\u201c": '"', "\u201d": '"'})  # Sphinx's smartquotes


def _page_text(page_html: str) -> str:
    parser = _TextOf()
    parser.feed(page_html)
    return "".join(parser.parts).translate(SMART_QUOTES)


class QuietHandler(http.server.SimpleHTTPRequestHandler):
    def log_message(self, *args):
        pass


def main() -> int:
    html = Path(sys.argv[1] if len(sys.argv) > 1 else "_build/html")
    problems = [f"solution shown: {leak}" for leak in leaked_solutions(html)]
    if not Path(CHROMIUM).exists() and shutil.which("chromium") is None:
        print("#" * 72 + "\n# SKIPPED the browser check: no Chromium at /usr/bin/chromium.\n"
              "# Install Debian's `chromium` (.ci/run does) to run it.\n" + "#" * 72)
    else:
        problems += check_site(html)
    for problem in problems:
        print("  " + problem)
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
