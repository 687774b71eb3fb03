"""A graph's fingerprint is read when the reasons are, not on the trace path (issue 36); a
function object that is gone before the report is built has its graphs' fingerprints read as
it goes, so its wasted retraces are still found."""

from __future__ import annotations

import gc
import logging
import sys
from typing import Any

import pytest

tf = pytest.importorskip("tensorflow")

import tfgraph_lab  # noqa: E402
from tfgraph_lab.recording import history, hooks  # noqa: E402


def _loop(x: Any, calls: int) -> Any:
    @tf.function
    def scale(x: Any, s: float) -> Any:
        return x * s  # a Python float: a graph per value, each equal to the others but for it

    for i in range(calls):
        scale(x, 0.5 + i)
    return scale.experimental_get_tracing_count()


def test_no_fingerprint_is_read_inside_a_traced_call(monkeypatch: pytest.MonkeyPatch) -> None:
    inside: list[bool] = []
    real = history.tfa.graph_fingerprint

    def counted(cf: Any) -> Any:
        # under the hook of a watched call (its trace, or its slow-path record): the trace path
        frame = sys._getframe(1)
        while frame is not None and frame.f_code.co_filename != hooks.__file__:
            frame = frame.f_back  # type: ignore[assignment]
        inside.append(frame is not None)
        return real(cf)

    monkeypatch.setattr(history.tfa, "graph_fingerprint", counted)
    # no live lines: they build their reasons (fingerprints with them) when written
    logger = logging.getLogger("tfgraph_lab")
    level = logger.level
    logger.setLevel(logging.ERROR)  # setLevel: it clears the logger's cache of isEnabledFor
    x = tf.constant(2.0)
    try:
        with tfgraph_lab.watch() as w:
            traced = _loop(x, 6)
    finally:
        logger.setLevel(level)
    assert traced == 6
    assert inside and not any(inside), "a fingerprint was read inside a traced call"
    assert w.report.function("scale").wasted_retraces == 5


def test_wasted_retraces_are_found_after_the_function_is_gone() -> None:
    x = tf.constant(2.0)
    gc.disable()  # freed by its reference count, as a tf.function is (not by the collector)
    try:
        with tfgraph_lab.watch() as w:
            traced = _loop(x, 5)  # `scale` is freed when _loop returns: its graphs with it
    finally:
        gc.enable()
    assert traced == 5
    row = w.report.function("scale")
    assert row.traces == 5
    assert row.wasted_retraces == 4
