"""Words a person reads where the numbers show: what "estimated" means next to an XLA count,
call numbers that agree, places a person recognises."""

from __future__ import annotations

from tfgraph_lab.datatypes import Event, FunctionSummary, Reason
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
    )
    lines = xla_lines(fn, [slow])
    assert any(line.startswith("    call #3  (estimated from the call time)") for line in lines), lines
    note = next(line for line in lines if "note: estimated:" in line)
    assert "a call far slower than its graph's cached calls" in note
    assert "compile log was off" in note
