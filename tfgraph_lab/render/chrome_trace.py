"""A TraceReport as a Chrome Trace Event Format timeline, the JSON Perfetto and chrome://tracing open.

One complete event (``"ph": "X"``, ``ts``/``dur`` in microseconds from the watch's start) per
recorded call; a call that traced has ``"cat": "trace"`` and its reason codes in ``args``; a
summarised run of cached calls (long watches fold them, see :mod:`tfgraph_lab.recording.calllog`) is one
event carrying its call count. Traces made without a call (``get_concrete_function``, tf.data,
SavedModel) are events too, with ``"cat": "trace"`` and their ``via``. ``args.call`` is the
number the report shows (``call #2``: the function's second call), ``args.index`` the event's
place in the watch. One track (``tid``) per thread, named by metadata events; a merged report
has one process (``pid``, named ``process w0.json``) per report it merged. Reports saved before start times were recorded are laid out
call after call. Reads the report's plain data only: no TensorFlow, no IPython.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ..model.counts import Selection
from ..model.records import CallRun, Event

if TYPE_CHECKING:
    from ..report.trace_report import TraceReport

__all__ = ["MAIN_THREAD", "render_chrome_trace"]

MAIN_THREAD = "MainThread"
_PID = 1


def render_chrome_trace(report: TraceReport) -> dict[str, Any]:
    """The timeline as a dict ready for ``json.dump`` (the JSON Object Format)."""
    framework = {f.key for f in report.functions if f.framework}
    items: list[tuple[int, Event | CallRun]] = [(e.index, e) for e in report.events]
    items += [(r.first, r) for r in report.runs]
    items.sort(key=lambda pair: pair[0])
    timed = all(_start(item) is not None for _, item in items)
    # A call another thread began just before the watch did starts before 0: shift them all.
    base = min([0.0, *(s for _, item in items if (s := _start(item)) is not None)])
    # one pid per process of a merged report ("" for a watch's own), one tid per thread in it
    pids: dict[str, int] = {"": _PID} if not any(item.process for _, item in items) else {}
    tids: dict[tuple[int, str], int] = {}
    events: list[dict[str, Any]] = []
    cursor = 0.0  # for reports without start times: one call after the other
    for _, item in items:
        start = _start(item) if timed else cursor
        assert start is not None
        start -= base if timed else 0.0
        cursor = start + item.seconds
        pid = pids.setdefault(item.process or "", len(pids) + 1)
        tids.setdefault((pid, MAIN_THREAD), 1)
        thread = _thread_in(item.process, item.thread) or MAIN_THREAD
        tid = tids.setdefault((pid, thread), 1 + sum(p == pid for p, _ in tids))
        if isinstance(item, CallRun):
            events.append(_run_event(item, start, pid, tid))
        else:
            events.append(_call_event(item, start, pid, tid, item.key in framework))
    events.sort(key=lambda e: (e["pid"], e["tid"], e["ts"]))
    tids.setdefault((_PID, MAIN_THREAD), 1)  # an empty watch still names its track
    meta: list[dict[str, Any]] = [
        {"name": "process_name", "ph": "M", "pid": pid, "tid": 0, "args": {"name": _process_name(name)}}
        for name, pid in pids.items()
    ]
    meta += [
        {"name": "thread_name", "ph": "M", "pid": pid, "tid": tid, "args": {"name": name}}
        for (pid, name), tid in tids.items()
        if pid in pids.values()
    ]
    return {
        "traceEvents": meta + events,
        "displayTimeUnit": "ms",
        "otherData": {
            "generator": "tfgraph_lab",
            "tf_version": report.tf_version,
            "watch_seconds": report.seconds,
            # every function's, as the timeline shows every call (counts.Selection.ALL)
            "traces": report.totals(Selection.ALL).traces,
            "retraces": report.totals(Selection.ALL).retraces,
            "laid_out": "recorded start times" if timed else "one call after another (no start times)",
        },
    }


def _start(item: Event | CallRun) -> float | None:
    return item.start


def _process_name(process: str) -> str:
    return f"process {process}" if process else "tfgraph_lab watch"


def _thread_in(process: str | None, thread: str | None) -> str | None:
    """The thread's own name: a merged report's ``thread`` starts with its process."""
    if process and thread is not None and (thread == process or thread.startswith(process + "/")):
        return thread[len(process) + 1 :] or None
    return thread


def _us(seconds: float) -> float:
    return round(seconds * 1e6, 3)


def _call_event(event: Event, start: float, pid: int, tid: int, framework: bool) -> dict[str, Any]:
    traced = event.traced or event.failed_trace
    # "call": the number the report shows ("call #2", per function); "index": the watch's event
    call = event.call_number if event.call_number is not None else event.index + 1
    args: dict[str, Any] = {"via": event.via, "call": call, "index": event.index}
    if event.process:
        args["process"] = event.process
    if framework:
        args["framework"] = True
    if event.graph is not None:
        args["graph"] = event.graph
    if traced:
        codes = list(dict.fromkeys(r.code for r in event.reasons))
        args["traces"] = event.traces
        args["reasons"] = codes
        args["retrace"] = event.retrace  # decided when recorded (tfgraph_lab.model.counts)
        args["details"] = [_reason_line(r.code, r.argument, r.before, r.after) for r in event.reasons]
        fixes = [r.fix for r in event.reasons if r.fix]
        if fixes:
            args["fix"] = fixes[0]
        if event.signature:
            args["signature"] = event.signature
        if event.caller:
            args["caller"] = event.caller
    if event.error:
        args["error"] = event.error
    if event.eager:
        args["eager"] = True
    if event.began_before_watch:
        args["began_before_watch"] = True  # its call began before ts 0: dur is not its cost
    out: dict[str, Any] = {
        "name": f"{event.label} · traced" if traced else event.label,
        "cat": "trace" if traced else "call",
        "ph": "X",
        "ts": _us(start),
        "dur": _us(event.seconds),
        "pid": pid,
        "tid": tid,
        "args": args,
    }
    if traced:
        out["cname"] = "terrible" if args["retrace"] else "bad"  # chrome://tracing's palette
    return out


def _run_event(run: CallRun, start: float, pid: int, tid: int) -> dict[str, Any]:
    names = ", ".join(run.functions)
    return {
        "name": f"{run.calls} cached calls ({names})" if names else f"{run.calls} cached calls",
        "cat": "call",
        "ph": "X",
        "ts": _us(start),
        "dur": _us(run.seconds),
        "pid": pid,
        "tid": tid,
        "args": {
            "summarised": True,
            "calls": run.calls,
            "first_call": run.first,
            "functions": list(run.functions),
            "longest_call_us": _us(run.max_seconds),
        },
    }


def _reason_line(code: str, argument: str, before: str, after: str) -> str:
    line = f"{code}: {argument}" if argument else code
    if before or after:
        line += f" {before} → {after}"
    return line
