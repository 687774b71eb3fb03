"""Merging reports of several processes: exact sums, a per-process breakdown, one HTML page."""

from __future__ import annotations

import json
import os
import re
from pathlib import Path
from typing import Any

import pytest
from _cli import run_cli as cli

tf = pytest.importorskip("tensorflow")

import tfgraph_lab  # noqa: E402
from tfgraph_lab.report import TraceReport  # noqa: E402
from tfgraph_lab.report.merge import merge_reports, process_names  # noqa: E402

SUMMED = (
    "calls", "traces", "failed_traces", "traced_calls", "retraces", "eager_calls",
    "wasted_retraces", "function_objects", "objects_traced", "trace_seconds", "call_seconds",
)  # fmt: skip


def watched(sizes: list[int], also_other: bool) -> TraceReport:
    @tf.function
    def step(x):
        return x * 2

    @tf.function
    def other(x):
        return x + 1

    with tfgraph_lab.watch() as w:
        for n in sizes:
            step(tf.ones([n]))
        if also_other:
            other(tf.constant(1.0))
    return w.report


def test_merge_sums_every_count_exactly_and_keeps_each_process() -> None:
    a = watched([1, 1, 2, 3], also_other=True)
    b = watched([2, 2, 2], also_other=False)
    c = watched([5, 6], also_other=True)
    merged = merge_reports([("a.json", a), ("b.json", b), ("c.json", c)])
    parts = {"a.json": a, "b.json": b, "c.json": c}
    for fn in merged.report.functions:
        inputs = [
            f
            for r in parts.values()
            for f in r.functions
            if (f.qualname, f.filename) == (fn.qualname, fn.filename)
        ]
        for name in SUMMED:
            assert getattr(fn, name) == sum(getattr(f, name) for f in inputs), name
        assert sum(g.hits for g in fn.graphs) == sum(g.hits for f in inputs for g in f.graphs)
        breakdown = merged.counts_of(fn.qualname, fn.filename)
        assert [c.process for c in breakdown] == [
            p for p, r in parts.items() if any(f in inputs for f in r.functions)
        ]
        assert [c.calls for c in breakdown] == [f.calls for f in inputs]
    step = merged.report.function("step")
    assert (step.calls, step.traces) == (9, 3 + 1 + 2)
    assert merged.report.function("other").calls == 2
    # events of every process, numbered one after the other, each on its process's track
    assert len(merged.report.events) == sum(len(r.events) for r in parts.values())
    assert [e.index for e in merged.report.events] == list(range(len(merged.report.events)))
    assert {e.thread for e in merged.report.events} == set(parts)
    # the JSON is version 1 plus the breakdown, and reads back as a report
    data = json.loads(json.dumps(merged.to_dict()))
    assert [p["name"] for p in data["processes"]] == list(parts)
    again = TraceReport.from_dict(data)
    assert again.function("step").calls == 9


def test_process_names_are_short_and_distinct() -> None:
    assert process_names(["runs/w0.json", "runs/w1.json"]) == ["w0.json", "w1.json"]
    assert process_names(["a/r.json", "b/r.json"]) == [
        os.path.join("a", "r.json"),
        os.path.join("b", "r.json"),
    ]


SCRIPT = """
import sys
import tensorflow as tf

@tf.function
def step(x):
    return x * 2

for n in [int(a) for a in sys.argv[1:]]:
    step(tf.ones([n]))
"""


@pytest.mark.slow
def test_report_command_merges_processes_into_json_and_one_standalone_page(tmp_path: Path) -> None:
    (tmp_path / "train.py").write_text(SCRIPT)
    for worker, sizes in (("w0", ["1", "2", "2"]), ("w1", ["1", "1", "3", "4"])):
        proc = cli("run", "-q", "--json", f"{worker}.json", "train.py", *sizes, cwd=tmp_path)
        assert proc.returncode == 0, proc.stderr
    proc = cli("report", "w0.json", "w1.json", "--json", "all.json", "--html", "all.html", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert "per process (2 merged; calls · traces · retraces):" in proc.stdout
    assert re.search(r"step\s+3 · 2 · 1\s+4 · 3 · 2", proc.stdout), proc.stdout
    data = json.loads((tmp_path / "all.json").read_text())
    (step,) = [f for f in data["functions"] if f["qualname"] == "step"]
    assert (step["calls"], step["traces"], step["retraces"]) == (7, 5, 3)
    assert [p["name"] for p in data["processes"]] == ["w0.json", "w1.json"]
    page = (tmp_path / "all.html").read_text()
    assert page.startswith("<!DOCTYPE html>") and page.rstrip().endswith("</html>")
    assert "<script" not in page.lower()
    # nothing fetched: no src, no stylesheet link (a reason's page is a link a reader clicks: <a>)
    assert not re.search(r"""(src|<link[^>]*href)\s*=\s*['"]?(https?:)?//""", page), "the page must fetch nothing"
    assert all(m.startswith("<a ") for m in re.findall(r"<\w+[^>]*href=", page))
    assert "w0.json" in page and "w1.json" in page and "tfgl-breakdown" in page


def test_report_command_on_a_bad_file_is_a_usage_error(tmp_path: Path) -> None:
    (tmp_path / "bad.json").write_text("{}")
    proc = cli("report", "bad.json", "bad.json", cwd=tmp_path)
    assert proc.returncode == 2 and "cannot read a tfgraph_lab report from 'bad.json'" in proc.stderr


@pytest.mark.slow
def test_run_module_like_python_dash_m(tmp_path: Path) -> None:
    pkg = tmp_path / "trainer"
    pkg.mkdir()
    (pkg / "__init__.py").write_text("")
    (pkg / "main.py").write_text(
        SCRIPT + "print('argv', sys.argv[1:], __name__, sys.argv[0].endswith('main.py'))\nsys.exit(4)\n"
    )
    trace = tmp_path / "t.json"
    proc = cli("run", "--trace", str(trace), "-m", "trainer.main", "2", "3", cwd=tmp_path)
    assert proc.returncode == 4, proc.stderr
    assert "argv ['2', '3'] __main__ True" in proc.stdout
    assert "tracewatch ·" in proc.stderr and "shape-changed" in proc.stderr
    events: list[dict[str, Any]] = [e for e in json.loads(trace.read_text())["traceEvents"] if e["ph"] == "X"]
    assert [e["cat"] for e in events] == ["trace", "trace"]
    proc = cli("run", "-m", "no_such_module_here", cwd=tmp_path)
    assert proc.returncode == 1 and "no module named 'no_such_module_here'" in proc.stderr
    assert "tracewatch ·" not in proc.stderr
