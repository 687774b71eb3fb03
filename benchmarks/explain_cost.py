"""What explaining a trace costs, next to the trace itself; and that cache hits pay nothing.

Times every explanation step the recorder runs on a traced call (the call's signature, the
graph's signature and context, the diff against cached graphs, the caller's line, captured
scalars, the graph fingerprint for wasted retraces) across retraces of several kinds, and
prints their total as a share of the traced calls' time. Then counts how often those steps ran
during cache hits (must be 0). Run: ``python benchmarks/explain_cost.py``.
"""

from __future__ import annotations

import os
import time
from collections import defaultdict
from typing import Any

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
os.environ.setdefault("TF_ENABLE_ONEDNN_OPTS", "0")

import tensorflow as tf

import tfgraph_lab
from tfgraph_lab import adapter as tfa
from tfgraph_lab.recording import history as _history
from tfgraph_lab.recording import hub as _hub

STEPS = {
    (tfa, "graph_signature"),
    (tfa, "call_signature"),
    (tfa, "trace_in_progress"),
    (_hub, "caller_location"),
    (tfa, "scalar_captures"),
    (tfa, "graph_fingerprint"),
    (_history, "explain_trace"),
    (_history, "explain_failure"),
}
spent: dict[str, float] = defaultdict(float)
calls: dict[str, int] = defaultdict(int)


def timed(name: str, fn: Any) -> Any:
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        t0 = time.perf_counter()
        try:
            return fn(*args, **kwargs)
        finally:
            spent[name] += time.perf_counter() - t0
            calls[name] += 1

    return wrapper


def scenario() -> None:
    @tf.function
    def step(x, lr, training):
        return tf.reduce_sum(x * lr) if training else tf.reduce_mean(x)

    @tf.function(reduce_retracing=True)
    def relaxed(x):
        return x * 2

    for n in (32, 17, 9, 5):
        for lr in (0.1, 0.05):
            step(tf.ones([n, 16]), lr, True)
    step(tf.ones([32, 16], tf.float64), 0.1, False)
    for n in range(1, 8):
        relaxed(tf.ones([n]))
    for _ in range(3):
        tf.function(lambda v: v + 1)(tf.constant(1.0))


def main() -> None:
    for module, name in STEPS:
        setattr(module, name, timed(name, getattr(module, name)))
    with tfgraph_lab.watch() as w:
        scenario()
    report = w.report
    traced = [e for e in report.events if e.traced]
    trace_time = sum(e.seconds for e in traced)
    explain_time = sum(spent.values())
    print(f"TensorFlow {tf.__version__}: {len(traced)} traced calls, {report.traces} graphs")
    for name in sorted(spent, key=spent.get, reverse=True):  # type: ignore[arg-type]
        print(f"  {name:<20} {calls[name]:>4} calls  {spent[name] * 1000:8.2f} ms")
    print(
        f"explanation {explain_time * 1000:.1f} ms for {trace_time * 1000:.1f} ms of traced calls: "
        f"{explain_time / trace_time:.1%} of the trace (per traced call "
        f"{explain_time / len(traced) * 1000:.2f} ms vs {trace_time / len(traced) * 1000:.2f} ms)"
    )
    spent.clear()
    calls.clear()

    @tf.function
    def cached(x):
        return x + 1

    cached(tf.constant(1.0))
    with tfgraph_lab.watch():
        cached(tf.constant(1.0))  # the first call in a watch registers the function (once)
        spent.clear()
        calls.clear()
        for _ in range(1000):
            cached(tf.constant(1.0))
    print(f"explanation steps run during 1,000 cache hits: {sum(calls.values())}")


if __name__ == "__main__":
    main()
