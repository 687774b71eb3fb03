"""Cheats the graders reject (issue 34.4): each is a non-solution that an earlier grader called
right, written the way a learner would write it — no grader internals. These are formative
checks in the learner's own process; they still must not call a non-solution right."""

from __future__ import annotations

import linecache
import os

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
os.environ.setdefault("TF_ENABLE_ONEDNN_OPTS", "0")

import time
from collections.abc import Iterator
from typing import Any

import pytest

from tfgraph_lab import exercises as ex
from tfgraph_lab.exercises import timing
from tfgraph_lab.exercises.reference import reference_value

tf = pytest.importorskip("tensorflow")
np = pytest.importorskip("numpy")
keras = pytest.importorskip("keras")

SHELL_SETUP = "import numpy as np\nimport tensorflow as tf\nfrom tfgraph_lab import exercises as ex\n"


def _run(code: str, name: str) -> dict[str, Any]:
    namespace: dict[str, Any] = {"tf": tf, "np": np, "keras": keras, "ex": ex}
    filename = f"<cheat {name}>"
    linecache.cache[filename] = (len(code), None, code.splitlines(True), filename)  # for AutoGraph
    exec(compile(code, filename, "exec"), namespace)
    return namespace


@pytest.fixture
def no_speed_target(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """Tests assert no wall-clock time: the speed-up target is off (learners cannot turn it off)."""
    monkeypatch.setattr(timing, "MIN_SPEEDUP", 0.0)
    yield


# --- predictions -----------------------------------------------------------------------------


class _EqualToAnything(int):
    def __eq__(self, other: object) -> bool:
        return True

    __hash__ = int.__hash__


class _TextEqualToAnything(str):
    def __eq__(self, other: object) -> bool:
        return True

    __hash__ = str.__hash__


@pytest.mark.parametrize("measured", [2, True, 0.5, "float32"])
@pytest.mark.parametrize("cheat", [_EqualToAnything(7), _TextEqualToAnything("x")], ids=["int", "str"])
def test_a_guess_equal_to_anything_is_not_right(cheat: Any, measured: Any) -> None:
    feedback = ex.check_prediction(cheat, measured, what="measured")
    assert feedback.passed is False, str(feedback)


def _cells(shell: Any, *cells: str) -> Any:
    result = None
    for cell in cells:
        result = shell.run_cell(cell, store_history=True)
        assert result.error_in_exec is None, (cell, result.error_in_exec)
    return result.result if result is not None else None


MEASURE = "%%tracewatch -q -v cheat_report\ncheat_fn(tf.ones([2]))\ncheat_fn(tf.ones([3]))\n"
DEFINE = "@tf.function\ndef cheat_fn(x):\n    return x + 1\n"
GRADE = "ex.check_prediction(cheat_guess, cheat_report, 'cheat_fn')"


def test_a_guess_copied_from_the_report_is_no_prediction(shell: Any) -> None:
    """The guess computed from the report the measuring cell made (right number, no prediction)."""
    feedback = _cells(
        shell,
        DEFINE,
        MEASURE,
        "cheat_guess = cheat_report.function('cheat_fn').traces",
        DEFINE,
        MEASURE,
        GRADE,
    )
    assert feedback.passed is False, str(feedback)
    assert "computed from cheat_report" in feedback.summary


def test_a_guess_typed_in_after_the_measurement_is_no_prediction(shell: Any) -> None:
    """The number read off the report and typed in after the measuring cell ran."""
    feedback = _cells(shell, DEFINE, MEASURE, "cheat_guess = 2", GRADE)
    assert feedback.passed is False, str(feedback)
    assert "written after the cell that measured `cheat_report` ran" in feedback.summary


@pytest.mark.parametrize("guess", ["2", "2.0", "np.int64(2)", "'2'", "1 + 1"])
def test_a_guess_written_before_the_measurement_is_graded(shell: Any, guess: str) -> None:
    """The lesson's order — define, guess, measure, grade — is graded as before (also with the
    guess written as 2.0, np.int64(2) or '2', issue 34.3)."""
    feedback = _cells(shell, DEFINE, f"cheat_guess = {guess}", MEASURE, GRADE)
    assert feedback.passed is True, str(feedback)
    feedback = _cells(shell, DEFINE, "cheat_guess = 3", MEASURE, GRADE)
    assert feedback.passed is False and "not quite: 2, not 3" in feedback.summary, str(feedback)


def test_every_lessons_key_grades_predictions_made_before_measuring() -> None:
    """In every lesson, run in order, each grade's guess is written before its measurement."""
    import sys
    from pathlib import Path

    from IPython.core.inputtransformer2 import TransformerManager

    from tfgraph_lab.exercises.guess_history import why_not_a_prediction

    sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "lessons" / "_build"))
    from build_lessons import LESSONS, answer_key
    from nbtools import notebook

    transform = TransformerManager().transform_cell
    graded = 0
    for name, cells in LESSONS.items():
        history = [""]
        for cell in answer_key(notebook(cells())).cells:
            if cell.cell_type != "code":
                continue
            source = transform(cell.source)
            history.append(source)
            if "ex.check_prediction(" in source:
                graded += 1
                line = next(i for i, text in enumerate(source.splitlines(), 1) if "check_prediction(" in text)
                assert why_not_a_prediction(history, source, line) == "", (name, source)
    assert graded >= 20


# --- exercises -------------------------------------------------------------------------------


COUNTER_SET_TO_FIVE = """\
@tf.function
def scaled(x, counter):
    counter.assign(5)      # the number of calls the check used to make
    return x * 2.0
"""


@pytest.mark.slow
def test_a_counter_set_to_the_number_of_calls_is_not_counting() -> None:
    feedback = ex.check("02-count-calls", _run(COUNTER_SET_TO_FIVE, "02")["scaled"])
    assert feedback.passed is False, str(feedback)
    assert "the counter went up by" in feedback.summary


EAGER_TOTAL_BESIDE_A_DUMMY = """\
x3 = tf.reshape(tf.range(64 * 16, dtype=tf.float32) / 1000.0, [64, 16])

@tf.function(input_signature=[tf.TensorSpec([], tf.float32)])
def scaled_loss(factor):            # called 7 times, one graph: it computes nothing used
    return factor

def run_schedule():
    total = 0.0
    for epoch in range(6):
        factor = 1.0 / (epoch + 1)
        scaled_loss(tf.constant(factor))
        total += tf.reduce_mean(x3 * 0.9) * factor     # the work, eagerly
    scaled_loss(tf.constant(1.0))
    total += tf.reduce_mean(x3)
    return total
"""

#: Per exercise checked by running a workload: the graded calls it makes.
WORKLOAD_CALLS = {"04-shapes": 12, "06-objects": 5, "07-training-loop": 28, "09-tensorarray": 3}

COPIED_RESULT_BESIDE_A_DUMMY = """\
@tf.function(input_signature=[tf.TensorSpec([None], tf.float32)])
def counted(x):
    return x * 1.0

def {answer}():
    for i in range({calls}):
        counted(tf.ones([i + 1]))
    return tf.constant(copied)          # the reference result, copied in
"""


@pytest.mark.slow
def test_an_eager_total_beside_a_dummy_tf_function_is_not_yet() -> None:
    """03: the total computed eagerly, a tf.function called 7 times for the count."""
    feedback = ex.check("03-scalar-trap", _run(EAGER_TOTAL_BESIDE_A_DUMMY, "03")["run_schedule"])
    assert feedback.passed is False, str(feedback)
    assert "do not compute the result" in feedback.summary


@pytest.mark.slow
@pytest.mark.parametrize("exercise_id", sorted(WORKLOAD_CALLS))
def test_a_copied_result_beside_a_dummy_tf_function_is_not_yet(exercise_id: str) -> None:
    """04, 06, 07, 09 (the same workload check): the right result copied in, a tf.function
    called as often as the workload calls its step, one graph."""
    exercise = ex.EXERCISES[exercise_id]
    code = COPIED_RESULT_BESIDE_A_DUMMY.format(answer=exercise.answer, calls=WORKLOAD_CALLS[exercise_id])
    namespace = _run(code, exercise_id)
    namespace["copied"] = np.asarray(reference_value(exercise))
    feedback = ex.check(exercise_id, namespace[exercise.answer])
    assert feedback.passed is False, str(feedback)
    assert "do not compute the result" in feedback.summary


PYTHON_IN_THE_GRAPH = {
    "09-tensorarray": ex.EXERCISES["09-tensorarray"].solution.replace(
        "    n = tf.shape(values)[0]\n",
        "    return tf.numpy_function(lambda v: np.maximum.accumulate(v), [values], tf.float32)\n"
        "    n = tf.shape(values)[0]\n",
    ),
    "03-scalar-trap": ex.EXERCISES["03-scalar-trap"].solution.replace(
        "    return tf.reduce_mean(x) * factor",
        "    return tf.py_function(lambda a, f: tf.reduce_mean(a) * f, [x, factor], tf.float32)",
    ),
    "02-count-calls": ex.EXERCISES["02-count-calls"].solution.replace(
        "    return x * 2.0",
        "    return tf.numpy_function(lambda a: a * 2.0, [x], tf.float32)",
    ),
}


@pytest.mark.slow
@pytest.mark.parametrize("exercise_id", sorted(PYTHON_IN_THE_GRAPH))
def test_numpy_function_and_py_function_are_not_yet(exercise_id: str) -> None:
    exercise = ex.EXERCISES[exercise_id]
    feedback = ex.check(exercise_id, _run(PYTHON_IN_THE_GRAPH[exercise_id], exercise_id)[exercise.answer])
    assert feedback.passed is False, str(feedback)
    assert "calls back into Python" in feedback.summary


@pytest.mark.slow
def test_timing_evidence_written_by_hand_is_not_evidence() -> None:
    """01: EagerComparison objects with figures of the learner's choosing, the right choice."""
    namespace = _run(
        ex.EXERCISES["01-graph-speedup"].solution.replace(
            "evidence = [ex.compare_eager(small_ops, small), ex.compare_eager(big_matmul, big)]",
            "evidence = []",
        ),
        "01",
    )
    evidence = [
        ex.EagerComparison("small_ops", 1e-4, 1e-2, 15, (namespace["small"],)),
        ex.EagerComparison("big_matmul", 1e-2, 1e-2, 15, (namespace["big"],)),
    ]
    feedback = ex.check("01-graph-speedup", namespace["compiled"], evidence=evidence)
    assert feedback.passed is False, str(feedback)
    assert "evidence made by hand" in feedback.summary


CAPSTONE_EMPTY_FUNCTIONS = """\
def train_fast(epochs=3):
    X = np.random.default_rng(0).normal(size=(100, 8)).astype("float32")
    Y = (X @ np.linspace(-1.0, 1.0, 8).astype("float32")).reshape(-1, 1)

    @tf.function
    def train_step(x, y, lr, step):
        return tf.reduce_sum(x) * 0.0

    @tf.function
    def evaluate(x, y):
        return tf.constant(copied_loss)       # the reference loss, copied in

    train_step(X, Y, tf.constant(0.1), tf.constant(0))
    return float(evaluate(X, Y))
"""


@pytest.mark.slow
def test_capstone_empty_functions_returning_the_reference_loss_are_not_yet(no_speed_target: None) -> None:
    namespace = _run(CAPSTONE_EMPTY_FUNCTIONS, "08-empty")
    namespace["copied_loss"] = float(reference_value(ex.EXERCISES["08-capstone"]))
    feedback = ex.check("08-capstone", namespace["train_fast"], repeats=1)
    assert feedback.passed is False, str(feedback)
    assert "do not compute the result" in feedback.summary


SLOW_SOLUTION = ex.EXERCISES["08-capstone"].solution.replace(
    '    """The same training, without retracing. Returns the final loss."""\n',
    '    """The same training, without retracing. Returns the final loss."""\n    time.sleep(8)\n',
)


@pytest.mark.slow
def test_capstone_target_and_baseline_are_not_the_learners() -> None:
    """A right fix made slower than the original (8 s asleep) still falls short when the learner
    passes min_speedup=0, or a baseline of their own that is slower still."""
    namespace = _run(SLOW_SOLUTION, "08-slow")
    namespace["time"] = time

    baseline_runs: list[int] = []

    def slower_baseline() -> Any:
        baseline_runs.append(1)
        time.sleep(60)
        return None

    for options in ({"min_speedup": 0.0}, {"baseline": slower_baseline}):
        feedback = ex.check("08-capstone", namespace["train_fast"], repeats=1, **options)
        assert feedback.passed is False, (options, str(feedback))
        assert "faster (target 1.5×)" in feedback.summary, str(feedback)
    assert baseline_runs == [], "the learner's baseline was run"
