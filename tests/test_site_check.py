"""The link and student-edition checks of tests/site_check.py, on a tiny site (the whole check runs in `make site-check`)."""

from site_check import broken_links, student_edition_problems

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
    download = tmp_path / "_sources" / "chapters" / "04_attention.ipynb"
    download.write_text('{"source": ["raise NotImplementedError(\\"hint\\")"]}')
    page = "chapters/04_attention.html"
    assert student_edition_problems(tmp_path, page, [f"{colab}/student/chapters/04_attention.ipynb"]) == []
    assert student_edition_problems(tmp_path, page, []) == ["no Colab launch link"]
    full = f"{colab}/chapters/04_attention.ipynb"
    assert student_edition_problems(tmp_path, page, [full]) == [f"Colab link not to the student edition: {full}"]
    other = f"{colab}/student/chapters/05_multi_head_attention.ipynb"
    assert student_edition_problems(tmp_path, page, [other]) == [f"Colab link not to the student edition: {other}"]
    download.write_text('{"source": ["# BEGIN SOLUTION\\n"]}')
    assert student_edition_problems(tmp_path, page, [f"{colab}/student/chapters/04_attention.ipynb"]) == [
        "the download _sources/chapters/04_attention.ipynb holds solutions (make book copies the student edition there)"]
