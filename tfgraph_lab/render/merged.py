"""Renderings of a merged multi-process report: the per-process breakdown (text and HTML) and
a standalone HTML page (inline CSS, no scripts, nothing fetched) for any report.

Reads plain data only (``MergedReport``/``TraceReport``); no TensorFlow, no IPython.
"""

from __future__ import annotations

import os
from html import escape
from typing import TYPE_CHECKING

from ..model.view import ViewOptions
from .format import fmt_seconds, visible
from .html import render_html
from .style import ROOT, style_tag

if TYPE_CHECKING:
    from ..report.merge import MergedReport
    from ..report.trace_report import TraceReport

__all__ = ["render_breakdown_html", "render_breakdown_text", "render_page"]


def _rows(merged: MergedReport, view: ViewOptions) -> list[tuple[str, str, list[str]]]:
    """``(label, filename, cells)`` per function ``view`` lists; one cell per process."""
    rows = []
    shown = view.listed(merged.report.functions)
    names = [f.label for f in shown]
    for fn in shown:
        # two functions of one name in different files (scripts of two jobs): say which file
        label = fn.label if names.count(fn.label) == 1 else f"{fn.label} ({os.path.basename(fn.filename)})"
        by_process = {c.process: c for c in merged.counts_of(*fn.key)}
        cells = []
        for name in merged.processes:
            c = by_process.get(name)
            cells.append("—" if c is None else f"{c.calls} · {c.traces} · {c.retraces}")
        rows.append((label, fn.filename, cells))
    return rows


def render_breakdown_text(merged: MergedReport, view: ViewOptions) -> str:
    """The per-process table: calls · traces · retraces of each function in each process."""
    rows = _rows(merged, view)
    lines = [f"per process ({len(merged.processes)} merged; calls · traces · retraces):"]
    if not rows:
        return lines[0] + " no user tf.function"
    width = min(40, max(8, *(len(q) for q, _, _ in rows)))
    cols = [max(len(n), *(len(r[2][i]) for r in rows)) for i, n in enumerate(merged.processes)]
    lines.append(
        f"  {'function':<{width}}  " + "  ".join(f"{n:>{w}}" for n, w in zip(merged.processes, cols))
    )
    for label, _, cells in rows:
        name = label if len(label) <= width else "…" + label[-(width - 1) :]
        lines.append(f"  {name:<{width}}  " + "  ".join(f"{c:>{w}}" for c, w in zip(cells, cols)))
    return visible("\n".join(lines))


def render_breakdown_html(merged: MergedReport, view: ViewOptions) -> str:
    head = "".join(f"<th class='tfgl-num'>{escape(n)}</th>" for n in merged.processes)
    body = []
    for label, filename, cells in _rows(merged, view):
        tds = "".join(f"<td class='tfgl-num'>{escape(c)}</td>" for c in cells)
        body.append(f"<tr><td><code title='{escape(filename)}'>{escape(label)}</code></td>{tds}</tr>")
    seconds = ", ".join(
        f"{escape(name)}: {fmt_seconds(sum(c.call_seconds for c in merged.breakdown if c.process == name))}"
        for name in merged.processes
    )
    return visible(
        f"<div class='{ROOT} tfgl-breakdown'>{style_tag()}<h4>Per process</h4>"
        "<p class='tfgl-muted'>calls · traces · retraces of each function in each process "
        f"(time in calls: {seconds})</p>"
        f"<table><thead><tr><th>function</th>{head}</tr></thead><tbody>{''.join(body)}</tbody></table></div>"
    )


def render_page(report: TraceReport, view: ViewOptions, title: str, merged: MergedReport | None = None) -> str:
    """One standalone HTML page, as ``view`` shows the report: needs no network and no JavaScript."""
    breakdown = "" if merged is None else render_breakdown_html(merged, view)
    return visible(
        "<!DOCTYPE html>\n<html lang='en'><head><meta charset='utf-8'>"
        "<meta name='viewport' content='width=device-width, initial-scale=1'>"
        f"<title>{escape(title)}</title></head>\n<body style='margin:16px'>\n"
        f"<h3 style='font-family:system-ui,sans-serif'>{escape(title)}</h3>\n"
        f"{breakdown}\n{render_html(report, view)}\n</body></html>\n"
    )
