"""Two pytest workers at once (pytest-xdist, `-n 2 --dist loadfile`; Makefile: PYTEST_WORKERS): CI's
machine has two cores, and a test or a quick-mode chapter keeps about one of them busy.

`--dist loadfile` sends every test of a file to one worker, in order: so a notebook's cells run one
after another in one kernel, as nbval needs. Chapter 8 reads the translator that chapter 7 writes into
`runs/` (chapter 7 in quick mode deletes it first), so `ChaptersInOrder` counts the two as one file:
chapter 8's cells go to the worker that runs chapter 7's, after them. A chapter that reads what another
one writes belongs in AFTER too.

(xdist's own `--dist loadgroup` would do this with markers, but 3.8.0 marks a group by rewriting an
attribute that pytest 9 no longer reads, so it groups nothing.)
"""

AFTER = {"08_translating": "07_training"}  # chapter -> the chapter whose files it reads

try:
    from xdist.scheduler import LoadFileScheduling
except ImportError:  # pytest-xdist not installed: one process, files in order anyway
    LoadFileScheduling = None

if LoadFileScheduling is not None:
    import collections
    import importlib.util
    from pathlib import Path

    _CI_TIME = Path(__file__).parent / "tools" / "ci_time.py"
    ci_time = None  # this file copied without the checkout's tools (tests/test_parallel_runs.py): xdist's order
    if _CI_TIME.is_file():
        _spec = importlib.util.spec_from_file_location("ci_time", _CI_TIME)
        ci_time = importlib.util.module_from_spec(_spec)
        _spec.loader.exec_module(ci_time)

    class ChaptersInOrder(LoadFileScheduling):
        """loadfile, with each chapter of AFTER in the file of the chapter it reads from, and the files
        handed out slowest first, as measured in benchmarks/ci_time.json (`ci_time.slowest_first`; xdist's
        own order, most tests first, handed out test_web and test_training last, and one worker ran them
        alone at the end of the run)."""

        def _split_scope(self, nodeid: str) -> str:
            scope = super()._split_scope(nodeid)
            for chapter, earlier in AFTER.items():
                scope = scope.replace(chapter, earlier)
            return scope

        def _assign_work_unit(self, node) -> None:
            if ci_time is not None and not getattr(self, "_ordered", False):
                self._ordered = True  # at the first assignment, when the queue is complete
                files = {scope: [nodeid.split("::", 1)[0] for nodeid in unit] for scope, unit in self.workqueue.items()}
                self.workqueue = collections.OrderedDict(
                    (scope, self.workqueue[scope]) for scope in ci_time.slowest_first(files))
            super()._assign_work_unit(node)

    def pytest_xdist_make_scheduler(config, log):
        if config.getvalue("dist") == "loadfile":
            return ChaptersInOrder(config, log)
        return None
