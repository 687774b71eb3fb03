"""report.to_chrome_trace(): the Chrome Trace Event Format's rules, on real watches."""

from __future__ import annotations

import itertools
import json
import threading
from collections import defaultdict
from typing import Any

import pytest

tf = pytest.importorskip("tensorflow")

import tfgraph_lab  # noqa: E402
from tfgraph_lab.model.records import CallRun  # noqa: E402
from tfgraph_lab.report import TraceReport  # noqa: E402


def complete_events(trace: dict[str, Any]) -> list[dict[str, Any]]:
    return [e for e in trace["traceEvents"] if e["ph"] == "X"]


def check_rules(report: TraceReport) -> dict[str, Any]:
    """The rules every exported timeline keeps, whatever was watched."""
    trace = json.loads(json.dumps(report.to_chrome_trace()))  # plain JSON all the way down
    events = complete_events(trace)
    calls = [e for e in events if e["args"].get("via", "call") == "call"]
    # one event per recorded call (a summarised run stands for its calls)
    assert sum(e["args"].get("calls", 1) for e in calls) == sum(f.calls for f in report.functions)
    # the traced ones are marked, with their reason codes
    traced = [e for e in events if e["cat"] == "trace"]
    assert len(traced) == sum(1 for e in report.events if e.traced or e.failed_trace)
    assert sum(e["args"]["traces"] for e in traced) == sum(f.traces for f in report.functions)
    assert all(e["args"]["reasons"] for e in traced)
    # ts non-decreasing on each track
    by_track: dict[tuple[int, int], list[float]] = defaultdict(list)
    for e in events:
        by_track[e["pid"], e["tid"]].append(e["ts"])
        assert e["ts"] >= 0 and e["dur"] >= 0
    for stamps in by_track.values():
        assert stamps == sorted(stamps)
    # every track and every process is named
    meta = [e for e in trace["traceEvents"] if e["ph"] == "M"]
    named = {(e["pid"], e["tid"]) for e in meta if e["name"] == "thread_name"}
    assert set(by_track) <= named
    assert {pid for pid, _ in by_track} <= {e["pid"] for e in meta if e["name"] == "process_name"}
    # durations add up to the report's time in calls
    call_seconds = sum(f.call_seconds for f in report.functions)
    assert sum(e["dur"] for e in calls) / 1e6 == pytest.approx(call_seconds, rel=0.05)
    return trace


def test_one_event_per_call_traced_ones_marked_with_reasons() -> None:
    @tf.function
    def step(x):
        return x * 2

    with tfgraph_lab.watch() as w:
        for n in (1, 1, 2, 2, 3):
            step(tf.ones([n]))
    trace = check_rules(w.report)
    events = complete_events(trace)
    assert len(events) == 5
    traced = [e for e in events if e["cat"] == "trace"]
    assert [e["args"]["reasons"] for e in traced] == [["first-trace"], ["shape-changed"], ["shape-changed"]]
    assert traced[1]["args"]["retrace"] is True and "x (1,) → (2,)" in traced[1]["args"]["details"][
        0
    ].replace("shape-changed: ", "")
    assert traced[1]["args"]["caller"].endswith(".py:" + traced[1]["args"]["caller"].rsplit(":", 1)[1])
    # the calls follow one another on the main track, in call order
    assert [e["args"]["call"] for e in events] == [1, 2, 3, 4, 5]  # "call #1" … as the report says
    assert [e["args"]["index"] for e in events] == [0, 1, 2, 3, 4]
    assert all(
        later["ts"] >= earlier["ts"] + earlier["dur"] - 0.01 for earlier, later in itertools.pairwise(events)
    )


def test_one_track_per_thread() -> None:
    @tf.function
    def step(x):
        return x + 1

    step(tf.constant(1.0))  # traced before the watch: the threads only hit the cache

    def work() -> None:
        for _ in range(20):
            step(tf.constant(2.0))

    with tfgraph_lab.watch() as w:
        threads = [threading.Thread(target=work, name=f"worker-{i}") for i in range(2)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        step(tf.ones([3]))  # a retrace on the main thread
    trace = check_rules(w.report)
    names = {e["args"]["name"]: e["tid"] for e in trace["traceEvents"] if e["name"] == "thread_name"}
    assert {"MainThread", "worker-0", "worker-1"} <= set(names)
    per_track: dict[int, int] = defaultdict(int)
    for e in complete_events(trace):
        per_track[e["tid"]] += 1
    assert per_track[names["worker-0"]] == per_track[names["worker-1"]] == 20
    assert per_track[names["MainThread"]] == 1


@pytest.mark.usefixtures("small_call_log")
def test_long_watch_runs_are_one_event_each() -> None:
    @tf.function
    def f(x):
        return x + 1

    with tfgraph_lab.watch() as w:
        for i in range(400):
            f(tf.constant(1.0))
            if i == 200:
                f(tf.ones([2]))
    report = w.report
    assert report.runs, "the watch should have folded cache hits"
    trace = check_rules(report)
    runs = [e for e in complete_events(trace) if e["args"].get("summarised")]
    assert len(runs) == len(report.runs)
    assert sum(e["args"]["calls"] for e in runs) == report.summarised_calls
    assert all(e["name"].startswith(f"{e['args']['calls']} cached calls") for e in runs)


def test_start_times_survive_json_and_old_reports_are_laid_out_in_order() -> None:
    @tf.function
    def g(x):
        return x - 1

    with tfgraph_lab.watch() as w:
        for n in (1, 2, 2):
            g(tf.ones([n]))
    report = w.report
    starts = [e.start for e in report.events]
    assert all(s is not None for s in starts) and starts == sorted(starts)
    assert starts[0] >= 0 and starts[-1] <= report.seconds
    again = TraceReport.from_json(report.to_json())
    assert [e.start for e in again.events] == starts
    assert again.to_chrome_trace()["traceEvents"] == report.to_chrome_trace()["traceEvents"]
    # a report saved before start times existed: calls one after another
    data = report.to_dict()
    for event in data["events"]:
        event.pop("start")
    old = TraceReport.from_dict(data)
    trace = check_rules(old)
    assert trace["otherData"]["laid_out"].startswith("one call after another")


def test_hand_made_report_without_calls_is_an_empty_timeline() -> None:
    trace = TraceReport().to_chrome_trace()
    assert complete_events(trace) == []
    run = CallRun(0, 5, 0.5, 0.2, ("f",), start=0.0)
    trace = TraceReport(runs=(run,)).to_chrome_trace()
    (event,) = complete_events(trace)
    assert event["dur"] == 500000.0 and event["args"]["calls"] == 5


def test_the_readme_preview_tool_draws_every_event(tmp_path: Any) -> None:
    import subprocess
    import sys
    from pathlib import Path

    @tf.function
    def h(x):
        return x * 3

    with tfgraph_lab.watch() as w:
        for n in (1, 1, 2):
            h(tf.ones([n]))
    trace_file = tmp_path / "t.json"
    trace_file.write_text(json.dumps(w.report.to_chrome_trace()))
    svg = tmp_path / "t.svg"
    tool = Path(__file__).resolve().parents[2] / "tools" / "trace_preview.py"
    subprocess.run([sys.executable, str(tool), str(trace_file), str(svg)], check=True, timeout=120)
    text = svg.read_text()
    assert text.count("<title>") == 3  # one bar per call
    assert "▲ shape-changed" in text


def test_tracewatch_trace_flag_writes_the_timeline(shell: Any, tmp_path: Any) -> None:
    from tfgraph_lab.watching.recorder import is_patched

    ip = shell
    ip.run_cell("import tensorflow as tf\n@tf.function\ndef k(x):\n    return x - 2\n")
    path = tmp_path / "cell trace.json"
    result = ip.run_cell(f"%%tracewatch -q --trace '{path}'\nfor n in (1, 2, 2):\n    k(tf.ones([n]))\n")
    assert result.success and not is_patched()
    events = complete_events(json.loads(path.read_text()))
    assert [e["cat"] for e in events] == ["trace", "trace", "call"]
    assert events[1]["args"]["reasons"] == ["shape-changed"]
    # A path that cannot be written is refused before the cell runs (its side effects too).
    ip.user_ns["ran"] = 0
    bad = ip.run_cell(f"%%tracewatch -q --trace {tmp_path / 'missing' / 't.json'}\nran = 1\n")
    assert type(bad.error_in_exec).__name__ == "UsageError"
    assert "does not exist" in str(bad.error_in_exec)
    assert "The cell was not run" in str(bad.error_in_exec)
    assert ip.user_ns["ran"] == 0 and not is_patched()
