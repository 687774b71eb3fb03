"""Write, execute and clean the guided lessons (``lessons/NN_*.ipynb``).

Run from the repository root with the dev environment:  python lessons/_build/build_lessons.py [NN ...]
Exercise starters and solutions come from ``tfgraph_lab.exercises`` (one source of truth).
"""

from __future__ import annotations

import sys
from pathlib import Path

import nbformat

sys.path.insert(0, str(Path(__file__).parent))
from lessons_a import LESSONS_A
from lessons_b import LESSONS_B
from nbtools import clean, execute, notebook

LESSONS = {**LESSONS_A, **LESSONS_B}
HERE = Path(__file__).resolve().parent.parent


def main(argv: list[str]) -> None:
    chosen = [k for k in LESSONS if not argv or k[:2] in argv]
    for name in chosen:
        nb = notebook(LESSONS[name]())
        ran, seconds, rss = execute(nb, str(HERE))
        ran = clean(ran)
        path = HERE / f"{name}.ipynb"
        nbformat.write(ran, path)
        print(f"{name}: {seconds:5.1f} s  {rss}  {path.stat().st_size / 1024:.0f} KB", flush=True)


if __name__ == "__main__":
    main(sys.argv[1:])
