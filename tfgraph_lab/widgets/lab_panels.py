"""The HTML of ``RetraceLab``'s display panels, drawn from a :class:`~.session.LabState`.

Pure functions from the lab's state to HTML strings: the status line (verdict, note, what the
last action did, TensorFlow's error with its fix), the reasons of the last trace or XLA
compilation, and the graph-cache table. ``RetraceLab.refresh`` puts them into its widgets.
Imports neither ipywidgets nor TensorFlow.
"""

from __future__ import annotations

from html import escape

from ..explain.failures import VARIABLE_PER_TRACE, WRONG_INPUTS, failure_kind
from ..render.blocks import stat_html, table_html
from ..render.format import plural
from ..render.reasons import reasons_html
from ..render.xla import xla_count, xla_prefix
from .predict import Prediction
from .session import FixApplied, LabSession, LabState

__all__ = ["cache_html", "fix_hint_html", "fixed_html", "reason_html", "status_html", "xla_count_html"]

_XLA_KIND_NOTE = {
    "≥ ": "at least: modelled, TensorFlow's compile log was not read",
    "about ": "about: modelled, some judged by call time",
}


def xla_count_html(state: LabState) -> str:
    """The XLA count as the report gives it: ``3`` from TensorFlow's compile log, ``≥ 3`` when
    modelled (the true count can be higher), ``about 3`` when some were judged by call time."""
    prefix = xla_prefix(state.xla_kinds) if state.xla_compiles else ""
    word = "XLA compilation" if state.xla_compiles == 1 else "XLA compilations"
    return stat_html(word, f"{prefix}{state.xla_compiles:,}", _XLA_KIND_NOTE.get(prefix, ""))


_FIXES = {
    VARIABLE_PER_TRACE: (
        "<div class='tfgl-fix'>fix: create the tf.Variable once, outside the function "
        "(e.g. in <code>__init__</code> of a <code>tf.Module</code>); untick the anti-pattern "
        "to see it work.</div>"
    ),
    WRONG_INPUTS: (
        "<div class='tfgl-fix'>fix: an input_signature fixes dtypes and ranks: pass matching "
        "tensors, or change the signature (Reset cache to rebuild it from the settings).</div>"
    ),
}


def status_html(state: LabState, verdict: Prediction | None, jit_compile: bool) -> str:
    """The verdict of a guess, the session's note, what the last action did and any TF error."""
    parts = []
    if verdict is not None:
        cls = "tfgl-verdict-right" if verdict.correct else "tfgl-verdict-miss"
        box = "tfgl-ok" if verdict.correct else "tfgl-error"
        parts.append(
            f"<div class='tfgl-reason-box {box} tfgl-verdict'><span class='{cls}'>"
            f"{'✓' if verdict.correct else '✗'}</span> {escape(verdict.explanation)}</div>"
        )
    if state.note:
        parts.append(f"<div class='tfgl-reason-box'>{escape(state.note)}</div>")
    if state.fixed is not None:
        parts.append(fixed_html(state.fixed))
    action = state.last_action
    if action is not None:
        what = {"call": "call", "fix": f"replay of {plural(action.calls, 'call')}"}.get(
            action.kind, f"loop of {plural(action.calls, 'call')}"
        )
        if action.traced:
            text = f"The {what} traced {plural(action.traces, 'new graph')}."
        elif action.error:  # the call raised before a graph ran (e.g. the trace failed)
            text = f"The {what} raised: no graph was added."
        else:
            text = f"The {what} reused the cached graph: no trace."
        if jit_compile:
            text += (
                f" XLA compiled {xla_count(action.xla_compiles, [action.xla_kind])} (once per graph"
                " and concrete shape)."
                if action.xla_compiles
                else " XLA reused its compiled code."
            )
        parts.append(f"<div class='tfgl-muted tfgl-action'>{escape(text)}</div>")
    if state.last_error:
        fix = _FIXES.get(failure_kind(state.last_error) or "", "")
        parts.append(
            f"<div class='tfgl-reason-box tfgl-error'><b>TensorFlow raised</b> "
            f"<code>{escape(state.last_error)}</code>{fix}</div>"
        )
    return "".join(parts)


def reason_html(state: LabState) -> str:
    """Why the last trace happened, and why XLA compiled on a later call without a trace."""
    compiled = ""
    if state.last_compile and (state.last_compile_call or 0) > (state.last_trace_call or 0):
        label = f"call {state.last_compile_call} did not trace, but XLA compiled:"
        compiled = reasons_html(state.last_compile, label, retrace=False)
    if not state.last_trace:
        return compiled or "<div class='tfgl-muted'>No trace yet: press <b>Call once</b>.</div>"
    return reasons_html(state.last_trace, f"why call {state.last_trace_call} traced:") + compiled


def cache_html(state: LabState) -> str:
    """The graph cache, one row a graph: the newly traced one and the ones the last action hit marked."""
    if not state.graphs:
        return "<div class='tfgl-muted'>empty: the next call will trace</div>"
    hit = set(state.last_action.graphs_hit) if state.last_action else set()
    new_at = state.last_trace_call
    rows, classes = [], []
    for i, row in enumerate(state.graphs):
        rows.append(
            [
                f"#{i}",
                f"<code>{escape(row.signature or '()')}</code>",
                f"{row.hits:,}",
                str(row.traced_at) if row.traced_at else "–",
            ]
        )
        cls = (
            "tfgl-new"
            if row.traced_at and row.traced_at == new_at and state.last_action and state.last_action.traced
            else ("tfgl-hit" if i in hit else "")
        )
        classes.append(f"tfgl-graph-row {cls}".strip())
    return table_html(["graph", "signature", "hits", "traced at call"], rows, classes, numeric=(2, 3))


def fix_hint_html(session: LabSession, predicting: bool) -> str:
    """Next to «Apply the fix»: the change it would make, or why there is none to make."""
    plan = session.suggested_fix()
    if plan is None:
        why = (
            "applied"
            if session.fix
            else "none yet: it appears after a retrace whose fix is a decorator change"
        )
        return f"<span class='tfgl-muted'>decorator fix: {escape(why)}</span>"
    ask = " — first say how many graphs the cache will hold" if predicting else ""
    return (
        f"<span>applies <code>{escape(plan.code(session.scenario.name))}</code> and replays the "
        f"{plural(len(session.history), 'call')} so far{escape(ask)}</span>"
    )


def fixed_html(fixed: FixApplied) -> str:
    """What «Apply the fix» did to the graph cache, said honestly when it did not shrink it."""
    b, a = fixed.graphs_before, fixed.graphs_after
    calls = plural(fixed.calls, "call")
    if fixed.error:
        text = f"The fix raised while replaying the {calls}: TensorFlow said {fixed.error}"
        return f"<div class='tfgl-reason-box tfgl-error tfgl-fixed'>{escape(text)}</div>"
    change = f"{plural(b, 'graph')} → {plural(a, 'graph')} for the same {calls}"
    if a < b:
        text, box = f"The fix shrank the graph cache: {change} (TensorFlow's own count).", "tfgl-ok"
    else:
        text, box = f"The fix did not shrink the graph cache: {change}.", "tfgl-error"
    if fixed.plan.trade:
        text += f" Trade-off: {fixed.plan.trade}."
    return f"<div class='tfgl-reason-box {box} tfgl-fixed'>{escape(text)}</div>"
