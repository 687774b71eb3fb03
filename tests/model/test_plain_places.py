"""Words a person reads where the numbers show: what "estimated" means next to an XLA count,
call numbers that agree, places a person recognises."""

from __future__ import annotations

import re
from typing import Any

from tfgraph_lab.model.records import Event, FunctionSummary, Reason
from tfgraph_lab.render.xla import xla_lines, xla_row_note


def _xla_function() -> FunctionSummary:
    return FunctionSummary(
        qualname="outer",
        filename="model.py",
        firstlineno=3,
        calls=3,
        traces=1,
        failed_traces=0,
        trace_seconds=0.1,
        call_seconds=0.2,
        framework=False,
        xla_compiles=2,
        xla_estimated=1,
        xla_compiles_kind="about",
    )


def test_an_estimated_xla_count_says_what_estimated_means_where_it_shows() -> None:
    fn = _xla_function()
    assert xla_row_note(fn) == "compiled by XLA about 2× (1 estimated from the call time)"
    why = (Reason("first-compile", "x", "", "(None, 3)", "XLA compiled the inner function"),)
    slow = Event(
        2,
        "outer",
        "model.py",
        0,
        "call",
        False,
        0,
        0.4,
        xla_compiled=True,
        xla_estimated=True,
        xla_reasons=why,
        call_number=3,
    )
    lines = xla_lines(fn, [slow])
    assert any(line.startswith("    call #3  (estimated from the call time)") for line in lines), lines
    note = next(line for line in lines if "note: estimated:" in line)
    assert "a call far slower than its graph's cached calls" in note
    assert "compile log was off" in note


def _two_functions() -> Any:
    import tensorflow as tf

    import tfgraph_lab

    @tf.function
    def first(x):  # type: ignore[no-untyped-def]
        return x + 1

    @tf.function
    def second(x):  # type: ignore[no-untyped-def]
        return x * 2

    with tfgraph_lab.watch() as w:
        second(tf.ones([1]))
        second(tf.ones([1]))
        first(tf.ones([1]))
        second(tf.ones([1]))
        first(tf.ones([2]))  # first's second call, the watch's fifth
    return w.report


def test_call_numbers_count_each_functions_calls_and_the_timeline_agrees() -> None:
    report = _two_functions()
    retrace = next(e for e in report.events if e.retrace)
    assert (retrace.index, retrace.call_number) == (4, 2)
    text = str(report)
    assert "    call #2  shape-changed  x: (1,) → (2,)" in text, text
    assert "call #5" not in text
    html = re.sub(r"<a class='tfgl-code-page'[^>]*>", "", report._repr_html_())  # the code's link
    assert "call #2  shape-changed" in html.replace("</span> <span class='tfgl-code'>", "  ")
    calls = [e for e in report.to_chrome_trace()["traceEvents"] if e["ph"] == "X"]
    assert [(e["name"].split(".")[-1], e["args"]["call"]) for e in calls] == [
        ("second · traced", 1),
        ("second", 2),
        ("first · traced", 1),
        ("second", 3),
        ("first · traced", 2),
    ]
    again = type(report).from_dict(report.to_dict())
    assert [e.call_number for e in again.events] == [1, 2, 1, 3, 2]


def test_a_merged_report_calls_its_parts_processes_one_pid_each() -> None:
    from tfgraph_lab.report.merge import merge_reports

    merged = merge_reports([("w0.json", _two_functions()), ("w1.json", _two_functions())]).report
    text = str(merged)
    assert "process w1.json" in text and "thread w1.json" not in text, text
    trace = merged.to_chrome_trace()
    names = {e["pid"]: e["args"]["name"] for e in trace["traceEvents"] if e["name"] == "process_name"}
    assert sorted(names.values()) == ["process w0.json", "process w1.json"]
    by_pid = {e["pid"] for e in trace["traceEvents"] if e["ph"] == "X"}
    assert by_pid == set(names)
    threads = {e["args"]["name"] for e in trace["traceEvents"] if e["name"] == "thread_name"}
    assert threads == {"MainThread"}
    assert [e.process for e in merged.events].count("w1.json") == 5


def test_a_call_from_inside_another_tf_function_is_placed_at_the_users_line() -> None:
    import tensorflow as tf

    import tfgraph_lab

    @tf.function
    def inner(x):  # type: ignore[no-untyped-def]
        return x * 2

    @tf.function
    def outer(x):  # type: ignore[no-untyped-def]
        y = x + 1
        return inner(y)  # the place of inner's calls

    with tfgraph_lab.watch() as w:
        outer(tf.ones([2]))
        outer(tf.ones([3]))
    line = outer.python_function.__code__.co_firstlineno + 3
    places = {e.qualname.rsplit(".", 1)[-1]: e.caller for e in w.report.events if e.retrace}
    assert places["inner"] == f"{__file__}:{line}", places  # was <tmp>/__autograph_generated_file….py:13
    assert "__autograph_generated_file" not in str(w.report)


class Settings:
    def __init__(self) -> None:
        self.scale = 2.0


def test_objects_are_described_without_memory_addresses() -> None:
    import tensorflow as tf

    import tfgraph_lab

    @tf.function
    def apply_settings(settings, v):  # type: ignore[no-untyped-def]
        return v * settings.scale

    @tf.function
    def refuse(x, where):  # type: ignore[no-untyped-def]
        raise ValueError(f"no graph for {where}")

    with tfgraph_lab.watch() as w:
        for _ in range(3):
            apply_settings(Settings(), tf.ones([3]))
        try:
            refuse(tf.ones([1]), object())
        except ValueError:
            pass
    reasons = [r for e in w.report.events for r in e.reasons if r.code == "object-changed"]
    assert [(r.before, r.after) for r in reasons] == [
        (f"Settings object #{n}", f"Settings object #{n + 1}") for n in _serials(reasons)
    ]
    (failed,) = [e for e in w.report.events if e.failed_trace]
    assert failed.error == "ValueError: no graph for <object object>", failed.error
    assert "0x" not in str(w.report) and "0x" not in w.report.to_json()


def _serials(reasons: list[Reason]) -> list[int]:
    return [int(r.before.rsplit("#", 1)[1]) for r in reasons]


FAILING = """import tensorflow as tf

@tf.function
def step(x):
    tf.debugging.assert_equal(tf.shape(x)[0], 3)
    return x + 1

def main():
    step(tf.ones([2]))

main()
"""


def test_tracebacks_under_run_show_the_scripts_frames_not_the_tools(tmp_path: Any) -> None:
    from _cli import run_cli

    (tmp_path / "job.py").write_text(FAILING)
    done = run_cli("run", "-q", "job.py", cwd=tmp_path)
    job = tmp_path / "job.py"  # named as python names it: the absolute path (issue 33.3)
    assert done.returncode == 1
    err = done.stderr
    assert f'File "{job}", line 11, in <module>' in err and f'File "{job}", line 9, in main' in err
    defined_at = err.split("defined at (most recent call last):", 1)[1].split("assertion failed", 1)[0]
    assert [line.strip() for line in defined_at.splitlines() if line.strip()] == [
        f'File "{job}", line 11, in <module>',
        f'File "{job}", line 9, in main',
        f'File "{job}", line 5, in step',
    ]
    for tool in ("cli.py", "lifecycle.py", "_hooks.py", "runpy", "__main__.py", "tfgraph_lab"):
        assert tool not in err, (tool, err)
