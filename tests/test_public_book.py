"""The published site holds no solution: its sources are staged from the student edition
(tools/public_book.py), and the site check finds any line of the key's solutions on a page
(tools/site_check.py, `leaked_solutions`)."""

from __future__ import annotations

import sys
from pathlib import Path

import nbformat
import pytest
import yaml

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tools"))

import public_book  # noqa: E402
from site_check import SHORTEST_LEAK, leaked_solutions  # noqa: E402
from student_edition import student_notebook  # noqa: E402


@pytest.fixture(scope="module")
def staged(tmp_path_factory):
    if not (ROOT / "_assets").is_dir():
        pytest.skip("_assets (MathJax, Vega) is fetched by `make book`; run it once first")
    return public_book.stage(tmp_path_factory.mktemp("public"))


def test_the_staged_book_has_every_page_of_the_toc_and_the_key_has_none_of_its_solutions(staged):
    toc = yaml.safe_load((ROOT / "_toc.yml").read_text())
    files = [toc["root"]] + [entry["file"] for part in toc["parts"] for entry in part["chapters"]]
    for name in files:
        assert (staged / f"{name}.md").is_file() or (staged / f"{name}.ipynb").is_file(), name
    for path in sorted((ROOT / "chapters").glob("*.ipynb")):  # the appendix too
        key = path.read_text()
        public = (staged / "chapters" / path.name).read_text()
        assert "BEGIN SOLUTION" in key or "{admonition} Solution" in key, path.name
        assert "BEGIN SOLUTION" not in public and "{admonition} Solution" not in public, path.name
        # the key's stored outputs stay on every cell that does not come from an answer
        kept = [c for c in nbformat.reads(public, 4).cells if c.cell_type == "code" and c.outputs]
        assert len(kept) >= 0.7 * sum(1 for c in nbformat.reads(key, 4).cells if c.cell_type == "code" and c.outputs)
    guide = (staged / "instructors.md").read_text()
    assert "Rubric for the question exercises" in guide and public_book.POINTER in guide
    assert "| 2.2 (wavelengths) |" in (ROOT / "instructors.md").read_text()
    assert "| 2.2 (wavelengths) |" not in guide and "key only -->" not in guide
    assert (staged / "_config.yml").read_text() == (ROOT / "_config.yml").read_text()


def test_key_only_parts_need_both_markers_and_the_repository_is_never_the_target(tmp_path):
    page = "intro\n<!-- key only -->\nthe answer\n<!-- end key only -->\nafter\n"
    assert public_book.public_page(page, "p.md") == "intro\n" + public_book.POINTER + "after\n"
    with pytest.raises(ValueError, match="without its partner"):
        public_book.public_page("intro\n<!-- key only -->\nthe answer\n", "p.md")
    with pytest.raises(ValueError, match="holds the repository"):
        public_book.stage(ROOT.parent, root=ROOT)


def _key_and_student(tmp_path, listing: bool = False) -> tuple[Path, Path]:
    """A one-chapter key (a code solution and a Solution box) and its student edition; with `listing`, a
    later cell's stored output (a library listing, say) prints the solution's first line too."""
    key = nbformat.v4.new_notebook(cells=[
        nbformat.v4.new_markdown_cell("Exercise 1: write the weights.\n\n```{admonition} Solution\n:class: dropdown\n"
                                      "The factor $e^{-c}$ cancels in the softmax's ratio, so nothing overflows.\n```"),
        nbformat.v4.new_code_cell("def weights(scores):\n    # BEGIN SOLUTION\n    shifted = scores - scores.max(axis=-1, keepdims=True)\n"
                                  "    return shifted\n    # END SOLUTION", metadata={"tags": ["exercise"]}),
        nbformat.v4.new_code_cell("check_weights(weights)", metadata={"tags": ["check"]}),
        nbformat.v4.new_code_cell("print('library listing')", outputs=[nbformat.v4.new_output(
            "stream", text="shifted = scores - scores.max(axis=-1, keepdims=True)  # the library's own\n")]),
    ][:4 if listing else 3])
    for name, notebook in (("key", key), ("student", student_notebook(key, "key"))):
        (tmp_path / name).mkdir()
        nbformat.write(notebook, tmp_path / name / "03_attention.ipynb")
    return tmp_path / "key", tmp_path / "student"


def test_a_page_showing_a_line_of_a_solution_is_reported_and_the_student_edition_is_not(tmp_path):
    key, student = _key_and_student(tmp_path)
    site = tmp_path / "html"
    (site / "chapters").mkdir(parents=True)
    clean = "<p>Exercise 1: write the weights.</p><pre>def weights(scores):\n    raise NotImplementedError()</pre>"
    (site / "chapters" / "03_attention.html").write_text(f"<html><body>{clean}</body></html>")
    assert leaked_solutions(site, key, student) == []
    # the code solution, as Pygments marks it up; the answer's prose, with Sphinx's curly quotes
    code = ('<span class="n">shifted</span> <span class="o">=</span> <span class="n">scores</span> '
            '<span class="o">-</span> <span class="n">scores</span><span class="o">.</span>max(axis<span class="o">='
            '</span><span class="o">-</span>1, keepdims<span class="o">=</span>True)')
    (site / "chapters" / "03_attention.html").write_text(f"<html><body>{clean}<pre>{code}</pre></body></html>")
    (site / "instructors.html").write_text("<p>cancels in the softmax\u2019s ratio, so nothing overflows.</p>")
    assert leaked_solutions(site, key, student) == [
        "chapters/03_attention.html: shifted = scores - scores.max(axis=-1, keepdims=True)",
        "instructors.html: cancels in the softmax's ratio, so nothing overflows."]
    # a line shorter than SHORTEST_LEAK says nothing about the answer
    assert len("return shifted") < SHORTEST_LEAK
    (site / "chapters" / "03_attention.html").write_text(f"<html><body>{clean}<pre>return shifted</pre></body></html>")
    assert leaked_solutions(site, key, student) == [
        "instructors.html: cancels in the softmax's ratio, so nothing overflows."]


def test_a_line_the_student_edition_shows_anyway_is_no_leak(tmp_path):
    key, student = _key_and_student(tmp_path, listing=True)
    site = tmp_path / "html"
    site.mkdir()
    (site / "page.html").write_text("<pre>shifted = scores - scores.max(axis=-1, keepdims=True)</pre>")
    assert leaked_solutions(site, key, student) == []  # the student edition's listing prints the line
    notebook = nbformat.read(student / "03_attention.ipynb", 4)
    notebook.cells[-1].outputs = []  # without the listing, the line comes from the key only
    nbformat.write(notebook, student / "03_attention.ipynb")
    assert leaked_solutions(site, key, student) == ["page.html: shifted = scores - scores.max(axis=-1, keepdims=True)"]
