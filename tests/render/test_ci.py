"""Call sites and their cost, ``--sort cost``, and the CI renderings (GitHub annotations, JUnit
XML), read from plain records: no TensorFlow (the end-to-end run is tests/faces/test_ci_report.py)."""

from __future__ import annotations

import re
import xml.etree.ElementTree as ET
from dataclasses import replace
from pathlib import Path

import pytest

from tfgraph_lab.explain.pages import page_url
from tfgraph_lab.model.records import Event, FunctionSummary, Reason, call_sites
from tfgraph_lab.model.view import ViewOptions
from tfgraph_lab.render.ci import github_annotations, junit_xml, split_place
from tfgraph_lab.report.trace_report import TraceReport

ROOT = "/repo"


def _event(i: int, fn: str, caller: str | None, seconds: float, reason: Reason | None, **more: object) -> Event:
    return Event(
        index=i,
        qualname=fn,
        filename=f"{ROOT}/model.py",
        function_object=0,
        via="call",
        traced=True,
        traces=1,
        seconds=seconds,
        caller=caller,
        reasons=(reason,) if reason else (Reason("first-trace"),),
        retraces=1 if reason else 0,
        call_number=i + 1,
        **more,  # type: ignore[arg-type]
    )


def _step(before: str, after: str) -> Reason:
    return Reason("python-value-changed", "step", before, after, "`step` changed", "pass `step` as a tensor")


def _shape(before: str, after: str) -> Reason:
    return Reason("shape-changed", "x", before, after, "`x` changed shape", "declare an input_signature")


def _report() -> TraceReport:
    """train_step: 3 retraces from train.py:4 (30 ms); predict: 2 from train.py:9 (80 ms), one of
    them begun before the watch (counted, not timed); one from a notebook cell; framework noise."""
    events = (
        _event(0, "train_step", f"{ROOT}/train.py:4", 0.05, None),
        _event(1, "train_step", f"{ROOT}/train.py:4", 0.01, _step("0", "1")),
        _event(2, "train_step", f"{ROOT}/train.py:4", 0.01, _step("1", "2")),
        _event(3, "train_step", f"{ROOT}/train.py:4", 0.01, _step("2", "3")),
        _event(0, "predict", f"{ROOT}/train.py:9", 0.02, None),
        _event(1, "predict", f"{ROOT}/train.py:9", 0.08, _shape("(2,)", "(3,)")),
        _event(2, "predict", f"{ROOT}/train.py:9", 5.0, _shape("(3,)", "(5,)"), began_before_watch=True),
        _event(3, "predict", "/tmp/ipykernel_1/abc.py:2", 0.001, _shape("(5,)", "(7,)")),
    )
    functions = (
        FunctionSummary("train_step", f"{ROOT}/model.py", 3, 4, 4, 0, 0.08, 0.08, False, retraces=3),
        FunctionSummary("predict", f"{ROOT}/model.py", 7, 4, 4, 0, 0.1, 0.1, False, retraces=3),
        FunctionSummary("_internal", "/site-packages/keras/x.py", 1, 1, 1, 0, 0.5, 0.5, True),
    )
    return TraceReport(functions=functions, events=events, labels={"/tmp/ipykernel_1/abc.py": "In [3]"})


def test_call_sites_sum_each_line_and_leave_untimed_traces_out_of_the_cost() -> None:
    sites = {(s.label, s.caller): s for s in call_sites(_report().events)}
    train = sites[("train_step", f"{ROOT}/train.py:4")]
    assert (train.traces, train.retraces, train.codes) == (4, 3, ("python-value-changed",))
    assert train.trace_seconds == pytest.approx(0.08) and train.retrace_seconds == pytest.approx(0.03)
    predict = sites[("predict", f"{ROOT}/train.py:9")]
    assert (predict.traces, predict.retraces) == (3, 2)  # the untimed trace counts...
    assert predict.retrace_seconds == pytest.approx(0.08)  # ...but adds no time: it was not measured
    assert [s.caller for s in call_sites(_report().events)][:2] == [f"{ROOT}/train.py:4", f"{ROOT}/train.py:9"]


def test_the_json_carries_the_cost_per_call_site_and_reads_back() -> None:
    report = _report()
    data = report.to_dict()
    rows = {(s["label"], s["caller"]): s for s in data["call_sites"]}
    assert rows[("predict", f"{ROOT}/train.py:9")]["retrace_seconds"] == pytest.approx(0.08)
    assert rows[("train_step", f"{ROOT}/train.py:4")]["codes"] == ["python-value-changed"]
    assert TraceReport.from_dict(data).to_dict()["call_sites"] == data["call_sites"]  # derived again, the same


def test_sort_cost_ranks_functions_and_lists_the_lines_costliest_first() -> None:
    report = _report()
    assert [f.label for f in report.listed()] == ["train_step", "predict"]  # as first seen
    ranked = report.with_view(sort="cost")
    assert [f.label for f in ranked.listed()] == ["predict", "train_step"]  # 81 ms of retraces > 30 ms
    text = str(ranked)
    block = text.split("retraces by the line that called, costliest first:\n", 1)[1].split("\n\n", 1)[0]
    lines = block.splitlines()
    assert re.match(r"\s+80\.0 ms\s+2 retraces\s+predict\s+← .*train\.py:9\s+shape-changed$", lines[0]), lines
    assert re.match(r"\s+30\.0 ms\s+3 retraces\s+train_step\s+← .*train\.py:4", lines[1]), lines
    assert "In [3], line 2" in lines[2]
    assert "costliest first" not in str(report)  # the default report is unchanged
    html = ranked._repr_html_()
    table = html.split("<table class='tfgl-sites'>", 1)[1].split("</table>", 1)[0]
    assert table.index("predict") < table.index("train_step")
    assert f"href='{page_url('shape-changed')}'" in table
    with pytest.raises(ValueError, match="sort"):
        ViewOptions(sort="loudest")


def test_html_links_each_reason_code_to_its_page() -> None:
    html = _report()._repr_html_()
    assert f"<a class='tfgl-code-page' href='{page_url('python-value-changed')}'" in html
    assert f"href='{page_url('shape-changed')}'" in html


def test_github_annotations_point_at_the_callers_lines_costliest_first() -> None:
    report = _report()
    out = github_annotations(report, report.view, root=ROOT).splitlines()
    assert [line.split("::", 2)[1].split(",title=")[0] for line in out] == [
        "warning file=train.py,line=9",
        "warning file=train.py,line=4",
        "warning file=model.py,line=7",  # a notebook cell is no file: the function's own line
    ]
    assert "title=predict retraced 1× from In [3]%2C line 2 (1.0 ms)::" in out[2]
    assert "when called from In [3], line 2 (shape-changed)" in out[2]
    first = out[0]
    assert "title=predict retraced 2× here (80.0 ms)::" in first
    message = first.split("::", 2)[2]
    assert "%0A" in message and "\n" not in message  # one line: GitHub's escapes
    assert "x: (2,) → (3,) → (5,)" in message.replace("%0A", "\n")
    assert "Fix: declare an input_signature" in message and page_url("shape-changed") in message


def test_github_errors_for_a_broken_budget_at_the_functions_line_and_escapes() -> None:
    report = _report()
    out = github_annotations(report, report.view, overruns=[("train_step", 4, 1)], root=ROOT, notes=["50% off, a: b"])
    lines = out.splitlines()
    assert lines[0].startswith("::error file=model.py,line=3,title=train_step over its trace budget%3A 4 > 1::")
    assert "train_step traced 4× (budget 1)" in lines[0] and "step: 0 → 1 → 2 → 3" in lines[0]
    assert lines[-1] == "::warning title=tfgraph_lab budget::50%25 off, a: b"
    assert split_place("C:/x/train.py:12") == ("C:/x/train.py", 12) and split_place("<string>") == ("<string>", None)


def test_junit_has_a_case_per_function_failed_when_over_budget(tmp_path: Path) -> None:
    report = _report()
    text = junit_xml(report, report.view, overruns=[("train_step", 4, 1)], root=ROOT)
    path = tmp_path / "junit.xml"
    path.write_text(text, encoding="utf-8")
    suite = ET.parse(path).getroot().find("testsuite")
    assert suite is not None and (suite.get("tests"), suite.get("failures")) == ("2", "1")
    cases = {c.get("name"): c for c in suite.iter("testcase")}
    assert set(cases) == {"train_step", "predict"}  # the framework's function is not listed
    failure = cases["train_step"].find("failure")
    assert failure is not None and failure.get("message", "").startswith("train_step traced 4× (budget 1)")
    assert cases["predict"].find("failure") is None
    props = {p.get("name"): p.get("value") for p in cases["predict"].iter("property") if p.get("name") != "tracewatch.call_site"}
    assert props["tracewatch.retraces"] == "3" and float(props["tracewatch.retrace_seconds"] or 0) == pytest.approx(0.081)
    sites = [p.get("value") for p in cases["predict"].iter("property") if p.get("name") == "tracewatch.call_site"]
    assert sites[0] == "train.py:9: 2 retraces, 80.0 ms (shape-changed)"
    assert cases["train_step"].get("file") == "model.py" and cases["train_step"].get("line") == "3"


def test_ci_texts_count_in_words_that_agree() -> None:
    """One retrace reads "1 retrace", and two arguments are "the arguments responsible" (a
    custom loop's short last batch changes both x and y)."""
    y_shape = Reason("shape-changed", "y", "(32,)", "(4,)", "`y` changed shape", "declare an input_signature")
    events = (
        _event(0, "step", f"{ROOT}/train.py:4", 0.05, None),
        replace(_event(1, "step", f"{ROOT}/train.py:4", 0.01, _shape("(32, 8)", "(4, 8)")), reasons=(_shape("(32, 8)", "(4, 8)"), y_shape)),
    )
    functions = (FunctionSummary("step", f"{ROOT}/model.py", 3, 2, 2, 0, 0.06, 0.06, False, retraces=1),)
    report = TraceReport(functions=functions, events=events)
    message = github_annotations(report, report.view, root=ROOT).split("::", 2)[2].replace("%0A", "\n")
    assert "The arguments responsible took, trace after trace: x: (32, 8) → (4, 8); y: (32,) → (4,)" in message
    root = ET.fromstring(junit_xml(report, report.view, root=ROOT))
    sites = [p.get("value") for p in root.iter("property") if p.get("name") == "tracewatch.call_site"]
    assert sites == ["train.py:4: 1 retrace, 10.0 ms (shape-changed)"]
