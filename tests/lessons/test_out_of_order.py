"""Lessons run out of order (issue 34.3): a prediction is graded on what its measuring cell
measured, for the code it measured — not on TensorFlow's state when the grade runs. The cells
are the lessons' own (their answer-key form, guesses filled in), run in a real IPython shell."""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import Any

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
os.environ.setdefault("TF_ENABLE_ONEDNN_OPTS", "0")

import pytest

pytest.importorskip("tensorflow")
pytest.importorskip("IPython")

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "lessons" / "_build"))

SHELL_SETUP = "import numpy as np\nimport tensorflow as tf\nimport keras\nfrom tfgraph_lab import exercises as ex\n"


def _key_cells(lesson: str) -> list[str]:
    from build_lessons import LESSONS, answer_key
    from nbtools import notebook

    return [c.source for c in answer_key(notebook(LESSONS[lesson]())).cells if c.cell_type == "code"]


def _after(cells: list[str], start: str) -> int:
    return next(i for i, source in enumerate(cells) if source.startswith(start))


def run(shell: Any, cell: str) -> Any:
    result = shell.run_cell(cell)
    assert result.error_before_exec is None and result.error_in_exec is None, (cell, result)
    return result.result


def test_02_print_guess_graded_after_the_next_cell_ran(shell: Any) -> None:
    """02: guess, measuring cell, then the next cell (which calls add_one again: 5 traces in
    all), then the grade: still 2, what the measuring cell measured (it said "5, not 2")."""
    cells = _key_cells("02_tracing_and_the_cache")
    guess = _after(cells, "print_guess = ")
    grade = _after(cells, "ex.check_prediction(print_guess,")
    run(shell, cells[guess])
    run(shell, cells[guess + 1])  # the measuring cell
    run(shell, cells[grade + 1])  # the cell after the grade: add_one called with new signatures
    assert shell.user_ns["add_one"].experimental_get_tracing_count() == 5
    feedback = run(shell, cells[grade])
    assert feedback.passed is True, str(feedback)


@pytest.mark.slow
def test_07_loop_guess_regraded_after_the_fix(shell: Any) -> None:
    """07: the loop prediction graded right (8), then the exercise fixed as the lesson asks and
    the measuring cell run again (1 trace): the grade still says right, for the starter it was
    made for, and names the fixed run's count (it said "1, not 8")."""
    from tfgraph_lab import exercises as ex

    cells = _key_cells("07_training_loop_clinic")
    exercise = ex.EXERCISES["07-training-loop"]
    guess = _after(cells, "loop_guess = ")
    grade = _after(cells, "ex.check_prediction(loop_guess,")
    measuring = cells[grade - 1].replace("--live ", "")  # the live view needs a notebook front end
    run(shell, exercise.starter)
    run(shell, cells[guess])
    run(shell, measuring)
    first = run(shell, cells[grade])
    assert first.passed is True, str(first)
    run(shell, exercise.solution)  # the fix, in the exercise cell
    run(shell, measuring)
    assert shell.user_ns["loop_report"].function("train_step").traces == 1
    again = run(shell, cells[grade])
    assert again.passed is True, str(again)
    assert "the latest run measured changed code (1)" in str(again)
    run(shell, "loop_guess = 1")
    assert run(shell, cells[grade]).passed is False  # the fixed count is no answer to the prediction
