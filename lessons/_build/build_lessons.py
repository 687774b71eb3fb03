"""Write, execute and strip the guided lessons (``lessons/NN_*.ipynb``).

Run from the repository root with the dev environment:

    python lessons/_build/build_lessons.py             # every lesson: write, execute, strip
    python lessons/_build/build_lessons.py 03 04       # only some lessons
    python lessons/_build/build_lessons.py --no-run    # write without executing (fast)

Each lesson is executed in a fresh kernel (a cell that fails stops the build, unless it is
tagged ``raises-exception``); the builder prints its run time and the kernel's memory, then
writes the notebook *without outputs*, so learners predict before they see. Exercise starters
and solutions come from ``tfgraph_lab.exercises`` (one source of truth).
"""

from __future__ import annotations

import sys
import time
from pathlib import Path

import nbformat

sys.path.insert(0, str(Path(__file__).parent))
from lessons_a import LESSONS_A
from lessons_b import LESSONS_B
from nbtools import execute, notebook, strip

LESSONS = {**LESSONS_A, **LESSONS_B}
HERE = Path(__file__).resolve().parent.parent


def main(argv: list[str]) -> None:
    run = "--no-run" not in argv
    wanted = [a for a in argv if not a.startswith("--")]
    chosen = [k for k in LESSONS if not wanted or k[:2] in wanted]
    t_all = time.perf_counter()
    for name in chosen:
        nb = notebook(LESSONS[name]())
        path = HERE / f"{name}.ipynb"
        if run:
            _ran, seconds, rss = execute(nb, str(HERE))
            print(f"{name}: {seconds:5.1f} s  {rss}", flush=True)
        nbformat.write(strip(nb), path)
    if run:
        print(f"all {len(chosen)} lessons: {time.perf_counter() - t_all:.1f} s", flush=True)


if __name__ == "__main__":
    main(sys.argv[1:])
