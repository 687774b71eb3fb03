"""The facts lesson 09 (extras from TF's tf.function guide) teaches, checked against the
installed TensorFlow (measured on 2.21, Keras 3.15). Trace counts are TF's own
``experimental_get_tracing_count()``; each test names the lesson's section it holds."""

from __future__ import annotations

import inspect
import os

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
os.environ.setdefault("TF_ENABLE_ONEDNN_OPTS", "0")

from typing import Any

import pytest

tf = pytest.importorskip("tensorflow")
keras = pytest.importorskip("keras")


#: tf.keras 2.15, the Keras the oldest supported TF bundles (see test_lesson_claims.KERAS_2).
KERAS_2 = keras.__version__.startswith("2.")


def count(fn: Any) -> int:
    return int(fn.experimental_get_tracing_count())


def lesson_text(name: str) -> str:
    """The cells of lesson ``name`` as the build writes them (lessons/_build), joined."""
    import sys
    from pathlib import Path

    build = str(Path(__file__).resolve().parents[2] / "lessons" / "_build")
    if build not in sys.path:
        sys.path.insert(0, build)
    from build_lessons import LESSONS

    return "\n".join(cell.source for cell in LESSONS[name]())


def test_a_nested_function_is_traced_with_its_caller_into_its_own_cache() -> None:
    """Nested tf.functions: inner traced once for three outer calls, reused by a direct call of
    the same signature, traced again with a caller's new signature; outer's graph holds a call
    op, not inner's ops; a tape differentiates through both without a new trace."""

    @tf.function
    def inner(x: Any) -> Any:
        return x * x

    @tf.function
    def outer(x: Any) -> Any:
        return inner(x) + 1.0

    for value in (1.0, 2.0, 3.0):
        outer(tf.constant(value))
    inner(tf.constant(5.0))
    assert (count(outer), count(inner)) == (1, 1)
    ops = [op.type for op in outer.get_concrete_function(tf.constant(1.0)).graph.get_operations()]
    assert "PartitionedCall" in ops and "Mul" not in ops
    x = tf.constant(3.0)
    with tf.GradientTape() as tape:
        tape.watch(x)
        y = outer(x)
    assert float(tape.gradient(y, x)) == 6.0 and count(outer) == 1
    outer(tf.constant([1.0, 2.0]))
    assert (count(outer), count(inner)) == (2, 2)


def test_python_loops_unroll_and_a_dataset_loop_is_one_graph_loop() -> None:
    """Iterators: a generator's loop is unrolled (the graph grows with its length), a generator
    argument is keyed by identity (the same one again reuses the graph and its items, read once
    while tracing; a new one traces), a dataset loop is one trace for 3 and 30 elements."""

    def numbers(n: int) -> Any:
        for i in range(n):
            yield tf.constant(float(i))

    def nodes(n: int) -> int:
        @tf.function
        def sum_generator() -> Any:
            total = tf.constant(0.0)
            for value in numbers(n):
                total += value
            return total

        return len(sum_generator.get_concrete_function().graph.as_graph_def().node)

    assert nodes(3) < nodes(6)

    @tf.function
    def sum_argument(items: Any) -> Any:
        total = tf.constant(0.0)
        for value in items:
            total += value
        return total

    used_up = numbers(3)
    assert float(sum_argument(used_up)) == 3.0
    assert float(sum_argument(used_up)) == 3.0 and count(sum_argument) == 1  # same object: read once
    sum_argument(numbers(3))
    assert count(sum_argument) == 2  # a new generator: a new trace

    @tf.function
    def sum_dataset(dataset: Any) -> Any:
        total = tf.constant(0.0)
        for value in dataset:
            total += value
        return total

    small = tf.data.Dataset.range(3).map(lambda i: tf.cast(i, tf.float32))
    large = tf.data.Dataset.range(30).map(lambda i: tf.cast(i, tf.float32))
    assert (float(sum_dataset(small)), float(sum_dataset(large))) == (3.0, 435.0)
    assert count(sum_dataset) == 1


def test_an_iterator_argument_traces_once_for_every_batch_size() -> None:
    """Iterators: an iterator's signature is its dataset's element_spec, (None, 8) without
    drop_remainder: 1 trace for batches 32 × 6 and 8; the batches as tensors: 2."""
    batches = tf.data.Dataset.from_tensor_slices(tf.ones([200, 8])).batch(32)
    assert batches.element_spec.shape.as_list() == [None, 8]

    shapes: list[list[int | None]] = []

    @tf.function
    def step_on_iterator(iterator: Any) -> Any:
        batch = next(iterator)
        shapes.append(batch.shape.as_list())
        return tf.reduce_sum(batch)

    iterator = iter(batches)
    for _ in range(7):
        step_on_iterator(iterator)
    assert count(step_on_iterator) == 1 and shapes == [[None, 8]]

    @tf.function
    def step_on_batch(batch: Any) -> Any:
        return tf.reduce_sum(batch)

    for batch in batches:
        step_on_batch(batch)
    assert count(step_on_batch) == 2


def test_a_list_append_in_a_graph_loop_raises_and_a_tensor_array_does_not() -> None:
    """TensorArray: appending a while-loop body's tensor to a Python list makes tf.stack raise
    InaccessibleTensorError (a ValueError) 'out of scope'; a TensorArray serves every n."""

    @tf.function
    def squares_in_a_list(n: Any) -> Any:
        out = []
        for i in tf.range(n):
            out.append(i * i)
        return tf.stack(out)

    with pytest.raises(ValueError, match="out of scope") as info:
        squares_in_a_list(tf.constant(4))
    assert type(info.value).__name__ == "InaccessibleTensorError"

    @tf.function
    def squares(n: Any) -> Any:
        out = tf.TensorArray(tf.int32, size=0, dynamic_size=True)
        for i in tf.range(n):
            out = out.write(i, i * i)
        return out.stack()

    assert squares(tf.constant(4)).numpy().tolist() == [0, 1, 4, 9]
    assert squares(tf.constant(6)).numpy().tolist() == [0, 1, 4, 9, 16, 25]
    assert count(squares) == 1


def test_a_leaked_tensor_is_symbolic_and_refused_later() -> None:
    """Leaked tensors: a tensor stored outside while tracing has no value; using it raises
    TypeError '… is out of scope and cannot be used here'."""
    leaked: list[Any] = []

    @tf.function
    def leaky(x: Any) -> Any:
        y = x + 1.0
        leaked.append(y)
        return y * 2.0

    leaky(tf.constant(1.0))
    assert leaked[0].name == "add:0"  # a graph tensor: an eager one has no name
    with pytest.raises(TypeError, match="is out of scope and cannot be used here"):
        leaked[0] + 1.0


def test_py_function_runs_python_on_every_call_with_an_unknown_shape() -> None:
    """tf.py_function: Python runs on every call with real values (1 trace, 3 calls), its
    output's static shape is unknown while tracing, the graph holds an EagerPyFunc op, and TF's
    docstring says its body is not serialized in a GraphDef."""
    seen: list[float] = []
    shapes: list[Any] = []

    def log_and_double(x: Any) -> Any:
        seen.append(float(x.numpy()))
        return x * 2.0

    @tf.function
    def with_python(x: Any) -> Any:
        y = tf.py_function(log_and_double, [x], tf.float32)
        shapes.append(y.shape.rank)
        y.set_shape(x.shape)
        return y + 1.0

    for value in (1.0, 2.0, 3.0):
        with_python(tf.constant(value))
    assert seen == [1.0, 2.0, 3.0] and count(with_python) == 1 and shapes == [None]
    graph = with_python.get_concrete_function(tf.constant(1.0)).graph
    assert "EagerPyFunc" in {op.type for op in graph.get_operations()}
    assert "will not be serialized in a `GraphDef`" in " ".join(inspect.getdoc(tf.py_function).split())


def test_init_scope_runs_eagerly_once_per_trace() -> None:
    """tf.init_scope: its code runs eagerly while tracing (executing_eagerly() is True), once
    per trace: counter 1 after three calls, 2 after a new shape; no assign op in the graph;
    without it, assign_add counts every call."""
    counter = tf.Variable(0)
    eager: list[bool] = []

    @tf.function
    def stamp(x: Any) -> Any:
        with tf.init_scope():
            eager.append(tf.executing_eagerly())
            counter.assign_add(1)
        return x + 1.0

    for value in (1.0, 2.0, 3.0):
        stamp(tf.constant(value))
    assert int(counter.numpy()) == 1 and eager == [True]
    ops = {op.type for op in stamp.get_concrete_function(tf.constant(1.0)).graph.get_operations()}
    assert not any("Assign" in op for op in ops), ops
    stamp(tf.constant([1.0]))
    assert int(counter.numpy()) == 2

    every = tf.Variable(0)

    @tf.function
    def count_calls(x: Any) -> Any:
        every.assign_add(1)
        return x

    for value in (1.0, 2.0, 3.0):
        count_calls(tf.constant(value))
    assert int(every.numpy()) == 3


def test_autograph_if_on_a_tensor_traces_both_branches_like_tf_cond() -> None:
    """tf.cond: AutoGraph's `if tensor:` is the same tf.cond — both branches' Python runs."""
    seen: list[str] = []

    @tf.function
    def branchy(x: Any, training: Any) -> Any:
        if training:
            seen.append("train")
            x = x * 0.5
        else:
            seen.append("eval")
        return x

    branchy(tf.ones([2]), tf.constant(False))
    assert sorted(seen) == ["eval", "train"]


def test_a_second_models_count_is_two_for_the_first_none_for_the_failure_one_for_the_built() -> None:
    """Keras (issue 34.1): the lesson's count of 3 is 2 + 0 + 1: the lazily built first model
    traces twice (its first call creates variables), the trace that raised is not counted, the
    built second model traces once — as lesson 05 says of a first call that creates variables."""

    @tf.function
    def predict(model: Any, x: Any) -> Any:
        return model(x)

    x = tf.ones([2, 4])
    predict(keras.Sequential([keras.layers.Dense(3)]), x)
    assert count(predict) == 2
    with pytest.raises(ValueError, match="singleton"):
        predict(keras.Sequential([keras.layers.Dense(3)]), x)
    assert count(predict) == 2
    second = keras.Sequential([keras.layers.Dense(3)])
    second.build((None, 4))
    assert predict(second, x).shape == (2, 3) and count(predict) == 3
    import sys
    from pathlib import Path

    sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "lessons" / "_build"))
    from build_lessons import LESSONS

    text = " ".join(" ".join(c.source for c in LESSONS["09_extras_from_the_guide"]()).split())
    assert "The count below is 3, TF 2.21's own count: 2 for the first model" in text
    assert "none for the attempt that raised" in text and "1 for the built second model" in text
    assert "the attempt that raised, and the built second model" not in text


def test_run_functions_eagerly_then_off_the_next_call_traces() -> None:
    """Debugging: under run_functions_eagerly(True) print sees real values and nothing is traced;
    switched off, the next call traces once and print sees a symbolic tensor."""
    seen: list[str] = []

    @tf.function
    def debug_me(x: Any) -> Any:
        seen.append(type(x).__name__)
        return x + 1

    tf.config.run_functions_eagerly(True)
    try:
        debug_me(tf.constant(1))
        debug_me(tf.constant(2))
    finally:
        tf.config.run_functions_eagerly(False)
    assert count(debug_me) == 0 and seen == ["EagerTensor", "EagerTensor"]
    debug_me(tf.constant(3))
    assert count(debug_me) == 1 and seen[-1] == "SymbolicTensor"



@pytest.mark.slow
def test_lesson_09s_graders_are_rerun_safe() -> None:
    """Lesson 09's answer key with every measuring cell run twice (a learner re-running it) and
    the exercise check run twice: every prediction is still graded right, the check still passes."""
    import copy
    import sys
    from pathlib import Path

    pytest.importorskip("nbclient")
    if KERAS_2:
        pytest.skip("lesson 09's predict prediction is Keras 3's count (2); Keras 2's 1 is checked above")
    build = Path(__file__).resolve().parents[2] / "lessons" / "_build"
    sys.path.insert(0, str(build))
    from build_lessons import LESSONS, answer_key
    from nbtools import execute, notebook

    key = answer_key(notebook(LESSONS["09_extras_from_the_guide"]()))
    cells = []
    for i, cell in enumerate(key.cells):
        if cell.cell_type == "code" and cell.source.startswith("ex.check_prediction("):
            cells.append(copy.deepcopy(key.cells[i - 1]))
        if cell.cell_type == "code" and cell.source.startswith("ex.check("):
            cells.append(copy.deepcopy(cell))
        cells.append(cell)
    key.cells = cells
    ran, _seconds, _rss = execute(key, str(build.parent))
    graded = sum(c.cell_type == "code" and c.source.startswith("ex.check_prediction(") for c in key.cells)
    assert graded >= 9
    assert f"{graded} predictions graded, all right" in "".join(o.get("text", "") for o in ran.cells[-1].outputs)
    checks = [
        "".join(o.get("data", {}).get("text/plain", "") for o in c.outputs)
        for c in ran.cells
        if c.source.startswith("ex.check(")
    ]
    assert len(checks) == 2 and all(text.startswith("✓") for text in checks), checks


def test_an_extension_type_is_keyed_by_its_fields_types() -> None:
    """Your own objects: an ExtensionType with a tf.Tensor field traces once for three values
    (a float passed in becomes a float32 tensor), with a float field three times; it carries
    TF's tracing protocol, __tf_tracing_type__ (TF 2.21)."""

    class Scaling(tf.experimental.ExtensionType):
        factor: tf.Tensor

    class ScalingByValue(tf.experimental.ExtensionType):
        factor: float

    @tf.function
    def apply_scaling(x: Any, scaling: Any) -> Any:
        return x * scaling.factor

    @tf.function
    def apply_by_value(x: Any, scaling: Any) -> Any:
        return x * scaling.factor

    for value in (1.0, 2.0, 3.0):
        assert float(apply_scaling(tf.ones([2]), Scaling(value))[0]) == value
        apply_by_value(tf.ones([2]), ScalingByValue(value))
    assert (count(apply_scaling), count(apply_by_value)) == (1, 3)
    assert hasattr(Scaling(1.0), "__tf_tracing_type__")


def test_the_cache_keeps_every_graph_and_its_signatures_list_them() -> None:
    """Diagnosing without the tool: 30 Python ints, 30 traces, 30 graphs kept, one
    'Input Parameters:' block each in pretty_printed_concrete_signatures, each with its
    Literal value (TF 2.21's format)."""

    @tf.function
    def times_n(x: Any, n: int) -> Any:
        return x * n

    for n in range(30):
        times_n(tf.constant(2.0), n)
    signatures = times_n.pretty_printed_concrete_signatures()
    assert count(times_n) == 30 == signatures.count("Input Parameters:")
    assert "Literal[29]" in signatures.split("\n\n")[-1]


def test_a_nested_function_keeps_the_heavy_part_traced_once_while_its_caller_retraces() -> None:
    """Keeping retraces cheap: step retraces per Python float (3 values, 3 traces), the nested
    heavy function with tensor arguments is traced once and serves all three (TF 2.21)."""

    @tf.function
    def heavy(x: Any) -> Any:
        for _ in range(20):
            x = tf.tanh(x @ x)
        return x

    @tf.function
    def step(x: Any, scale: float) -> Any:
        return heavy(x) * scale

    m = tf.eye(8)
    results = [step(m, scale) for scale in (1.0, 2.0, 3.0)]
    assert (count(step), count(heavy)) == (3, 1)
    assert float(results[2][0, 0]) == pytest.approx(3 * float(results[0][0, 0]))


def test_keras_predict_traces_its_own_function_and_fresh_models_set_off_tfs_warning() -> None:
    """Keras predict: one model's predict_function traces twice for six batch sizes
    (reduce_retracing: exact, then None rows; Keras 3.15 on TF 2.21); six fresh models trace
    once each, and TF's warning, counting every model's predict_function as one, fires."""
    import subprocess
    import sys

    import numpy as np

    model = keras.Sequential([keras.Input((3,)), keras.layers.Dense(2)])
    for rows in (4, 5, 6, 7, 8, 9):
        model.predict(np.ones((rows, 3), "float32"), verbose=0)
    # tf.keras 2.15 (the oldest TF) feeds predict from a dataset whose batch is None: 1 trace
    assert count(model.predict_function) == (1 if KERAS_2 else 2)
    assert "Keras 2 (TF 2.15) traces it once" in lesson_text("09_extras_from_the_guide")

    fresh_counts = []
    for _ in range(6):
        fresh = keras.Sequential([keras.Input((3,)), keras.layers.Dense(2)])
        fresh.predict(np.ones((4, 3), "float32"), verbose=0)
        fresh_counts.append(count(fresh.predict_function))
    assert fresh_counts == [1] * 6
    # TF keeps one warning count for every predict_function (Keras's same Python code) over the
    # whole process, and warns at most twice per function: so the warning is checked in a
    # process of its own, as the lesson's kernel is.
    script = (
        "import os; os.environ['TF_CPP_MIN_LOG_LEVEL'] = '3'\n"
        "import numpy as np, keras\n"
        "for _ in range(6):\n"
        "    m = keras.Sequential([keras.Input((3,)), keras.layers.Dense(2)])\n"
        "    m.predict(np.ones((4, 3), 'float32'), verbose=0)\n"
    )
    run = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=300)
    warnings = [line for line in run.stderr.splitlines() if "triggered tf.function retracing" in line]
    assert warnings and all("make_predict_function" in w for w in warnings), run.stderr[-2000:]


def test_the_most_specific_matching_graph_serves_a_call() -> None:
    """Which graph serves a call: traced for (3,) then for None, a vector of 3 goes to the (3,)
    graph and one of 5 to the None graph; the other way round, get_concrete_function for (3,)
    finds the None graph serving it and traces nothing (TF 2.21)."""

    @tf.function
    def which_shape(x: Any) -> Any:
        return tf.constant(str(x.shape))

    which_shape(tf.ones([3]))
    which_shape.get_concrete_function(tf.TensorSpec([None], tf.float32))
    served = [which_shape(tf.ones([n])).numpy().decode() for n in (3, 5)]
    assert served == ["(3,)", "(None,)"] and count(which_shape) == 2

    @tf.function
    def general_first(x: Any) -> Any:
        return tf.constant(str(x.shape))

    general_first.get_concrete_function(tf.TensorSpec([None], tf.float32))
    general_first.get_concrete_function(tf.TensorSpec([3], tf.float32))
    assert general_first(tf.ones([3])).numpy().decode() == "(None,)" and count(general_first) == 1
