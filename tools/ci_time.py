"""Where CI's time goes: each stage's wall time, and the slowest tests.

    python3 tools/ci_time.py stage NAME COMMAND...     run COMMAND, then print "ci stage NAME: 3.2 min"
    python3 tools/ci_time.py profile [--label L]       run `bash .ci/run` here and append a record to
                                                       benchmarks/ci_time.json       (make ci-profile)

`make test` and `.ci/run` run every stage through `stage`, so CI's log shows where the time went. With
CI_TIME_DIR set, each stage also appends its seconds to CI_TIME_DIR/stages.jsonl, and every pytest run
of a stage writes a JUnit report there (the Makefile's JUNIT and `.ci/colab_check.py` add
`--junitxml`); `profile` sets CI_TIME_DIR, runs CI's own script and reads both back.

The record says when, on what CPU (its model, whether it has AVX-512, and whether ONEDNN_MAX_CPU_ISA
was set: `ONEDNN_MAX_CPU_ISA=AVX2 make ci-profile` imitates an AVX2-only CPU, roughly) and at which
commit the run was made. CI's budgets live in this record and the README, never in timed assertions.

Standard library only: it runs before .venv exists.
"""

from __future__ import annotations

import argparse
import datetime
import importlib.util
import json
import os
import subprocess
import sys
import tempfile
import time
import xml.etree.ElementTree as ElementTree
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
RECORD = ROOT / "benchmarks" / "ci_time.json"
SLOWEST = 30


def run_stage(name: str, command: list[str]) -> int:
    """Run one stage, print its wall time (also when it fails) and log it under CI_TIME_DIR."""
    started = time.time()  # stages may run side by side (make -j): the record shows when each began
    start = time.monotonic()
    code = subprocess.call(command)
    seconds = time.monotonic() - start
    status = "" if code == 0 else f" (failed, exit {code})"
    print(f"ci stage {name}: {seconds / 60:.1f} min{status}", flush=True)
    folder = os.environ.get("CI_TIME_DIR")
    if folder:
        with open(Path(folder) / "stages.jsonl", "a") as log:
            row = {"stage": name, "seconds": round(seconds, 1), "exit": code, "started": started}
            log.write(json.dumps(row) + "\n")
    return code


def machine() -> dict:
    """The CPU (transformer_lib.utils.machine_description's reading of it), its widest vector instructions, the oneDNN stand-in."""
    spec = importlib.util.spec_from_file_location("machine", ROOT / "transformer_lib" / "utils" / "machine_description.py")
    module = importlib.util.module_from_spec(spec)  # the file alone: the package would import TensorFlow
    spec.loader.exec_module(module)
    name, vector = module.cpu_name_and_vector()
    standin = os.environ.get("ONEDNN_MAX_CPU_ISA")
    return {"cpu": name, "cores": os.cpu_count(), "isa": vector or "neither AVX2 nor AVX-512",
            "onednn_max_cpu_isa": standin, "avx2_standin": (standin or "").upper() == "AVX2"}


def test_times(folder: Path) -> tuple[dict, list[dict]]:
    """From the JUnit reports of a run: {stage: {passed, failed, skipped}} and every test's seconds."""
    counts, tests = {}, []
    for report in sorted(folder.glob("*.xml")):
        stage = report.stem
        count = counts.setdefault(stage, {"passed": 0, "failed": 0, "skipped": 0})
        for case in ElementTree.parse(report).getroot().iter("testcase"):
            outcome = ("failed" if case.find("failure") is not None or case.find("error") is not None
                       else "skipped" if case.find("skipped") is not None else "passed")
            count[outcome] += 1
            name = f"{case.get('classname', '')}::{case.get('name', '')}"
            tests.append({"stage": stage, "test": name, "seconds": round(float(case.get("time", 0)), 1)})
    return counts, sorted(tests, key=lambda t: -t["seconds"])


def file_times(tests: list[dict]) -> list[dict]:
    """The seconds of each test file (a notebook: its cells), slowest first: what one worker of
    `--dist loadfile` runs in one go."""
    totals: dict[tuple[str, str], float] = {}
    for test in tests:
        key = (test["stage"], test["test"].split("::")[0])
        totals[key] = totals.get(key, 0.0) + test["seconds"]
    rows = [{"stage": stage, "file": name, "seconds": round(seconds, 1)} for (stage, name), seconds in totals.items()]
    return sorted(rows, key=lambda row: -row["seconds"])


def slowest_first(units: dict[str, list[str]], record: Path = RECORD) -> list[str]:
    """The work units of pytest-xdist's loadfile (what one worker runs in one go; `units` maps each to
    its files, as paths) in the order to hand them out: by the seconds their files took in the last
    record, slowest first, and the unmeasured ones after them in the order given. A long file handed
    out last keeps one worker busy while the others have nothing left to do; handed out first, the
    short ones fill in around it. A test module moved to another folder of tests/ keeps the seconds
    the record gives its name (pytest needs each module's name to be unique). Without a readable
    record the order stays as given."""
    try:
        runs = json.loads(record.read_text())["runs"]
        seconds = {row["file"]: row["seconds"] for row in runs[-1]["slowest_files"]}
    except (OSError, ValueError, KeyError, IndexError, TypeError):
        return list(units)
    modules = {name.rsplit(".", 1)[-1]: value for name, value in seconds.items() if not name.endswith(".ipynb")}

    def measured(file: str) -> float:
        path = Path(file)
        if path.suffix == ".py":  # JUnit names a test module like an import: tests.test_web
            path = path.with_suffix("")
        dotted = ".".join(part for part in path.parts if part not in ("..", "/"))
        # else a notebook outside the checkout, by its name, or a test module moved since the record
        return seconds.get(dotted, seconds.get(path.name, modules.get(path.name, 0.0)))

    total = {unit: sum(measured(file) for file in set(files)) for unit, files in units.items()}
    return sorted(units, key=lambda unit: -total[unit])  # a stable sort: unmeasured units keep their order


def profile(label: str, out: Path) -> int:
    """Run .ci/run with stage logging on; append the record to `out`."""
    commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=ROOT, capture_output=True,
                            text=True).stdout.strip()
    with tempfile.TemporaryDirectory(prefix="ci-time-") as folder:
        env = {**os.environ, "CI_TIME_DIR": folder}
        started = time.time()
        start = time.monotonic()
        code = subprocess.call(["bash", ".ci/run"], cwd=ROOT, env=env)
        total = time.monotonic() - start
        stages = [json.loads(line) for line in (Path(folder) / "stages.jsonl").read_text().splitlines()]
        counts, tests = test_times(Path(folder))
    record = {
        "label": label,
        "date": datetime.datetime.now().astimezone().isoformat(timespec="seconds"),
        "commit": commit,
        "command": "bash .ci/run",
        "exit": code,
        "machine": machine(),
        "total_minutes": round(total / 60, 1),
        "stages": [{"stage": s["stage"], "minutes": round(s["seconds"] / 60, 1), "exit": s["exit"],
                    "from_minute": round((s.get("started", started) - started) / 60, 1)} for s in stages],
        "tests_by_report": counts,  # one JUnit report per pytest run, named after its stage
        "slowest_tests": tests[:SLOWEST],
        "slowest_files": file_times(tests)[:SLOWEST],
    }
    runs = json.loads(out.read_text())["runs"] if out.exists() else []
    out.write_text(json.dumps({"about": "CI's wall time by stage and its slowest tests, written by "
                                        "`make ci-profile` (tools/ci_time.py)", "runs": [*runs, record]},
                              indent=1) + "\n")
    print(f"ci-profile: {record['total_minutes']} min in all, exit {code}; appended to {out}")
    for stage in record["stages"]:
        print(f"  {stage['stage']:<20} {stage['minutes']:6.1f} min, from minute {stage['from_minute']}")
    return code


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    verbs = parser.add_subparsers(dest="verb", required=True)
    stage = verbs.add_parser("stage", help="run one stage and print its wall time")
    stage.add_argument("name")
    stage.add_argument("command", nargs=argparse.REMAINDER)
    prof = verbs.add_parser("profile", help="run .ci/run and append a record to benchmarks/ci_time.json")
    prof.add_argument("--label", default="", help="what this run measures, e.g. 'before' or 'after'")
    prof.add_argument("--out", type=Path, default=RECORD)
    args = parser.parse_args(argv)
    if args.verb == "stage":
        if not args.command:
            parser.error("stage needs a command to run")
        return run_stage(args.name, args.command)
    return profile(args.label, args.out)


if __name__ == "__main__":
    sys.exit(main())
