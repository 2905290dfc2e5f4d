"""The exercises' checks: `from transformer_lib.exercises import check_attention`, as the chapters do.

They live in `transformer_lib.book.exercises`, one module per part of the book, with the other
teaching helpers; this module keeps the short import path.
"""

from transformer_lib.book.exercises import *  # noqa: F403
from transformer_lib.book.exercises import __all__  # noqa: F401
