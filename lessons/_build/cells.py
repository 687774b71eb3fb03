"""The cells every lesson is made of: set-up, lab, prediction (guess + grade), exercise."""

from __future__ import annotations

from typing import Any

from nbtools import SETUP, code, md

from tfgraph_lab.exercises import EXERCISES

LAB = '''\
try:                                   # the labs need ipywidgets; the lesson works without them
    from tfgraph_lab.widgets import LabSettings, RetraceLab
    lab = RetraceLab(settings=LabSettings({settings}),
                     goal={goal!r})
except Exception as exc:
    lab = None
    print("The interactive lab is not available here:", exc)
lab'''


def setup(extra: str = "") -> Any:
    return code(SETUP.format(extra=extra))


def lab(goal: str, **settings: Any) -> Any:
    """A RetraceLab cell that opens with a preset (``LabSettings`` fields) and a goal."""
    preset = ", ".join(f"{key}={value!r}" for key, value in settings.items())
    return code(LAB.format(settings=preset, goal=goal))


def guess(name: str, question: str, answer: Any) -> Any:
    """The learner's prediction cell; ``answer`` is kept in the cell's metadata for the answer key."""
    cell = code(f"{name} = None   # ✏️ your guess: {question}")
    cell.metadata["tfgraph_lab"] = {"guess": name, "answer": repr(answer)}
    return cell


def grade(name: str, measured: str, function: str = "", what: str = "") -> Any:
    """The cell that grades the guess ``name`` against what the cell above measured."""
    extra = f", {function!r}" if function else ""
    extra += f", what={what!r}" if what else ""
    return code(f"ex.check_prediction({name}, {measured}{extra})")


def starter(ex_id: str) -> Any:
    """The exercise cell (the answer key swaps in the solution)."""
    cell = code(EXERCISES[ex_id].starter)
    cell.metadata["tfgraph_lab"] = {"exercise": ex_id}
    return cell


def exercise(ex_id: str, intro: str = "") -> list[Any]:
    e = EXERCISES[ex_id]
    return [
        md(f"""### ✏️ Exercise `{ex_id}`: {e.title}

{intro + chr(10) + chr(10) if intro else ""}{e.task}

Edit the cell below, run it, then run the check under it. The check *runs* your code under
`tfgraph_lab.watch()` and measures it: it shows ✓ or ✗, what it measured, and a hint."""),
        starter(ex_id),
        code(e.check_call),
        md(f"""Stuck? `ex.hint("{ex_id}")` gives a hint (run it again for the next one);
`ex.solution("{ex_id}")` shows a worked solution — try the hints first."""),
    ]
