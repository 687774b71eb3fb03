"""The lines of the user's code whose calls retraced, costliest first: what ``--sort cost``
adds to the text and HTML reports (the JSON always carries them: ``call_sites``).

A call site is one function called from one line (:class:`~tfgraph_lab.model.records.CallSite`);
its cost is the time of its calls that retraced, their tracing included, as each retrace's
``cost`` says it. Pure: reads the report's records.
"""

from __future__ import annotations

from collections.abc import Sequence
from html import escape
from typing import TYPE_CHECKING

from ..model.records import CallSite
from ..model.view import ViewOptions
from .format import fmt_seconds, plural, short_path
from .reasons import code_html

if TYPE_CHECKING:
    from ..report.trace_report import TraceReport

__all__ = ["SITES_TITLE", "retraced_sites", "site_lines", "sites_html"]

SITES_TITLE = "retraces by the line that called, costliest first"
MAX_SITES_SHOWN = 20


def retraced_sites(report: TraceReport, view: ViewOptions) -> list[CallSite]:
    """The call sites of the functions ``view`` lists that retraced, costliest first."""
    listed = {f.key for f in report.listed(view)}
    sites = [s for s in report.call_sites if s.retraces and s.key in listed]
    return sorted(sites, key=lambda s: (-s.retrace_seconds, -s.trace_seconds))  # stable: then as first seen


def _where(site: CallSite, report: TraceReport) -> str:
    return short_path(site.caller, report.labels) if site.caller else "(no calling line: a trace made without a call)"


def site_lines(report: TraceReport, view: ViewOptions) -> list[str]:
    """``  105 ms  3 retraces  train_step  ← train.py:4  python-value-changed``, one per site;
    nothing when no listed function retraced."""
    sites = retraced_sites(report, view)
    if not sites:
        return []
    lines = ["", SITES_TITLE + ":"]
    width = min(40, max(len(s.label) for s in sites))
    for s in sites[:MAX_SITES_SHOWN]:
        lines.append(
            f"  {fmt_seconds(s.retrace_seconds):>9}  {plural(s.retraces, 'retrace'):<12} "
            f"{s.label:<{width}}  ← {_where(s, report)}  {', '.join(s.codes)}".rstrip()
        )
    if len(sites) > MAX_SITES_SHOWN:
        lines.append(f"  … {len(sites) - MAX_SITES_SHOWN} more (the JSON's call_sites lists them all)")
    return lines


def sites_html(report: TraceReport, view: ViewOptions) -> str:
    """The same as a table (``tfgl-sites``); "" when no listed function retraced."""
    sites: Sequence[CallSite] = retraced_sites(report, view)
    if not sites:
        return ""
    rows = "".join(
        f"<tr><td class='tfgl-num'>{escape(fmt_seconds(s.retrace_seconds))}</td>"
        f"<td class='tfgl-num'>{s.retraces}</td><td><code>{escape(s.label)}</code></td>"
        f"<td>{escape(_where(s, report))}</td><td>{' '.join(code_html(c) for c in s.codes)}</td></tr>"
        for s in sites[:MAX_SITES_SHOWN]
    )
    more = (
        f"<p class='tfgl-muted'>… {len(sites) - MAX_SITES_SHOWN} more (the JSON's call_sites lists them all)</p>"
        if len(sites) > MAX_SITES_SHOWN
        else ""
    )
    return (
        f"<h4>{escape(SITES_TITLE)}</h4><table class='tfgl-sites'><thead><tr><th class='tfgl-num'>cost</th>"
        "<th class='tfgl-num'>retraces</th><th>function</th><th>called at</th><th>why</th></tr></thead>"
        f"<tbody>{rows}</tbody></table>{more}"
    )
