"""Why a budget broke, as text an assertion or a test failure prints: per function over budget,
its count, each retrace (or XLA compilation) with its reason, the values the responsible argument
took one after another (``step: 1 → 2 → 3``), and the fix once.

Pure: reads a report's plain records. Used by ``tfgraph_lab.assert_max_traces`` and the pytest
plugin's ``max_traces`` / ``max_xla_compiles`` markers.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING

from ..explain.fixes import code_name
from ..model.records import Event, Reason
from .format import call_label
from .reasons import argument_change, reason_lines

if TYPE_CHECKING:
    from ..report.trace_report import TraceReport

__all__ = ["overrun_text", "responsible", "value_chains"]

Overrun = tuple[str, int, int]  # (label, count, budget): the function as the report shows it


def responsible(chains: list[str]) -> str:
    """``the argument responsible took, trace after trace: x: (2,) → (3,)`` (``arguments`` for
    two or more chains, as a short last batch changes x and y)."""
    who = "the argument responsible" if len(chains) == 1 else "the arguments responsible"
    return f"{who} took, trace after trace: " + "; ".join(chains)


def value_chains(reasons: Iterable[Reason]) -> list[str]:
    """``step: 1 → 2 → 3`` per argument that changed, in the order the retraces came: the
    first reason's ``before``, then every ``after`` (a value seen again is said again)."""
    chains: dict[str, list[str]] = {}
    for r in reasons:
        if not r.argument:
            continue
        chain = chains.setdefault(r.argument, [r.before])
        if chain[-1] != r.before:
            chain.append(r.before)
        chain.append(r.after)
    return [f"{arg}: {' → '.join(values)}" for arg, values in chains.items()]


def _where(event: Event) -> str:
    return f"{call_label(event)}" + (f" at {event.caller}" if event.caller else "")


def _function_lines(report: TraceReport, label: str, count: int, budget: int, xla: bool) -> list[str]:
    what = "compiled by XLA" if xla else "traced"
    head = f"{label} {what} {count}× (budget {budget})"
    if not xla:
        head += ", TensorFlow's own count"
    lines = [head + ":"]
    mine = [e for e in report.events if e.label == label]
    if xla:
        picked = [(e, e.xla_reasons) for e in mine if e.xla_compiled]
    else:
        picked = [(e, e.reasons) for e in mine if e.traced and e.retraces]
    said: set[tuple[str, str]] = set()
    name = code_name(mine[0].qualname if mine else label)  # the fix's code: a Python name, never a label
    changed: list[Reason] = []
    for event, reasons in picked:
        lines += ["  " + line for line in reason_lines(reasons, _where(event), said, argument_change, name)]
        changed += reasons
    if not picked:
        lines.append("  (no retrace among its traces: the first trace(s) alone exceed the budget)")
    chains = value_chains(changed)
    if chains:
        lines.append("  " + responsible(chains))
    return lines


def overrun_text(
    report: TraceReport, overruns: Sequence[Overrun], xla_overruns: Sequence[Overrun] = ()
) -> str:
    """The lines of every function over its trace budget, then over its XLA compile budget."""
    lines: list[str] = []
    for label, count, budget in overruns:
        lines += _function_lines(report, label, count, budget, xla=False)
    for label, count, budget in xla_overruns:
        lines += _function_lines(report, label, count, budget, xla=True)
    return "\n".join(lines)
