"""The exercise table: per exercise its task, hints and checker, with the starter the lesson
notebook begins with and the worked solution (their code is in :mod:`.sources`). The tests
run every starter and solution through its checker, so each check can fail."""

from __future__ import annotations

from . import sources
from .capstone import check_capstone
from .checks import (
    Exercise,
    Variant,
    _check_count_calls,
    _check_run,
    _check_running_sum,
    _check_square,
)
from .timing import _check_choice

__all__ = ["EXERCISES"]

EXERCISES: dict[str, Exercise] = {
    e.id: e
    for e in (
        Exercise(
            "00-square",
            0,
            "your first tf.function",
            "Turn `square` into a tf.function. The check calls it three times with float32 "
            "vectors of length 3 and expects one graph.",
            "square",
            sources.SQUARE_STARTER,
            sources.SQUARE_SOLUTION,
            ("put `@tf.function` on the line above `def square(x):`",),
            _check_square,
        ),
        Exercise(
            "01-graph-speedup",
            1,
            "compile the function that gains",
            "Suppose you may compile only one of `small_ops` and `big_matmul`. Measure what "
            "`tf.function` buys each (`ex.compare_eager(fn, x)` times both ways, medians of "
            "repeats), keep the measurements in `evidence`, and set `compiled` to the "
            "tf.function of the one that gains most. The check requires your choice to follow "
            "from your evidence, re-measures it (at least 1.5× faster than eager) and compares "
            "the results.",
            "compiled",
            sources.SPEED_STARTER,
            sources.SPEED_SOLUTION,
            (
                "evidence = [ex.compare_eager(small_ops, small), ex.compare_eager(big_matmul, big)], "
                "then print each to read the speed-ups",
                "compiled = tf.function(<the function with the larger speed-up>): the graph removes "
                "per-op Python overhead, which matters when there are many small ops",
                "the graph must compute exactly what the Python code computes",
            ),
            _check_choice,
            call='ex.check("01-graph-speedup", compiled, evidence=evidence)',
        ),
        Exercise(
            "02-count-calls",
            2,
            "side effects that run on every call",
            "`scaled` counts its calls in a Python variable, which only changes while TF "
            "traces. Make the tf.Variable `counter` (the check passes one in) count every call.",
            "scaled",
            sources.COUNT_STARTER,
            sources.COUNT_SOLUTION,
            (
                "Python statements run only while tracing; a TF op such as "
                "counter.assign_add(1) is part of the graph and runs on every call",
            ),
            _check_count_calls,
        ),
        Exercise(
            "03-scalar-trap",
            3,
            "one graph for the whole schedule",
            "`run_schedule` makes a new graph for every epoch's factor and one more for "
            "evaluation. Change the calls so that one graph serves all 7 calls, with the same "
            "total (with a bool tensor, AutoGraph turns `if training:` into a tf.cond for you).",
            "run_schedule",
            sources.SCALAR_STARTER,
            sources.SCALAR_SOLUTION,
            (
                "pass tf.constant(...) instead of Python floats and bools; branch on the bool tensor "
                "with tf.cond (or let AutoGraph turn `if training:` into one)",
            ),
            _check_run(1, "one graph for all 7 calls, same total", calls=7),
        ),
        Exercise(
            "04-shapes",
            4,
            "any batch size, one dtype",
            "`predict_all` feeds batches of 32, 16 and 4 rows and a float64 NumPy array. Make it "
            "need at most 2 graphs (1 with an input_signature), with the same outputs.",
            "predict_all",
            sources.SHAPES_STARTER,
            sources.SHAPES_SOLUTION,
            (
                "give predict an input_signature=[tf.TensorSpec([None, 8], tf.float32)] — or "
                "reduce_retracing=True — and feed one dtype (float32)",
            ),
            _check_run(2, "at most 2 graphs for every batch size and dtype", calls=12),
        ),
        Exercise(
            "05-variables",
            5,
            "a Variable that lives outside the graph",
            "`RunningSum(3)` should add each x to a running total and return it. Calling it "
            "raises today. Fix the class; the check calls it three times with [1, 2, 3].",
            "RunningSum",
            sources.VARS_STARTER,
            sources.VARS_SOLUTION,
            (
                "create the tf.Variable once, in __init__, and only assign_add to it inside the tf.function",
                "a Variable created inside __call__ starts from zero on every call",
            ),
            _check_running_sum,
        ),
        Exercise(
            "06-objects",
            6,
            "one function object, one structure",
            "`run_configs` re-creates `apply` for every config and passes a dict of Python "
            "floats. Make all five configs share one graph, with the same results.",
            "run_configs",
            sources.OBJECTS_STARTER,
            sources.OBJECTS_SOLUTION,
            (
                "create the tf.function once, outside the loop, and pass the config values as "
                "tensors (a dict of tensors with the same keys keeps one graph)",
            ),
            _check_run(1, "five configs, one graph", calls=5),
        ),
        Exercise(
            "07-training-loop",
            7,
            "a custom loop that traces once",
            "`train_model` retraces for every epoch's learning rate and every smaller last "
            "batch. Make `train_step` trace once, keeping the decay and every sample.",
            "train_model",
            sources.LOOP_STARTER,
            sources.LOOP_SOLUTION,
            (
                "keep lr in a tf.Variable (created outside the step, updated with .assign) and give "
                "train_step an input_signature with a None batch dimension",
            ),
            _check_run(1, "one graph for the whole training", calls=28, rtol=1e-3),
            variants=(
                Variant(
                    "drop_remainder",
                    sources.LOOP_SOLUTION.replace(".batch(32)", ".batch(32, drop_remainder=True)"),
                    calls=24,
                    note="drop_remainder=True: the last batch's 8 rows of 200 are dropped every epoch "
                    "(24 steps, not 28), so the loss is that of the 192 rows kept — a right fix when "
                    "losing those rows is acceptable; an input_signature with None keeps them",
                ),
            ),
        ),
        Exercise(
            "08-capstone",
            8,
            "the slow training script",
            "`train_slow` hides several retracing causes. Write `train_fast`, the same training "
            "without them. The check runs both: no retraces, the same final loss (within 0.1 %, "
            "better is as wrong as worse: it means the training changed), and at least 1.5× "
            "faster on the median of 3 timed runs each.",
            "train_fast",
            sources.CAPSTONE_STARTER.replace("def train_slow(", "def train_fast(", 1),
            sources.CAPSTONE_SOLUTION,
            (
                "run %%tracewatch on train_slow() and fix one reason at a time: there are four "
                "(a re-created function, a Python float, a Python int and a smaller last batch)",
                "a Python int that changes on every step is the most expensive one: keep it in a "
                "tf.Variable and do the warm-up maths with tf ops",
            ),
            check_capstone,
        ),
        Exercise(
            "09-tensorarray",
            9,
            "collect values from a graph loop",
            "`running_max` should return the running maximum of a vector, but appending to a "
            "Python list inside a `tf.range` loop raises. Collect the values with a "
            "`tf.TensorArray` instead. The check runs `run_maxima()` (vectors of 5, 3 and 6 "
            "values) and wants the reference's results from at most 2 graphs (1 with an "
            "input_signature).",
            "run_maxima",
            sources.TENSORARRAY_STARTER,
            sources.TENSORARRAY_SOLUTION,
            (
                "out = tf.TensorArray(tf.float32, size=n) before the loop, out = out.write(i, best) "
                "inside it, return out.stack()",
                "three lengths make three graphs: give running_max an "
                "input_signature=[tf.TensorSpec([None], tf.float32)] (lesson 04)",
            ),
            _check_run(2, "one tf.range loop, at most 2 graphs for three lengths", calls=3),
        ),
    )
}
