"""XLA compilations counted from TensorFlow's own log (:mod:`tfgraph_lab.recording.xla_log`), placed on
the functions and calls of a watch.

Each logged compilation names the concrete function XLA compiled (``__inference_f_17``, a
tape's ``__forward_f_158`` and ``__inference___backward_f_148_159``) and carries the time it was
written. It counts for the watched function of that name (the graph's own name when the recorder
still holds it, else the Python name, the call running at that moment deciding between
namesakes) and is placed on the innermost call that was running then (a nested XLA function
compiles inside its caller's call; ``tape.gradient``'s backward pass compiles outside any
call, so it counts without an event). The model's reasons are kept where it expected the
compilation; where it did not, the log's situation says why: a compile on a call whose shapes
were compiled before (a compile-time constant), several copies at once (one per device), a
forward/backward pair (a gradient tape), or a function called inside the graph. Plain data in
and out; no TensorFlow.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import replace
from typing import Any

from ..explain.xla import constant_value_reason, logged_nested_reason, per_device_reason, taped_reason
from ..model.counts import mean_cached_seconds
from ..model.records import Event, Reason
from .xla import XlaOutcome
from .xla_log import LogWindow, compile_name_parts

__all__ = [
    "TOLERANCE",
    "LogWindow",
    "LoggedXla",
    "XlaTotals",
    "log_is_usable",
    "place_logged",
    "xla_event_fields",
    "xla_kind",
]

# A log line's time (µs, from the line) against a call's start and end (perf_counter): the
# recorder's own stamps are a few µs off; a few ms cover a loaded machine.
TOLERANCE = 0.002


class XlaTotals:
    """XLA compilations of one function's graphs (the aggregate's per-function totals)."""

    __slots__ = ("compiles", "cost_calls", "estimated", "seconds")

    def __init__(self) -> None:
        self.compiles = 0
        self.estimated = 0
        self.seconds = 0.0
        self.cost_calls = 0.0  # the compilations' time in cached calls of their callers


def xla_event_fields(xla: XlaOutcome | None) -> dict[str, Any]:
    """An event's XLA fields: whether the call compiled, judged by time, and why."""
    if xla is None:
        return {}
    return {"xla_compiled": True, "xla_estimated": xla.maybe, "xla_reasons": xla.reasons}


def xla_kind(totals: XlaTotals, jit_compile: bool, from_log: bool) -> str:
    """``exact`` (TensorFlow's log), ``about`` (some judged by call time) or ``at-least`` (the
    model: it misses compile-time constants and calls it cannot see); "" when XLA is not involved."""
    if not totals.compiles and not jit_compile:
        return ""
    if from_log:
        return "exact"
    return "about" if totals.estimated else "at-least"


class LoggedXla:
    """One aggregation counted from TensorFlow's log: the model's outcome and the function of
    each event are noted as the log is read; :meth:`place` then counts."""

    def __init__(self, window: LogWindow, origin: float) -> None:
        self.window = window
        self.origin = origin
        self.owners: list[Any] = []  # the accumulator of each event
        self.model: dict[int, XlaOutcome] = {}  # event index -> the model's outcome

    @classmethod
    def of(cls, window: LogWindow | None, origin: float | None) -> LoggedXla | None:
        if window is None or origin is None or not log_is_usable(window):
            return None
        return cls(window, origin)

    def note(self, acc: Any, outcome: XlaOutcome | None, index: int) -> None:
        self.owners.append(acc)
        if outcome is not None:
            self.model[index] = outcome

    def place(self, events: list[Event], accs: Sequence[Any]) -> list[Event]:
        mean = lambda acc: mean_cached_seconds([acc])  # noqa: E731
        return place_logged(self.window, self.origin, events, self.owners, accs, self.model, mean)


def log_is_usable(window: LogWindow | None) -> bool:
    """TensorFlow's log can be trusted for this watch: it showed XLA at work, now or earlier in
    this process (the switch is read once, when TensorFlow loads). A log asked for after
    TensorFlow loaded stays silent, and the count stays modelled."""
    return window is not None and (window.launches > 0 or window.proven)


def place_logged(
    window: LogWindow,
    origin: float,
    events: list[Event],
    owners: Sequence[Any],
    accs: Sequence[Any],
    model: dict[int, Any],
    mean_cached: Callable[[Any], float | None],
) -> list[Event]:
    """Count every logged compilation for its function (``acc.xla``) and mark the calls it
    happened in; returns the events with their XLA fields as the log says. ``owners[i]`` is
    the accumulator of ``events[i]``'s function; ``model[i]`` the model's outcome for it."""
    exact, by_base = _names(accs)
    placed: dict[int, list[tuple[Any, str, str]]] = {}
    for when, name in window.compiles:
        base, part = compile_name_parts(name)
        running = _running(events, when - origin)
        target = exact.get(name)
        if target is None:
            namesakes = by_base.get(base, [])
            target = next((owners[i] for i in running if owners[i] in namesakes), None)
            if target is None:
                target = namesakes[0] if namesakes else (owners[running[0]] if running else None)
        if target is None:
            continue  # a function nobody watched, compiled outside every watched call
        target.xla.compiles += 1
        where = next((i for i in running if owners[i] is target), running[0] if running else None)
        if where is not None:
            placed.setdefault(where, []).append((target, base, part or name))
    out = list(events)
    for i, event in enumerate(events):
        lines = placed.get(i)
        if not lines:
            if event.xla_compiled:
                out[i] = replace(event, xla_compiled=False, xla_estimated=False, xla_reasons=())
            continue
        out[i] = replace(
            event,
            xla_compiled=True,
            xla_estimated=False,
            xla_reasons=_reasons(event, owners[i], lines, model.get(i)),
        )
        if not event.traced:
            owners[i].xla_slow_calls += 1
            owners[i].xla_slow_seconds += event.seconds
    for i, lines in placed.items():
        event = events[i]
        if event.traced:
            continue  # its time is the trace's already
        mean = mean_cached(owners[i])
        for target, _, _ in lines:
            target.xla.seconds += event.seconds / len(lines)
            if mean:
                target.xla.cost_calls += event.seconds / len(lines) / mean
    return out


def _names(accs: Sequence[Any]) -> tuple[dict[str, Any], dict[str, list[Any]]]:
    """Concrete function name → accumulator (graphs the recorder still holds), and Python
    name → accumulators (jit_compile ones first)."""
    exact: dict[str, Any] = {}
    by_base: dict[str, list[Any]] = {}
    for acc in sorted(accs, key=lambda a: not a.info.jit_compile):
        by_base.setdefault(acc.info.label.rsplit(".", 1)[-1], []).append(acc)
        for graph in acc.graphs:
            cf = graph.cf_ref() if graph.cf_ref is not None else None
            name = getattr(cf, "name", None) if cf is not None else None
            if name:
                exact[name.decode() if isinstance(name, bytes) else str(name)] = acc
    return exact, by_base


def _running(events: Sequence[Event], t: float) -> list[int]:
    """The events whose call was running at ``t`` (seconds from the watch's start), innermost
    (latest start) first."""
    found = [
        (event.start, i)
        for i, event in enumerate(events)
        if event.start is not None and event.start - TOLERANCE <= t <= event.start + event.seconds + TOLERANCE
    ]
    return [i for _, i in sorted(found, reverse=True)]


def _reasons(event: Event, owner: Any, lines: list[tuple[Any, str, str]], outcome: Any) -> tuple[Reason, ...]:
    """Why these compilations happened on this call: the model's reasons where it expected
    them, else what the log's situation shows."""
    expected = (outcome is not None and getattr(outcome, "compiled", False)) or getattr(
        outcome, "maybe", False
    )
    reasons: list[Reason] = list(outcome.reasons) if expected else []
    extra = len(lines) - (len(outcome.targets) if expected else 0)
    if extra <= 0:
        return tuple(reasons)
    codes = {r.code for r in reasons}

    def add(reason: Reason) -> None:
        if reason.code not in codes:
            codes.add(reason.code)
            reasons.append(reason)

    copies: dict[str, int] = {}
    for _, base, part in lines:
        copies[base] = copies.get(base, 0) + (part in ("inference", "forward"))
    for target, base, part in lines:
        if part in ("forward", "backward") and copies.get(base, 0) <= 1:
            add(taped_reason())
        if copies.get(base, 0) > 1:
            add(per_device_reason(base, copies[base]))
        elif target is owner and target.info.jit_compile and not event.traced and not expected:
            add(constant_value_reason(base))
        elif target is not owner and part not in ("forward", "backward"):
            add(logged_nested_reason(base))
    return tuple(reasons)
