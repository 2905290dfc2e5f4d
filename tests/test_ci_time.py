"""CI's time profile (tools/ci_time.py, `make ci-profile`) and what `make test` runs, stage by stage."""

import json
import re
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tools"))

import ci_time  # noqa: E402

JUNIT = """<?xml version="1.0" encoding="utf-8"?>
<testsuites><testsuite name="pytest">
  <testcase classname="tests.test_a" name="test_fast" time="0.25"/>
  <testcase classname="tests.test_a" name="test_slow" time="12.5"/>
  <testcase classname="tests.test_b" name="test_broken" time="3.0"><failure message="boom"/></testcase>
  <testcase classname="tests.test_b" name="test_skipped" time="0.0"><skipped message="no data"/></testcase>
  <testcase classname="chapters.07_training.ipynb" name="Cell 14" time="80.0"/>
</testsuite></testsuites>
"""


def test_a_stage_prints_its_minutes_logs_its_seconds_and_keeps_the_commands_exit_code(tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("CI_TIME_DIR", str(tmp_path))
    assert ci_time.run_stage("works", [sys.executable, "-c", "pass"]) == 0
    assert ci_time.run_stage("breaks", [sys.executable, "-c", "raise SystemExit(3)"]) == 3
    printed = capsys.readouterr().out.splitlines()
    assert re.fullmatch(r"ci stage works: \d+\.\d min", printed[0])
    assert re.fullmatch(r"ci stage breaks: \d+\.\d min \(failed, exit 3\)", printed[1])
    logged = [json.loads(line) for line in (tmp_path / "stages.jsonl").read_text().splitlines()]
    assert [(row["stage"], row["exit"]) for row in logged] == [("works", 0), ("breaks", 3)]
    assert all(row["seconds"] >= 0 for row in logged)
    assert logged[0]["started"] <= logged[1]["started"]  # when each began: stages may overlap (make -j)


def test_the_junit_reports_give_each_reports_counts_and_the_tests_slowest_first(tmp_path):
    (tmp_path / "unit-tests.xml").write_text(JUNIT)
    counts, tests = ci_time.test_times(tmp_path)
    assert counts == {"unit-tests": {"passed": 3, "failed": 1, "skipped": 1}}
    assert [t["seconds"] for t in tests] == [80.0, 12.5, 3.0, 0.2, 0.0]  # 0.25 kept to one decimal
    assert tests[0] == {"stage": "unit-tests", "test": "chapters.07_training.ipynb::Cell 14", "seconds": 80.0}
    files = ci_time.file_times(tests)
    assert [(row["file"], row["seconds"]) for row in files] == [
        ("chapters.07_training.ipynb", 80.0), ("tests.test_a", 12.7), ("tests.test_b", 3.0)]


def test_the_machine_names_its_vector_instructions_and_the_avx2_stand_in(monkeypatch):
    monkeypatch.setenv("ONEDNN_MAX_CPU_ISA", "AVX2")
    described = ci_time.machine()
    assert described["isa"] in ("AVX-512", "AVX2", "neither AVX2 nor AVX-512")
    assert described["avx2_standin"] is True and described["onednn_max_cpu_isa"] == "AVX2"
    monkeypatch.delenv("ONEDNN_MAX_CPU_ISA")
    assert ci_time.machine()["avx2_standin"] is False


def test_make_test_times_every_stage_and_runs_each_edition_of_the_chapters_once():
    makefile = (ROOT / "Makefile").read_text()
    recipe = [line.strip() for line in makefile.split("\ntest:\n", 1)[1].split("\n\n", 1)[0].splitlines()]
    stage_lines = r"@\$\(STAGE\) (\S+) \$\((?:MAKE\) --no-print-directory|PARALLEL\)) (.+)"
    staged = dict(re.findall(stage_lines, makefile))
    assert staged == {"install": "install colab-prepare $(BOOK_ASSETS)", "unit-tests": "unit-tests",
                      "colab-check": "colab-check", "notebooks": "notebooks", "book": "book",
                      "site-check": "site-check"}
    # the key's chapters, colab-check's and the site's build and check (which waits on the browser more than it
    # computes) at once
    assert "@$(PARALLEL) staged-notebooks staged-colab staged-site" in recipe
    site = makefile.split("\nstaged-site:\n", 1)[1].split("\n\n", 1)[0].splitlines()
    assert ["book" in site[0], "site-check" in site[1]] == [True, True]  # built, then checked
    assert [line.split()[1] for line in recipe] == ["install", "unit-tests", "staged-notebooks"]
    notebooks = next(line for line in makefile.splitlines() if "--nbval" in line and line.endswith(" chapters/"))
    assert "$(call JUNIT,notebooks)" in notebooks  # the key, in .venv
    colab = (ROOT / ".ci" / "colab_check.py").read_text()
    assert '"student/chapters/", fresh, cwd=ROOT' in colab and '"chapters/",' not in colab  # the student edition
    run = (ROOT / ".ci" / "run").read_text()
    assert "make test" in run and "make colab-check" not in run  # colab-check is make test's last stage


def test_colab_checks_environment_is_prepared_once_per_set_of_requirements(tmp_path, monkeypatch):
    import importlib.util

    spec = importlib.util.spec_from_file_location("colab_check", ROOT / ".ci" / "colab_check.py")
    colab_check = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(colab_check)
    for name in ("colab-runtime.txt", "colab-tools.txt"):
        (tmp_path / name).write_text("keras==3.13.2\n")
    (tmp_path / "pyproject.toml").write_text("[project]\n")
    done = []
    monkeypatch.setattr(colab_check, "ROOT", tmp_path)
    monkeypatch.setattr(colab_check, "VENV", tmp_path / ".venv-colab")
    monkeypatch.setattr(colab_check, "RUNTIME", tmp_path / "colab-runtime.txt")
    monkeypatch.setattr(colab_check, "TOOLS", tmp_path / "colab-tools.txt")
    monkeypatch.setattr(colab_check, "check_python_313_wheels", lambda: done.append("wheels"))
    monkeypatch.setattr(colab_check.venv, "create", lambda folder, with_pip: (folder / "bin").mkdir(parents=True))
    monkeypatch.setattr(colab_check, "run", lambda *command, **options: done.append(command[3]))
    python = colab_check.prepare()
    assert python == tmp_path / ".venv-colab" / "bin" / "python" and done == ["wheels", "install"]
    colab_check.prepare()  # the same requirements: nothing again
    assert done == ["wheels", "install"]
    (tmp_path / "colab-runtime.txt").write_text("keras==3.13.3\n")  # another version: checked and installed again
    colab_check.prepare()
    assert done == ["wheels", "install"] * 2


def test_colab_check_removes_an_earlier_copy_of_the_library_before_the_setup_cell_installs_head(monkeypatch):
    """The setup cell's pip keeps an installed transformer_lib of the same version: the check must start as a fresh
    runtime does, without one, or it runs the chapters on the library of an earlier check."""
    import importlib.util

    spec = importlib.util.spec_from_file_location("colab_check", ROOT / ".ci" / "colab_check.py")
    colab_check = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(colab_check)
    done = []
    monkeypatch.setattr(colab_check, "run", lambda *command, **options: done.append([str(c) for c in command]))
    colab_check.run_setup_cell_as_colab(Path("/venv/bin/python"))
    uninstall = ["/venv/bin/python", "-m", "pip", "uninstall", "--quiet", "--yes", "transformer_lib"]
    assert done[0] == uninstall and done[1][0] == "/venv/bin/ipython"  # removed first, then the setup cell


def test_the_shared_tiny_translator_is_assembled_again_when_the_library_its_weights_or_settings_change(
        tmp_path, monkeypatch):
    import shutil

    import tiny_translator

    copy = tmp_path / "checkout"
    shutil.copytree(ROOT / "transformer_lib", copy / "transformer_lib", ignore=shutil.ignore_patterns("__pycache__"))
    kept = shutil.copytree(tiny_translator.KEPT, tmp_path / "kept")
    monkeypatch.setattr(tiny_translator, "ROOT", copy)
    first = tiny_translator.cache_key(kept)
    assert tiny_translator.cache_key(kept) == first  # the same source, the same key
    attention = copy / "transformer_lib" / "layers" / "attention.py"
    attention.write_text(attention.read_text() + "\n# one more line\n")
    second = tiny_translator.cache_key(kept)
    assert second != first
    (kept / "model.weights.h5").write_bytes((kept / "model.weights.h5").read_bytes() + b"\0")
    third = tiny_translator.cache_key(kept)
    assert third not in (first, second)
    monkeypatch.setitem(tiny_translator.SETTINGS, "epochs", 29)
    assert tiny_translator.cache_key(kept) not in (first, second, third)


def test_the_kept_tiny_translator_was_trained_with_the_settings_and_says_how():
    import tiny_translator

    import transformer_lib as tl

    record = tiny_translator.kept_record()
    assert record["settings"] == tiny_translator.SETTINGS
    assert record["command"] == "python tools/tiny_translator.py --write" and record["machine"] and record["date"]
    held_out = len(tl.load_parallel_corpus("synthetic", "test"))  # all of them, when the weights were trained
    assert record["held_out_exact"] == f"{held_out} of {held_out} test numbers translated exactly (greedy)"


def test_kept_weights_of_other_settings_or_missing_files_name_the_command_that_trains_them_again(tmp_path, monkeypatch):
    import shutil

    import tiny_translator

    kept = shutil.copytree(tiny_translator.KEPT, tmp_path / "kept")
    monkeypatch.setitem(tiny_translator.SETTINGS, "epochs", 29)
    with pytest.raises(RuntimeError, match=r"\(epochs differ from SETTINGS\): train it again with `python tools/tiny_"):
        tiny_translator.kept_record(kept)
    monkeypatch.setitem(tiny_translator.SETTINGS, "epochs", 30)
    (kept / "source.model").unlink()
    with pytest.raises(FileNotFoundError, match=r"lacks source.model: train the tiny translator again"):
        tiny_translator.kept_record(kept)


def test_the_shared_tiny_translator_is_assembled_once_and_then_read_from_its_folder(tmp_path, monkeypatch):
    import tiny_translator

    assembled = []

    def fake_assembly(directory, kept):
        assembled.append(directory)
        directory.mkdir(parents=True)
        (directory / "model.keras").write_text("weights")

    monkeypatch.setattr(tiny_translator, "assemble_into", fake_assembly)
    first = tiny_translator.trained_tiny_translator(tmp_path)
    again = tiny_translator.trained_tiny_translator(tmp_path)
    assert first == again == assembled[0] and len(assembled) == 1
    assert json.loads((first.parent / "assembled.json").read_text())["seconds"] >= 0
    (first.parent / "assembled.json").unlink()  # an assembly that never finished is done again, from scratch
    (first / "half-written").write_text("")
    tiny_translator.trained_tiny_translator(tmp_path)
    assert len(assembled) == 2 and not (first / "half-written").exists()


def test_the_readme_quotes_the_last_profile_record():
    record = json.loads(ci_time.RECORD.read_text())["runs"][-1]
    readme = (ROOT / "README.md").read_text()
    paragraph = " ".join(readme.split("How long it takes", 1)[1].split("It needs Python", 1)[0].split())
    assert "benchmarks/ci_time.json" in paragraph  # the number names the record it comes from
    machine = record["machine"]
    assert f"the last record, a {machine['cores']}-core {machine['cpu']} with {machine['isa']}, took " \
           f"{record['total_minutes']}" in paragraph and not machine["avx2_standin"]
    words = {"system-packages": "system packages", "install": "install", "unit-tests": "unit tests", "notebooks": "the key's chapters", "book": "book",
             "site-check": "site check", "colab-check": "colab-check"}
    for stage in record["stages"]:
        assert f"{words[stage['stage']]} {stage['minutes']}" in paragraph, stage


def earlier_totals_quoted(text: str, runs: list[dict]) -> list[str]:
    """The earlier records' total minutes that `text` quotes as minutes ("46.0 before", "took 19.3, 19.7 and
    20.5"): the history of CI's time, which belongs in benchmarks/ci_time.json, not in prose."""
    last = runs[-1]["total_minutes"]
    earlier = {f"{run['total_minutes']:.1f}" for run in runs[:-1]} - {f"{last:.1f}"}
    return sorted(number for number in earlier if re.search(rf"(?<![\d.]){re.escape(number)}(?![\d])", text))


def test_the_history_of_cis_time_stays_in_its_record():
    runs = json.loads(ci_time.RECORD.read_text())["runs"]
    planted = "The last record took 22.2 minutes; the one before it took 21.2, and 46.0 before the cuts."
    assert earlier_totals_quoted(planted, [{"total_minutes": 46.0}, {"total_minutes": 21.2},
                                           {"total_minutes": 22.2}]) == ["21.2", "46.0"]
    assert earlier_totals_quoted("took 22.2 minutes", [{"total_minutes": 21.2}, {"total_minutes": 22.2}]) == []
    for name in ("README.md", "benchmarks/README.md"):
        assert earlier_totals_quoted((ROOT / name).read_text(), runs) == [], name


def test_benchmarks_readme_says_how_to_read_every_field_of_a_profile_record():
    guide = (ROOT / "benchmarks" / "README.md").read_text()
    guide = guide.split("make ci-profile", 1)[1]  # the section on CI's time
    record = json.loads(ci_time.RECORD.read_text())["runs"][-1]
    fields = {*record, *record["machine"], *(key for stage in record["stages"] for key in stage)}
    assert sorted(field for field in fields if f"`{field}`" not in guide) == []


def test_the_slowest_files_of_the_last_record_are_handed_out_first_and_the_others_keep_their_order(tmp_path):
    def record(files):
        earlier = {"slowest_files": [{"stage": "unit-tests", "file": "tests.test_a", "seconds": 900}]}
        return json.dumps({"runs": [earlier, {"slowest_files": files}]})

    path = tmp_path / "ci_time.json"
    path.write_text(record([{"stage": "unit-tests", "file": "tests.test_slow", "seconds": 400.0},
                            {"stage": "notebooks", "file": "chapters.07_training.ipynb", "seconds": 200.0},
                            {"stage": "notebooks", "file": "chapters.08_translating.ipynb", "seconds": 60.0},
                            {"stage": "colab-notebooks", "file": "08_translating.ipynb", "seconds": 300.0},
                            {"stage": "unit-tests", "file": "tests.test_middle", "seconds": 50.0},
                            {"stage": "unit-tests", "file": "tests.test_moved", "seconds": 100.0}]))
    units = {"tests/test_a.py": ["tests/test_a.py"], "tests/test_middle.py": ["tests/test_middle.py"],
             "tests/test_b.py": ["tests/test_b.py"], "tests/test_slow.py": ["tests/test_slow.py", "tests/test_slow.py"],
             "tests/layers/test_moved.py": ["tests/layers/test_moved.py"]}  # moved into a folder since the record
    # the last record only (test_a was slow in an earlier one), unmeasured files in the order given
    assert ci_time.slowest_first(units, path) == ["tests/test_slow.py", "tests/layers/test_moved.py",
                                                  "tests/test_middle.py", "tests/test_a.py", "tests/test_b.py"]
    chapters = {"chapters/06_assembling.ipynb": ["chapters/06_assembling.ipynb"],
                "chapters/07_training.ipynb": ["chapters/07_training.ipynb", "chapters/08_translating.ipynb"],
                "/tmp/fresh/07_training.ipynb": ["/tmp/fresh/08_translating.ipynb"]}  # a unit of two files; one outside
    assert ci_time.slowest_first(chapters, path) == ["/tmp/fresh/07_training.ipynb", "chapters/07_training.ipynb",
                                                     "chapters/06_assembling.ipynb"]
    for broken in ("", "{}", '{"runs": []}', "not json"):
        path.write_text(broken)
        assert ci_time.slowest_first(units, path) == list(units)  # no record: xdist's order stays
    assert ci_time.slowest_first(units, tmp_path / "missing.json") == list(units)


def test_kept_weights_that_no_longer_fit_the_model_name_the_command_that_trains_them_again(tmp_path):
    import shutil

    import numpy as np
    import tiny_translator

    import transformer_lib as tl

    kept = shutil.copytree(tiny_translator.KEPT, tmp_path / "kept")
    other = tl.Transformer(1, 16, 2, 32, 400, 400)  # as if the model had changed since the weights were trained
    other((np.ones((1, 4), np.int32), np.ones((1, 4), np.int32)))
    other.save_weights(kept / "model.weights.h5")
    with pytest.raises(RuntimeError, match=r"weights do not fit the model as it is now .*`python tools/tiny_translator"):
        tiny_translator.assemble_into(tmp_path / "translator", kept)
    assert not (tmp_path / "translator").exists()
