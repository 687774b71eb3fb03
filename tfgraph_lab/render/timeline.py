"""The per-call timeline, summarised: at most ``max_points`` points however many calls ran.

Each point is a bucket of consecutive calls: its largest call time, and whether any call in it
traced. Renderers draw one bar per point, so a report of a million calls stays small.
"""

from __future__ import annotations

from dataclasses import dataclass

from ..records import Event

__all__ = ["TimelinePoint", "timeline"]


@dataclass(frozen=True, slots=True)
class TimelinePoint:
    first: int
    last: int
    seconds: float
    traced: bool
    qualname: str


def timeline(events: tuple[Event, ...], shown: set[str], max_points: int = 300) -> list[TimelinePoint]:
    calls = [e for e in events if e.via == "call" and e.qualname in shown]
    if not calls:
        return []
    size = max(1, -(-len(calls) // max_points))
    points = []
    for start in range(0, len(calls), size):
        chunk = calls[start : start + size]
        worst = max(chunk, key=lambda e: (e.traced, e.seconds))
        points.append(
            TimelinePoint(
                first=start,
                last=start + len(chunk) - 1,
                seconds=max(e.seconds for e in chunk),
                traced=any(e.traced or e.failed_trace for e in chunk),
                qualname=worst.qualname,
            )
        )
    return points
