"""The real-browser check of the built book (`make test` runs it after `jupyter-book build`).

Serves _build/html on localhost, opens every page in headless Chromium (Debian's `chromium`, driven
by Playwright) and fails on: console errors, failed requests, maths left as raw TeX, images that did
not load, a chapter page whose Colab link or download is not the student edition, widget placeholder text, or a link to a page or
anchor of the site that does not exist. A screenshot of every page lands in _build/screenshots/.

    python tests/site_check.py [_build/html]
"""

from __future__ import annotations

import functools
import http.server
import shutil
import sys
import threading
import urllib.parse
from pathlib import Path

CHROMIUM = "/usr/bin/chromium"
FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking"]
WIDGET_PLACEHOLDERS = ("Loading widget", "Error displaying widget")


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
            page = browser.new_page(viewport={"width": 1280, "height": 900})
            errors: list[str] = []
            page.on("console", lambda m, errors=errors: errors.append(f"console error: {m.text}")
                    if m.type == "error" and not m.text.startswith("Failed to load resource") else None)
            page.on("requestfailed", lambda r, errors=errors: errors.append(f"request failed: {r.url}"))
            page.on("response", lambda r, errors=errors: errors.append(f"HTTP {r.status}: {r.url}")
                    if r.status >= 400 and not r.url.endswith("/favicon.ico") else None)  # browsers ask for one
            page.goto(f"{base}/{page_path}", wait_until="networkidle")
            page.wait_for_timeout(500)  # MathJax typesets after load
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
            problems += [f"{page_path}: {e}" for e in errors]
            page.close()
        browser.close()
    server.shutdown()
    print(f"site check: {len(pages)} pages, {len(problems)} problem(s); screenshots in {shots}")
    return problems


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
        problems.append(f"the download _sources/{notebook} holds solutions (make book copies the student edition there)")
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


class QuietHandler(http.server.SimpleHTTPRequestHandler):
    def log_message(self, *args):
        pass


def main() -> int:
    html = Path(sys.argv[1] if len(sys.argv) > 1 else "_build/html")
    if not Path(CHROMIUM).exists() and shutil.which("chromium") is None:
        print("#" * 72 + "\n# SKIPPED the browser check: no Chromium at /usr/bin/chromium.\n"
              "# Install Debian's `chromium` (.ci/run does) to run it.\n" + "#" * 72)
        return 0
    problems = check_site(html)
    for problem in problems:
        print("  " + problem)
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
