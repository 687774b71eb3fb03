"""Red team, the magic (issue 23): what a watched cell gives back, how it fails, and what it
checks before the cell runs. Every case here failed before its fix; each runs a real IPython
shell, and the autouse fixture in conftest.py checks TensorFlow is left as it was."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("tensorflow")

from tfgraph_lab.watching.recorder import is_patched

ANSI = re.compile(r"\x1b\[[0-9;]*m")


SHELL_SETUP = "import tensorflow as tf\n@tf.function\ndef rt(x):\n    return x + 1\n"  # run once in the shared `shell` (conftest.py)


def run(shell: Any, cell: str) -> Any:
    result = shell.run_cell(cell, store_history=True)
    assert not is_patched()
    return result


# ------------------------------------------------------------------ 1. the cell's value


@pytest.mark.parametrize("magic", ["", "%%tracewatch\n", "%%tracewatch -q\n", "%%tracewatch --all\n"])
def test_the_cells_value_is_its_result_as_unwatched(shell: Any, capsys: Any, magic: str) -> None:
    capsys.readouterr()
    result = run(shell, f"{magic}rt(tf.ones([2]))\n6 * 7\n")
    assert result.success
    assert result.result == 42
    assert shell.user_ns["_"] == 42
    assert shell.user_ns[f"_{result.execution_count}"] == 42
    out = capsys.readouterr().out
    assert re.search(rf"Out\[{result.execution_count}\]: 42", out), out
    assert len(re.findall(r"\b42\b", out)) == 1, out  # shown once, as Out[n] (not "429 µs")


def test_a_trailing_semicolon_still_hides_the_value(shell: Any, capsys: Any) -> None:
    capsys.readouterr()
    result = run(shell, "%%tracewatch -q\n6 * 7;\n")
    assert result.result is None
    assert "42" not in capsys.readouterr().out


def test_with_o_the_report_is_the_value_and_the_cells_value_is_shown(shell: Any, capsys: Any) -> None:
    capsys.readouterr()
    result = run(shell, "%%tracewatch -q -o\nrt(tf.ones([2]))\n6 * 7\n")
    assert type(result.result).__name__ == "TraceReport"
    assert "42" in capsys.readouterr().out


def test_the_value_is_shown_when_a_budget_fails_the_cell(shell: Any, capsys: Any) -> None:
    capsys.readouterr()
    result = run(shell, "%%tracewatch -q --max-traces rt=0\nrt(tf.ones([1, 5]))\n6 * 7\n")
    assert type(result.error_in_exec).__name__ == "TraceBudgetExceeded"
    assert "42" in capsys.readouterr().out


# ------------------------------------------------------------------ 2. SyntaxError


@pytest.mark.parametrize("ending", ["\n", ""], ids=["newline", "no-newline"])  # a notebook sends none (33.9)
@pytest.mark.parametrize(
    ("body", "line", "kind"),
    [("x = 1\ny = (", 3, "SyntaxError"), ("x = 1\n\nif x:\nprint(x)", 5, "IndentationError")],
)
def test_a_syntax_error_reads_as_unwatched(
    shell: Any, capsys: Any, body: str, line: int, kind: str, ending: str
) -> None:
    capsys.readouterr()
    result = run(shell, "%%tracewatch\n" + body + ending)
    shown = ANSI.sub("", capsys.readouterr().out + capsys.readouterr().err)
    assert not result.success
    error = result.error_in_exec or result.error_before_exec
    assert type(error).__name__ == kind
    assert f"Cell In[{result.execution_count}], line {line}" in shown, shown
    assert "magic.py" not in shown and "<unknown>" not in shown, shown
    assert "tracewatch ·" not in shown, "no empty report"
    assert "Traceback" not in shown, shown


# ------------------------------------------------------------------ 10. paths checked first


@pytest.mark.parametrize("flag", ["--json", "--trace"])
@pytest.mark.parametrize("target", ["adir", "missing/r.json", "afile/r.json"])
def test_output_paths_are_checked_before_the_cell_runs(
    shell: Any, tmp_path: Path, capsys: Any, flag: str, target: str
) -> None:
    (tmp_path / "adir").mkdir()
    (tmp_path / "afile").write_text("not a folder\n")
    marker = tmp_path / "ran"
    capsys.readouterr()
    result = run(shell, f"%%tracewatch {flag} {tmp_path / target}\nopen({str(marker)!r}, 'w').close()\n")
    assert type(result.error_in_exec).__name__ == "UsageError"
    message = str(result.error_in_exec)
    assert flag in message and str(tmp_path / target) in message, message
    assert "cell was not run" in message, message
    assert not marker.exists(), "the cell ran (its side effects happened) before the error"
    assert "tracewatch ·" not in capsys.readouterr().out


# ------------------------------------------------------------------ 9. --compare-eager fails


EAGER_ONLY_FAILURE = "if tf.config.functions_run_eagerly():\n    raise KeyError('eager only')\n"


@pytest.mark.parametrize("mode", ["eager", "graph"])
def test_a_failing_re_run_keeps_the_report_and_the_cells_outcome(shell: Any, capsys: Any, mode: str) -> None:
    """The eager re-run raises (or a graph re-run: the cell is not re-runnable); the watched
    run succeeded, so the cell succeeds with its value, and the report says what failed. The
    runs are counted on an object's attribute: each re-run starts from the names the watched run
    started from, so a counter bound to a name would read 1 in every run."""
    from types import SimpleNamespace

    shell.user_ns["_runs"] = SimpleNamespace(n=0)
    fails = (
        EAGER_ONLY_FAILURE
        if mode == "eager"
        else "_runs.n += 1\nif _runs.n > 2:\n    raise KeyError('third run')\n"
    )
    capsys.readouterr()
    result = run(shell, f"%%tracewatch --compare-eager -v rep\nrt(tf.ones([3]))\n{fails}6 * 7\n")
    out = capsys.readouterr().out
    assert result.success, result.error_in_exec
    assert result.result == 42
    assert not shell.ev("tf.config.functions_run_eagerly()")
    report = shell.user_ns["rep"]
    data = report.compare_eager
    assert data["rerun_failed"] == mode
    assert data["rerun_error"].startswith("KeyError: ")
    text = str(report)
    assert f"the {mode} re-run failed (KeyError: " in text, text
    assert f"the {mode} re-run failed (KeyError: " in report._repr_html_()
    assert "tracewatch ·" in out  # the report was shown
    assert type(report).from_json(report.to_json()).compare_eager == data


# ------------------------------------------------------------------ 12. %reload_ext


def test_reload_ext_keeps_monitoring_on_and_says_so(shell: Any, capsys: Any) -> None:
    run(shell, "%tracewatch on")
    try:
        capsys.readouterr()
        run(shell, "%reload_ext tfgraph_lab")
        said = capsys.readouterr().out
        assert "monitoring is on again" in said, said
        run(shell, "%tracewatch status")
        assert "monitoring is on" in capsys.readouterr().out
        run(shell, "rt(tf.ones([7, 7, 7]))\nrt(tf.ones([7, 7, 6]));")  # a retrace: a notice
        assert "retrace" in capsys.readouterr().out
    finally:
        run(shell, "%tracewatch off")
    assert not is_patched()


def test_unload_ext_says_monitoring_stopped(shell: Any, capsys: Any) -> None:
    run(shell, "%tracewatch on")
    capsys.readouterr()
    run(shell, "%unload_ext tfgraph_lab")
    try:
        assert "monitoring is off" in capsys.readouterr().out
        run(shell, "rt(tf.ones([8, 8, 8]))\nrt(tf.ones([8, 8, 6]));")
        assert "retrace" not in capsys.readouterr().out
    finally:
        run(shell, "%load_ext tfgraph_lab")  # a later cell: monitoring stays off
    assert "monitoring" not in capsys.readouterr().out
    run(shell, "%tracewatch status")
    assert "monitoring is off" in capsys.readouterr().out
