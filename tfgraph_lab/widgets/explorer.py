"""``ReportExplorer``: browse a TraceReport (from ``-o`` / ``-v``, or a JSON file) as a widget.

Filter by function, keep only calls that traced, pick a call to see the graph it ran and why it
traced. A view over the report's plain data: imports ipywidgets, never TensorFlow.
"""

from __future__ import annotations

import os
from html import escape
from typing import Any

import ipywidgets as W

from ..model.records import Event, FunctionSummary
from ..render.blocks import count_html, table_html
from ..render.fix_plan import plan_html
from ..render.format import call_label, fmt_seconds, runs_on, visible
from ..render.html import render_html
from ..render.reasons import failure_html, reasons_html
from ..render.style import ROOT, style_tag
from ..render.text import headline
from .parts import add_classes

__all__ = ["ReportExplorer", "explore"]

MAX_OPTIONS = 2_000  # calls listed at once; filter to see others
ALL = "(all functions)"


class ReportExplorer(W.VBox):  # type: ignore[misc]
    """``ReportExplorer(report)``: a function filter, the list of calls, and the picked call."""

    def __init__(self, report: Any, **kwargs: Any) -> None:
        from ..report.trace_report import TraceReport

        if isinstance(report, (str, os.PathLike)):
            from ..watching.outputs import read_report

            report = read_report(report)  # ValueError naming the first bad place of its JSON
        elif not isinstance(report, TraceReport):
            raise TypeError(
                f"ReportExplorer shows a TraceReport (w.report, or a saved report's path); got "
                f"{type(report).__name__} {report!r:.60}"
            )
        self.report = report
        names = [f.label for f in report.functions]
        # shown with invisible characters made visible; the value stays the real name
        self.function = W.Dropdown(
            options=[(ALL, ALL), *[(visible(n), n) for n in names]], value=ALL, description="function"
        )
        self.traced_only = W.Checkbox(value=False, description="only calls that traced", indent=False)
        self.calls = W.Select(options=[], rows=12, layout=W.Layout(width="380px"))
        self.detail = W.HTML()
        self.summary = W.HTML()
        add_classes(self, ["function", "traced_only", "calls", "detail", "summary"], prefix="tfgl-explorer-")
        self.function.observe(lambda _: self._safely(self._refill), names="value")
        self.traced_only.observe(lambda _: self._safely(self._refill), names="value")
        self.calls.observe(lambda _: self._safely(self._show), names="value")
        head = W.HTML(
            f"{style_tag()}<div class='tfgl-lab-title'>TraceReport explorer</div>"
            f"<div class='tfgl-lab-sub'>{escape(headline(report, report.view))}</div>"
        )
        super().__init__(
            [
                head,
                W.HBox([self.function, self.traced_only]),
                self.summary,
                W.HBox([self.calls, self.detail], layout=W.Layout(align_items="flex-start")),
            ],
            **kwargs,
        )
        self.add_class(ROOT)
        self.add_class("tfgl-lab")
        self.add_class("tfgl-explorer")
        self._refill()

    def _safely(self, callback: Any) -> None:
        """Run a widget callback; an error shows in the explorer's detail pane (an explorer bug
        must show, not vanish in the widget's log). KeyboardInterrupt goes on."""
        try:
            callback()
        except Exception as exc:
            self.detail.value = (
                "<div class='tfgl-reason-box tfgl-retrace'>The explorer could not show this: "
                f"{escape(type(exc).__name__)}: {escape(visible(str(exc)))}</div>"
            )

    def _functions(self) -> list[FunctionSummary]:
        name = self.function.value
        return [f for f in self.report.functions if name in (ALL, f.label)]

    def _refill(self) -> None:
        functions = self._functions()
        keys = {f.key for f in functions}
        events = [
            e
            for e in self.report.events
            if e.key in keys and (e.traced or e.failed_trace or not self.traced_only.value)
        ]
        self._events = events[:MAX_OPTIONS]
        options = [(visible(_label(e)), i) for i, e in enumerate(self._events)]
        self.calls.options = options
        more = f" (first {MAX_OPTIONS:,} listed)" if len(events) > MAX_OPTIONS else ""
        self.summary.value = (
            "<div class='tfgl-stats'>"
            + count_html(sum(f.calls for f in functions), "call", "calls")
            + "<div class='tfgl-trace-count'>"
            + count_html(sum(f.traces for f in functions), "trace", "traces", big=True)
            + "</div>"
            + count_html(sum(f.retraces for f in functions), "retrace", "retraces")
            + f"</div><div class='tfgl-muted'>{len(events):,} events{more}</div>"
            # each function's fixes, best first: the plan every view shows
            + "".join(plan_html(self.report.plan(f), named=True) for f in functions)
        )
        first_trace = next((i for i, e in enumerate(self._events) if e.traced), 0)
        self.calls.value = first_trace if self._events else None
        self._show()

    def _show(self) -> None:
        index = self.calls.value
        if index is None or not self._events:
            self.detail.value = "<div class='tfgl-muted'>no call to show</div>"
            return
        event = self._events[index]
        fn = next(
            (
                f
                for f in self.report.functions
                if f.key == event.key
            ),
            None,
        )
        self.detail.value = visible(_event_html(event, fn))

    def _repr_mimebundle_(self, **kwargs: Any) -> dict[str, Any]:
        """Beside the widget view, the report itself as text and HTML: static pages (untrusted
        notebooks, ``nbconvert``, nbviewer) show what the explorer was opened on."""
        data: dict[str, Any] = super()._repr_mimebundle_(**kwargs)
        note = "ReportExplorer (interactive with a running kernel); the report it shows:"
        data["text/plain"] = f"{note}\n{self.report}"
        data["text/html"] = (
            f"<div class='tfgl-explorer-snapshot'><p>{escape(note)}</p>{render_html(self.report, self.report.view)}</div>"
        )
        return data


def _label(e: Event) -> str:
    tag = "TRACED" if e.traced else ("FAILED" if e.failed_trace or e.error else "cached")
    codes = ",".join(r.code for r in e.reasons)
    return f"{e.label} {call_label(e)} · {tag} · {_time(e)}" + (f" · {codes}" if codes else "")


def _time(e: Event) -> str:
    """The event's time; a trace another thread began before the watch was not timed."""
    return "began before the watch; cost not measured" if e.began_before_watch else fmt_seconds(e.seconds)


def _event_html(e: Event, fn: FunctionSummary | None) -> str:
    rows = [
        ["function", f"<code>{escape(e.label)}</code>"],
        ["via", escape(e.via)],
        ["time", escape(_time(e))],
        ["traced", f"{e.traces} graph(s)" if e.traced else "no: a cached graph ran"],
    ]
    if e.caller:
        rows.append(["called at", f"<code>{escape(e.caller)}</code>"])
    rows += [[k, escape(v)] for k, v in (w.split(" ", 1) for w in runs_on(e.process, e.thread))]
    graph = (
        fn.graphs[e.graph] if fn is not None and e.graph is not None and e.graph < len(fn.graphs) else None
    )
    if graph is not None:
        rows.append(
            ["graph", f"#{e.graph} <code>{escape(graph.signature or '()')}</code> · {graph.hits:,} hits"]
        )
    elif e.signature:
        rows.append(["signature", f"<code>{escape(e.signature)}</code>"])
    parts = [table_html(["", ""], rows)]
    if e.error:
        parts.append(
            failure_html(e.error)
            if e.failed_trace
            else (f"<div class='tfgl-reason-box tfgl-error'>raised <code>{escape(e.error)}</code></div>")
        )
    parts.append(f"<div class='tfgl-reason'>{reasons_html(e.reasons)}</div>")
    return f"<div class='tfgl-explorer-event'>{''.join(parts)}</div>"


def explore(report: Any) -> ReportExplorer:
    """Open ``report`` (a TraceReport, or the path of a saved report) in a :class:`ReportExplorer`."""
    return ReportExplorer(report)
