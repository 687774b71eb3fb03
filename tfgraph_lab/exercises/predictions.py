"""Grading a learner's prediction against what a lesson's measuring cell measured.

A guess is compared with what it means, not how it is written: ``2.0``, ``np.int64(2)`` and
``'2'`` are the count 2, ``np.False_`` and ``0`` are False; ``2.5`` is no count. A prediction is
graded against the code it was made for: when a later run of the measuring cell measured
changed code (the exercise the lesson asks to fix), the first measurement stands, and the
verdict says so. Imports NumPy only to recognise its scalars; never TensorFlow.
"""

from __future__ import annotations

import hashlib
import linecache
import math
import numbers
import sys
from typing import Any

from .feedback import Feedback
from .guess_history import why_not_a_prediction

__all__ = ["check_prediction"]

#: Every graded prediction of this session: (what was measured, the guess, the measured value).
_PREDICTIONS: list[tuple[str, Any, Any]] = []

#: The first measurement each grading line graded: (where it is graded, what) → (code, value).
_FIRST_MEASURED: dict[tuple[str, int, str], tuple[tuple[Any, ...], Any]] = {}

_TRUE_WORDS = {"true": True, "false": False, "yes": True, "no": False}


def check_prediction(guess: Any, measured: Any, function: str | None = None, *, what: str = "") -> Feedback:
    """Grade a prediction against what a cell measured; the guess is stored with the verdict.

    ``measured`` is a :class:`TraceReport` (e.g. from ``%%tracewatch -v NAME``): the guess is
    then a number of traces, of ``function`` or of all user functions. Or ``measured`` is the
    measured value itself — a count the measuring cell stored (``fn.experimental_get_tracing_count()``),
    a bool, a number — and ``what`` says what it is.
    """
    is_report = hasattr(measured, "traces") and hasattr(measured, "function")
    if guess is None or guess is Ellipsis:
        return Feedback("prediction", None, "write your guess first, then run again")
    if measured is None:
        return Feedback("prediction", None, "run the cell that measures it first (the one above)")
    problem = _not_a_prediction(sys._getframe(1))
    if problem:
        _PREDICTIONS.append((what or "prediction", problem, measured))
        return Feedback("prediction", False, problem, (("your guess", str(guess)),))
    code: tuple[Any, ...] = ()
    if is_report:
        stale = _reused_older_graphs(measured, function)
        if stale:
            return Feedback(
                "prediction",
                None,
                f"this run reused graphs traced before the cell ran ({', '.join(stale)}): the cell was "
                "run before, so it cannot show the first traces again — re-run the cell that defines "
                "the function(s) first, then the measuring cell, then this one",
            )
        actual: Any = measured.function(function).traces if function else measured.traces
        label = f"traces measured ({function or 'all functions'})"
        code = _measured_code(measured, function)
    else:
        actual = measured.item() if hasattr(measured, "item") and hasattr(measured, "dtype") else measured
        label = what or "measured"
    value, problem = _as_answer(guess, actual)
    if problem:
        return Feedback("prediction", False, problem)
    earlier = _first_measurement(label, code, actual)
    rows = (("your guess", str(guess)), (label, str(earlier if earlier is not None else actual)))
    note: tuple[str, ...] = ()
    if earlier is not None:  # the measuring cell ran again on changed code: grade the first run
        note = (
            f"graded against the first measurement ({earlier}), of the code the prediction was made "
            f"for; the latest run measured changed code ({actual}): that is your fix at work",
        )
        actual = earlier
    _PREDICTIONS.append((label, value, actual))
    if _same(value, actual):
        return Feedback("prediction", True, "right on", rows, details=note)
    hint = (
        "read the report's graph cache: one line per graph, and why each one was traced"
        if is_report
        else "run the cell again with a %%tracewatch line on top to see why"
    )
    return Feedback("prediction", False, f"not quite: {actual}, not {value}", rows, hint, note)


def _not_a_prediction(caller: Any) -> str:
    """Why the guess the calling cell grades is no prediction, from the kernel's input history
    (IPython's ``In`` in the cell's globals; outside IPython there is none and nothing is said)."""
    history = caller.f_globals.get("In")
    if not isinstance(history, list):
        return ""
    cell = "".join(linecache.getlines(caller.f_code.co_filename))
    return why_not_a_prediction(history, cell, caller.f_lineno) if cell else ""


def _as_answer(guess: Any, actual: Any) -> tuple[Any, str]:
    """The guess as a value of ``actual``'s kind, or a sentence saying why it cannot be one."""
    import numpy as np

    if isinstance(guess, np.generic):
        guess = guess.item()
    if isinstance(guess, str) and not isinstance(actual, str):
        guess = _read_number(guess.strip(), actual)
    if isinstance(actual, bool):
        if isinstance(guess, bool):
            return guess, ""
        if isinstance(guess, numbers.Real) and float(guess) in (0.0, 1.0):
            return float(guess) == 1.0, ""
        return guess, f"a guess is True or False here, got {guess!r}"
    if isinstance(actual, int):  # a count
        if isinstance(guess, bool) or not isinstance(guess, numbers.Real):
            return guess, f"a guess is a whole number here, got {guess!r}"
        if not float(guess).is_integer():
            return (
                guess,
                f"a count is a whole number: {guess!r} is not one",
            )
        return round(float(guess)), ""
    if isinstance(actual, float) and isinstance(guess, numbers.Real) and not isinstance(guess, bool):
        return float(guess), ""
    if type(guess) is not type(actual):  # e.g. a class whose __eq__ says yes to anything
        return guess, f"a guess is a plain {type(actual).__name__} here, got a {type(guess).__name__}"
    return guess, ""


def _read_number(text: str, actual: Any) -> Any:
    """A guess written as text — ``'2'``, ``'2.0'``, ``'False'`` — as the value it names."""
    if isinstance(actual, bool) and text.lower() in _TRUE_WORDS:
        return _TRUE_WORDS[text.lower()]
    for kind in (int, float):
        try:
            return kind(text)
        except ValueError:
            pass
    return text


def _same(value: Any, actual: Any) -> bool:
    """Whether a guess read as ``actual``'s kind (:func:`_as_answer`) is the measured value."""
    if isinstance(actual, float) and isinstance(value, float):
        return math.isclose(value, actual, rel_tol=1e-9, abs_tol=1e-12)
    return bool(value == actual)


def _first_measurement(label: str, code: tuple[Any, ...], actual: Any) -> Any:
    """The value this grading line graded first, when that run measured other code; else None.

    A prediction is known by the line that grades it, two frames up (``check_prediction``'s
    caller). In a Jupyter kernel a cell's code is named by its content (ipykernel names a cell's
    file by a hash of its source), so the same grading cell run again is the same prediction.
    Only a report names the code it measured; a plain value is always graded as it is.
    """
    if not code:
        return None
    caller = sys._getframe(2)
    key = (caller.f_code.co_filename, caller.f_lineno, label)
    first = _FIRST_MEASURED.setdefault(key, (code, actual))
    return None if first[0] == code else first[1]


def _measured_code(report: Any, function: str | None) -> tuple[Any, ...]:
    """What code a report measured: per function, its name, place and a digest of its source."""
    functions = [report.function(function)] if function else list(report.counted_functions)
    return tuple(sorted((f.qualname, f.firstlineno, _source_digest(f.filename)) for f in functions))


def _source_digest(filename: str) -> str:
    lines = linecache.getlines(filename)
    if not lines:
        return filename
    return hashlib.sha256("".join(lines).encode("utf-8", "replace")).hexdigest()[:16]


def _reused_older_graphs(report: Any, function: str | None) -> list[str]:
    """The functions whose calls in ``report`` hit graphs traced before it began (a re-run
    measuring cell): their trace count there is not what a first run makes."""
    functions = [report.function(function)] if function else list(report.counted_functions)
    return [
        f.qualname.rsplit(".", 1)[-1]
        for f in functions
        if any(not g.traced_in_watch and g.hits > 0 for g in f.graphs)
    ]
