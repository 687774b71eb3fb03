"""A budget that names no function warns with the closest name seen (issue 22, item 5): in
watch(), the report, %%tracewatch and the CLI; ``--json ''`` and line-mode flags are usage errors."""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

tf = pytest.importorskip("tensorflow")
from _cli import run_cli  # noqa: E402

import tfgraph_lab  # noqa: E402
from tfgraph_lab.model.errors import UnknownBudgetName  # noqa: E402
from tfgraph_lab.watching.budget import TraceBudget  # noqa: E402


@pytest.mark.parametrize(
    ("name", "closest", "odd"),
    [("stpe", "step", False), ("ｓｔｅｐ", "step", True), ("st\u200bep", "step", True), ("zzz", None, False)],
)
def test_unknown_names_warn_with_the_closest_function(name: str, closest: str | None, odd: bool) -> None:
    functions: Any = [
        SimpleNamespace(qualname="train.<locals>.step", label="train.<locals>.step"),
        SimpleNamespace(qualname="evaluate", label="evaluate"),
    ]
    (text,) = TraceBudget.parse(f"{name}=1").unknown_names(functions)  # type: ignore[union-attr]
    assert "never applied" in text and repr(name) in text
    assert ("full-width or invisible" in text) == odd
    if closest:
        assert text.endswith(f"did you mean {closest!r}?")
    else:
        assert "functions seen: evaluate, step" in text
    assert TraceBudget.parse("step=1").unknown_names(functions) == []  # type: ignore[union-attr]


def test_watch_warns_and_the_report_says_it() -> None:
    @tf.function
    def step(x):
        return x + 1

    warned = pytest.warns(UnknownBudgetName, match="did you mean 'step'")
    with warned, tfgraph_lab.watch(max_traces="stpe=1") as w:
        step(tf.ones([1]))
        step(tf.ones([2]))  # 2 traces: over a budget of 1 that was never applied
    assert w.report.budget_warnings and "budget not applied" in str(w.report)
    again = tfgraph_lab.TraceReport.from_json(w.report.to_json())
    assert again.budget_warnings == w.report.budget_warnings


SHELL_SETUP = "import tensorflow as tf\n@tf.function\ndef step(x):\n    return x + 1\n"  # run once in the shared `shell` (conftest.py)


def test_magic_report_names_the_typo_and_line_mode_flags_are_usage_errors(shell: Any) -> None:
    result = shell.run_cell("%%tracewatch -q -v rep --max-traces stpe=1\nstep(tf.ones([3]))\n")
    assert result.success
    assert "did you mean 'step'" in shell.user_ns["rep"].budget_warnings[0]
    result = shell.run_cell("%tracewatch --max-traces 3")
    assert type(result.error_in_exec).__name__ == "UsageError"
    assert "flags work on %%tracewatch cells only" in str(result.error_in_exec)
    result = shell.run_cell("%%tracewatch -q --json ''\nstep(tf.ones([3]))\n")
    assert type(result.error_in_exec).__name__ == "UsageError"


@pytest.mark.slow
def test_cli_warns_of_a_typo_and_refuses_an_empty_json_path(tmp_path: Path) -> None:
    (tmp_path / "job.py").write_text(
        "import tensorflow as tf\n@tf.function\ndef step(x):\n    return x\nstep(tf.ones([1]))\n"
    )
    proc = run_cli("run", "--max-traces", "stpe=1", "job.py", cwd=tmp_path)
    assert proc.returncode == 0
    assert "tfgraph-lab: warning: --max-traces 'stpe'=1 names no function" in proc.stderr
    assert "did you mean 'step'?" in proc.stderr
    proc = run_cli("run", "--json", "", "job.py", cwd=tmp_path)
    assert proc.returncode != 0 and "--json needs a file path" in proc.stderr
