"""XLA compilations in the report: the count next to traces, the cost, and why each happened.

Shared by the text and HTML renderings (and, through the HTML, the widgets). A function under
XLA (``jit_compile=True``) compiles once per graph *and* concrete input shape, so a function
with one trace can still compile at every new batch size: the report says so plainly, gives the
compilations' time in cached calls, and the fixes that work for XLA. Reads plain data only.
"""

from __future__ import annotations

from collections.abc import Sequence
from html import escape
from typing import TYPE_CHECKING

from ..model.records import Event, FunctionSummary, Reason
from ..model.view import ViewOptions
from .format import as_cached_calls, call_label, fmt_seconds, plural
from .reasons import argument_change, reason_lines, reasons_html

if TYPE_CHECKING:
    from ..report.trace_report import TraceReport

__all__ = [
    "MODELLED_NOTE",
    "NONE_DIM_NOTE",
    "xla_count",
    "xla_headline",
    "xla_html",
    "xla_kind",
    "xla_lines",
    "xla_prefix",
    "xla_row_note",
]

MAX_COMPILES_SHOWN = 8

NONE_DIM_NOTE = (
    "a None dimension in input_signature stops the retrace, not the XLA compilation: XLA "
    "compiles each graph once per concrete shape"
)


MODELLED_NOTE = (
    "≥: modelled from what XLA's cache is keyed on (graph, device, concrete shapes), not read "
    "from TensorFlow, whose compile log was off: a value XLA needs as a compile-time constant, "
    "a call in a distribution strategy's replica thread or inside a graph traced before the "
    "watch compiles unseen, so the true count can be higher. For TensorFlow's exact count, "
    "turn its log on before TensorFlow loads: tfgraph-lab run, %load_ext tfgraph_lab before "
    "import tensorflow, or TF_CPP_VMODULE=device_compiler=2 TF_CPP_MIN_LOG_LEVEL=0"
)

_PREFIX = {"at-least": "≥ ", "about": "about "}
# Where an estimated compilation shows (the function's row, a call's label), what it means.
ESTIMATED = "estimated from the call time"
ESTIMATED_NOTE = (
    "estimated: counted from the call time, a call far slower than its graph's cached calls "
    "(or, when every call of the graph had sizes it had not run with, one of 50 ms or more), "
    "where Python could not see the shapes XLA compiled for (a function with None dimensions "
    "called inside this graph, or a graph traced before the watch) and TensorFlow's compile "
    "log was off"
)


def xla_prefix(kinds: Sequence[str]) -> str:
    """``""`` (exact, from TensorFlow's log), ``"≥ "`` (modelled) or ``"about "`` (some judged
    by call time): the least certain of ``kinds`` wins."""
    kind = "about" if "about" in kinds else "at-least" if "at-least" in kinds else ""
    return _PREFIX.get(kind, "")


def xla_count(count: int, kinds: Sequence[str]) -> str:
    """``4×`` (exact, from TensorFlow's log), ``≥ 4×`` (modelled) or ``about 4×``."""
    return f"{xla_prefix(kinds)}{count}×"


def xla_kind(fn: FunctionSummary) -> str:
    """How the count was obtained; a report saved before kinds were recorded was modelled."""
    return fn.xla_compiles_kind or ("about" if fn.xla_estimated else "at-least")


def xla_row_note(fn: FunctionSummary) -> str:
    """``compiled by XLA 4×`` (``≥ 4×`` modelled; ``about 4× (1 estimated from the call
    time)``) for the
    function table, else ``""``."""
    if not fn.xla_compiles:
        return ""
    note = f"compiled by XLA {xla_count(fn.xla_compiles, [xla_kind(fn)])}"
    if fn.xla_estimated:
        note += f" ({fn.xla_estimated} {ESTIMATED})"
    return note


def xla_headline(report: TraceReport, view: ViewOptions) -> str | None:
    """``XLA compiled 4×, 3 without a retrace: +0.64 s ≈ 1,150 cached calls`` over every
    function (Keras's own XLA steps are framework functions, hidden by default, but their
    compilations count). A call that traced and compiled is in the tracing time already."""
    compiles = sum(f.xla_compiles for f in report.functions)
    if not compiles:
        return None
    text = f"XLA compiled {xla_count(compiles, [xla_kind(f) for f in report.functions if f.xla_compiles])}"
    seconds = sum(f.xla_seconds for f in report.functions)
    if seconds:
        text += f", +{fmt_seconds(seconds)} beyond tracing"
        cost = sum(f.xla_cost_calls or 0.0 for f in report.functions)
        if cost:
            text += " " + as_cached_calls(cost)
    hidden = [f for f in report.functions if f.xla_compiles and f not in view.listed(report.functions)]
    if hidden:
        text += f" (of them {sum(f.xla_compiles for f in hidden)} in TensorFlow/Keras functions)"
    return text


def _summary(fn: FunctionSummary, events: Sequence[Event]) -> str:
    """``compiled 4×; the calls that compiled without a retrace took 0.54 s ≈ 1,100
    cached calls`` (for a function whose calls ran another's XLA graph: those calls)."""
    text = xla_row_note(fn).replace("compiled by XLA", "compiled")
    if text and fn.xla_compiles_kind == "exact":
        text += " (TensorFlow's compile log)"
    if not text:
        compiled = [e for e in events if e.xla_compiled]
        text = f"{plural(len(compiled), 'call')} compiled an XLA function called inside this graph"
    if fn.xla_seconds:
        text += f"; the compilations without a retrace took {fmt_seconds(fn.xla_seconds)}"
        if fn.xla_cost_calls:
            text += " " + as_cached_calls(fn.xla_cost_calls)
    return text


def _notes(fn: FunctionSummary) -> list[str]:
    notes = []
    if fn.xla_compiles > 1 and fn.input_signature and "None" in fn.input_signature:
        notes.append(NONE_DIM_NOTE)
    if fn.xla_compiles and xla_kind(fn) != "exact":
        notes.append(MODELLED_NOTE if xla_kind(fn) == "at-least" else "about: " + MODELLED_NOTE[3:])
    if fn.xla_estimated:
        notes.append(ESTIMATED_NOTE)
    return notes


def _compile_events(events: Sequence[Event]) -> list[Event]:
    return [e for e in events if e.xla_compiled]


def xla_lines(fn: FunctionSummary, events: Sequence[Event]) -> list[str]:
    """The text block of one function: count, cost, each compilation with why and fix."""
    compiled = _compile_events(events)
    if not fn.xla_compiles and not compiled:
        return []
    lines = ["  XLA: " + _summary(fn, events)]
    lines += ["    note: " + n for n in _notes(fn)]
    said: set[tuple[str, str]] = set()
    for e in compiled[:MAX_COMPILES_SHOWN]:
        label = f"    {call_label(e)}" + (f"  ({ESTIMATED})" if e.xla_estimated else "")
        lines += reason_lines(e.xla_reasons, label, said, _compile_change)
        lines.append(f"        cost {fmt_seconds(e.seconds)}")
    if len(compiled) > MAX_COMPILES_SHOWN:
        lines.append(
            f"    … {plural(len(compiled) - MAX_COMPILES_SHOWN, 'more compilation')} (each in report.events and in a --json report)"
        )
    return lines


def _compile_change(reason: Reason) -> str:
    """A compilation's change; a reason with no ``before`` (a first shape) names the argument only."""
    return argument_change(reason) if reason.before else reason.argument


def xla_html(fn: FunctionSummary, events: Sequence[Event]) -> str:
    """The HTML twin of :func:`xla_lines` (``tfgl-xla``; reason boxes as for retraces, without
    the retrace class: a compilation is not a retrace)."""
    compiled = _compile_events(events)
    if not fn.xla_compiles and not compiled:
        return ""
    out = [
        f"<div class='tfgl-xla'><div class='tfgl-xla-summary'><b>XLA:</b> {escape(_summary(fn, events))}</div>"
    ]
    out += [f"<div class='tfgl-notice tfgl-xla-note'>{escape(n)}</div>" for n in _notes(fn)]
    said: set[tuple[str, str]] = set()
    for e in compiled[:MAX_COMPILES_SHOWN]:
        label = call_label(e) + (f" ({ESTIMATED})" if e.xla_estimated else "")
        out.append(reasons_html(e.xla_reasons, label, said, retrace=False))
        out.append(f"<div class='tfgl-muted tfgl-event-meta'>cost {escape(fmt_seconds(e.seconds))}</div>")
    if len(compiled) > MAX_COMPILES_SHOWN:
        more = plural(len(compiled) - MAX_COMPILES_SHOWN, "more compilation")
        out.append(
            f"<p class='tfgl-muted'>… {escape(more)} (each in report.events and in a --json report)</p>"
        )
    out.append("</div>")
    return "".join(out)
