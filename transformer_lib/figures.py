"""Kept so that stored chapters keep importing: the interactive figures now live in
`transformer_lib.book.figures` (which needs altair).

The notebooks will import from there, and this shim will then be removed; nothing in the library,
the tests or the benchmarks imports it.
"""

from transformer_lib.book.figures import *  # noqa: F403
from transformer_lib.book.figures import __all__  # noqa: F401
