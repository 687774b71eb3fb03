"""tfgraph_lab.keras.TraceCallback on real (tiny) Keras models: the typical cases and the budget."""

from __future__ import annotations

import logging
import sys
from collections.abc import Iterator
from typing import Any

import numpy as np
import pytest

tf = pytest.importorskip("tensorflow")
keras = pytest.importorskip("keras")

from tensorflow.python.eager.polymorphic_function import polymorphic_function as pf  # noqa: E402

import tfgraph_lab  # noqa: E402
from tfgraph_lab.keras import TraceCallback  # noqa: E402
from tfgraph_lab.watching.recorder import is_patched  # noqa: E402

# Models built by earlier tests would make this module's first traces (true)
# new-function-objects: each test starts the recording state afresh.
pytestmark = pytest.mark.usefixtures("fresh_recording")


@pytest.fixture
def records() -> Iterator[list[logging.LogRecord]]:
    seen: list[logging.LogRecord] = []

    class Keep(logging.Handler):
        def emit(self, record: logging.LogRecord) -> None:
            seen.append(record)

    handler = Keep()
    logging.getLogger("tfgraph_lab").addHandler(handler)
    try:
        yield seen
    finally:
        logging.getLogger("tfgraph_lab").removeHandler(handler)


def data(n: int = 32) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(0)
    return rng.random((n, 4), dtype=np.float32), rng.random((n, 1), dtype=np.float32)


def tiny_model() -> Any:
    return keras.Sequential([keras.Input((4,)), keras.layers.Dense(1)])


def functions_in_closure(fn: Any, seen: set[int] | None = None) -> list[Any]:
    """TF's own Function objects behind Keras 3's train_function closure (the ground truth)."""
    seen = set() if seen is None else seen
    out = []
    for cell in getattr(fn, "__closure__", None) or ():
        try:
            value = cell.cell_contents
        except ValueError:
            continue
        if id(value) in seen:
            continue
        seen.add(id(value))
        if isinstance(value, pf.Function):
            out.append(value)
            out += functions_in_closure(value.python_function, seen)
        elif callable(value) and hasattr(value, "__closure__"):
            out += functions_in_closure(value, seen)
    return out


def train_traces(report: Any) -> int:
    return sum(f.traces for f in report.functions if f.label.startswith("fit · "))


def codes_of(report: Any) -> list[str]:
    return [r.code for e in report.events if e.traced for r in e.reasons]


def test_fit_with_validation_then_compile_again(records: list[logging.LogRecord]) -> None:
    x, y = data()
    model = tiny_model()
    model.compile("sgd", "mse")
    cb = TraceCallback()
    model.fit(x, y, epochs=2, batch_size=8, validation_data=(x, y), verbose=0, callbacks=[cb])
    assert not is_patched()  # watched only while fit ran
    first = cb.report
    # validation's test function is a function of its own, not a re-created train function
    assert cb.retraces == 0 and records == []
    tf_counts = sum(f.experimental_get_tracing_count() for f in functions_in_closure(model.train_function))
    tf_counts += sum(f.experimental_get_tracing_count() for f in functions_in_closure(model.test_function))
    assert train_traces(first) == tf_counts
    model.compile("adam", "mse")  # a new train function, and new (Adam) optimizer variables
    model.fit(x, y, epochs=1, batch_size=8, verbose=0, callbacks=[cb])
    line = sys._getframe().f_lineno - 1
    report = cb.report
    assert (
        cb.retraces
        == report.function("fit · train step").retraces + report.function("fit · train loop").retraces
    )
    assert cb.retraces == 2 == len(records)
    assert "new-function-object" in codes_of(report) and "variable-creation" in codes_of(report)
    for record in records:
        text = record.getMessage()
        assert "new-function-object" in text and f"test_keras_callback.py:{line}" in text
        fixes = [r["fix"] for r in record.tfgraph_lab["reasons"]]  # type: ignore[attr-defined]
        # sgd → adam changes training: the recompile is needed, no fix offered
        assert any(fix.startswith("nothing to fix: keep the recompile") for fix in fixes)
    reasons = [r for e in report.events for r in e.reasons if r.code == "new-function-object"]
    assert all("compile() ran again" in r.message for r in reasons)
    assert [e.caller for e in report.events if e.traced][-1].endswith(f"test_keras_callback.py:{line}")
    # accumulated over both calls: TF's count for the new train function is in there too
    now = sum(f.experimental_get_tracing_count() for f in functions_in_closure(model.train_function))
    assert train_traces(report) == tf_counts + now


def test_predict_on_several_sizes_names_the_shape_and_reduce_retracing(
    records: list[logging.LogRecord],
) -> None:
    model = tiny_model()
    cb = TraceCallback()
    lines = []
    for n in (3, 5, 7):
        model.predict(np.zeros((n, 4), "float32"), verbose=0, callbacks=[cb])
        lines.append(sys._getframe().f_lineno - 1)
    report = cb.report
    fn = report.function("predict step")
    assert fn.traces == model.predict_function.experimental_get_tracing_count() == 2
    assert fn.retraces == 1 and len(records) == 1
    (retrace,) = [e for e in report.events if e.traced and e.reasons[0].code == "shape-changed"]
    assert (retrace.reasons[0].before, retrace.reasons[0].after) == ("(3, 4)", "(5, 4)")
    assert retrace.caller is not None and retrace.caller.endswith(f":{lines[1]}")
    assert any(g.generalised for g in fn.graphs)  # reduce_retracing: size 7 reuses (None, 4)
    # the line clips its fix to fit a terminal (the caller's path takes its share); the record's
    # data carries it whole
    assert "fix: nothing to do" in records[0].getMessage()
    assert "reduce_retracing" in records[0].tfgraph_lab["reasons"][0]["fix"]  # type: ignore[attr-defined]


class Noisy(keras.Model):  # type: ignore[misc]
    """A custom train_step reading a Python float that a callback changes every epoch."""

    def __init__(self) -> None:
        super().__init__()
        self.dense = keras.layers.Dense(1)
        self.noise = 0.0

    def call(self, x: Any) -> Any:
        return self.dense(x)

    def train_step(self, data: Any) -> Any:
        x, y = data
        x = x + self.noise  # baked into the graph when it is traced
        with tf.GradientTape() as tape:
            loss = self.compute_loss(x=x, y=y, y_pred=self(x, training=True))
        grads = tape.gradient(loss, self.trainable_variables)
        self.optimizer.apply(grads, self.trainable_variables)
        return {"loss": loss}


class RaiseNoise(keras.callbacks.Callback):  # type: ignore[misc]
    def on_epoch_end(self, epoch: int, logs: Any = None) -> None:
        self.model.noise = 0.5 * (epoch + 1)


def test_custom_train_step_with_a_python_value_is_a_stale_capture_not_a_retrace() -> None:
    x, y = data()
    model = Noisy()
    model.compile("sgd", "mse")
    cb = TraceCallback()
    model.fit(x, y, epochs=3, batch_size=8, verbose=0, callbacks=[RaiseNoise(), cb])
    report = cb.report
    assert report.retraces == 0 and cb.retraces == 0
    hints = [h for f in report.functions for h in f.hints]
    assert any("`self.noise` was 0.0" in h and "is 1.5 now, but the graph still uses 0.0" in h for h in hints)
    assert any("tf.Variable" in h for h in hints)


def test_max_retraces_raises_out_of_the_call_with_tensorflow_unpatched() -> None:
    model = tiny_model()
    cb = TraceCallback(max_retraces=0)
    model.predict(np.zeros((3, 4), "float32"), verbose=0, callbacks=[cb])
    with pytest.raises(tfgraph_lab.TraceBudgetExceeded) as caught:
        model.predict(np.zeros((5, 4), "float32"), verbose=0, callbacks=[cb])
    assert not is_patched()
    assert "Keras predict went over max_retraces=0: 1 retraces" in str(caught.value)
    report = caught.value.report
    assert report is not None and sum(f.retraces for f in report.functions) == 1  # type: ignore[attr-defined]


def test_budget_checked_between_batches_of_fit() -> None:
    x, y = data(24)
    model = tiny_model()
    model.compile("sgd", "mse")
    cb = TraceCallback(max_retraces=0)
    model.fit(x, y, epochs=1, batch_size=8, verbose=0, callbacks=[cb])
    model.compile("sgd", "mse")
    with pytest.raises(tfgraph_lab.TraceBudgetExceeded):
        model.fit(x, y, epochs=3, batch_size=8, verbose=0, callbacks=[cb])
    assert not is_patched()
    # it stopped at the first batch end past the budget, not after three epochs
    assert cb.report.function("fit · train loop").calls < 3 * 3 + 3


def test_a_failing_fit_leaves_tensorflow_patched_only_until_close() -> None:
    model = tiny_model()
    model.compile("sgd", "mse")
    cb = TraceCallback()
    with pytest.raises(ValueError):
        model.fit(np.zeros((8, 3), "float32"), np.zeros((8, 1), "float32"), verbose=0, callbacks=[cb])
    # Keras calls no on_train_end when fit raises: the callback cannot know the call ended
    cb.close()
    assert not is_patched()


def test_bad_arguments() -> None:
    with pytest.raises(tfgraph_lab.TfgraphLabError, match="max_retraces must be a whole number"):
        TraceCallback(max_retraces=-1)
