"""The reader's text says what holds, and where each number comes from (../STYLE: "the reader's text says what
holds, not how we got there"; "a number from a record names the record beside it").

Three guards, each with the planted cases that must fail it:
- a number in a chapter's prose is shown by an output of that chapter, or comes from a committed record named in
  the same paragraph, and is found in *that* record (not anywhere in the repository); what neither holds (a
  paper's number, a setting, arithmetic) is listed in `NOT_FROM_OUTPUTS` with its source, never a record;
- the free-text fields of every committed record hold no history and no work item, and a label that names
  chapter 7's run describes that run (its machine, its numbers);
- the reader's text (chapters, README files, instructors.md, intro.md, records) tells no story of its making.
"""

import json
import re
from pathlib import Path

import pytest

from test_chapters import (CHAPTERS, LICENCE_VERSIONS, NOT_A_QUOTE, NOT_FROM_OUTPUTS, QUOTED_NUMBER, _output_text,
                           source)

ROOT = Path(__file__).resolve().parent.parent
RECORDS = sorted([*(ROOT / "benchmarks").glob("*.json"), *(ROOT / "chapters" / "results").rglob("*.json")])


# --- Numbers: shown by an output, or found in the record the paragraph names -----------------------------------
RECORD_NAME = re.compile(r"((?:[\w.-]+/)*)([\w-]+\.json)\b")
SOLUTION = re.compile(r"```\{admonition\} Solution.*?```", re.S)
NUMBER_IN_RECORD = re.compile(r"-?\d+(?:,\d{3})*(?:\.\d+)?")


def _numbers(value) -> set[float]:
    """Every number a record holds: its numeric fields and the numbers written inside its strings."""
    if isinstance(value, bool):
        return set()
    if isinstance(value, (int, float)):
        return {float(value)}
    if isinstance(value, str):
        return {float(n.replace(",", "")) for n in NUMBER_IN_RECORD.findall(value)}
    items = value.values() if isinstance(value, dict) else value if isinstance(value, list) else []
    return {n for item in items for n in _numbers(item)}


def record_numbers(path: Path) -> set[float]:
    return _numbers(json.loads(path.read_text()))


def records_named(paragraph: str, records=RECORDS) -> list[Path]:
    """The committed records a paragraph names, by file name or path (`recipe_study.json`,
    `../benchmarks/recipe_study.json`): a bare name two folders share names both."""
    named = []
    for folders, name in RECORD_NAME.findall(paragraph):
        matches = [path for path in records if path.name == name]
        folder = folders.strip("./").split("/")[-1] if folders.strip("./") else ""
        narrowed = [path for path in matches if folder and path.parent.name == folder]
        named += narrowed or matches
    return named


def paragraphs(text: str) -> list[str]:
    """Blocks between blank lines; a table belongs to the block before it (the sentence that introduces it)."""
    blocks = []
    for block in re.split(r"\n\s*\n", text):
        if block.lstrip().startswith("|") and blocks:
            blocks[-1] += "\n\n" + block
        else:
            blocks.append(block)
    return blocks


def numbers_without_source(cells, allowed=(), records=RECORDS) -> list[str]:
    """Each number of `cells`' prose that no output shows and no record named in its paragraph holds."""
    shown = {float(n.replace(",", "")) for c in cells if c["cell_type"] == "code"
             for n in QUOTED_NUMBER.findall(_output_text(c))}
    problems, held = [], {}
    for cell in cells:
        if cell["cell_type"] != "markdown":
            continue
        for paragraph in paragraphs(SOLUTION.sub(" ", source(cell))):  # a solution's worked arithmetic is no quote
            named = records_named(paragraph, records)
            in_named = set().union(*(held.setdefault(p, record_numbers(p)) for p in named))
            text = NOT_A_QUOTE.sub(" ", paragraph)
            for match in QUOTED_NUMBER.finditer(text):
                number = match.group(0)
                value = float(number.replace(",", ""))
                digits = len(number.split(".")[1]) if "." in number else 0
                about = re.search(r"(about|nearly|almost|roughly|~)\s*$", text[: match.start()])

                def holds(values):
                    return any(round(x, digits) == value or (about and abs(x - value) <= 0.05 * abs(value))
                               for x in values)

                if number in allowed or holds(shown) or holds(in_named):
                    continue
                where = " ".join(text[max(0, match.start() - 50): match.end() + 20].split())
                problems.append(f"{number} in '...{where}...': " + (
                    f"not in {', '.join(p.name for p in named)}, the record(s) its paragraph names" if named else
                    "no output shows it and its paragraph names no record"))
    return problems


@pytest.mark.parametrize("path", CHAPTERS, ids=lambda p: p.stem)
def test_a_number_in_the_prose_is_shown_by_an_output_or_held_by_the_record_its_paragraph_names(path):
    allowed = {**LICENCE_VERSIONS, **NOT_FROM_OUTPUTS.get(path.stem, {})}
    problems = numbers_without_source(json.loads(path.read_text())["cells"], allowed)
    assert not problems, ("quote a number an output shows, or name the record it comes from in its paragraph "
                          "(a link or the file name): " + "; ".join(problems))


def test_numbers_listed_without_an_output_are_not_record_numbers():
    """A record's number is checked against the record the paragraph names, so the list never cites one."""
    cited = [f"{stem}: {number} ({why})" for stem, numbers in NOT_FROM_OUTPUTS.items()
             for number, why in numbers.items() if ".json" in why]
    assert not cited, "name these records in the paragraph instead of listing the numbers: " + "; ".join(cited)


def test_the_number_check_catches_a_stale_number_and_accepts_rounding():
    def cells(prose, output):
        return [{"cell_type": "code", "source": [], "outputs": [{"output_type": "stream", "text": [output]}]},
                {"cell_type": "markdown", "source": [prose]}]

    def flagged(prose, output):
        return [problem.split(" in ")[0] for problem in numbers_without_source(cells(prose, output), records=[])]

    assert flagged("BLEU 29.46 on 916 sentences", "BLEU 29.46 (916 sentences)") == []
    assert flagged("BLEU 29.5, 45% cut", "BLEU 29.46; 45% of the reviews are cut") == []  # rounded
    assert flagged("BLEU 11.9 after 30 epochs", "BLEU 29.46") == ["11.9"]
    assert flagged("BLEU 29.4", "BLEU 29.46") == ["29.4"]  # wrong rounding
    assert flagged("beam costs 13x greedy, 2.2x", "4.8x; 2.2x") == []  # 13: no decimal
    assert flagged("beam costs 13.0x greedy", "4.8x") == ["13.0"]
    assert flagged("about 17,500 pairs", "17,456 pairs") == []
    assert flagged("17,500 pairs", "17,456 pairs") == ["17,500"]  # no "about"
    assert flagged("§3.4 and section 3.2.1, $0.5$, `1.25`", "") == []
    solution = "```{admonition} Solution to exercise 1\n:class: dropdown\n`x` is 8.4 million\n\nso 5,250\n```\nBLEU 3.5"
    assert flagged(solution, "") == ["3.5"]  # a solution's worked arithmetic, over paragraphs too, is no quote


def test_the_number_check_finds_a_number_in_the_named_record_only(tmp_path):
    (tmp_path / "benchmarks").mkdir()
    study, other = tmp_path / "benchmarks" / "study.json", tmp_path / "benchmarks" / "other.json"
    study.write_text(json.dumps({"what": "a study of 2,896 updates", "rows": [{"bleu": 25.214}, {"bleu": 12.18}]}))
    other.write_text(json.dumps({"bleu": 35.66}))
    records = [other, study]

    def cells(prose, output=""):
        return [{"cell_type": "code", "source": [], "outputs": [{"output_type": "stream", "text": [output]}]},
                {"cell_type": "markdown", "source": [prose]}]

    assert numbers_without_source(cells("In [`study.json`](../benchmarks/study.json), BLEU 25.21 and 12.18 "
                                        "after 2,896 updates."), records=records) == []
    assert numbers_without_source(cells("BLEU 35.76 (chapter 7)", "BLEU 35.76"), records=records) == []  # an output
    wrong = numbers_without_source(cells("`study.json` has 35.66 for chapter 7's run."), records=records)
    assert len(wrong) == 1 and wrong[0].endswith("not in study.json, the record(s) its paragraph names")  # in
    # another record only: not enough
    unnamed = numbers_without_source(cells("The study found 25.21.\n\nIt is in `study.json`."), records=records)
    assert [p.split(":")[-1].strip() for p in unnamed] == ["no output shows it and its paragraph names no record"]
    assert numbers_without_source(cells("Rows in `study.json`:\n\n| row | BLEU |\n|---|---:|\n| a | 25.21 |"),
                                  records=records) == []  # a table belongs to the paragraph that introduces it
    assert len(numbers_without_source(cells("`study.json`: 54% more updates"), records=records)) == 1
    assert numbers_without_source(cells("`study.json`: 54% more pairs"), allowed={"54": "arithmetic"},
                                  records=records) == []


# --- The course's history is not the reader's text ------------------------------------------------------------
# "is used to compute" is a passive, not history; a Colab session that times out is not history either.
HISTORY = re.compile(
    r"(?<!\bis )(?<!\bare )(?<!\bwas )(?<!\bwere )(?<!\bbe )(?<!\bbeen )(?<!\bbeing )(?<!\bget )(?<!\bgot )"
    r"\bused to\b(?! \w+ used to)"
    r"|\b(?:earlier|previous|former) (?:versions?|recipes?|runs?|defaults?|editions?)\b(?! of the same)"
    r"|\b(?:earlier|previous|former) (?:record|model|setting|split)s?\b|\bfirst (?:version|edition)\b"
    r"|\bha(?:s|ve|d) since\b|\bwe had\b|\blent\b|\bsessions? of the course\b|\bin another session\b"
    r"|\bthe goal was\b|\bcorrected on\b|\bbefore the cuts\b"
    r"|\b[Ii]ssues? #?\d+|(?<![\w&/:#])(?<!: )#\d{1,4}\b(?![\w-])", re.I)


def history_in(texts) -> list[str]:
    return [" ".join(text[max(0, m.start() - 40): m.end() + 30].split()) for text in texts for m in HISTORY.finditer(text)]


def notebook_texts(path: Path) -> list[str]:
    """Every text a reader sees: markdown, code, and outputs (not HTML, whose styles hold colours like #666)."""
    texts = []
    for cell in json.loads(path.read_text())["cells"]:
        texts.append(source(cell))
        for output in cell.get("outputs", []):
            data = output.get("data", {})
            for text in (output.get("text"), data.get("text/plain"), data.get("text/markdown")):
                if text:
                    texts.append("".join(text) if isinstance(text, list) else text)
    return texts


READER_PAGES = [*CHAPTERS, *(ROOT / name for name in ("README.md", "instructors.md", "intro.md",
                                                       "transformer_lib/README.md", "benchmarks/README.md")
                             if (ROOT / name).exists())]


@pytest.mark.parametrize("path", READER_PAGES, ids=lambda p: str(p.relative_to(ROOT)))
def test_the_readers_text_tells_no_story_of_its_making(path):
    found = history_in(notebook_texts(path) if path.suffix == ".ipynb" else [path.read_text()])
    assert not found, "say what holds today, without the course's history: " + "; ".join(found)


def test_the_history_check_catches_each_kind_and_leaves_plain_english_alone():
    told = ["Until issue #29 the tutorial won", "goals (issue 43)", "the previous edition's score",
            "make_batches used to hand the batches over", "the earlier default recipe", "An earlier run was",
            "The recipe has since changed", "stopped to fit the time we had", "a session of the course was lent a GPU",
            "(on another H100, in another session)", "5.6 points (the goal was 5)", "this note corrected on 2026-12-05",
            "The first version of the book", "before #29 it was slower", "A screen for chapter 9 (#44)"]
    assert [text for text in told if not history_in([text])] == []
    plain = ["the vector is used to compute scores", "weights are used to translate", "Tom isn't used to get used to",
             "cut to fit (first: #11)", "color: #666", "§3.2 and ## Exercises", "the first run below (exercise 6)",
             "A first run in under two minutes", "results of a full run of the same cells", "a Colab session times out",
             "the first epoch", "an earlier epoch", "the first runs of the same recipe"]
    assert history_in(plain) == []


# --- Records: free text without history, labels that name the right run -------------------------------------
# Strings a model or a dataset wrote (translations, samples, prompts) are data, not the record's text.
DATA_KEYS = re.compile(r"translation|sample|prompt|text|review|sentence|hypothes|reference|source_line|command", re.I)


def record_texts(value, key="") -> list[tuple[str, str, object]]:
    """(field, text, the object holding it) for every free-text string of a record."""
    if isinstance(value, dict):
        return [found for k, v in value.items() if not DATA_KEYS.search(str(k))
                for found in (record_texts(v, str(k)) if not isinstance(v, str) else [(str(k), v, value)])]
    if isinstance(value, list):
        return [found for item in value for found in record_texts(item, key)]
    return []


@pytest.mark.parametrize("path", RECORDS, ids=lambda p: str(p.relative_to(ROOT)))
def test_a_records_text_holds_no_history_and_no_work_item(path):
    found = [f"{field}: {hit}" for field, text, _ in record_texts(json.loads(path.read_text()))
             for hit in history_in([text])]
    assert not found, f"{path.name}: say what the record holds, not its story: " + "; ".join(found)


CHAPTER_7_RUN = re.compile(r"chapter 7's (?:published |own |stored )?(?:run|translator|model)\b", re.I)
VENDORS = ("AMD", "Intel")


def chapter_7s_run() -> dict:
    return json.loads((ROOT / "benchmarks" / "whole_runs.json").read_text())["runs"]["small (chapter 7)"]


def mislabelled_runs(record, run: dict) -> list[str]:
    """Texts of `record` that name chapter 7's run but describe another: another CPU maker, a number of it
    that `run` does not hold, or a count or a time that differs from `run`'s."""
    vendors = {v for v in VENDORS if v in run["cpu"] + run["machine"]}
    numbers = _numbers(run)
    problems = []
    for field, text, holder in record_texts(record):
        if not CHAPTER_7_RUN.search(text):
            continue
        described = text + " " + " ".join(str(holder.get(k, "")) for k in ("cpu", "machine"))
        problems += [f"{field}: {v}, but chapter 7's run ran on {run['cpu']}" for v in VENDORS
                     if v in described and v not in vendors]
        problems += [f"{field}: {n}, which chapter 7's run does not hold" for n in re.findall(r"\d+\.\d+", text)
                     if float(n) not in numbers]
        problems += [f"{key} {holder[key]} (chapter 7's run: {run[key]})" for key in
                     ("train_minutes", "updates", "batches_per_epoch", "training_pairs", "parameters")
                     if key in holder and key in run and holder[key] != run[key]]
    return problems


@pytest.mark.parametrize("path", RECORDS, ids=lambda p: str(p.relative_to(ROOT)))
def test_a_record_that_names_chapter_7s_run_describes_that_run(path):
    problems = mislabelled_runs(json.loads(path.read_text()), chapter_7s_run())
    assert not problems, f"{path.name} names chapter 7's run (benchmarks/whole_runs.json, 'small (chapter 7)') " \
                         "but describes another; call it what it is: " + "; ".join(problems)


def test_the_label_check_catches_another_run_called_chapter_7s():
    run = {"cpu": "AMD EPYC with AVX-512", "machine": "x86_64 (AMD EPYC)", "train_minutes": 36.3, "updates": 10498,
           "val_beam": {"average of the last 5": 35.76}}
    good = {"baseline": {"what": "chapter 7's run: 35.76", "cpu": "AMD EPYC", "train_minutes": 36.3}}
    assert mislabelled_runs(good, run) == []
    intel = {"baseline": {"what": "chapter 7's published run", "cpu": "a 2-core Intel Xeon", "train_minutes": 39.2}}
    assert mislabelled_runs(intel, run) == ["what: Intel, but chapter 7's run ran on AMD EPYC with AVX-512",
                                            "train_minutes 39.2 (chapter 7's run: 36.3)"]
    assert mislabelled_runs({"note": "chapter 7's run scored 35.66"}, run) == [
        "note: 35.66, which chapter 7's run does not hold"]
    assert mislabelled_runs({"what": "another run of chapter 7's recipe, Intel Xeon, 35.66"}, run) == []


# --- The performance appendix is a reference, not a story ----------------------------------------------------
APPENDIX_WORDS = 6000  # each study's question, table, machine and reading; the rest lives in git


def prose_words(cells) -> int:
    return sum(len(source(cell).split()) for cell in cells if cell["cell_type"] == "markdown")


def test_the_performance_appendix_reads_as_a_reference():
    cells = json.loads((ROOT / "chapters" / "appendix_performance.ipynb").read_text())["cells"]
    assert prose_words(cells) <= APPENDIX_WORDS, (
        f"the appendix's prose has {prose_words(cells):,} words (at most {APPENDIX_WORDS:,}): say each study's "
        "question, table, machine and reading, not how it was reached")
    assert prose_words([{"cell_type": "markdown", "source": ["one two\n", "three"]},
                        {"cell_type": "code", "source": ["not prose"]}]) == 3
