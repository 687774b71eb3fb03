"""A wasted retrace is found by comparing graph fingerprints: each graph's is read once, not
once per later retrace that compares with it (issue 36: a loop's n-th retrace compares with up
to n graphs)."""

from __future__ import annotations

from typing import Any

import pytest

tf = pytest.importorskip("tensorflow")

import tfgraph_lab  # noqa: E402
from tfgraph_lab.recording import history  # noqa: E402


def test_each_graphs_fingerprint_is_read_once(monkeypatch: pytest.MonkeyPatch) -> None:
    read: list[int] = []
    real = history.tfa.graph_fingerprint

    def counted(cf: Any) -> Any:
        read.append(id(cf))
        return real(cf)

    monkeypatch.setattr(history.tfa, "graph_fingerprint", counted)

    @tf.function
    def scale(x: Any, s: float) -> Any:
        for _ in range(int(s) % 4):  # four graph shapes: a retrace matches the one 4 values back
            x = x * s
        return x * s

    x = tf.constant(2.0)
    with tfgraph_lab.watch() as w:
        for i in range(12):
            scale(x, 0.5 + i)
    report = w.report
    assert scale.experimental_get_tracing_count() == 12
    assert report.function("scale").traces == 12
    assert len(read) == len(set(read)) == 12, "a graph's fingerprint was read more than once"
    # values 4..11 each build a graph equal but for constants to the one 4 values before
    assert report.function("scale").wasted_retraces == 8
