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
    class ChaptersInOrder(LoadFileScheduling):
        """loadfile, with each chapter of AFTER in the file of the chapter it reads from."""

        def _split_scope(self, nodeid: str) -> str:
            scope = super()._split_scope(nodeid)
            for chapter, earlier in AFTER.items():
                scope = scope.replace(chapter, earlier)
            return scope

    def pytest_xdist_make_scheduler(config, log):
        if config.getvalue("dist") == "loadfile":
            return ChaptersInOrder(config, log)
        return None
