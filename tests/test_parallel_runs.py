"""`make test` runs two pytest workers (Makefile: PYTEST_WORKERS): the repository's conftest.py keeps
chapter 8 after chapter 7 on one worker, since chapter 8 reads the translator chapter 7 writes."""

import re
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

WRITER = """
import time
from pathlib import Path


def test_writes_the_translator():
    time.sleep(3)  # long enough for a second worker to start on the reader meanwhile
    (Path(__file__).parent / "translator.txt").write_text("trained")
"""

READER = """
from pathlib import Path


def test_reads_the_translator():
    assert (Path(__file__).parent / "translator.txt").read_text() == "trained"
"""


def run_two_workers(folder: Path, with_conftest: bool) -> subprocess.CompletedProcess:
    (folder / "07_training.py").write_text(textwrap.dedent(WRITER))
    (folder / "08_translating.py").write_text(textwrap.dedent(READER))
    (folder / "translator.txt").unlink(missing_ok=True)
    if with_conftest:
        shutil.copy(ROOT / "conftest.py", folder / "conftest.py")
    return subprocess.run([sys.executable, "-m", "pytest", "-n", "2", "--dist", "loadfile", "-p", "no:cacheprovider",
                           "-p", "no:randomly", "-o", "addopts=", "--rootdir", str(folder), "07_training.py",
                           "08_translating.py"], cwd=folder, capture_output=True, text=True, timeout=300)


def test_chapter_8_waits_for_chapter_7_on_the_same_worker_and_would_not_without_the_conftest(tmp_path):
    (tmp_path / "plain").mkdir()
    plain = run_two_workers(tmp_path / "plain", with_conftest=False)
    assert plain.returncode == 1 and "1 failed, 1 passed" in plain.stdout, plain.stdout  # the race, shown
    (tmp_path / "ours").mkdir()
    ours = run_two_workers(tmp_path / "ours", with_conftest=True)
    assert ours.returncode == 0 and "2 passed" in ours.stdout, ours.stdout


def test_the_chapters_of_both_editions_run_two_at_a_time_a_notebook_on_one_worker():
    makefile = (ROOT / "Makefile").read_text()
    for folder in ("chapters/", "student/chapters/"):
        line = next(line for line in makefile.splitlines() if "--nbval" in line and line.endswith(f" {folder}"))
        assert "-n $(PYTEST_WORKERS) --dist loadfile" in line, line  # another --dist would split a notebook's cells
    assert re.search(r"^PYTEST_WORKERS \?= 2$", makefile, re.M)
    assert '"--dist", "loadfile"' in (ROOT / ".ci" / "colab_check.py").read_text()
    tools = (ROOT / ".ci" / "colab-tools.txt").read_text()
    assert re.search(r"^pytest-xdist==", tools, re.M) and re.search(r"^pytest-xdist==", (ROOT / "requirements.txt").read_text(), re.M)
