"""The per-call timeline, summarised: at most ``max_points`` points however many calls ran.

Each point is a bucket of consecutive calls: its largest call time, and whether any call in it
traced. Renderers draw one bar per point, so a report of a million calls stays small.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import NamedTuple

from ..model.records import CallRun, Event
from ..model.vocab import Via

__all__ = ["TimelinePoint", "timeline"]


@dataclass(frozen=True, slots=True)
class TimelinePoint:
    first: int
    last: int
    seconds: float
    traced: bool
    label: str  # the function's label (as the report shows it)
    failed: bool = False  # a call in it raised while tracing


class _Item(NamedTuple):
    """One call, or one summarised run of cached calls. A named tuple, not a frozen dataclass:
    a report of 100,000 calls builds 100,000 of them, and a frozen dataclass's ``__init__``
    (``object.__setattr__`` per field) cost more than the rest of the HTML rendering."""

    calls: int
    seconds: float
    traced: bool
    label: str  # the function's label (as the report shows it)
    failed: bool = False


def timeline(
    events: tuple[Event, ...],
    shown: set[str],
    max_points: int = 300,
    runs: tuple[CallRun, ...] = (),
) -> list[TimelinePoint]:
    """Points over the calls of the shown functions (``shown``: their labels), summarised runs
    included in order."""
    items: list[tuple[int, _Item]] = [
        (e.index, _Item(1, e.seconds, e.traced or e.failed_trace, e.label, e.failed_trace))
        for e in events
        if e.via == Via.CALL and e.label in shown
    ]
    items += [
        (r.first, _Item(r.calls, r.max_seconds, False, r.functions[0] if r.functions else ""))
        for r in runs
        if shown.intersection(r.functions)
    ]
    if not items:
        return []
    items.sort(key=lambda pair: pair[0])
    total = sum(item.calls for _, item in items)
    size = max(1, -(-total // max_points))
    points: list[TimelinePoint] = []
    chunk: list[_Item] = []
    first = done = in_chunk = 0
    for _, item in items:
        chunk.append(item)
        done += item.calls
        in_chunk += item.calls
        if in_chunk >= size:
            points.append(_point(first, done - 1, chunk))
            first, chunk, in_chunk = done, [], 0
    if chunk:
        points.append(_point(first, done - 1, chunk))
    return points


def _point(first: int, last: int, chunk: list[_Item]) -> TimelinePoint:
    worst = max(chunk, key=lambda c: (c.traced, c.seconds))
    return TimelinePoint(
        first=first,
        last=last,
        seconds=max(c.seconds for c in chunk),
        traced=any(c.traced for c in chunk),
        label=worst.label,
        failed=any(c.failed for c in chunk),
    )
