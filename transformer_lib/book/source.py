"""`show_source(obj)`: the library's *current* source of a function or class, highlighted, so that a
chapter explains the code the reader runs instead of a pasted copy."""

from __future__ import annotations

import inspect


def show_source(obj):
    """The source of `obj` (a function, class or method of the library) as highlighted code."""
    from IPython.display import Code

    try:
        source = inspect.getsource(obj)
    except (TypeError, OSError) as error:
        raise TypeError(f"show_source needs a function, class or method defined in Python source, got {obj!r}.") from error
    return Code(inspect.cleandoc("\n" + source) if source.startswith(" ") else source, language="python")
