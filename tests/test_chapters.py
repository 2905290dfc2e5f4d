"""Rules every chapter notebook follows (the notebooks themselves run under nbval in `make test`)."""

import ast
import json
import re
import shutil
import sys
import types
from pathlib import Path

import pytest
import yaml

import transformer_lib

ROOT = Path(__file__).resolve().parent.parent
CONFIG = yaml.safe_load((ROOT / "_config.yml").read_text())
TOC = yaml.safe_load((ROOT / "_toc.yml").read_text())
CHAPTERS = sorted((ROOT / "chapters").glob("*.ipynb"))


def toc_files(node) -> list[str]:
    if isinstance(node, dict):
        return ([node["file"]] if "file" in node else []) + [f for value in node.values() for f in toc_files(value)]
    if isinstance(node, list):
        return [f for item in node for f in toc_files(item)]
    return []


def code_cells(path):
    return [c for c in json.loads(path.read_text())["cells"] if c["cell_type"] == "code"]


def source(cell) -> str:
    return "".join(cell["source"])


def tags(cell) -> list[str]:
    return cell.get("metadata", {}).get("tags", [])


@pytest.mark.parametrize("path", CHAPTERS + sorted((ROOT / "student" / "chapters").glob("*.ipynb")),
                         ids=lambda p: f"{p.parent.parent.name}/{p.stem}")
def test_listings_are_checked_by_nbval_through_a_tag_not_a_comment_readers_see(path):
    cells = code_cells(path)
    assert not [source(c)[:60] for c in cells if "NBVAL_" in source(c)]  # the site shows the code as written
    listings = [c for c in cells if source(c).startswith("show_source(")]
    assert [source(c)[:40] for c in listings if "nbval-check-output" not in tags(c)] == []


@pytest.mark.parametrize("path", CHAPTERS, ids=lambda p: p.stem)
def test_every_figure_output_has_an_alt_text_that_says_what_it_shows(path):
    figures = [c for c in code_cells(path) if any("image/png" in o.get("data", {}) for o in c.get("outputs", []))]
    alts = [c.get("metadata", {}).get("mystnb", {}).get("image", {}).get("alt", "") for c in figures]
    assert [source(c)[:60] for c, alt in zip(figures, alts) if len(alt.split()) < 6] == []  # a sentence, not a name


CHECK_CELL = re.compile(r"from transformer_lib\.exercises import (check_\w+)\n\n\1\(\w+(?:, \w+)*\)")  # the answers, by name


@pytest.mark.parametrize("path", CHAPTERS, ids=lambda p: p.stem)
def test_every_exercise_is_an_answer_cell_then_a_check_cell_holding_only_the_check(path):
    cells = code_cells(path)
    exercises = [i for i, cell in enumerate(cells) if "exercise" in tags(cell)]
    checks = [i for i, cell in enumerate(cells) if "check" in tags(cell)]
    assert checks == [i + 1 for i in exercises], "each check cell must come right after its exercise cell"
    for i in exercises:
        answer, check = source(cells[i]), source(cells[i + 1])
        assert "# BEGIN SOLUTION" in answer and "transformer_lib.exercises" not in answer, answer
        assert CHECK_CELL.fullmatch(check), f"a check cell holds only the import and the call, not {check!r}"
    uses = [i for i, cell in enumerate(cells) if "uses-exercises" in tags(cell)]
    assert all(i > exercises[0] for i in uses), "a cell using an answer comes after the exercise"
    assert not any("transformer_lib.exercises import" in source(c) for i, c in enumerate(cells)
                   if i not in checks and i not in uses), "only check cells and cells using answers import the checks"


def test_the_table_of_contents_lists_every_chapter_and_only_those():
    listed = {f for f in toc_files(TOC) if f.startswith("chapters/")}
    assert listed == {f"chapters/{p.stem}" for p in CHAPTERS}
    assert (ROOT / f"{TOC['root']}.md").is_file()


@pytest.mark.parametrize("path", CHAPTERS, ids=lambda p: p.stem)
def test_chapter_starts_with_a_colab_only_setup_cell_for_the_configured_repository(path):
    first = source(code_cells(path)[0])
    assert 'if "google.colab" in sys.modules:' in first
    assert re.findall(r'REPOSITORY = "(\S+?)"', first) == [CONFIG["repository"]["url"]], (
        "the setup cell must install from _config.yml's repository.url: run `make set-repository URL=...`"
    )
    assert '%pip install -q "transformer_lib @ git+{REPOSITORY}"' in first


@pytest.mark.parametrize("path", CHAPTERS, ids=lambda p: p.stem)
def test_chapter_reads_course_files_the_same_way_from_either_edition_and_in_colab(path):
    for cell in code_cells(path)[1:]:  # REPOSITORY is defined in the setup cell only when in Colab
        text = source(cell)
        assert "REPOSITORY" not in text and "raw.githubusercontent" not in text, text
        assert not re.search(r"""["']\.\./""", text), f"a path from chapters/ fails from student/chapters/: {text}"


def test_the_library_downloads_course_files_from_the_configured_repository():
    from transformer_lib.book import course_files

    assert course_files.REPOSITORY == CONFIG["repository"]["url"], "run `make set-repository URL=...`"


def test_the_setup_cell_stops_with_a_clear_message_when_the_repository_cannot_be_reached(monkeypatch):
    from IPython.core.inputtransformer2 import TransformerManager

    cell = source(code_cells(CHAPTERS[0])[0]).replace(CONFIG["repository"]["url"], "file:///nonexistent/course")
    monkeypatch.setitem(sys.modules, "google.colab", types.ModuleType("google.colab"))
    with pytest.raises(SystemExit, match="file:///nonexistent/course cannot be reached: it is not published yet"):
        exec(TransformerManager().transform_cell(cell), {})  # stops before the %pip line


def test_set_repository_rewrites_the_config_and_every_setup_cell_and_round_trips(tmp_path):
    from tools.set_repository import configured_url, set_repository

    for name in ["_config.yml", "transformer_lib/book/course_files.py", *(f"chapters/{p.name}" for p in CHAPTERS)]:
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy(ROOT / name, tmp_path / name)
    original = {p: p.read_bytes() for p in tmp_path.rglob("*") if p.is_file()}
    changed = set_repository("https://github.com/someone/course", tmp_path)
    assert len(changed) == 2 + len(CHAPTERS) and configured_url(tmp_path) == "https://github.com/someone/course"
    assert yaml.safe_load((tmp_path / "_config.yml").read_text())["repository"]["url"] == "https://github.com/someone/course"
    assert re.findall(r'^REPOSITORY = "(\S+)"$', (tmp_path / "transformer_lib/book/course_files.py").read_text(), re.M) == [
        "https://github.com/someone/course"]
    for path in CHAPTERS:
        first = source(code_cells(tmp_path / "chapters" / path.name)[0])
        assert re.findall(r'REPOSITORY = "(\S+?)"', first) == ["https://github.com/someone/course"]
        rewritten, before = (json.loads(p.read_text())["cells"] for p in (tmp_path / "chapters" / path.name, path))
        assert sum(a != b for a, b in zip(rewritten, before)) == 1  # the setup cell, nothing else
    set_repository(CONFIG["repository"]["url"], tmp_path)
    assert {p: p.read_bytes() for p in tmp_path.rglob("*") if p.is_file()} == original  # byte for byte
    with pytest.raises(ValueError, match="is not a repository URL like https://github.com/OWNER/NAME"):
        set_repository("github.com/someone", tmp_path)


@pytest.mark.parametrize("path", CHAPTERS, ids=lambda p: p.stem)
def test_chapter_never_redefines_what_the_library_exports(path):
    exported = set(transformer_lib.__all__)
    for cell in code_cells(path):
        if "exercise" in cell.get("metadata", {}).get("tags", []):
            continue
        text = re.sub(r"^(\s*)[%!].*$", r"\1pass", source(cell), flags=re.M)  # IPython magics are not Python
        defined = {n.name for n in ast.parse(text).body if isinstance(n, (ast.FunctionDef, ast.ClassDef))}
        assert not defined & exported, f"{path.name} defines {defined & exported}: show the library's source instead"


@pytest.mark.parametrize("path", CHAPTERS, ids=lambda p: p.stem)
def test_stored_outputs_come_from_a_complete_clean_run(path):
    cells = code_cells(path)
    assert all(c["execution_count"] is not None for c in cells), "run `make execute` to store every output"
    counts = [c["execution_count"] for c in cells]
    assert counts == sorted(counts), "cells were run out of order"
    outputs = json.dumps([c["outputs"] for c in cells])
    assert '"output_type": "error"' not in outputs
    assert not re.search(r"/(work|root|tmp|home)/[A-Za-z]", outputs), "an output shows a path of this machine"
    assert "application/vnd.jupyter.widget-view+json" not in outputs  # the site cannot show live widgets
    assert "Run with " in outputs  # the line that names the mode and the hardware (describe_run)


# --- Numbers in the prose come from the outputs or a named record (tests/test_reader_text.py) --------
# A number the prose quotes (a decimal, a number with thousands separators, a percentage, a ratio
# like 4.8x; not small integers, which are mostly counts of things the text names) must be
# one that an output of the same chapter shows, at the prose's precision, or within 5% after
# "about", or one held by a committed record that its paragraph names (tests/test_reader_text.py
# checks both); so a re-run that changes a result fails until the text follows. Section numbers
# (§3.4, "section 3.2.1"), maths and the solution boxes (worked arithmetic) are not quotes. What
# the prose may state that neither holds (a paper's number, a setting, arithmetic) is listed here,
# each with where it comes from; never a record's number.
# the data credits' licence versions (CC BY 2.0 FR, CC BY-NC-SA 4.0), in any chapter that loads the data
LICENCE_VERSIONS = {"2.0": "a licence's version (data credit)", "4.0": "a licence's version (data credit)"}
NOT_FROM_OUTPUTS = {
    "01_data": {"90": "the split's 90/5/5 proportions (a setting of the library)"},
    "02_positional_encoding": {"25.7": "the paper's Table 3, row (E)", "25.8": "the paper's Table 3, row (E)"},
    "06_assembling": {"3": "the 3% bound the text states for Table 3's counts",
                      "18.9": "arithmetic in the text: 37,000 x 512"},
    "07_training": {"37,000": "the paper's vocabulary (§5.1)",
                    "11": "arithmetic: 1 - 0.891, the compiled step's time over the plain one's in the record its paragraph names",
                    "0.0028": "the schedule's formula at d_model 128, warm-up 1,000",
                    "8,000": "the vocabulary size, a setting (printed as 8000)",
                    "1,024": "the batch size in tokens, a setting (printed as 1024)",
                    "4.5": "the paper's WMT 2014 pairs (§5.1)"},
    "08_translating": {"27.3": "the paper's base-model BLEU (Table 2)", "4.5": "the paper's WMT 2014 pairs (§5.1)",
                       "4,000": "the paper's warm-up steps (§5.3)",
                       "17,500": "chapter 7's training pairs (17,456, its output)",
                       "25,000": "the news corpus's training pairs, 24,887 (its 'train' split)",
                       "0.0007": "the schedule's formula at d_model 512, warm-up 4,000",
                       "0.0028": "the schedule's formula at d_model 128, warm-up 1,000",
                       "1,000": "chapter 7's warm-up, a setting of its recipe",
                       "27,000": "chapter 7's training pairs (26,943, its output)",
                       "26,943": "chapter 7's training pairs (its output)"},
    "09_imdb_bert": {"50,000": "the dataset's size (Maas et al. 2011)", "10": "the validation share; BERT's 10%",
                     "2,000": "the quick-mode sample, a setting", "1,000": "the quick-mode sample's test half",
                     "15": "BERT's masking rate (Devlin et al. 2019)", "80": "BERT's [MASK] share",
                     "3,072": "BERT-base's feed-forward width", "4,096": "BERT-large's feed-forward width",
                     "30,522": "BERT's WordPiece vocabulary", "0.88": "the Keras example's validation accuracy, high end",
                     "0.87": "the Keras example's validation accuracy, low end",
                     "8,000": "the vocabulary size, a setting (printed as 8000)",
                     "60": "the pretraining's masking rate, a setting (printed as 0.6)",
                     "91.22": "NBSVM with bigrams on IMDB (Wang and Manning 2012, \"Baselines and Bigrams\", ACL)"},
    "appendix_performance": {"8,000": "the vocabulary size, a setting", "32,000": "arithmetic: 4 beams x 8,000",
                       "9,468": "arithmetic: 26,943 - 17,475 training pairs (the small-data study's first table)",
                       "1.6": "the small-data study's second table: seconds per epoch, 174 against 108",
                       "4,000": "the paper's warm-up steps (§5.3), the recipes' setting",
                       "2,800": "the updates the per-update lines are read near (a setting of that cell)",
                       "37,000": "the paper's vocabulary (§5.1)"},
}
QUOTED_NUMBER = re.compile(r"(?<![\w.,§])(?:\d{1,3}(?:,\d{3})+(?:\.\d+)?|\d+\.\d+|\d+(?=%))(?=x\b|[^\w]|$)")  # 4.8x too
NOT_A_QUOTE = re.compile(r"```\{admonition\} Solution.*?```|\$\$.*?\$\$|\$[^$]*\$|`[^`]*`|(?:§|[Ss]ections? )[\d.]+",
                         re.S)


def _output_text(cell) -> str:
    texts = []
    for output in cell.get("outputs", []):
        if "application/vnd.vegalite.v5+json" in output.get("data", {}):
            continue  # an interactive figure: its data hold numbers of every kind, none of them quoted
        data = output.get("data", {})
        for text in (output.get("text"), data.get("text/plain"), data.get("text/html"), data.get("text/markdown")):
            if text:
                texts.append("".join(text) if isinstance(text, list) else text)
    return "\n".join(texts)


CONTROL = re.compile(r"[\x00-\x09\x0b\x0c\x0e-\x1f\x7f]")  # tabs too: a LaTeX "\t" or "\a" eaten by a string escape


@pytest.mark.parametrize("path", [*CHAPTERS, *(ROOT / name for name in ("intro.md", "instructors.md", "README.md",
                                                                         "LICENSE-TEXT.md", "transformer_lib/README.md",
                                                                         "benchmarks/README.md"))],
                         ids=lambda p: p.relative_to(ROOT).as_posix())
def test_the_prose_holds_no_control_characters(path):
    if path.suffix == ".ipynb":
        cells = json.loads(path.read_text())["cells"]
        texts = ["".join(cell["source"]) for cell in cells if cell["cell_type"] == "markdown"]
    else:
        texts = [path.read_text()]
    found = [match for text in texts for match in CONTROL.finditer(text)]
    assert not found, f"{path.name}: control characters {[m.group() for m in found]} near " + "; ".join(
        repr(match.string[max(0, match.start() - 20):match.end() + 20]) for match in found)


# --- Quoted model outputs come from the outputs ------------------------------------------------
# A sentence the prose quotes in double quotes ("..." or “...”: a translation, a generated review, a
# printed line) must appear, word for word, in an output of the same chapter, so that a re-run that
# changes what the model says fails here until the text follows. Lowercase quotes count too (the IMDB
# reviews and what chapter 9's models say of them are lowercase). Short quotes (a name, a term, one or
# two words) are not sentences; quotes of the paper, of a source sentence that no cell prints, or phrases
# the prose makes up are listed here with where they come from.
QUOTED_SENTENCE = re.compile(r'"([^"]+?)"|“([^”]+?)”')  # within a paragraph: a quote may span lines
QUOTES_NOT_FROM_OUTPUTS: dict[str, dict[str, str]] = {
    "01_data": {"Я не знаю.": "an illustration of two Tatoeba sources sharing one target (the split's rule)",
                "I don't know.": "an illustration of two Tatoeba sources sharing one target (the split's rule)"},
    "02_positional_encoding": {
        "for any fixed offset , can be represented as a linear function of": "the paper, §3.5 (its formulas left out)",
        "found that the two versions produced nearly identical results": "the paper, §3.5",
        "may allow the model to extrapolate to sequence lengths longer than the ones encountered during training":
            "the paper, §3.5",
        "look tokens back": "what a layer can learn, in the prose's words ($k$ left out)"},
    "03_attention": {"equal or not?": "the question a dictionary lookup asks, in the prose's words",
                     "what I look for": "a query's role, in the prose's words",
                     "what I am": "a key's role, in the prose's words",
                     "dog bites man": "a made-up example sentence (the permutation exercise)",
                     "man bites dog": "a made-up example sentence (the permutation exercise)"},
    "05_multi_head_attention": {
        "could be a subject": "a made-up feature of the worked example",
        "stands right before the query": "a made-up feature of the worked example",
        "the previous word": "a relation a head may learn, in the prose's words",
        "the end of the clause": "a relation a head may learn, in the prose's words",
        "due to the reduced dimension of each head, the total computational cost is similar to that of single-head "
        "attention with full dimensionality": "the paper, §3.2.2"},
    "06_assembling": {
        "to the output of each sub-layer, before it is added to the sub-layer input and normalized": "the paper, §5.4",
        "две тысячи сорок семь": "an example of the synthetic task's pairs (none printed with it)",
        "two thousand forty-seven": "an example of the synthetic task's pairs (none printed with it)",
        "We employ a residual connection around each of the two sub-layers, followed by layer normalization. "
        "That is, the output of each sub-layer is .": "the paper, §3.1 (its formula left out: maths is not a quote)",
        "In our model, we share the same weight matrix between the two embedding layers and the pre-softmax "
        "linear transformation": "the paper, §3.4"},
    "07_training": {
        "During training, we employed label smoothing of value . This hurts perplexity, as the model learns to be "
        "more unsure, but improves accuracy and BLEU score.": "the paper, §5.4 (its formula left out)",
        "For the base models, we used a single model obtained by averaging the last 5 checkpoints": "the paper, §6.1",
        "a few epochs": "how to read the chosen number of averaged epochs, in the prose's words"},
    "09_imdb_bert": {"Should You Mask 15% in Masked Language Modeling?": "a paper's title (Wettig et al. 2023)",
                     "Learning Word Vectors for Sentiment Analysis": "a paper's title (Maas et al. 2011)",
                     "Pre-training of Deep Bidirectional Transformers for Language Understanding":
                         "a paper's title (Devlin et al. 2019)",
                     "Text classification with Transformer": "the Keras example's title (keras.io, Nandan 2020)",
                     "it uses no test label, so it is fair": "a colleague's claim that exercise 6 asks about"},
    "10_since_2017": {"because it is better tested": "a colleague's claim that exercise 4 asks about"},
}


def _normalized(text: str) -> str:
    import html

    return " ".join(html.unescape(re.sub(r"<[^>]+>", "", text)).split())


def unshown_quotes(cells) -> list[str]:
    """The sentence-like quotes in the markdown of `cells` that no output of `cells` shows."""
    shown = _normalized(" ".join(_output_text(c) for c in cells if c["cell_type"] == "code"))
    missing = []
    for cell in cells:
        if cell["cell_type"] != "markdown":
            continue
        text = re.sub(r"```\{admonition\} Solution.*?```|`[^`]*`|\$[^$]*\$", " ", source(cell), flags=re.S)
        for match in (m for paragraph in re.split(r"\n\s*\n", text) for m in QUOTED_SENTENCE.finditer(paragraph)):
            quote = _normalized(match.group(1) or match.group(2))
            if len(quote.split()) < 3:
                continue  # a term or a name, not a sentence the model or a cell produced
            if quote.rstrip(".,;:!?") not in shown:
                missing.append(quote)
    return missing


@pytest.mark.parametrize("path", CHAPTERS, ids=lambda p: p.stem)
def test_sentences_quoted_in_the_prose_are_shown_by_an_output(path):
    allowed = QUOTES_NOT_FROM_OUTPUTS.get(path.stem, {})
    missing = [q for q in unshown_quotes(json.loads(path.read_text())["cells"]) if q not in allowed]
    assert not missing, ("the prose quotes sentences that no output of the chapter shows (quote the output "
                         "exactly, or list a quote of the paper in QUOTES_NOT_FROM_OUTPUTS with its source): "
                         + "; ".join(repr(q) for q in missing))


def test_the_quote_check_catches_a_translation_the_outputs_do_not_show():
    def cells(prose, output):
        return [{"cell_type": "code", "source": [], "outputs": [{"output_type": "stream", "text": [output]}]},
                {"cell_type": "markdown", "source": [prose]}]

    printed = "Маленькая лодка на озере.\n  -> The little boat on the lake.\n"
    assert unshown_quotes(cells('It wrote "The little boat on the lake."', printed)) == []
    assert unshown_quotes(cells("It wrote “The little boat on the lake”, as hoped.", printed)) == []
    assert unshown_quotes(cells('The boat came out as "A storm hit the lake."', printed)) == ["A storm hit the lake."]
    assert unshown_quotes(cells('"Маленькая лодка на озере." became "The boat sank."', printed)) == ["The boat sank."]
    assert unshown_quotes(cells('a "soft" lookup, the "look-ahead mask"', printed)) == []  # terms, not sentences
    assert unshown_quotes(cells('```{admonition} Solution\n"A worked answer here."\n```', printed)) == []
    assert unshown_quotes(cells('It wrote "The little\nboat on the lake." and "A storm\nhit the lake."', printed)) == [
        "A storm hit the lake."]  # a quote broken over two lines is still one quote
    assert unshown_quotes(cells('"Not closed here.\n\nAnd "The little boat on the lake."', printed)) == []
    review = "this is one of the [MASK] movies i have ever seen -> ['▁worst', '▁best']\n"  # lowercase, as IMDB's
    assert unshown_quotes(cells('a superlative belongs in "one of the [MASK] movies i have ever seen"', review)) == []
    assert unshown_quotes(cells('it belongs in "one of the ... movies i have seen"', review)) == [
        "one of the ... movies i have seen"]


# --- Every chapter ends with what to remember --------------------------------------------------
RECAP = "## What to remember"
CHAPTER_LINK = re.compile(r"\]\(((?:\d\d|appendix)_\w+)\.ipynb\)")


def recap_problems(cells, chapters: set[str]) -> list[str]:
    """What is wrong with the recap of a chapter's `cells`: missing, not the chapter's last section before
    its exercises, more than six bullets, or no link to another chapter of `chapters`."""
    starts = [i for i, cell in enumerate(cells) if cell["cell_type"] == "markdown" and source(cell).startswith(RECAP)]
    if len(starts) != 1:
        return [f"{len(starts)} cells start with {RECAP!r}, not one"]
    cell, problems = cells[starts[0]], []
    later = [source(c).splitlines()[0] for c in cells[starts[0] + 1:] if c["cell_type"] == "markdown" and
             source(c).startswith("## ")]
    if later not in ([], ["## Exercises"]):
        problems.append(f"sections after the recap: {later}")
    bullets = [line for line in source(cell).splitlines() if line.startswith("- ")]
    if not 1 <= len(bullets) <= 6:
        problems.append(f"{len(bullets)} bullets (one to six)")
    if not [name for name in CHAPTER_LINK.findall(source(cell)) if name in chapters]:
        problems.append("no link to the chapter where the ideas are used next")
    return problems


@pytest.mark.parametrize("path", CHAPTERS, ids=lambda p: p.stem)
def test_every_chapter_ends_with_what_to_remember_and_where_it_is_used_next(path):
    problems = recap_problems(json.loads(path.read_text())["cells"], {p.stem for p in CHAPTERS} - {path.stem})
    assert not problems, f"{path.stem}: " + "; ".join(problems)


def test_the_recap_check_catches_a_missing_long_or_misplaced_recap():
    def md(text):
        return {"cell_type": "markdown", "source": [text]}

    good = [md("# 1. Data"), md("## Batches"), md(f"{RECAP}\n\n- one\n- two\n\nNext: [Chapter 2](02_b.ipynb)."),
            md("## Exercises\n\n1. ...")]
    assert recap_problems(good, {"02_b"}) == []
    assert recap_problems(good[:2], {"02_b"}) == [f"0 cells start with {RECAP!r}, not one"]
    long = md(f"{RECAP}\n\n" + "".join(f"- point {i}\n" for i in range(7)) + "[next](02_b.ipynb)")
    assert recap_problems([long], {"02_b"}) == ["7 bullets (one to six)"]
    assert recap_problems([good[2], md("## Batches")], {"02_b"}) == ["sections after the recap: ['## Batches']"]
    assert recap_problems([good[2]], {"03_c"}) == ["no link to the chapter where the ideas are used next"]


# --- Settings the prose names are the recipe's -------------------------------------------------
# Chapters 7 and 8 train and use `tl.Recipe()`; a sentence that names its epochs, its averaging or its
# vocabulary must name today's value, and the output that prints the recipe must be today's.
NUMBER_WORDS = {"one": 1, "two": 2, "three": 3, "four": 4, "five": 5, "six": 6, "seven": 7, "eight": 8, "nine": 9,
                "ten": 10, "fifteen": 15, "twenty": 20}
RECIPE_IN_PROSE = {
    "epochs": re.compile(r"(\d+)-epoch run above|run above[^.]{0,40}?\b(\d+) epochs|recipe, (\d+) epochs"),
    "average_last": re.compile(r"average of the last (\w+) epochs|averages? the (?:weights of the )?last (\w+) epochs"),
    "vocab_size": re.compile(r"vocabular(?:y|ies) of ([\d,]+) pieces|([\d,]+)-piece vocabular"),
}
RECIPE_CHAPTERS = ("07_training", "08_translating")


def recipe_settings_in_prose(cells, recipe) -> list[str]:
    """The sentences of `cells`' markdown that name a setting of `recipe` with another value."""
    wrong = []
    for cell in cells:
        if cell["cell_type"] != "markdown":
            continue
        text = source(cell)
        for name, pattern in RECIPE_IN_PROSE.items():
            for match in pattern.finditer(text):
                said = next(group for group in match.groups() if group)
                value = int(said.replace(",", "")) if said[0].isdigit() else NUMBER_WORDS.get(said.lower())
                if value is not None and value != getattr(recipe, name):
                    wrong.append(f"{name} {said} (tl.Recipe(): {getattr(recipe, name)}) in '...{match.group(0)}...'")
    return wrong


@pytest.mark.parametrize("stem", RECIPE_CHAPTERS)
def test_the_settings_the_prose_names_are_the_recipes(stem):
    cells = json.loads((ROOT / "chapters" / f"{stem}.ipynb").read_text())["cells"]
    wrong = recipe_settings_in_prose(cells, transformer_lib.Recipe())
    assert not wrong, "the prose names a setting the recipe no longer has: " + "; ".join(wrong)


def test_the_recipe_check_catches_a_stale_setting():
    recipe = transformer_lib.Recipe()
    stale = [{"cell_type": "markdown", "source": [
        f"the {recipe.epochs + 31}-epoch run above, the average of the last ten epochs, two vocabularies of "
        f"{recipe.vocab_size // 2:,} pieces"]}]
    assert [w.split()[0] for w in recipe_settings_in_prose(stale, recipe)] == ["epochs", "average_last", "vocab_size"]
    fresh = [{"cell_type": "markdown", "source": [
        f"the {recipe.epochs}-epoch run above, the average of the last {recipe.average_last} epochs"]}]
    assert recipe_settings_in_prose(fresh, recipe) == []


def test_chapter_7s_stored_output_prints_todays_recipe():
    cells = json.loads((ROOT / "chapters" / "07_training.ipynb").read_text())["cells"]
    printed = _output_text(next(cell for cell in cells if cell.get("id") == "c5bfcc07"))
    assert "changed from tl.Recipe(): nothing" in printed  # the full run trains the default recipe
    settings = dict(line.split(None, 1) for line in printed.splitlines() if line.startswith("  ") and
                    line.split()[0] in transformer_lib.Recipe.__dataclass_fields__)
    expected = {name: str(value) for name, value in transformer_lib.Recipe().to_dict().items()}
    assert settings == expected, "chapter 7 ran with another recipe: run it again (it trains) or refresh the cell"


EPOCH_LINE = re.compile(r"Epoch (\d+)/\d+: .*?val_loss ([\d.]+) .*?val_score ([\d.]+)(.*)")


def training_log_problems(printed: str, run: dict) -> list[str]:
    """What keeps chapter 7's stored training output from being the log of the recorded run, trained in the cell:
    an epoch resumed instead of trained, an epoch missing, or a validation loss or BLEU the record does not hold."""
    epochs = [match.groups() for match in map(EPOCH_LINE.search, printed.splitlines()) if match]
    problems = [f"epoch {epoch} was trained before this call: a resume, not the training" for epoch, *_, rest in
                epochs if "before this call" in rest]
    if [int(epoch) for epoch, *_ in epochs] != list(range(1, len(run["val_loss"]) + 1)):
        problems.append(f"epochs {[int(epoch) for epoch, *_ in epochs]}, the record has {len(run['val_loss'])}")
    problems += [f"epoch {epoch}: val_loss {loss}, val BLEU {bleu}; the record: {run['val_loss'][int(epoch) - 1]}, "
                 f"{run['val_greedy_bleu'][int(epoch) - 1]}" for epoch, loss, bleu, _ in epochs
                 if int(epoch) <= len(run["val_loss"]) and (abs(float(loss) - run["val_loss"][int(epoch) - 1]) > 5e-5
                                                            or abs(float(bleu) - run["val_greedy_bleu"][int(epoch) - 1]) > 5e-3)]
    return problems


def test_chapter_7s_stored_output_is_the_training_of_the_recorded_run():
    """The reader sees the run as it trained: the training cell's log, epoch by epoch the run whose record
    (benchmarks/whole_runs.json, "small (chapter 7)") the performance appendix and chapter 8's translator come from."""
    cells = json.loads((ROOT / "chapters" / "07_training.ipynb").read_text())["cells"]
    printed = _output_text(next(cell for cell in cells if cell.get("id") == "08aee8ed"))
    run = json.loads((ROOT / "benchmarks" / "whole_runs.json").read_text())["runs"]["small (chapter 7)"]
    problems = training_log_problems(printed, run)
    assert not problems, "train chapter 7 again (make execute): " + "; ".join(problems)


def test_the_training_log_check_catches_a_resume_and_another_run():
    run = {"val_loss": [6.11, 5.5965], "val_greedy_bleu": [0.09, 1.16]}
    trained = ("Epoch 1/2: 362 updates in 111 s  loss 7.0997  val_loss 6.1100  val_accuracy 0.2469  val_score 0.09\n"
               "Epoch 2/2: 362 updates in 75 s  loss 5.7297  val_loss 5.5965  val_accuracy 0.3377  val_score 1.16\n")
    assert training_log_problems(trained, run) == []
    resumed = trained.replace("\n", "  (before this call)\n")
    assert len(training_log_problems(resumed, run)) == 2
    other = trained.replace("val_score 1.16", "val_score 1.36")
    assert training_log_problems(other, run) == ["epoch 2: val_loss 5.5965, val BLEU 1.36; the record: 5.5965, 1.16"]
    assert training_log_problems(trained.splitlines()[0], run) == ["epochs [1], the record has 2"]


def test_the_appendixs_stored_output_compares_the_record_with_todays_recipe():
    cells = json.loads((ROOT / "chapters" / "appendix_performance.ipynb").read_text())["cells"]
    printed = _output_text(next(cell for cell in cells if cell.get("id") == "0764c042"))
    record = json.loads((ROOT / "benchmarks" / "time_to_quality.json").read_text())
    ours = transformer_lib.Recipe(**record["runs"]["ours"]["recipe"])
    line = next(line for line in printed.splitlines() if "how tl.Recipe() differs from it:" in line)
    assert line.split("from it:", 1)[1].strip() == str(transformer_lib.Recipe().changes(ours)), (
        "refresh it: python -m tools.notebooks --cell 0764c042 chapters/appendix_performance.ipynb")


# --- Chapter 8's "Try it in the page" quotes what the page's translator writes --------------------
# The page runs book_static/translator (chapter 7's translator, int8); what the section says a reader
# will see is checked against those graphs, run by onnxruntime with the page's own loops (web.OnnxTranslator).
PAGE_TRANSLATIONS = {  # (text, beam size): the translation the prose quotes
    ("Кошка ест рыбу.", 4): "The cat eats fish.",
    ("Рыбу ест кошка.", 4): "The cat is eating a cat.",
    ("Мать любит дочь.", 4): "My mother likes her daughter.",
    ("Дочь любит мать.", 4): "My mother likes her mother.",
    ("Он пришёл домой поздно вечером.", 1): "He came home late at home last night.",
    ("Он пришёл домой поздно вечером.", 4): "He came home late last night.",
    ("Меня зовут Владимир Набоков.", 4): "The police are my name.",
}
PAGE_NOTE = "The text is ... pieces long; the model reads at most 62, so only the beginning was translated."
QUOTES_NOT_FROM_OUTPUTS["08_translating"] = {
    **{text: "typed into the page (Try it in the page)" for text, _ in PAGE_TRANSLATIONS},
    **{said: "the page's translator (test_the_page_writes_what_try_it_in_the_page_quotes)"
       for said in PAGE_TRANSLATIONS.values()},
    "Мой брат живёт в Москве.": "typed into the page (Try it in the page)",
    PAGE_NOTE: "the page's note for a cut text (book_js/browser-translator.js), its number left out",
}


def test_the_page_writes_what_try_it_in_the_page_quotes():
    pytest.importorskip("onnxruntime")
    from transformer_lib.export import web
    from transformer_lib.data.tokenizer import END_ID, SubwordTokenizer

    cells = json.loads((ROOT / "chapters" / "08_translating.ipynb").read_text())["cells"]
    prose = _normalized(source(next(cell for cell in cells if cell.get("id") == "try-it-in-the-page")))
    folder = ROOT / "book_static" / "translator"
    page, manifest = web.OnnxTranslator(folder), json.loads((folder / "manifest.json").read_text())
    source_pieces, target_pieces = (SubwordTokenizer.load(folder / name) for name in ("source.model", "target.model"))
    for (text, beam_size), quoted in PAGE_TRANSLATIONS.items():
        assert f'"{text}"' in prose and f'"{quoted}"' in prose
        ids = source_pieces.encode(text, add_start_end=True)
        found = page.greedy(ids) if beam_size == 1 else page.beam(ids, beam_size, manifest["beam_alpha"])
        assert target_pieces.decode([i for i in found if i != END_ID]) == quoted, (text, beam_size)
    script = (ROOT / "book_js" / "browser-translator.js").read_text()
    assert '" pieces long; the model reads at most " +' in script and "so only the beginning was translated." in script
    assert manifest["max_length"] - 2 == 62 and "▁Вла ди ми р" in prose
    assert [source_pieces.pieces(text)[:2] for text in ("Рыбу ест кошка.", "Дочь любит мать.")] == [
        ["▁Ры", "бу"], ["▁До", "чь"]] and "▁Ры бу" in prose and "▁До чь" in prose
    assert source_pieces.pieces("Меня зовут Владимир Набоков.")[2:6] == ["▁Вла", "ди", "ми", "р"]


# --- Chapter 9's record is its run's -----------------------------------------------------------
# chapters/results/09_imdb_bert.json is written by chapter 9's full run; the numbers it holds must be
# the ones the committed chapter shows, so that neither can be re-run or edited without the other.
def record_numbers_missing_from_outputs(record: dict, outputs: str) -> list[str]:
    """The record's headline numbers (as the chapter prints them) that `outputs` does not show."""
    expected = {"classifier_test_accuracy": f"{record['classifier_test_accuracy']:.4f}",
                "mlm_accuracy": f"{record['mlm_accuracy']:.3f}"}
    for version, seeds in record["mask_seeds"].items():
        expected.update({f"mask_seeds.{version}.{seed}": f"{value:.4f}" for seed, value in seeds.items()})
    for point in record["label_efficiency"] or []:
        expected.update({f"label_efficiency.{point['labels']}.{kind}": f"{point[kind]:.4f}"
                         for kind in ("pretrained", "scratch")})
    shown = set(re.findall(r"\d+\.\d+", outputs))
    missing = [f"{key} = {text}" for key, text in expected.items() if text not in shown]
    # The record rounds perplexities to 2 decimals and the chapter prints 1: 212.8549 is 212.85 there, 212.9 here.
    printed = [float(n) for n in shown if len(n.split(".")[1]) == 1]
    missing += [f"lm_val_perplexity.{i} = {value}" for i, value in enumerate(record["lm_val_perplexity"])
                if not any(abs(n - value) <= 0.0501 for n in printed)]
    return missing


def test_chapter_9s_record_holds_the_numbers_its_outputs_show():
    record = json.loads((ROOT / "chapters" / "results" / "09_imdb_bert.json").read_text())
    outputs = "\n".join(_output_text(cell) for cell in code_cells(ROOT / "chapters" / "09_imdb_bert.ipynb"))
    missing = record_numbers_missing_from_outputs(record, outputs)
    assert not missing, f"chapters/results/09_imdb_bert.json holds numbers chapter 9's outputs do not show: {missing}"


def test_the_record_check_catches_a_number_the_outputs_do_not_show():
    record = {"classifier_test_accuracy": 0.88261, "mlm_accuracy": 0.2701, "mask_seeds": {"with": {"0": 0.85}},
              "label_efficiency": [{"labels": 1000, "pretrained": 0.8117, "scratch": 0.7557}],
              "lm_val_perplexity": [183.22]}
    outputs = "test accuracy 0.8826; masked 0.270; seed 0 0.8500; 1,000 labels: 0.8117 and 0.7557; perplexity 183.2"
    assert record_numbers_missing_from_outputs(record, outputs) == []
    assert record_numbers_missing_from_outputs({**record, "classifier_test_accuracy": 0.8518}, outputs) == [
        "classifier_test_accuracy = 0.8518"]
    stale = {**record, "label_efficiency": [{"labels": 1000, "pretrained": 0.8121, "scratch": 0.7557}]}
    assert record_numbers_missing_from_outputs(stale, outputs) == ["label_efficiency.1000.pretrained = 0.8121"]
    # a perplexity the record rounded to 2 decimals is found printed at 1 (212.85 printed as 212.9), not one far off
    assert record_numbers_missing_from_outputs({**record, "lm_val_perplexity": [183.15]}, outputs) == []
    assert record_numbers_missing_from_outputs({**record, "lm_val_perplexity": [183.4]}, outputs) == [
        "lm_val_perplexity.0 = 183.4"]


# --- Chapter 10's record is its run's ----------------------------------------------------------
# chapters/results/since_2017.json is written by the chapter's full run: the table of at least four
# variants from two seeds, with the study's full settings, and every number of it shown by the chapter.
def since_2017_record_problems(record: dict, outputs: str, full_settings: dict) -> list[str]:
    """What is wrong with the chapter "Since 2017"'s record against its outputs and the study's settings."""
    problems = [] if record["settings"] == full_settings else ["the record's settings are not the study's FULL"]
    variants = {row["variant"] for row in record["rows"]}
    if len(variants) < 4 or len(record["seeds"]) < 2:
        problems.append(f"{len(variants)} variants and {len(record['seeds'])} seed(s): at least 4 and 2")
    for row in record["rows"]:
        for key, text in (("val_perplexity", f"{row['val_perplexity']:.2f}"), ("parameters", f"{row['parameters']:,}"),
                          ("cache_bytes_per_token", f"{row['cache_bytes_per_token']:,}")):
            if text not in outputs:
                problems.append(f"{row['variant']} seed {row['seed']}: {key} {text} is in no output")
    problems += [f"the {name} sample is in no output" for name, text in record["greedy_samples"].items()
                 if text not in outputs]
    return problems


def test_chapter_10s_record_is_its_full_run_and_holds_the_numbers_its_outputs_show():
    from transformer_lib.training import since_2017

    record = json.loads((ROOT / "chapters" / "results" / "since_2017.json").read_text())
    outputs = "\n".join(_output_text(cell) for cell in code_cells(ROOT / "chapters" / "10_since_2017.ipynb"))
    assert since_2017_record_problems(record, outputs, since_2017.FULL) == []
    assert "Run with full settings" in outputs and record["machine"] in outputs


def test_the_since_2017_record_check_catches_a_stale_number():
    rows = [{"variant": v, "seed": s, "val_perplexity": 290.5 + i, "parameters": 1_420_544, "cache_bytes_per_token": 2048}
            for s in (0, 1) for i, v in enumerate(("2017", "pre-LN", "rotary", "2024"))]
    record = {"settings": {"windows": 5}, "seeds": [0, 1], "rows": rows, "greedy_samples": {"2017": "this movie was"}}
    outputs = "290.50 291.50 292.50 293.50 1,420,544 2,048 | 2017: this movie was"
    assert since_2017_record_problems(record, outputs, {"windows": 5}) == []
    stale = {**record, "rows": [*rows[:-1], {**rows[-1], "val_perplexity": 266.49}]}
    assert since_2017_record_problems(stale, outputs, {"windows": 5}) == ["2024 seed 1: val_perplexity 266.49 is in no output"]
    assert since_2017_record_problems(record, outputs, {"windows": 6}) == ["the record's settings are not the study's FULL"]
    assert since_2017_record_problems({**record, "seeds": [0]}, outputs, {"windows": 5}) == [
        "4 variants and 1 seed(s): at least 4 and 2"]
