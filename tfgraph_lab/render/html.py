"""The HTML rendering of a TraceReport, self-contained (the shared stylesheet, no scripts).

It reads right where a sanitizer strips it down (JupyterLab's untrusted notebooks, GitHub's
notebook view drop ``<style>`` and ``<svg>``): numbers carry their words ("1 function · 3 calls"),
tables are real tables, the timeline is an ``<img>`` with a text alternative, and no text sits in
an element a sanitizer unwraps. Every user-derived string goes through :func:`html.escape`.
Stable CSS classes (``tfgl-…``) are a contract for tests and lesson authors; reason codes are
classes too (``tfgl-reason-shape-changed``).
"""

from __future__ import annotations

from collections.abc import Mapping
from html import escape
from typing import TYPE_CHECKING

from ..explain.fixes import code_name
from ..model.records import Event, FunctionSummary, GraphSummary
from ..model.view import ViewOptions
from ..model.vocab import ReasonCode
from .blocks import stat_html, stats_html
from .chart import chart_html
from .compare import report_verdict
from .fix_plan import mark_shown, plan_html
from .format import as_cached_calls, call_label, fmt_seconds, place, plural, runs_on, short_path, visible
from .reasons import failure_html, reasons_html
from .sites import sites_html
from .style import style_tag
from .text import (
    TF_WARNINGS_TITLE,
    cost_phrase,
    folded_text,
    graph_notes,
    graphs_shown,
    long_cache_split,
    more_like_those,
    nested_note,
    notices,
    tf_warnings_said,
    traces_shown,
    tracing_time,
    untimed_text,
    watch_cost_text,
)
from .timeline import timeline
from .xla import xla_headline, xla_html, xla_row_note

if TYPE_CHECKING:
    from ..report.trace_report import TraceReport

__all__ = ["render_html"]


def render_html(report: TraceReport, view: ViewOptions) -> str:
    """The report as HTML, as ``view`` shows it (the framework's functions folded into a
    ``<details>`` unless it lists them); invisible characters in names shown (``visible``)."""
    return visible(_render_html(report, view))


def _render_html(report: TraceReport, view: ViewOptions) -> str:
    parts = [f"<div class='tfgl tfgl-report'>{style_tag()}"]
    parts.append(_headline(report, view))
    parts += [f"<div class='tfgl-notice'>{escape(n)}</div>" for n in notices(report)]
    if not report.functions:
        parts.append("<p>No tf.function was called while watching.</p></div>")
        return "".join(parts)
    listed = report.listed(view)
    shown = {f.label for f in listed}
    points = timeline(report.events, shown, runs=report.runs)
    if points:
        parts.append(chart_html(points, "time per call"))
    parts.append(_function_table(report, listed))
    if view.sort == "cost":
        parts.append(sites_html(report, view))
    nested = nested_note(report, listed)
    if nested:
        parts.append(f"<p class='tfgl-muted tfgl-nested'>{escape(nested)}</p>")
    traced_events: dict[tuple[str, str], list[Event]] = {}
    for e in report.events:
        if e.traced or e.failed_trace or e.xla_compiled:
            traced_events.setdefault(e.key, []).append(e)
    for fn in listed:
        parts.append(_function_block(report, fn, traced_events.get(fn.key, []), view))
    hidden = [f for f in report.functions if f.framework and f not in listed]
    if hidden:
        parts.append(
            f"<details class='tfgl-framework'><summary>{escape(plural(len(hidden), 'TensorFlow/Keras function'))}"
            " (framework internals, folded)</summary>"
        )
        parts.append(_function_table(report, tuple(hidden)))
        for fn in hidden:
            parts.append(_function_block(report, fn, traced_events.get(fn.key, []), view))
        parts.append("</details>")
    watch_cost = watch_cost_text(report)
    if watch_cost:
        parts.append(f"<p class='tfgl-muted tfgl-watch-cost'>{escape(watch_cost)}</p>")
    if report.warnings:
        items = "".join(f"<li><code>{escape(w)}</code></li>" for w in tf_warnings_said(report.warnings))
        parts.append(f"<h4>{escape(TF_WARNINGS_TITLE)}</h4><ul class='tfgl-tf-warnings'>{items}</ul>")
    if report.compare_eager:
        graph_s = report.compare_eager.get("graph_seconds", 0.0)
        eager_s = report.compare_eager.get("eager_seconds", 0.0)
        parts.append(
            "<h4>Graph vs eager (the same cell, run twice)</h4>"
            "<table class='tfgl-compare'><tr><th>tf.function (graph), watched run</th><th>eager</th><th></th></tr>"
            f"<tr><td class='tfgl-num'>{fmt_seconds(graph_s)}</td>"
            f"<td class='tfgl-num'>{fmt_seconds(eager_s) if eager_s else '—'}</td>"
            f"<td>{escape(report_verdict(report))}"
            "</td></tr></table>"
        )
    parts.append("</div>")
    return "".join(parts)


def _headline(report: TraceReport, view: ViewOptions) -> str:
    """Stat boxes that read as a sentence without styles: ``1 function · 3 calls · 2 traces``
    (the totals of the functions ``view`` lists)."""
    t = report.totals(view.selection)
    retraces, functions = t.retraces, t.functions
    stats = [
        ("functions", f"{functions:,}", _noun(functions, "function"), ""),
        ("calls", f"{t.calls:,}", _noun(t.calls, "call"), ""),
        ("traces", f"{t.traces:,}", _noun(t.traces, "trace"), ""),
        ("retraces", f"{retraces:,}", _noun(retraces, "retrace"), " tfgl-bad" if retraces else ""),
        # graphs TF built around a function (not its traces; see TraceReport.wrapper_graphs)
        *(("wrappers", f"{n:,}", _noun(n, f"{kind} graph"), "") for kind, n in t.wrapper_graphs.items()),
        ("tracing", tracing_total(report, view), "tracing", ""),
    ]
    boxes = stats_html(
        *(
            stat_html(label, value, classes=f"tfgl-stat-{name}{bad}", value_class=f"tfgl-{name}-count")
            for name, value, label, bad in stats
        )
    )
    summary = ""
    mean = t.mean_cached_seconds
    untimed = report.untimed_traces(selection=view.selection)
    if (t.traces > untimed or t.wrapper_graphs) and mean:
        summary = (
            f"<div class='tfgl-summary'>tracing took {escape(fmt_seconds(t.trace_seconds))} "
            f"{as_cached_calls(t.trace_seconds / mean)}</div>"
        )
    if untimed:
        summary += f"<div class='tfgl-summary tfgl-untimed'>{escape(untimed_text(untimed))}</div>"
    xla = xla_headline(report, view)
    if xla:
        summary += f"<div class='tfgl-summary tfgl-xla-headline'>{escape(xla)}</div>"
    return f"<div class='tfgl-headline'>{boxes}</div>{summary}"


def tracing_total(report: TraceReport, view: ViewOptions) -> str:
    """The headline's tracing time; ``not timed`` when every trace began before the watch."""
    t = report.totals(view.selection)
    untimed = report.untimed_traces(selection=view.selection)
    if untimed and untimed >= t.traces and not t.wrapper_graphs:
        return "not timed"
    return ("≥ " if untimed else "") + fmt_seconds(t.trace_seconds)


def _noun(n: int, word: str) -> str:
    return word if n == 1 else word + "s"


def _function_table(report: TraceReport, functions: tuple[FunctionSummary, ...]) -> str:
    rows = []
    for fn in functions:
        mean = fn.mean_cached_seconds
        share = fn.trace_seconds / fn.call_seconds if fn.call_seconds else 0.0
        cls = " class='tfgl-retraced'" if fn.retraces else ""
        note = xla_row_note(fn)
        xla = f" <span class='tfgl-xla-count'>{escape(note)}</span>" if note else ""
        rows.append(
            f"<tr><td{cls}><code>{escape(fn.label)}</code>{xla}</td>"
            f"<td class='tfgl-num'>{fn.calls:,}</td><td class='tfgl-num'>{fn.traces}</td>"
            f"<td class='tfgl-num'>{fn.retraces}</td>"
            f"<td class='tfgl-num'>{escape(tracing_time(report, fn))}</td>"
            f"<td class='tfgl-num'>{share:.0%}</td>"
            f"<td class='tfgl-num'>{escape(fmt_seconds(mean)) if mean else '–'}</td>"
            f"<td class='tfgl-num'>{len(fn.graphs)}</td></tr>"
        )
    return (
        "<table class='tfgl-functions'><thead><tr><th>function</th><th class='tfgl-num'>calls</th>"
        "<th class='tfgl-num'>traces</th><th class='tfgl-num'>retraces</th>"
        "<th class='tfgl-num'>tracing</th><th class='tfgl-num'>share of time</th>"
        "<th class='tfgl-num'>cached call</th><th class='tfgl-num'>graphs</th></tr></thead><tbody>"
        + "".join(rows)
        + "</tbody></table>"
    )


def _cache_table(graphs: list[tuple[int, GraphSummary]], fn: FunctionSummary) -> str:
    rows = "".join(
        f"<tr><td class='tfgl-num'>#{i}</td><td><code>{escape(g.signature or '()')}</code></td>"
        f"<td class='tfgl-num'>{g.hits:,}</td><td class='tfgl-muted'>"
        f"{escape('; '.join(graph_notes(g, fn)))}</td></tr>"
        for i, g in graphs
    )
    return (
        "<table class='tfgl-cache-table'><thead><tr><th>graph</th><th>signature</th>"
        f"<th class='tfgl-num'>hits</th><th>note</th></tr></thead><tbody>{rows}</tbody></table>"
    )


def _function_block(report: TraceReport, fn: FunctionSummary, events: list[Event], view: ViewOptions) -> str:
    has = " tfgl-has-retraces" if fn.retraces else ""
    where = place(fn.filename, fn.firstlineno, report.labels)
    out = [
        f"<div class='tfgl-function{has}' data-qualname='{escape(fn.qualname, quote=True)}' data-label='{escape(fn.label, quote=True)}'>"
        f"<h4><code>{escape(fn.label)}</code> <span class='tfgl-muted'>{escape(where)}</span></h4>"
    ]
    if fn.eager_calls:
        out.append(
            f"<div class='tfgl-notice'>ran eagerly {plural(fn.eager_calls, 'time')}: no graph, no tracing</div>"
        )
    plan = report.plan(fn)
    out.append(plan_html(plan))  # the change that saves most, before the details
    if fn.graphs:
        shown_graphs, folded = graphs_shown(fn, view)
        head, middle, tail = long_cache_split(shown_graphs, view)
        out.append(_cache_table(head, fn))
        if middle:
            out.append(
                f"<details class='tfgl-folded-graphs'><summary>{plural(len(middle), 'more graph')}</summary>"
                f"{_cache_table(middle, fn)}</details>"
            )
        if tail:
            out.append(_cache_table(tail, fn))
        if folded:
            out.append(
                f"<details class='tfgl-folded-graphs'><summary>{escape(folded_text(report, len(folded)))}"
                f"</summary>{_cache_table(folded, fn)}</details>"
            )
    out.append(xla_html(fn, events))
    shown = [e for e in events if any(r.code != ReasonCode.FIRST_TRACE for r in e.reasons) or e.failed_trace]
    said: set[tuple[str, str]] = set()
    mark_shown(plan, said)
    listed, folded_events = traces_shown(shown, view)
    for e in listed:
        out.append(_event_html(e, fn, said, report.labels))
    if folded_events:
        out.append(
            f"<details class='tfgl-folded-graphs'><summary>{escape(more_like_those(len(folded_events)))}"
            f"</summary>{''.join(_event_html(e, fn, said, report.labels) for e in folded_events)}</details>"
        )
    for hint in fn.hints:
        out.append(
            f"<div class='tfgl-hint tfgl-notice'>hint — stale capture, no retrace: {escape(hint)}</div>"
        )
    suggestion = fn.suggestion
    if suggestion and not plan.fixes:  # with a plan, the plan above is the suggestion
        out.append(f"<div>suggested fix:</div><pre class='tfgl-suggestion'>{escape(suggestion)}</pre>")
    out.append("</div>")
    return "".join(out)


def _event_html(e: Event, fn: FunctionSummary, said: set[tuple[str, str]], labels: Mapping[str, str]) -> str:
    """One traced call; the message and fix of a (code, argument) pair are shown once."""
    label = call_label(e)
    meta = [cost_phrase(e, fn) + (" — wasted retrace" if e.wasted else "")]
    if e.caller:
        meta.append(f"at {short_path(e.caller, labels)}")
    meta += runs_on(e.process, e.thread)
    failed = failure_html(e.error or "", label) if e.failed_trace else ""
    return (
        failed
        + reasons_html(e.reasons, label, said, name=code_name(e.qualname))
        + f"<div class='tfgl-muted tfgl-event-meta'>{escape(' · '.join(meta))}</div>"
    )
