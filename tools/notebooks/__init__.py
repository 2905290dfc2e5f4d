"""The maintainers' machinery for the stored chapters (not the readers' `transformer_lib.book`): run whole
chapters and store their outputs, settled as a terminal shows them (run.py: `execute`, `settle_streams`), and
re-run only the cells that depend on the library alone (refresh.py), so that a changed function does not force
a re-run of a chapter that trains for an hour:

    python -m tools.notebooks chapters/*.ipynb                  # make execute: whole chapters
    python -m tools.notebooks --listings chapters/*.ipynb       # make listings: the show_source(...) cells
    python -m tools.notebooks --diagrams chapters/*.ipynb       # make diagrams: the diagram cells
    python -m tools.notebooks --exercises chapters/*.ipynb      # make exercises: exercise and check cells
    python -m tools.notebooks --cell ID chapters/NN_x.ipynb     # one cell, after every code cell before it
"""

from tools.notebooks.refresh import (  # noqa: F401
    EXERCISE_TAGS,
    LISTING,
    is_diagram_cell,
    refresh_cell,
    refresh_diagrams,
    refresh_exercises,
    refresh_listings,
)
from tools.notebooks.run import (  # noqa: F401
    LIBRARY_ROOT,
    execute,
    relative_library_paths,
    settle_streams,
    settle_terminal_text,
)
