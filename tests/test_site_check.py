"""The link check of tests/site_check.py, on a tiny site (the whole check runs in `make site-check`)."""

from site_check import broken_links

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
