"""The HTML rendering of a TraceReport, self-contained (inline CSS and SVG, no scripts).

Every user-derived string goes through :func:`html.escape`. Stable CSS classes (``tfgl-…``)
are a contract for tests and lesson authors; reason codes are classes too
(``tfgl-reason-shape-changed``).
"""

from __future__ import annotations

from html import escape
from typing import TYPE_CHECKING

from ..datatypes import Event, FunctionSummary
from .format import fmt_seconds, plural, short_path
from .text import MAX_RETRACES_SHOWN, _ratio_text, cost_text, headline, notices
from .timeline import TimelinePoint, timeline

if TYPE_CHECKING:
    from ..report import TraceReport

__all__ = ["render_html"]

_CSS = """
.tfgl-report{font-family:system-ui,-apple-system,'Segoe UI',sans-serif;font-size:13px;
 color:#1f2328;max-width:980px;line-height:1.4}
.tfgl-report h4{margin:14px 0 4px;font-size:14px}
.tfgl-report code,.tfgl-report pre{font-family:ui-monospace,SFMono-Regular,Menlo,monospace;font-size:12px}
.tfgl-headline{display:flex;gap:10px;flex-wrap:wrap;margin:4px 0 8px}
.tfgl-stat{background:#f6f8fa;border:1px solid #d0d7de;border-radius:6px;padding:6px 12px;min-width:80px}
.tfgl-stat b{display:block;font-size:20px}
.tfgl-stat.tfgl-bad{background:#fff1e5;border-color:#fb8f44}
.tfgl-stat.tfgl-bad b{color:#bc4c00}
.tfgl-summary{color:#57606a;margin-bottom:6px}
.tfgl-notice{background:#fff8c5;border:1px solid #d4a72c;border-radius:6px;padding:6px 10px;margin:6px 0}
.tfgl-report table{border-collapse:collapse;margin:4px 0}
/* Doubled class: beats JupyterLab 4's `:not(.jp-RenderedMarkdown).jp-RenderedHTMLCommon td`
   (specificity 0,2,1), which right-aligns every cell of rich output. */
.tfgl-report.tfgl-report table th,.tfgl-report.tfgl-report table td{padding:3px 10px;border-bottom:1px solid #d8dee4;
 text-align:left;vertical-align:top;background:none}
.tfgl-report.tfgl-report table td.tfgl-num,.tfgl-report.tfgl-report table th.tfgl-num{text-align:right;
 font-variant-numeric:tabular-nums}
.tfgl-retraced{color:#bc4c00;font-weight:600}
.tfgl-function{border-left:3px solid #d0d7de;padding:2px 0 2px 10px;margin:10px 0}
.tfgl-function.tfgl-has-retraces{border-left-color:#fb8f44}
.tfgl-reason{margin:6px 0;padding:6px 8px;background:#f6f8fa;border-radius:6px}
.tfgl-code{display:inline-block;font-weight:600;border-radius:10px;padding:0 8px;background:#ddf4ff;color:#0969da}
.tfgl-reason-first-trace .tfgl-code,.tfgl-reason-variable-creation .tfgl-code{background:#eaeef2;color:#57606a}
.tfgl-fix{color:#1a7f37}
.tfgl-muted{color:#57606a}
.tfgl-suggestion{background:#dafbe1;border:1px solid #4ac26b;border-radius:6px;padding:6px 10px;margin:4px 0;white-space:pre-wrap}
.tfgl-timeline{margin:6px 0}
"""


def render_html(report: TraceReport) -> str:
    parts = [f"<div class='tfgl-report'><style>{_CSS}</style>"]
    parts.append(_headline(report))
    parts += [f"<div class='tfgl-notice'>{escape(n)}</div>" for n in notices(report)]
    if not report.functions:
        parts.append("<p>No tf.function was called while watching.</p></div>")
        return "".join(parts)
    shown = {f.qualname for f in report.shown_functions}
    parts.append(_timeline_svg(timeline(report.events, shown, runs=report.runs)))
    parts.append(_function_table(report.shown_functions))
    traced_events: dict[tuple[str, str], list[Event]] = {}
    for e in report.events:
        if e.traced or e.failed_trace:
            traced_events.setdefault((e.qualname, e.filename), []).append(e)
    for fn in report.shown_functions:
        parts.append(_function_block(report, fn, traced_events.get((fn.qualname, fn.filename), [])))
    hidden = [f for f in report.functions if f.framework and f not in report.shown_functions]
    if hidden:
        parts.append(
            f"<details class='tfgl-framework'><summary>{escape(plural(len(hidden), 'TensorFlow/Keras function'))}"
            " (framework internals, folded)</summary>"
        )
        parts.append(_function_table(tuple(hidden)))
        for fn in hidden:
            parts.append(_function_block(report, fn, traced_events.get((fn.qualname, fn.filename), [])))
        parts.append("</details>")
    if report.warnings:
        items = "".join(f"<li><code>{escape(w.splitlines()[0][:300])}</code></li>" for w in report.warnings)
        parts.append(f"<h4>TensorFlow's own warning (captured)</h4><ul class='tfgl-tf-warnings'>{items}</ul>")
    if report.compare_eager:
        graph_s = report.compare_eager.get("graph_seconds", 0.0)
        eager_s = report.compare_eager.get("eager_seconds", 0.0)
        parts.append(
            "<h4>Graph vs eager (the same cell, run twice)</h4>"
            "<table class='tfgl-compare'><tr><th>tf.function (graph)</th><th>eager</th><th></th></tr>"
            f"<tr><td class='tfgl-num'>{fmt_seconds(graph_s)}</td>"
            f"<td class='tfgl-num'>{fmt_seconds(eager_s)}</td>"
            f"<td>{escape(_ratio_text(graph_s, eager_s))}</td></tr></table>"
        )
    parts.append("</div>")
    return "".join(parts)


def _headline(report: TraceReport) -> str:
    stats = [
        ("functions", len(report.shown_functions), False),
        ("calls", report.calls, False),
        ("traces", report.traces, False),
        ("retraces", report.retraces, report.retraces > 0),
    ]
    boxes = "".join(
        f"<div class='tfgl-stat tfgl-stat-{name}{' tfgl-bad' if bad else ''}'><b class='tfgl-{name}-count'>"
        f"{value:,}</b>{name}</div>"
        for name, value, bad in stats
    )
    boxes += (
        "<div class='tfgl-stat tfgl-stat-tracing'><b>"
        f"{escape(fmt_seconds(report.trace_seconds))}</b>tracing</div>"
    )
    return (
        f"<div class='tfgl-headline'>{boxes}</div><div class='tfgl-summary'>{escape(headline(report))}</div>"
    )


def _function_table(functions: tuple[FunctionSummary, ...]) -> str:
    rows = []
    for fn in functions:
        mean = fn.mean_cached_seconds
        share = fn.trace_seconds / fn.call_seconds if fn.call_seconds else 0.0
        cls = " class='tfgl-retraced'" if fn.retraces else ""
        rows.append(
            f"<tr><td{cls}><code>{escape(fn.qualname)}</code></td>"
            f"<td class='tfgl-num'>{fn.calls:,}</td><td class='tfgl-num'>{fn.traces}</td>"
            f"<td class='tfgl-num'>{fn.retraces}</td>"
            f"<td class='tfgl-num'>{escape(fmt_seconds(fn.trace_seconds))}</td>"
            f"<td class='tfgl-num'>{share:.0%}</td>"
            f"<td class='tfgl-num'>{escape(fmt_seconds(mean)) if mean else '–'}</td>"
            f"<td class='tfgl-num'>{len(fn.graphs)}</td></tr>"
        )
    return (
        "<table class='tfgl-functions'><tr><th>function</th><th class='tfgl-num'>calls</th>"
        "<th class='tfgl-num'>traces</th><th class='tfgl-num'>retraces</th>"
        "<th class='tfgl-num'>tracing</th><th class='tfgl-num'>share of time</th>"
        "<th class='tfgl-num'>cached call</th><th class='tfgl-num'>graphs</th></tr>"
        + "".join(rows)
        + "</table>"
    )


def _function_block(report: TraceReport, fn: FunctionSummary, events: list[Event]) -> str:
    has = " tfgl-has-retraces" if fn.retraces else ""
    where = short_path(fn.filename) + (f":{fn.firstlineno}" if fn.firstlineno else "")
    out = [
        f"<div class='tfgl-function{has}' data-qualname='{escape(fn.qualname, quote=True)}'>"
        f"<h4><code>{escape(fn.qualname)}</code> <span class='tfgl-muted'>{escape(where)}</span></h4>"
    ]
    if fn.eager_calls:
        out.append(
            f"<div class='tfgl-notice'>ran eagerly {plural(fn.eager_calls, 'time')}: no graph, no tracing</div>"
        )
    if fn.graphs:
        rows = "".join(
            f"<tr><td class='tfgl-num'>#{i}</td><td><code>{escape(g.signature or '()')}</code></td>"
            f"<td class='tfgl-num'>{g.hits:,}</td><td class='tfgl-muted'>"
            f"{'' if g.traced_in_watch else 'traced before the watch'}"
            f"{escape(' via ' + g.via) if g.via not in ('call', 'before') else ''}"
            f"{' generalised by reduce_retracing' if g.generalised else ''}</td></tr>"
            for i, g in enumerate(fn.graphs)
        )
        out.append(
            "<table class='tfgl-cache-table'><tr><th>graph</th><th>signature</th>"
            f"<th class='tfgl-num'>hits</th><th></th></tr>{rows}</table>"
        )
    shown = [e for e in events if any(r.code != "first-trace" for r in e.reasons) or e.failed_trace]
    said: set[tuple[str, str]] = set()
    for e in shown[:MAX_RETRACES_SHOWN]:
        out.append(_event_html(e, fn, said))
    if len(shown) > MAX_RETRACES_SHOWN:
        out.append(
            f"<p class='tfgl-muted'>… {len(shown) - MAX_RETRACES_SHOWN} more traces (see the JSON)</p>"
        )
    for hint in fn.hints:
        out.append(
            f"<div class='tfgl-hint tfgl-notice'>hint — stale capture, no retrace: {escape(hint)}</div>"
        )
    suggestion = fn.suggestion
    if suggestion:
        out.append(
            f"<div class='tfgl-muted'>suggested fix:</div><pre class='tfgl-suggestion'>{escape(suggestion)}</pre>"
        )
    out.append("</div>")
    return "".join(out)


def _event_html(e: Event, fn: FunctionSummary, said: set[tuple[str, str]]) -> str:
    """One traced call; the message and fix of a (code, argument) pair are shown once."""
    label = f"call #{e.index + 1}" if e.via == "call" else e.via
    meta = [f"cost {cost_text(e, fn)}" + (" — wasted retrace" if e.wasted else "")]
    if e.caller:
        meta.append(f"at {short_path(e.caller)}")
    if e.thread:
        meta.append(f"thread {e.thread}")
    blocks = []
    if e.failed_trace:
        blocks.append(
            f"<div class='tfgl-reason tfgl-reason-failed'><span class='tfgl-code'>trace failed</span> "
            f"{escape(e.error or '')}</div>"
        )
    for r in e.reasons:
        change = (
            f" <code>{escape(r.argument)}</code>: <code>{escape(r.before)}</code> → <code>{escape(r.after)}</code>"
            if r.argument
            else ""
        )
        first = (r.code, r.argument) not in said
        said.add((r.code, r.argument))
        fix = f"<div class='tfgl-fix'>fix: {escape(r.fix)}</div>" if r.fix and first else ""
        why = f"<div>{escape(r.message)}</div>" if first else ""
        blocks.append(
            f"<div class='tfgl-reason tfgl-reason-{escape(r.code, quote=True)}'>"
            f"<span class='tfgl-muted'>{escape(label)}</span> <span class='tfgl-code'>{escape(r.code)}</span>{change}"
            f"{why}{fix}</div>"
        )
    blocks.append(f"<div class='tfgl-muted'>{escape(' · '.join(meta))}</div>")
    return "".join(blocks)


def _timeline_svg(points: list[TimelinePoint], width: int = 640, height: int = 90) -> str:
    if not points:
        return ""
    top = max(p.seconds for p in points) or 1e-9
    bar = width / len(points)
    bars = []
    for i, p in enumerate(points):
        h = max(1.5, (p.seconds / top) * (height - 14))
        x = i * bar
        color = "#e16f24" if p.traced else "#8c959f"
        calls = f"call {p.first}" if p.first == p.last else f"calls {p.first}–{p.last}"
        title = f"{calls}: {fmt_seconds(p.seconds)}{' (traced)' if p.traced else ''} · {p.qualname}"
        bars.append(
            f"<rect x='{x:.1f}' y='{height - h:.1f}' width='{max(bar - 0.6, 0.6):.1f}' "
            f"height='{h:.1f}' fill='{color}'><title>{escape(title)}</title></rect>"
        )
    n_calls = points[-1].last + 1
    return (
        "<div class='tfgl-timeline'><div class='tfgl-muted'>time per call "
        f"(<span style='color:#e16f24'>■</span> traced, <span style='color:#8c959f'>■</span> cached; "
        f"{plural(n_calls, 'call')}, tallest {escape(fmt_seconds(top))})</div>"
        f"<svg class='tfgl-timeline-chart' width='{width}' height='{height}' viewBox='0 0 {width} {height}' "
        "role='img' aria-label='time per call'>"
        + "".join(bars)
        + f"<line x1='0' y1='{height}' x2='{width}' y2='{height}' stroke='#d0d7de'/></svg></div>"
    )
