"""The one chart of call times, shared by the report, the labs and the live view.

Bars of :class:`~tfgraph_lab.render.timeline.TimelinePoint` on a log scale (a trace costs ~100×
a cached call, and both must stay visible): traced orange, failed red, cached grey. Two ways to
put it on a page:

- ``embed="img"`` (the report): an ``<img>`` whose ``src`` is the SVG as a ``data:`` URI, with
  an ``alt`` text that says what the chart shows. It survives sanitizers that drop ``<svg>``
  (JupyterLab's for untrusted notebooks checks schemes on ``href`` and ``cite`` only, 4.6), and
  an image's text never spills into the page.
- ``embed="svg"`` (the labs, never sanitized): inline ``<svg>`` with a tooltip per bar.

The caption above the chart is plain text: it reads the same with or without the stylesheet.
Pure strings; imports nothing heavy.
"""

from __future__ import annotations

import base64
import math
from collections.abc import Sequence
from html import escape
from typing import Literal

from .format import fmt_seconds, plural
from .timeline import TimelinePoint

__all__ = ["BAR_COLOURS", "chart_html", "chart_svg", "describe"]

#: Fill colours: they stay ≥ 3:1 against white and against JupyterLab Dark's #111 (WCAG 1.4.11
#: asks 3:1 of graphics), so the image needs no background of its own.
BAR_COLOURS = {"traced": "#d4601a", "failed": "#d1242f", "cached": "#7d8590"}
AXIS_COLOUR = "#7d8590"


def _scale(points: Sequence[TimelinePoint]) -> tuple[float, float]:
    positive = [p.seconds for p in points if p.seconds > 0]
    hi = max(positive, default=1e-6)
    lo = min(min(positive, default=1e-6), hi / 10)
    return lo, hi


def _kind(p: TimelinePoint) -> str:
    return "failed" if p.failed else "traced" if p.traced else "cached"


def _calls(p: TimelinePoint) -> str:
    return f"call {p.first}" if p.first == p.last else f"calls {p.first}–{p.last}"


def chart_svg(
    points: Sequence[TimelinePoint], width: int = 640, height: int = 90, tooltips: bool = False
) -> str:
    """A standalone SVG document (``xmlns`` set, so it also works as an image)."""
    lo, hi = _scale(points)
    span = (math.log10(hi) - math.log10(lo)) or 1.0
    plot_h = height - 2
    bar = width / max(len(points), 20)
    bars = []
    for i, p in enumerate(points):
        frac = (math.log10(max(p.seconds, lo)) - math.log10(lo)) / span
        h = max(2.0, 3 + frac * (plot_h - 3))
        kind = _kind(p)
        title = ""
        if tooltips:
            what = "" if kind == "cached" else f" ({kind})"
            name = f" · {p.label}" if p.label else ""
            title = f"<title>{escape(f'{_calls(p)}: {fmt_seconds(p.seconds)}{what}{name}')}</title>"
        bars.append(
            f"<rect class='tfgl-bar tfgl-bar-{kind}' x='{i * bar:.1f}' y='{plot_h - h:.1f}' "
            f"width='{max(bar - 1.2, 0.8):.1f}' height='{h:.1f}' fill='{BAR_COLOURS[kind]}'>{title}</rect>"
        )
    return (
        f"<svg xmlns='http://www.w3.org/2000/svg' class='tfgl-chart' width='{width}' height='{height}' "
        f"viewBox='0 0 {width} {height}'>{''.join(bars)}"
        f"<line x1='0' y1='{plot_h + 0.5}' x2='{width}' y2='{plot_h + 0.5}' stroke='{AXIS_COLOUR}'/></svg>"
    )


def describe(points: Sequence[TimelinePoint]) -> str:
    """What the chart shows, in words: its ``alt`` text and its screen-reader label."""
    if not points:
        return "no calls"
    calls = sum(p.last - p.first + 1 for p in points)
    traced = sum(1 for p in points if p.traced and not p.failed)
    failed = sum(1 for p in points if p.failed)
    lo, hi = _scale(points)
    bucketed = " (each bar the slowest of a run of calls)" if calls > len(points) else ""
    counts = f"{traced} traced (orange)" + (f", {failed} failed (red)" if failed else "")
    return (
        f"Bar chart of the time per call, {plural(calls, 'call')} in {plural(len(points), 'bar')}"
        f"{bucketed}: {counts}, the rest cached (grey); log scale from {fmt_seconds(lo)} to "
        f"{fmt_seconds(hi)}."
    )


def chart_html(
    points: Sequence[TimelinePoint],
    caption: str,
    embed: Literal["img", "svg"] = "img",
    width: int = 640,
    height: int = 90,
) -> str:
    """Caption, colour key and chart. ``caption`` is plain text (escaped here)."""
    if not points:
        return f"<div class='tfgl-chart-box tfgl-muted'>{escape(caption)}: no calls yet</div>"
    lo, hi = _scale(points)
    kinds = [("traced", "orange"), ("cached", "grey")]
    if any(p.failed for p in points):
        kinds.append(("failed", "red"))
    # The swatches are empty boxes; their colour's name is there for readers without styles.
    key = ",".join(
        f" <span class='tfgl-key tfgl-key-{kind}'></span><span class='tfgl-sep'>{colour}: </span>{kind}"
        for kind, colour in kinds
    )
    head = (
        f"<div class='tfgl-muted'>{escape(caption)} (log scale, {escape(fmt_seconds(lo))} to "
        f"{escape(fmt_seconds(hi))}):{key}</div>"
    )
    alt = escape(describe(points), quote=True)
    if embed == "svg":
        svg = chart_svg(points, width, height, tooltips=True)
        body = svg.replace("<svg ", f"<svg role='img' aria-label='{alt}' ", 1)
    else:
        data = base64.b64encode(chart_svg(points, width, height).encode()).decode("ascii")
        body = (
            f"<img class='tfgl-chart tfgl-timeline-chart' src='data:image/svg+xml;base64,{data}' "
            f"width='{width}' height='{height}' alt='{alt}'>"
        )
    return f"<div class='tfgl-chart-box'>{head}{body}</div>"
