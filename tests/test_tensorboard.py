"""TensorBoard scalars (watch(tensorboard_dir=...), TraceCallback(log_dir=...)), read back from
the event files with TensorFlow's own reader (the tensorboard package is not needed)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

tf = pytest.importorskip("tensorflow")
keras = pytest.importorskip("keras")

import tfgraph_lab  # noqa: E402
from tfgraph_lab.keras import TraceCallback  # noqa: E402


@pytest.fixture(autouse=True)
def first_model_of_its_kind(monkeypatch: pytest.MonkeyPatch) -> None:
    """Models built by earlier tests would make this test's train function a (true)
    new-function-object: start the cross-watch history afresh."""
    from tfgraph_lab import _history

    monkeypatch.setattr(_history.HISTORY, "objects_per_code", {})
    monkeypatch.setattr(_history.HISTORY, "last_graphs", {})


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
    assert [step for step, _ in scalars["tfgraph_lab/retraces"]] == [0, 1, 2, 0, 1]
    assert [v for _, v in scalars["tfgraph_lab/retraces"]] == [0, 0, 0, 2, 2]
    report = cb.report
    (tag,) = [t for t in scalars if t.endswith("multi_step_on_iterator")]
    assert scalars[tag][-1][1] == report.function("multi_step_on_iterator").traces
    seconds = scalars["tfgraph_lab/tracing_seconds"][-1][1]
    assert seconds == pytest.approx(sum(f.trace_seconds for f in report.functions), rel=1e-5)


def read_scalars(log_dir: Path) -> dict[str, list[tuple[int, float]]]:
    out: dict[str, list[tuple[int, float]]] = {}
    for path in sorted(log_dir.glob("events.out.tfevents.*")):
        for event in tf.compat.v1.train.summary_iterator(str(path)):
            for value in event.summary.value:
                assert value.metadata.plugin_data.plugin_name == "scalars"
                number = float(tf.make_ndarray(value.tensor))
                out.setdefault(value.tag, []).append((event.step, number))
    return out
