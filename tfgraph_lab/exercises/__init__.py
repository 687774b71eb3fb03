"""Auto-checked exercises for the guided lessons in ``lessons/``.

Every exercise is checked by *measured behaviour*: the learner's function runs under
:func:`tfgraph_lab.watch`, and the checker compares how many graphs the work needed (and, for
some exercises, the result and the speed-up) with the target. Checks never raise because of the
learner's code: they return a :class:`Feedback` that shows ✓ or ✗, what was measured, and a hint.

    from tfgraph_lab import exercises as ex
    ex.check("03-scalar-trap", run_schedule)   # → Feedback (displays in Jupyter, prints as text)
    ex.hint("03-scalar-trap")                  # one more hint
    ex.solution("03-scalar-trap")              # the worked solution, only when asked

Each exercise also carries its *starter* (the working-but-wrong code the lesson notebook starts
from) and its *solution*; the tests run both through the checker, so each check can fail.

Imports TensorFlow only when a check runs; never imports IPython or ipywidgets.
"""

from __future__ import annotations

from typing import Any

from ..model.errors import UsageProblem
from .catalog import EXERCISES
from .checks import Exercise
from .feedback import Feedback, Solution, _error_feedback
from .measuring import FunctionUse, measure
from .predictions import check_prediction
from .timing import EagerComparison, compare_eager

__all__ = [
    "EXERCISES",
    "EagerComparison",
    "Exercise",
    "Feedback",
    "FunctionUse",
    "Solution",
    "check",
    "check_prediction",
    "compare_eager",
    "exercise",
    "hint",
    "measure",
    "solution",
]

_HINTS_GIVEN: dict[str, int] = {}


def exercise(exercise_id: str) -> Exercise:
    """The :class:`Exercise` called ``exercise_id`` (e.g. ``"03-scalar-trap"``)."""
    found = EXERCISES.get(exercise_id)
    if found is None:
        raise UsageProblem(f"no exercise {exercise_id!r}; the exercises are: {', '.join(sorted(EXERCISES))}")
    return found


def check(exercise_id: str, answer: Any, **options: Any) -> Feedback:
    """Check the learner's ``answer`` for exercise ``exercise_id`` by running it and measuring.

    Returns a :class:`Feedback` (✓/✗, what was measured, a hint); errors in the learner's code
    become feedback, they are not raised. ``options`` pass what an exercise needs:
    ``evidence=[...]`` (exercise 01: comparisons ``compare_eager`` measured). The speed-up target
    and the capstone's baseline are the check's own, never taken from the caller (a looser
    target or a slower baseline only fools the learner); the tests set the number of timed
    repeats. A right answer passes again when the check is re-run.
    """
    ex = exercise(exercise_id)
    try:
        return ex.checker(ex, answer, options)
    except Exception as exc:
        return _error_feedback(ex, exc)


def hint(exercise_id: str, number: int | None = None) -> Solution:
    """The next hint for ``exercise_id`` (or hint ``number``, counting from 1)."""
    ex = exercise(exercise_id)
    if number is None:
        number = _HINTS_GIVEN.get(exercise_id, 0) % len(ex.hints) + 1
        _HINTS_GIVEN[exercise_id] = number
    number = max(1, min(number, len(ex.hints)))
    return Solution(ex.id, f"hint {number} of {len(ex.hints)}", notes=ex.hints[number - 1])


def solution(exercise_id: str) -> Solution:
    """The worked solution of ``exercise_id``: try the hints first."""
    ex = exercise(exercise_id)
    return Solution(
        ex.id,
        f"solution: {ex.title}",
        code=ex.solution,
        notes="Paste it into the exercise cell, run it, then run the check again.",
    )
