"""Write, execute and strip the guided lessons (``lessons/NN_*.ipynb``); build the answer key.

Run from the repository root with the dev environment:

    python lessons/_build/build_lessons.py             # every lesson: write, execute, strip
    python lessons/_build/build_lessons.py 03 04       # only some lessons
    python lessons/_build/build_lessons.py --no-run    # write without executing (fast)
    python lessons/_build/build_lessons.py --key       # also the answer key in docs/answer_key/

Each lesson is executed in a fresh kernel (a cell that fails stops the build, unless it is
tagged ``raises-exception``); the builder prints its run time and the kernel's memory, then
writes the notebook *without outputs*, so learners predict before they see. Exercise starters
and solutions come from ``tfgraph_lab.exercises`` (one source of truth).

The answer key is each lesson with every prediction filled in with its answer and every
exercise's solution run just before its check, executed, *with* outputs; its last cell asserts that
every graded prediction was right, so a lesson whose stated answer is wrong fails the build.
"""

from __future__ import annotations

import copy
import sys
import time
from pathlib import Path
from typing import Any

import nbformat

sys.path.insert(0, str(Path(__file__).parent))
import lessons_00_01
import lessons_02_03
import lessons_04_05
import lessons_06_08
import lessons_09
from nbtools import clean_outputs, code, execute, md, notebook, strip

from tfgraph_lab.exercises import EXERCISES

LESSONS = {
    **lessons_00_01.LESSONS,
    **lessons_02_03.LESSONS,
    **lessons_04_05.LESSONS,
    **lessons_06_08.LESSONS,
    **lessons_09.LESSONS,
}
HERE = Path(__file__).resolve().parent.parent
KEY = HERE.parent / "docs" / "answer_key"

ALL_RIGHT = """\
# Answer key check: every prediction graded in this notebook was right.
from tfgraph_lab.exercises.checks import _PREDICTIONS
wrong = [(what, guess, actual) for what, guess, actual in _PREDICTIONS if guess != actual]
assert _PREDICTIONS and not wrong, wrong
print(len(_PREDICTIONS), "predictions graded, all right")"""


def answer_key(nb: Any) -> Any:
    """The lesson with answers filled in and solutions in place of the exercise starters."""
    key = copy.deepcopy(nb)
    checks = {e.check_call: e for e in EXERCISES.values()}
    cells = []
    for cell in key.cells:
        meta = cell.metadata.get("tfgraph_lab", {})
        if "guess" in meta:
            cell.source = f"{meta['guess']} = {meta['answer']}   # the answer"
        exercise = checks.get(cell.source) if cell.cell_type == "code" else None
        if exercise is not None:  # the solution runs just before its check; the starter stays,
            cells.append(code(exercise.solution))  # so the lesson's diagnosis still sees it
        cells.append(cell)
    key.cells = cells
    key.cells.insert(
        0, md("*Answer key (facilitators): predictions filled in, exercises solved, run with outputs.*")
    )
    key.cells.append(code(ALL_RIGHT))
    return key


def main(argv: list[str]) -> None:
    run = "--no-run" not in argv
    with_key = "--key" in argv
    wanted = [a for a in argv if not a.startswith("--")]
    chosen = [k for k in LESSONS if not wanted or k[:2] in wanted]
    t_all = time.perf_counter()
    for name in chosen:
        nb = notebook(LESSONS[name]())
        if run:
            _ran, seconds, rss = execute(nb, str(HERE))
            print(f"{name}: {seconds:5.1f} s  {rss}", flush=True)
        nbformat.write(strip(copy.deepcopy(nb)), HERE / f"{name}.ipynb")
    if run:
        print(f"all {len(chosen)} lessons: {time.perf_counter() - t_all:.1f} s", flush=True)
    if with_key:
        KEY.mkdir(parents=True, exist_ok=True)
        for name in chosen:
            ran, seconds, _rss = execute(answer_key(notebook(LESSONS[name]())), str(HERE))
            nbformat.write(clean_outputs(ran), KEY / f"{name}.ipynb")
            print(f"answer key {name}: {seconds:5.1f} s", flush=True)


if __name__ == "__main__":
    main(sys.argv[1:])
