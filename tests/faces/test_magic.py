"""%%tracewatch and %tracewatch through a real IPython shell."""

from __future__ import annotations

import json
import re
from typing import Any

import pytest

pytest.importorskip("tensorflow")
from _cli import run_cli

from tfgraph_lab.watching.recorder import is_patched

SHELL_SETUP = "import tensorflow as tf\n@tf.function\ndef f(x):\n    return x + 1\n"  # run once in the shared `shell` (conftest.py)


def run(shell: Any, cell: str) -> Any:
    result = shell.run_cell(cell)
    assert not is_patched()
    return result


def test_report_stored_and_counts_match_tf(shell: Any) -> None:
    before = shell.ev("f.experimental_get_tracing_count()")
    result = run(shell, "%%tracewatch -q -v rep\nfor n in (1, 2, 2, 3):\n    f(tf.ones([n]))\n")
    assert result.success
    rep = shell.user_ns["rep"]
    assert rep.function("f").traces == shell.ev("f.experimental_get_tracing_count()") - before
    assert rep.function("f").calls == 4


def test_output_flag_returns_report(shell: Any) -> None:
    result = run(shell, "%%tracewatch -q -o\nf(tf.ones([11]))\n")
    assert type(result.result).__name__ == "TraceReport"


@pytest.mark.parametrize("flags", ["-o", "-o -q"])
def test_output_flag_shows_the_report_once_as_the_cell_value(shell: Any, capsys: Any, flags: str) -> None:
    capsys.readouterr()
    result = shell.run_cell(f"%%tracewatch {flags}\nf(tf.ones([13]))\n", store_history=True)
    assert type(result.result).__name__ == "TraceReport"
    out = capsys.readouterr().out
    assert out.count("tracewatch ·") == 1, out  # as Out[n] only, not displayed and then Out[n]
    assert re.search(rf"Out\[{result.execution_count}\]:\s+tracewatch ·", out), out


def test_output_flag_still_shows_the_report_when_the_cell_fails(shell: Any, capsys: Any) -> None:
    """No value is returned then, so the report is displayed before the error."""
    capsys.readouterr()
    failed = run(shell, "%%tracewatch -o\nf(tf.ones([14]))\nraise KeyError('mine')\n")
    over = run(shell, "%%tracewatch -o --max-traces f=0\nf(tf.ones([15]))\n")
    assert isinstance(failed.error_in_exec, KeyError)
    assert type(over.error_in_exec).__name__ == "TraceBudgetExceeded"
    assert capsys.readouterr().out.count("tracewatch ·") == 2


def test_calls_are_placed_in_the_cell_whose_prompt_shows_the_number(shell: Any, tmp_path: Any) -> None:
    """IPython 9 increments execution_count before a cell runs, IPython 8 after: the report
    names the cell as its prompt and IPython's own tracebacks do (``In [n]``)."""
    before = shell.run_cell("pass", store_history=True)
    path = tmp_path / "r.json"
    result = shell.run_cell(
        f"%%tracewatch -q -v rep --json {path}\nf(tf.ones([33]))\nf(tf.ones([34]))\n", store_history=True
    )
    assert result.success
    number = result.execution_count
    assert number == before.execution_count + 1
    text = str(shell.user_ns["rep"])
    assert f"at In [{number}], line 3" in text, text
    assert f"In [{number + 1}]" not in text
    # the JSON keeps the name IPython gave the cell (a terminal shell: <ipython-input-N-hash>)
    callers = [e["caller"] for e in json.loads(path.read_text())["events"]]
    assert callers and all(re.fullmatch(rf"<ipython-input-{number}-\w+>:[23]", c) for c in callers), callers
    # ... and the label it had when recorded, so another process names the cell alike
    back = run_cli("report", str(path), cwd=tmp_path)
    assert back.returncode == 0, back.stderr
    assert f"at In [{number}], line 3" in back.stdout, back.stdout
    # Line numbers count the %%tracewatch line and blank lines, as the cell shows them; an
    # error names the same cell and line as the report (IPython's own ``In[n], line k``).
    failed = shell.run_cell("%%tracewatch -q -v rep\n\nf(tf.ones([35]))\n1 / 0\n", store_history=True)
    exc = failed.error_in_exec
    assert isinstance(exc, ZeroDivisionError)
    assert f"at In [{failed.execution_count}], line 3" in str(shell.user_ns["rep"])
    shown = "\n".join(shell.InteractiveTB.structured_traceback(type(exc), exc, exc.__traceback__))
    shown = re.sub(r"\x1b\[[0-9;]*m", "", shown)  # no colours
    assert re.search(rf"In ?\[{failed.execution_count}\], line 4", shown), shown
    assert "1 / 0" in shown


def test_budget_fails_the_cell_after_the_report(shell: Any, capsys: Any) -> None:
    result = run(shell, "%%tracewatch --max-traces f=0\nf(tf.ones([12]))\n")
    assert type(result.error_in_exec).__name__ == "TraceBudgetExceeded"
    out = capsys.readouterr().out
    assert "tracewatch ·" in out  # the report was shown before the error


def test_cell_exception_propagates_unchanged(shell: Any) -> None:
    result = run(shell, "%%tracewatch -q\nf(tf.ones([1]))\nraise KeyError('mine')\n")
    assert isinstance(result.error_in_exec, KeyError)
    assert result.error_in_exec.args == ("mine",)


@pytest.mark.parametrize(
    ("line", "message"),
    [
        ("--bogus", "unrecognized arguments"),
        ("--max-traces x", "not a whole number"),
        ("--max-traces =2", "function name"),
        ("-v 1abc", "variable name"),
        ("extra", "no positional argument"),
    ],
)
def test_bad_flags_are_usage_errors(shell: Any, line: str, message: str) -> None:
    result = run(shell, f"%%tracewatch {line}\nf(tf.ones([1]))\n")
    assert type(result.error_in_exec).__name__ == "UsageError"
    assert message in str(result.error_in_exec)


def test_json_written_and_unwritable_path_is_clear(shell: Any, tmp_path: Any) -> None:
    path = tmp_path / "r.json"
    assert run(shell, f"%%tracewatch -q --json {path}\nf(tf.ones([2]))\n").success
    data = json.loads(path.read_text())
    assert data["version"] == 1 and data["functions"][0]["calls"] == 1
    bad = tmp_path / "missing-dir" / "r.json"
    result = run(shell, f"%%tracewatch -q --json {bad}\nf(tf.ones([2]))\n")
    assert type(result.error_in_exec).__name__ == "UsageError"
    assert "does not exist" in str(result.error_in_exec)  # checked before the cell ran
    assert not bad.exists()


def test_all_and_compare_eager(shell: Any) -> None:
    result = run(shell, "%%tracewatch -q -o --all --compare-eager\nf(tf.ones([3]))\n")
    report = result.result
    assert report.show_framework
    assert set(report.compare_eager) == {"graph_seconds", "eager_seconds", "graph_runs", "eager_runs"}
    assert 1 <= len(report.compare_eager["eager_runs"]) <= 3
    assert report.compare_eager["graph_runs"][0] == report.compare_eager["graph_seconds"]
    if report.traces == 0:  # f traced in an earlier cell: nothing here may blame tracing
        assert "tracing (" not in str(report).split("graph vs eager", 1)[1]
    assert not shell.ev("tf.config.functions_run_eagerly()")


def test_compare_eager_leaves_the_state_of_one_run(shell: Any, capsys: Any) -> None:
    """--compare-eager runs the cell up to 5 more times: it left them all behind (a list of 18
    items and a tf.Variable at 18 where one run gives 3), said nothing of it and the monitor's
    notice counted their retraces (8 in the cell, 2 its own) with a fix promising '3 graphs
    instead of 9' (issue 32.5). Each re-run starts from the watched run's start, the user keeps
    the watched run's state, and the notice covers the watched run."""
    from tfgraph_lab.faces import monitor as monitor_module

    noticed: list[Any] = []
    original = monitor_module.RetraceNotice

    class Recording(original):  # type: ignore[misc, valid-type]
        def __init__(self, report: Any) -> None:
            super().__init__(report)
            noticed.append(report)

    shell.run_cell("eager_log = []\neager_count = tf.Variable(0.0)\n")
    cell = (
        "@tf.function\ndef counted(x):\n    return x + 1\n"
        "for i in range(3):\n    eager_log.append(i)\n    eager_count.assign_add(1.0)\n    counted(i)\n"
    )
    monitor_module.RetraceNotice = Recording
    run(shell, "%tracewatch on")
    capsys.readouterr()
    try:
        result = run(shell, "%%tracewatch -q -o --compare-eager\n" + cell)
    finally:
        run(shell, "%tracewatch off")
        monitor_module.RetraceNotice = original
    assert result.success, result.error_in_exec
    runs = result.result.compare_eager["graph_runs"][1:] + result.result.compare_eager["eager_runs"]
    assert len(runs) >= 1
    assert shell.ev("eager_log") == [0, 1, 2]
    assert shell.ev("float(eager_count.numpy())") == 3.0
    out = capsys.readouterr().out
    assert "up to 5 more times" in out and "not restored" in out and "files" in out, out
    assert len(noticed) == 1
    assert sum(f.traces for f in noticed[0].functions if f.qualname == "counted") == 3


def test_last_expression_value_is_displayed(shell: Any, capsys: Any) -> None:
    run(shell, "%%tracewatch -q\n6 * 7\n")
    assert "42" in capsys.readouterr().out


def test_monitor_on_off_status(shell: Any, capsys: Any) -> None:
    # A function of its own, traced once before, and monitoring off to begin with: the counts
    # below do not depend on which tests used the shared shell first.
    shell.run_cell("@tf.function\ndef monitored(x):\n    return x * 2\nmonitored(tf.ones([1]))")
    run(shell, "%tracewatch off")
    capsys.readouterr()
    run(shell, "%tracewatch on")
    shell.run_cell("monitored(tf.ones([21]))")
    shell.run_cell("monitored(tf.ones([21]))")
    run(shell, "%tracewatch status")
    run(shell, "%tracewatch off")
    out = capsys.readouterr().out
    assert "this cell retraced" in out or "retrace in this cell" in out
    assert "2 cells watched, 1 with retraces" in out
    assert not is_patched()
    # On again, status counts from there (not the cells of the earlier stretch).
    run(shell, "%tracewatch on")
    run(shell, "%tracewatch status")
    run(shell, "%tracewatch off")
    assert "monitoring is on: 0 cells watched, 0 with retraces" in capsys.readouterr().out


def test_help_documents_flags(shell: Any) -> None:
    doc = shell.magics_manager.magics["cell"]["tracewatch"].__doc__
    for flag in ("--max-traces", "--json", "--compare-eager", "--all", "-v", "-o", "-q"):
        assert flag in doc
