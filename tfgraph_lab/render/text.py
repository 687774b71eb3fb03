"""The terminal rendering of a TraceReport (also the ``text/plain`` twin of the HTML)."""

from __future__ import annotations

import re
import textwrap
from collections import Counter
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING

from ..explain.fixes import code_name
from ..model.records import Event, FunctionSummary, GraphSummary
from ..model.view import ViewOptions
from ..model.vocab import ReasonCode, Scope, Via
from .compare import report_verdict
from .fix_plan import mark_shown, plan_lines
from .format import as_cached_calls, call_label, fmt_seconds, place, plural, runs_on, short_path, visible
from .reasons import reason_lines
from .sites import site_lines
from .xla import xla_headline, xla_lines, xla_row_note

if TYPE_CHECKING:
    from ..report.trace_report import TraceReport

__all__ = [
    "cost_phrase",
    "cost_text",
    "folded_text",
    "graphs_shown",
    "headline",
    "nested_note",
    "notices",
    "render_text",
    "tf_warnings_said",
    "tracing_time",
    "untimed_text",
    "watch_cost_text",
    "wrap_lines",
]

MAX_RETRACES_SHOWN = 8
MAX_GRAPHS_SHOWN = 8  # a longer cache shows its first 5 and last 2 rows; the rows between fold
LINE_CHARS = 200  # a line a person reads in seconds; longer text wraps under its own indent
_ADDRESS = re.compile(r"<(?:function|bound method) ([\w.<>]+) at 0x[0-9a-fA-F]+>")
_WARNED_ABOUT = re.compile(r"calls to (.+?) triggered tf\.function retracing")


def headline(report: TraceReport, view: ViewOptions) -> str:
    """``2 functions · 43 calls · 5 traces, 3 of them retraces · tracing took 61 ms ≈ …``: the
    totals of the functions ``view`` lists."""
    t = report.totals(view.selection)
    parts = [plural(t.functions, "function"), plural(t.calls, "call")]
    traces = plural(t.traces, "trace")
    if t.traces:
        traces += f", {t.retraces} of them {'retrace' if t.retraces == 1 else 'retraces'}"
    parts.append(traces)
    # Graphs TF built around a function are not its traces (TF counts them on none of the
    # user's objects), but building them took time: named for what they are.
    parts += [plural(n, f"{kind} graph") for kind, n in t.wrapper_graphs.items()]
    untimed = report.untimed_traces(selection=view.selection)
    if t.traces > untimed or t.wrapper_graphs:
        took = f"tracing took {fmt_seconds(t.trace_seconds)}"
        if t.mean_cached_seconds:
            took += " " + as_cached_calls(t.trace_seconds / t.mean_cached_seconds)
        parts.append(took)
    if untimed:
        parts.append(untimed_text(untimed))
    xla = xla_headline(report, view)
    if xla:
        parts.append(xla)
    return " · ".join(parts)


def notices(report: TraceReport) -> list[str]:
    """Warnings that change how the numbers must be read."""
    out = []
    if report.eager_calls:
        out.append(
            f"tf.config.run_functions_eagerly(True) was on: {plural(report.eager_calls, 'call')} "
            "ran eagerly and bypassed tracing, so these counts do not show what graph mode "
            "would do. Turn it off with tf.config.run_functions_eagerly(False)."
        )
    if report.summarised_calls:
        out.append(
            f"{report.summarised_calls:,} cached calls summarised: counts and times are exact; "
            "per-call detail is kept for the first calls and for every trace."
        )
    out += [f"budget not applied: {w}" for w in report.budget_warnings]
    if report.degraded:
        out.append(
            "count-only mode: this TensorFlow release moved internals tfgraph_lab relies on "
            f"({', '.join(report.degraded)}); trace counts are exact, reasons and graph hits are not."
        )
    return out


def untimed_text(untimed: int) -> str:
    """``1 trace begun before the watch not timed`` (another thread traced when it started)."""
    return f"{plural(untimed, 'trace')} begun before the watch not timed"


def tracing_time(report: TraceReport, fn: FunctionSummary) -> str:
    """A function's tracing time: ``not timed`` when its only traces began before the watch,
    ``≥ 4 ms`` when some of them did."""
    untimed = report.untimed_traces(fn) if fn.traces else 0
    if untimed and untimed >= fn.traces:
        return "not timed"
    return ("≥ " if untimed else "") + fmt_seconds(fn.trace_seconds)


def cost_phrase(event: Event, fn: FunctionSummary) -> str:
    """``cost 4.1 ms ≈ 22 cached calls``, or what is known of a trace begun before the watch."""
    if event.began_before_watch:
        return "began before the watch; cost not measured"
    inside = f", inside {event.inside}'s trace (in its cost too)" if event.inside else ""
    return f"cost {cost_text(event, fn)}{inside}"


def nested_note(report: TraceReport, shown: Sequence[FunctionSummary]) -> str:
    """``(train step traced inside train loop's trace: its tracing time is counted once, in
    train loop's)``: the rows whose tracing an outer row's time holds too, so the tracing column
    adds up to more than the total."""
    names = {f.key for f in shown if f.nested_trace_seconds}
    outer: dict[str, dict[str, None]] = {}
    for e in report.events:
        if e.inside and e.key in names and (e.traced or e.failed_trace):
            outer.setdefault(e.label, {})[e.inside] = None
    said = [
        f"{inner} traced inside {' and '.join(f'{o}' for o in outers)}'s trace"
        for inner, outers in outer.items()
    ]
    if not said:
        return ""
    return f"({'; '.join(said)}: its tracing time is in the outer's too, counted once in the total)"


def cost_text(event: Event, fn: FunctionSummary) -> str:
    """``4.1 ms ≈ 22 cached calls`` (or just the time when no cached call was seen)."""
    if event.began_before_watch:
        return "not measured (the trace began before the watch)"
    text = fmt_seconds(event.seconds)
    mean = fn.mean_cached_seconds
    if mean:
        text += " " + as_cached_calls(event.seconds / mean)
    return text


def _fit(name: str, width: int) -> str:
    """Cut long names from the left: the end (``….one_step_on_data``) tells them apart."""
    return name if len(name) <= width else "…" + name[-(width - 1) :]


def _where(fn: FunctionSummary, labels: Mapping[str, str]) -> str:
    return place(fn.filename, fn.firstlineno, labels)


def render_text(report: TraceReport, view: ViewOptions) -> str:
    """The report as terminal text, as ``view`` shows it; invisible characters in names shown
    (``visible``)."""
    return visible(_render_text(report, view))


def _render_text(report: TraceReport, view: ViewOptions) -> str:
    lines = ["tracewatch · " + headline(report, view)]
    lines += ["! " + n for n in notices(report)]
    shown = report.listed(view)
    hidden = len(report.functions) - len(shown)
    if not report.functions:
        lines.append("no tf.function was called while watching.")
        return "\n".join(lines)
    lines.append("")
    width = min(60, max([8, *(len(f.label) for f in shown)]))
    header = (
        f"{'function':<{width}} {'calls':>7} {'traces':>6} {'retraces':>8} {'tracing':>9} {'cached call':>11}"
    )
    lines.append(header)
    for fn in shown:
        mean = fn.mean_cached_seconds
        lines.append(
            f"{_fit(fn.label, width):<{width}} {fn.calls:>7} {fn.traces:>6} {fn.retraces:>8} "
            f"{tracing_time(report, fn):>9} {(fmt_seconds(mean) if mean else '-'):>11}"
            + ("  [framework]" if fn.framework else "")
            + (f"  {xla_row_note(fn)}" if fn.xla_compiles else "")
        )
    nested = nested_note(report, shown)
    if nested:
        lines.append(nested)
    if hidden:
        lines.append(
            f"({plural(hidden, 'TensorFlow/Keras function')} hidden; --all or show_framework=True lists them)"
        )
    if view.sort == "cost":
        lines += site_lines(report, view)
    by_fn: dict[tuple[str, str], list[Event]] = {}
    compiled: dict[tuple[str, str], list[Event]] = {}
    for e in report.events:
        if e.traced or e.failed_trace:
            by_fn.setdefault(e.key, []).append(e)
        if e.xla_compiled:
            compiled.setdefault(e.key, []).append(e)
    for fn in shown:
        lines.append("")
        lines.append(f"{fn.label}  ({_where(fn, report.labels)})")
        if fn.eager_calls:
            lines.append(f"  ran eagerly {plural(fn.eager_calls, 'time')}: no graph, no tracing")
        plan = report.plan(fn)
        lines += plan_lines(plan)  # the change that saves most, before the details
        if fn.graphs:
            lines.append("  graph cache:")
            shown_graphs, folded = graphs_shown(fn, view)
            head, middle, tail = long_cache_split(shown_graphs, view)
            lines += [_graph_line(i, g, fn) for i, g in head]
            if middle:
                lines.append(f"    … {plural(len(middle), 'more graph')} (--all lists them)")
            lines += [_graph_line(i, g, fn) for i, g in tail]
            if folded:
                lines.append(f"    … {folded_text(report, len(folded))} (--all lists them)")
        traced = by_fn.get(fn.key, [])
        explained = [
            e
            for e in traced
            if any(r.code not in (ReasonCode.FIRST_TRACE,) for r in e.reasons) or e.failed_trace
        ]
        if explained:
            lines.append("  traces:")
            said: set[tuple[str, str]] = set()
            mark_shown(plan, said)
            listed, folded_events = traces_shown(explained, view)
            for e in listed:
                lines += _event_lines(e, fn, said, report.labels)
            if folded_events:
                lines.append(f"    … {more_like_those(len(folded_events))} (--all lists them)")
        lines += xla_lines(fn, compiled.get(fn.key, []))
        for hint in fn.hints:
            lines.append(f"  hint (no retrace, but stale): {hint}")
        suggestion = fn.suggestion
        if suggestion and not plan.fixes:  # with a plan, the plan above is the suggestion
            lines.append("  suggested fix:")
            lines += ["    " + s for s in suggestion.splitlines()]
    watch_cost = watch_cost_text(report)
    if watch_cost:
        lines += ["", watch_cost]
    lines += tf_warning_lines(report.warnings)
    if report.compare_eager:
        lines.append("")
        graph_s = report.compare_eager.get("graph_seconds", 0.0)
        eager_s = report.compare_eager.get("eager_seconds", 0.0)
        eager = f"{fmt_seconds(eager_s)} eagerly" if eager_s else "no eager timing"
        lines.append(
            f"graph vs eager: the watched run took {fmt_seconds(graph_s)} with tf.function "
            f"(tracing included) and {eager}:"
        )
        lines.append(f"  {report_verdict(report)}")
    return "\n".join(wrap_lines(lines))


def graphs_shown(
    fn: FunctionSummary, view: ViewOptions
) -> tuple[list[tuple[int, GraphSummary]], list[tuple[int, GraphSummary]]]:
    """The graph cache rows to show and those to fold, numbered as TensorFlow's cache holds them:
    a graph traced before the watch that no call of it used says nothing about this cell (by
    the 8th cell of a notebook, most rows), so it folds unless ``view.earlier_graphs`` (``--all``)."""
    rows = list(enumerate(fn.graphs))
    if view.earlier_graphs:
        return rows, []
    shown = [(i, g) for i, g in rows if g.traced_in_watch or g.hits]
    return shown, [(i, g) for i, g in rows if not (g.traced_in_watch or g.hits)]


def traces_shown(events: list[Event], view: ViewOptions) -> tuple[list[Event], list[Event]]:
    """``(listed, folded)``: the first ``MAX_RETRACES_SHOWN`` traces, then every later one that
    gives a reason not listed yet (a ``training`` flag changed after 12 learning rates: the demo's
    trap), listed in order; the rest repeat reasons listed above and are folded, unless
    ``view.whole_caches`` (``--all``) asks for every one."""
    if view.whole_caches or len(events) <= MAX_RETRACES_SHOWN:
        return list(events), []
    listed: list[Event] = []
    folded: list[Event] = []
    seen: set[tuple[str, str]] = set()
    for e in events:
        keys = {(str(r.code), r.argument) for r in e.reasons if r.code != ReasonCode.FIRST_TRACE}
        if e.failed_trace:
            keys.add(("failed", e.error or ""))
        if len(listed) < MAX_RETRACES_SHOWN or not keys <= seen:
            listed.append(e)
            seen |= keys
        else:
            folded.append(e)
    return listed, folded


def more_like_those(n: int) -> str:
    """The fold's words: every folded trace repeats a reason listed above it."""
    return f"{n} more {'trace' if n == 1 else 'traces'}, each for a reason listed above"


def long_cache_split(
    rows: list[tuple[int, GraphSummary]], view: ViewOptions
) -> tuple[list[tuple[int, GraphSummary]], list[tuple[int, GraphSummary]], list[tuple[int, GraphSummary]]]:
    """``(head, middle, tail)``: a cache of more than ``MAX_GRAPHS_SHOWN`` rows shows its first 5
    and last 2 and folds the middle (the demo's trap holds 22 graphs, most differing only in a
    Python float), unless ``view.whole_caches`` (``--all``) asks for every row."""
    if view.whole_caches or len(rows) <= MAX_GRAPHS_SHOWN:
        return rows, [], []
    return rows[:5], rows[5:-2], rows[-2:]


def _graph_line(i: int, g: GraphSummary, fn: FunctionSummary) -> str:
    note = "".join(f"  ({n})" for n in graph_notes(g, fn))
    return f"    #{i}  {g.signature or '()'}  — {plural(g.hits, 'hit')}{note}"


def graph_notes(g: GraphSummary, fn: FunctionSummary) -> list[str]:
    """What tells a cache row apart beyond its signature: traced before the watch, how, by
    reduce_retracing, the first trace that created the variables (TF traced the same signature
    again, and calls run that graph), and which function object traced it when the row has
    several (a Keras recompile: four identical ``(None, 8)`` rows, two per object)."""
    notes = [] if g.traced_in_watch else ["traced before the watch"]
    if g.via not in (Via.CALL, Via.BEFORE):
        notes.append(f"via {g.via}")
    if g.generalised:
        notes.append("generalised by reduce_retracing")
    if g.scope == Scope.VARIABLE_CREATION and any(
        o is not g
        and o.scope != Scope.VARIABLE_CREATION
        and o.signature == g.signature
        and o.function_object == g.function_object
        for o in fn.graphs
    ):
        notes.append("the first trace, which created the variables; calls run the next")
    objects = list(dict.fromkeys(o.function_object for o in fn.graphs if o.function_object is not None))
    if len(objects) > 1 and g.function_object in objects:
        notes.insert(0, f"function object {objects.index(g.function_object) + 1} of {len(objects)}")
    return notes


def folded_text(report: TraceReport, n: int) -> str:
    """``13 graphs from earlier cells`` (in a notebook) or ``2 graphs traced before the watch``,
    none used here."""
    where = "from earlier cells" if report.labels else "traced before the watch"
    return f"{plural(n, 'graph')} {where}, not used here"


def watch_cost_text(report: TraceReport) -> str | None:
    """``the watch itself: 40 ms over 22 traces (in no cost above: those are TensorFlow's own)``,
    once per report; None when the watch spent no measurable time on a slow path."""
    if report.watch_seconds <= 0.0:
        return None
    traces = sum(f.traces for f in report.functions)
    over = f" over {plural(traces, 'trace')}" if traces else ""
    return (
        f"the watch itself: {fmt_seconds(report.watch_seconds)}{over} "
        "(in no cost above: those are TensorFlow's own tracing time)"
    )


# a call of the user's, rewritten: "train.py:42   f(tf.constant(lr))  # was: f(lr)" (the report's
# fix lines) or "f(tf.constant(lr))  # train.py:42, was: f(lr)" (the suggestion's)
_PASTED = re.compile(r"  # (?:was: |\S.*?, was: )")


def wrap_lines(lines: list[str], width: int = LINE_CHARS) -> list[str]:
    """Every line at most ``width`` characters: a longer one wraps at spaces, its continuation
    indented 4 more than it (code inside brackets stays valid Python; a comment stays one).
    A user's call rewritten by a fix (``…  # was: …``) stays whole: it is pasted, or found in
    the user's source, exactly as printed."""
    out = []
    for line in lines:
        if len(line) <= width or _PASTED.search(line):
            out.append(line)
            continue
        indent = " " * (len(line) - len(line.lstrip()))
        indent += "# " if line.lstrip().startswith("# ") else "    "  # a comment, not a row "#3"
        out += textwrap.wrap(
            line, width, subsequent_indent=indent, break_long_words=False, break_on_hyphens=False
        )
    return out


TF_WARNINGS_TITLE = "TensorFlow's own retracing warning, kept quiet while the watch explained it"


def tf_warnings_said(warnings: tuple[str, ...]) -> list[str]:
    """TensorFlow's retracing warnings, caught while the watch explained them: one per function
    (TF warns up to twice per function, "5 out of the last 5 calls to f …" then "6 out of the last
    6 …"), its first sentence as TF said it first, a function named as a person knows it (not
    ``<function … at 0x…>``), ``(said 2×)`` when TF said it again."""
    first: dict[str, str] = {}
    said: Counter[str] = Counter()
    for warning in warnings:
        if not warning:
            continue
        text = _ADDRESS.sub(r"\1", warning.splitlines()[0]).split(". ", 1)[0]
        about = _WARNED_ABOUT.search(text)
        key = about.group(1) if about is not None else text
        first.setdefault(key, text)
        said[key] += 1
    return [text + (f" (said {said[key]}×)" if said[key] > 1 else "") for key, text in first.items()]


def tf_warning_lines(warnings: tuple[str, ...]) -> list[str]:
    if not warnings:
        return []
    return ["", TF_WARNINGS_TITLE + ":", *("  " + w for w in tf_warnings_said(warnings))]


def _event_lines(
    e: Event, fn: FunctionSummary, said: set[tuple[str, str]], labels: Mapping[str, str]
) -> list[str]:
    """Lines for one traced event; why/fix are printed once per (code, argument)."""
    label = f"    {call_label(e)}"
    lines = []
    if e.failed_trace:
        lines.append(f"{label}  trace failed: {e.error}")
    lines += reason_lines(e.reasons, label, said, name=code_name(e.qualname))
    extra = [cost_phrase(e, fn) + (" (wasted)" if e.wasted else "")]
    if e.caller:
        extra.append(f"at {short_path(e.caller, labels)}")
    extra += runs_on(e.process, e.thread)
    lines.append("        " + " · ".join(extra))
    return lines
