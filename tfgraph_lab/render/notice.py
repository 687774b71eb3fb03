"""The compact retrace notice shown under a cell by ``%tracewatch on`` (monitoring).

Only cells that retraced get one: function, reason, fix and cost, never throttled.
"""

from __future__ import annotations

from html import escape
from typing import TYPE_CHECKING, Any

from ..explain.trace import NOT_RETRACES
from .format import visible
from .style import style_tag
from .text import cost_text

if TYPE_CHECKING:
    from ..report.trace_report import TraceReport

__all__ = ["RetraceNotice"]


class RetraceNotice:
    """A displayable summary of the retraces in one report."""

    def __init__(self, report: TraceReport) -> None:
        self.report = report

    def lines(self) -> list[tuple[str, str, str, str]]:
        """``(function, reason, fix, cost)`` for each retrace, in order."""
        out = []
        by_name = {f.key: f for f in self.report.functions}
        for e in self.report.retrace_events:
            fn = by_name[e.key]
            for r in e.reasons:
                if r.code in NOT_RETRACES:
                    continue
                change = f" {r.argument}: {r.before} → {r.after}" if r.argument else ""
                out.append((e.label, f"{r.code}{change}", r.fix, cost_text(e, fn)))
        return out

    def __str__(self) -> str:
        rows = self.lines()
        head = f"tracewatch: {len(rows)} retrace{'s' if len(rows) != 1 else ''} in this cell"
        body = [f"  {fn} — {why}\n    fix: {fix}\n    cost: {cost}" for fn, why, fix, cost in rows]
        return visible("\n".join([head, *body]))

    def _repr_mimebundle_(self, include: Any = None, exclude: Any = None) -> dict[str, str]:
        rows = "".join(
            f"<li><code>{escape(fn)}</code> — <b>{escape(why)}</b>"
            f"<div class='tfgl-fix'><b>fix:</b> {escape(fix)}</div><div>cost {escape(cost)}</div></li>"
            for fn, why, fix, cost in self.lines()
        )
        html = (
            f"<div class='tfgl tfgl-monitor-notice'>{style_tag()}"
            f"<b>tracewatch</b>: this cell retraced<ul>{rows}</ul></div>"
        )
        return {"text/plain": str(self), "text/html": visible(html)}
