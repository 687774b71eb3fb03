"""TensorBoard scalars (watch(tensorboard_dir=...), TraceCallback(log_dir=...)), read back from
the event files with TensorFlow's own reader (the tensorboard package is not needed)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

tf = pytest.importorskip("tensorflow")
keras = pytest.importorskip("keras")

from _tensorboard import read_scalars  # noqa: E402

import tfgraph_lab  # noqa: E402
from tfgraph_lab.keras import TraceCallback  # noqa: E402

# Models built by earlier tests would make this module's first traces (true)
# new-function-objects: each test starts the recording state afresh.
pytestmark = pytest.mark.usefixtures("fresh_recording")


def test_watch_writes_one_point_per_traced_call_and_the_totals(tmp_path: Path) -> None:
    @tf.function
    def step(x):
        return x * 2

    with tfgraph_lab.watch(tensorboard_dir=tmp_path / "tb") as w:
        for n in (1, 1, 2, 2, 2, 3, 3):
            step(tf.ones([n]))
    scalars = read_scalars(tmp_path / "tb")
    report = w.report
    (tag,) = [t for t in scalars if t.startswith("tfgraph_lab/traces/")]
    assert tag == f"tfgraph_lab/traces/{report.functions[0].qualname}"
    assert scalars[tag] == [(0, 1.0), (2, 2.0), (5, 3.0), (6, 3.0)]
    assert scalars["tfgraph_lab/retraces"] == [(0, 0.0), (2, 1.0), (5, 2.0), (6, 2.0)]
    assert scalars["tfgraph_lab/tracing_seconds"][-1][1] == pytest.approx(report.trace_seconds, rel=1e-5)


def tiny_fit_data() -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(0)
    return rng.random((32, 4), dtype=np.float32), rng.random((32, 1), dtype=np.float32)


def test_tensorboard_scalars_per_epoch_read_back(tmp_path: Path) -> None:
    x, y = tiny_fit_data()
    model = keras.Sequential([keras.Input((4,)), keras.layers.Dense(1)])
    model.compile("sgd", "mse")
    cb = TraceCallback(log_dir=tmp_path / "tb")
    model.fit(x, y, epochs=3, batch_size=8, verbose=0, callbacks=[cb])
    model.compile("sgd", "mse")
    model.fit(x, y, epochs=2, batch_size=8, verbose=0, callbacks=[cb])
    cb.close()
    scalars = read_scalars(tmp_path / "tb")
    # one point per epoch; the second fit goes on from step 3 (it went back to 0 before)
    assert [step for step, _ in scalars["tfgraph_lab/retraces"]] == [0, 1, 2, 3, 4]
    assert [v for _, v in scalars["tfgraph_lab/retraces"]] == [0, 0, 0, 2, 2]
    report = cb.report
    tag = "tfgraph_lab/traces/fit · train loop"
    assert scalars[tag][-1][1] == report.function("fit · train loop").traces
    seconds = scalars["tfgraph_lab/tracing_seconds"][-1][1]
    # the report's total: Keras's train step traces inside its train loop's trace, counted once
    assert seconds == pytest.approx(report.trace_seconds, rel=1e-5)
    assert seconds < sum(f.trace_seconds for f in report.functions)


def test_steps_never_go_back_over_fit_evaluate_and_predict(tmp_path: Path) -> None:
    """fit(epochs=5) then predict wrote step 1 after step 4, and TensorBoard 2.21 then showed
    only steps 0 and 1."""
    x, y = tiny_fit_data()
    model = keras.Sequential([keras.Input((4,)), keras.layers.Dense(1)])
    model.compile("sgd", "mse")
    cb = TraceCallback(log_dir=tmp_path / "tb")
    model.fit(x, y, epochs=5, batch_size=8, validation_split=0.25, verbose=0, callbacks=[cb])
    model.evaluate(x, y, verbose=0, callbacks=[cb])
    for n in (3, 5):
        model.predict(x[:n], verbose=0, callbacks=[cb])
    cb.close()
    scalars = read_scalars(tmp_path / "tb")
    for tag, points in scalars.items():
        steps = [step for step, _ in points]
        assert steps == sorted(set(steps)), (tag, steps)  # forward only, each step once
    assert [step for step, _ in scalars["tfgraph_lab/retraces"]] == list(range(8))
    # validation's batches of 8 then evaluate's of 32 (a static batch size when the rows divide
    # evenly, Keras 3.15), predict's 3 then 5
    assert scalars["tfgraph_lab/retraces"][-1][1] == cb.report.retraces == 3
