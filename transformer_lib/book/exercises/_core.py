"""What every exercise check shares: running the student's answer, comparing, hinting, refusing.

- `exercise(title)` wraps a check: an answer that is not written yet (it raises
  `NotImplementedError`, as the student edition's stubs do) gets one line, "Not written yet: ...",
  and the chapter goes on; a right answer gets "Correct: ..."; a wrong one an `AssertionError`
  that says what differs. `passed(name)` tells later cells whether an exercise was solved.
- `compare` compares with a *relative* tolerance, names the input, shows both arrays when they are
  small, and recognises the common mistakes it is given (`hints`) by what the answer returned.
- `refuse_library_calls` fails an answer that calls the library's own implementation of the very
  thing the exercise asks the student to write.
"""

from __future__ import annotations

import contextlib
import functools
import inspect
import sys
import warnings

import numpy as np

RESULTS: dict[str, bool] = {}  # check name -> solved, for the cells that use a student's answer


def passed(check) -> bool:
    """True once `check` (a check function or its name) has accepted an answer in this kernel."""
    return RESULTS.get(getattr(check, "__name__", check), False)


def exercise(title: str, success: str):
    """Decorate a check `check(answer)`: prints `success` when it returns, one "Not written yet"
    line when the answer raises NotImplementedError; an AssertionError goes to the student."""

    def decorate(check):
        @functools.wraps(check)
        def run(*answers):
            RESULTS[check.__name__] = False
            try:
                with warnings.catch_warnings():  # Keras's note on a call that crashed while it built: we say more
                    warnings.filterwarnings("ignore", message=".*looks like it has unbuilt state")
                    check(*answers)
            except NotImplementedError:  # the stub's own hint is in the answer cell, where it was raised
                print(f"Not written yet: {title}. Write it in the cell above, then run this check again.")
                return
            RESULTS[check.__name__] = True
            print(f"Correct: {success}")

        return run

    return decorate


def _show(array: np.ndarray) -> str:
    return np.array2string(np.asarray(array, dtype=float), precision=4, suppress_small=True, separator=", ")


def close(yours, expected, rtol: float = 1e-4) -> bool:
    """Equal shapes and every entry within `rtol` of the expected one (or of the largest expected
    value, for entries near zero)."""
    yours, expected = np.asarray(yours, dtype=float), np.asarray(expected, dtype=float)
    if yours.shape != expected.shape or not np.isfinite(yours).all():
        return False
    scale = max(float(np.abs(expected).max(initial=0.0)), 1e-30)
    return bool(np.allclose(yours, expected, rtol=rtol, atol=rtol * 1e-2 * scale))


def compare(name: str, yours, expected, context: str, hints=(), rtol: float = 1e-4) -> None:
    """Raise an AssertionError that teaches unless `yours` matches `expected`.

    `hints`: pairs `(wrong, hint)`: if `yours` matches the array `wrong` (what a typical mistake
    returns), the message gives `hint` instead of numbers alone.
    """
    yours_array, expected = np.asarray(yours), np.asarray(expected)
    if yours_array.shape != expected.shape:
        raise AssertionError(f"{name}: for {context}: the shape is {yours_array.shape}, expected {expected.shape}.")
    if close(yours_array, expected, rtol):
        return
    for wrong, hint in hints:
        if close(yours_array, wrong, rtol):
            raise AssertionError(f"{name}: for {context}: {hint}")
    if not np.isfinite(yours_array.astype(float)).all():
        raise AssertionError(f"{name}: for {context}: the answer holds NaN or infinity.")
    if expected.size <= 16:
        detail = f"expected\n{_show(expected)}\ngot\n{_show(yours_array)}"
    else:
        wrong = ~np.isclose(yours_array.astype(float), expected.astype(float), rtol=rtol)
        where = tuple(int(i) for i in np.argwhere(wrong)[0])
        detail = (f"entry {where} is {float(yours_array[where]):.6g}, expected {float(expected[where]):.6g} "
                  f"({int(wrong.sum())} of {expected.size} entries differ)")
    raise AssertionError(f"{name}: for {context}: the answer differs: {detail}")


def _codes(objects) -> dict:
    """The code objects of functions, methods and every function defined in a class."""
    codes = {}
    for obj in objects:
        members = [value for value in vars(obj).values()] if inspect.isclass(obj) else [obj]
        for member in members:
            function = inspect.unwrap(getattr(member, "__func__", member))
            code = getattr(function, "__code__", None)
            if code is not None:
                codes[code] = f"{getattr(obj, '__module__', '')}.{getattr(function, '__qualname__', obj)}"
    return codes


@contextlib.contextmanager
def refuse_library_calls(name: str, *objects):
    """Fail with a clear message if the code inside calls any of `objects` (functions, methods or
    whole classes of the library): the exercise asks the student to write that thing."""
    codes, called = _codes(objects), []
    previous = sys.getprofile()

    def watch(frame, event, arg):
        if event == "call" and frame.f_code in codes and not called:
            called.append(codes[frame.f_code])

    def refusal() -> AssertionError:
        return AssertionError(
            f"{name}: your answer calls {called[0]}, the library's own implementation of what this exercise "
            "asks you to write. Write it yourself (the exercise says with what), then run the check again."
        )

    sys.setprofile(watch)
    try:
        yield
    except Exception as error:  # the library's code may fail on the student's object: the call is the news
        if called:
            raise refusal() from error
        raise
    finally:
        sys.setprofile(previous)
    if called:
        raise refusal()


def call_answer(name: str, answer, forbidden, *args, **kwargs):
    """`answer(*args, **kwargs)`, refusing calls of `forbidden` while it runs."""
    with refuse_library_calls(name, *forbidden):
        return answer(*args, **kwargs)
