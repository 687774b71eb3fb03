"""Static checks of the committed lesson notebooks (fast; nbval executes them separately)."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from tfgraph_lab.exercises import EXERCISES

ROOT = Path(__file__).resolve().parent.parent
LESSONS = sorted((ROOT / "lessons").glob("[0-9][0-9]_*.ipynb"))
NOTEBOOKS = sorted((ROOT / "lessons").glob("*.ipynb"))
MACHINE = re.compile(r"/tmp/ipykernel|/root/|/home/\w|/work/|site-packages")


def _cells(path: Path) -> list[dict]:
    return json.loads(path.read_text(encoding="utf-8"))["cells"]


def _source(cell: dict) -> str:
    return "".join(cell["source"])


def test_nine_lessons_numbered_from_zero() -> None:
    assert [p.name[:2] for p in LESSONS] == [f"{n:02d}" for n in range(9)]


@pytest.mark.parametrize("path", LESSONS, ids=[p.stem for p in LESSONS])
def test_lesson_is_clean_and_starts_quietly(path: Path) -> None:
    assert path.stat().st_size < 200_000
    cells = _cells(path)
    first_code = next(_source(c) for c in cells if c["cell_type"] == "code")
    env = first_code.index('os.environ["TF_CPP_MIN_LOG_LEVEL"] = "3"')
    assert env < first_code.index("import tensorflow") and "%load_ext tfgraph_lab" in first_code
    text = json.dumps([c.get("outputs", []) for c in cells])
    assert not MACHINE.search(text), MACHINE.search(text)
    assert "application/vnd.jupyter.widget-view+json" not in text


@pytest.mark.parametrize("path", NOTEBOOKS, ids=[p.stem for p in NOTEBOOKS])
def test_notebook_is_committed_without_outputs(path: Path) -> None:
    """Predict before you see: no stored output may show an answer (on GitHub, on Binder before
    the cell runs). nbval executes these unrun cells without comparing outputs."""
    notebook = json.loads(path.read_text(encoding="utf-8"))
    assert "widgets" not in notebook["metadata"]
    for n, cell in enumerate(notebook["cells"]):
        if cell["cell_type"] != "code":
            continue
        assert cell["outputs"] == [], f"cell {n} has stored outputs: rebuild with lessons/_build"
        assert cell["execution_count"] is None, f"cell {n} has an execution count"
        assert "NBVAL_CHECK_OUTPUT" not in _source(cell), f"cell {n}: nothing stored to check against"


@pytest.mark.parametrize("exercise_id", sorted(EXERCISES))
def test_each_exercise_appears_with_its_starter_and_check(exercise_id: str) -> None:
    exercise = EXERCISES[exercise_id]
    sources = [_source(c) for c in _cells(LESSONS[exercise.lesson])]
    assert exercise.starter.strip() in [s.strip() for s in sources]
    assert exercise.check_call in sources
