"""The summary view: between the whole report and nothing (``--summary``, ``brevity="summary"``).

The headline, then one line per function the view lists — its name, traces, graphs, and its
ranked plan's best fix with what it saves (:mod:`tfgraph_lab.explain.plan`) — for a reader who
has seconds. The same plan as the whole report's, so the fix named here is its fix 1.
"""

from __future__ import annotations

from html import escape
from typing import TYPE_CHECKING

from ..model.view import ViewOptions
from .format import plural, visible
from .text import headline, notices, wrap_lines

if TYPE_CHECKING:
    from ..report.trace_report import TraceReport

__all__ = ["function_lines", "render_summary", "render_summary_html"]


def function_lines(report: TraceReport, view: ViewOptions) -> list[str]:
    """``train_step: 13 traces · 13 graphs · best fix: pass `lr` as … → 10 fewer graphs: …``."""
    out = []
    for fn in report.listed(view):
        parts = [plural(fn.traces, "trace"), plural(len(fn.graphs), "graph")]
        best = report.plan(fn).best
        if best is not None:
            parts.append(f"best fix: {best.one_line(report.plan(fn).name)}")
        elif fn.retraces and fn.suggestion:  # advice the plan cannot hold (a Keras recompile's)
            parts.append(f"suggested: {_first_line(fn.suggestion)}")
        elif fn.retraces:
            parts.append("no change saves a graph for these calls (the full report says why)")
        else:
            parts.append("no retrace")
        out.append(f"{fn.label}: " + " · ".join(parts))
    return out


def _first_line(suggestion: str) -> str:
    """The suggestion's first line, a comment's text without its ``#``."""
    line = suggestion.strip().splitlines()[0].strip()
    return line[1:].strip() if line.startswith("#") else line


def render_summary(report: TraceReport, view: ViewOptions) -> str:
    """The summary as terminal text."""
    lines = ["tracewatch · " + headline(report, view)]
    lines += ["! " + n for n in notices(report)]
    lines += ["  " + line for line in function_lines(report, view)]
    return visible("\n".join(wrap_lines(lines)))


def render_summary_html(report: TraceReport, view: ViewOptions) -> str:
    """The HTML twin of :func:`render_summary` (every string escaped)."""
    items = "".join(f"<li>{escape(line)}</li>" for line in function_lines(report, view))
    notes = "".join(f"<div class='tfgl-notice'>{escape(n)}</div>" for n in notices(report))
    return visible(
        f"<div class='tfgl tfgl-report tfgl-summary'><div>{escape('tracewatch · ' + headline(report, view))}</div>"
        f"{notes}<ul>{items}</ul></div>"
    )
