"""A tried fix, before → after: text and HTML twins of one :class:`~tfgraph_lab.report.fix_trial.FixTrial`.

The figures side by side (traces, retraces, XLA compilations, total time, time per call with
its spread), whether the outputs are equal, then one sentence that says what the fix did —
including when it raised, changed the outputs or saved nothing. Pure: no TensorFlow, IPython
or ipywidgets; every user-derived string is escaped in the HTML.
"""

from __future__ import annotations

from html import escape
from typing import TYPE_CHECKING

from ..explain.fix_text import plan_summary
from .blocks import table_html
from .format import fmt_seconds, plural
from .style import style_tag
from .xla import xla_count

if TYPE_CHECKING:
    from ..report.fix_trial import FixTrial, RunFigures

__all__ = ["render_trial_html", "render_trial_text", "trial_rows", "verdict_sentence"]


def _per_call(r: RunFigures) -> str:
    mean = r.mean
    if mean is None:
        return "no calls"
    text = fmt_seconds(mean)
    if r.stdev is not None:
        text += f" ± {fmt_seconds(r.stdev)}"
    return text


def trial_rows(t: FixTrial) -> list[tuple[str, str, str]]:
    """``(figure, before, after)`` rows; ``after`` is ``—`` when the fix did not run."""
    b, a = t.before, t.after

    def pair(get: object) -> tuple[str, str]:
        assert callable(get)
        return str(get(b)), "—" if a is None else str(get(a))

    traces = pair(lambda r: r.traces)
    if a is None and t.plan is not None and t.plan.call and not t.applied:
        traces = (traces[0], f"{t.plan.graphs} (promised, not run)")
    rows = [
        ("traces", *traces),
        ("retraces", *pair(lambda r: r.retraces)),
        ("XLA compilations", *pair(lambda r: xla_count(r.xla_compiles, [r.xla_kind])[:-1])),
        ("total time", *pair(lambda r: fmt_seconds(r.seconds))),
        ("calls", *pair(lambda r: r.calls)),
        ("time per call (mean ± std. dev.)", *pair(_per_call)),
    ]
    return rows


def _summary(t: FixTrial) -> str:
    """What the fix changes, in one line (the report's short form, fix_text.plan_summary)."""
    if t.plan is None:
        return "the report's fix is advice, not a change a program can apply"
    return plan_summary(t.plan, t.name)


def _fix_code(t: FixTrial) -> str:
    if t.plan is None:
        return t.advice or "no change a program can apply"
    return t.plan.code(t.name)


def verdict_sentence(t: FixTrial) -> str:
    """What the fix did, in one sentence a learner can trust."""
    measure = "XLA compilations" if t.measure == "xla_compiles" else "traces"
    before = getattr(t.before, t.measure)
    promised = ""
    if t.plan is not None and t.measure == "traces" and t.plan.graphs:
        promised = f" (the fix promised {plural(t.plan.graphs, 'graph')})"
    v = t.verdict
    if v == "not-applied":
        if t.plan is not None and t.plan.call and not t.note:
            return (
                f"not applied: this fix changes the call sites, which only you can do — for the "
                f"calls this run made it promises {plural(t.plan.graphs, 'graph')}, instead of {before}"
            )
        return f"not applied: {t.note or 'no change a program can apply'}"
    if v == "not-tried":
        return f"the fix could not be tried: {t.untried}"
    if v == "fails":
        return f"the fix FAILS: with it, the code raised {t.error}"
    after = getattr(t.after, t.measure)
    change = f"{before} → {after}"
    if t.measure == "xla_compiles":  # "≥ 3 → 0" when the count is modelled (render/xla.py)
        change = " → ".join(xla_count(r.xla_compiles, [r.xla_kind])[:-1] for r in (t.before, t.after) if r)
    if v == "changes-outputs":
        return f"the fix CHANGES THE OUTPUTS ({t.outputs_detail}); {measure} {change}"
    if v == "no-fewer-traces":
        return f"the fix does NOT reduce {measure}: {change}{promised}"
    text = f"the fix works: {measure} {change}{promised}"
    if t.measure == "traces" and t.plan is not None and t.plan.graphs and after > t.plan.graphs:
        text += f" — more than promised: TensorFlow traced {after}"
    return text


def _outputs_line(t: FixTrial) -> str:
    words = {
        "equal": "equal",
        "differ": "DIFFER",
        "noisy": "cannot be compared",
        "not compared": "not compared",
    }[t.outputs]
    return words + (f" ({t.outputs_detail})" if t.outputs_detail and t.outputs != "differ" else "")


def _runs_line(t: FixTrial) -> str:
    if not t.reruns:
        return ""
    times = {1: "once", 2: "twice"}.get(len(t.reruns), f"{len(t.reruns)} times")
    return f"after the watched run, the code ran again {times}: " + "; ".join(t.reruns)


def render_trial_text(t: FixTrial) -> str:
    lines = [f"try-fix {t.shown_name}: {_summary(t)}", f"  {_fix_code(t)}"]
    runs = _runs_line(t)
    if runs:
        lines.append(f"  ({runs})")
    rows = trial_rows(t)
    width = max(len(r[0]) for r in rows)
    col = max(len(r[1]) for r in rows + [("", "before", "")])
    lines.append(f"  {'':{width}}  {'before':>{col}}  →  after")
    for label, before, after in rows:
        lines.append(f"  {label:{width}}  {before:>{col}}  →  {after}")
    if t.tried:
        lines.append(f"  tried: {t.tried}")
    if t.applied and t.after is not None:
        lines.append(f"  outputs: {_outputs_line(t)}")
    lines.append(f"  {verdict_sentence(t)}")
    if t.plan is not None and t.plan.trade:
        lines.append(f"  trade-off: {t.plan.trade}")
    if t.note and t.verdict != "not-applied":
        lines.append(f"  note: {t.note}")
    return "\n".join(lines)


# The verdict's box: green when the fix did what it promised, red when it did not.
_BOX = {"works": "tfgl-ok", "not-applied": "", "not-tried": ""}


def render_trial_html(t: FixTrial) -> str:
    rows = [[escape(label), escape(before), escape(after)] for label, before, after in trial_rows(t)]
    parts = [
        f"<div class='tfgl tfgl-report tfgl-trial tfgl-trial-{t.verdict}'>{style_tag()}",
        f"<div><b>try-fix</b> <code>{escape(t.shown_name)}</code>: {escape(_summary(t))}</div>",
        f"<div><code>{escape(_fix_code(t))}</code></div>",
    ]
    runs = _runs_line(t)
    if runs:
        parts.append(f"<div class='tfgl-muted'>{escape(runs)}</div>")
    parts.append(table_html(["", "before", "after"], rows, numeric=(1, 2)))
    if t.tried:
        parts.append(f"<div><b>tried:</b> {escape(t.tried)}</div>")
    if t.applied and t.after is not None:
        parts.append(f"<div><b>outputs:</b> {escape(_outputs_line(t))}</div>")
    box = _BOX.get(t.verdict, "tfgl-error")
    parts.append(
        f"<div class='tfgl-reason-box {box} tfgl-trial-verdict'><b>{escape(verdict_sentence(t))}</b></div>"
    )
    if t.plan is not None and t.plan.trade:
        parts.append(f"<div><b>trade-off:</b> {escape(t.plan.trade)}</div>")
    if t.note and t.verdict != "not-applied":
        parts.append(f"<div><b>note:</b> {escape(t.note)}</div>")
    parts.append("</div>")
    return "".join(parts)
