"""What ``--compare-eager`` timings support, in one sentence: faster, slower and why, or noise.

Input is the report's ``compare_eager`` data: ``graph_seconds`` (the watched run, tracing
included), ``eager_seconds``, and, when the magic could afford repeats, ``graph_runs`` and
``eager_runs`` (every timing of the cell in each mode, the watched run first). Tracing is blamed
only when the cell traced and its tracing time covers most of the gap; two modes whose timings
overlap are "within noise", with the spread shown. Pure: no TensorFlow, IPython or ipywidgets.
"""

from __future__ import annotations

import statistics
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from ..model.counts import Selection
from .format import fmt_seconds

if TYPE_CHECKING:
    from ..report.trace_report import TraceReport

__all__ = ["compare_verdict", "report_verdict"]

# Tracing "explains" a slower graph run when it accounts for at least this share of the gap.
_EXPLAINS = 0.5


def _runs(data: Mapping[str, Any], key: str, single: str) -> list[float]:
    runs = [float(x) for x in data.get(key) or () if float(x) > 0]
    if not runs and float(data.get(single, 0.0) or 0.0) > 0:
        runs = [float(data[single])]
    return runs


def _spread(runs: Sequence[float]) -> str:
    if len(runs) < 2:
        return fmt_seconds(runs[0])
    return f"{fmt_seconds(min(runs))}–{fmt_seconds(max(runs))} over {len(runs)} runs"


def compare_verdict(data: Mapping[str, Any], trace_seconds: float, traces: int) -> str:
    """The graph-vs-eager sentence for a report with ``traces`` traces taking ``trace_seconds``."""
    graph = _runs(data, "graph_runs", "graph_seconds")
    eager = _runs(data, "eager_runs", "eager_seconds")
    failed = data.get("rerun_failed")
    if failed:  # a re-run raised: the cell's outcome is its watched run's; say what is missing
        note = (
            f"the {failed} re-run failed ({data.get('rerun_error') or 'an error'}); the cell's "
            "outcome is its watched run's"
        )
        if not graph or not eager:
            return f"no comparison: {note}"
        return f"{compare_verdict({**data, 'rerun_failed': None}, trace_seconds, traces)}; {note}"
    if not graph or not eager:
        return "no comparison"
    g, e = statistics.median(graph), statistics.median(eager)
    repeated = len(graph) >= 2 and len(eager) >= 2
    spread = f"graph {_spread(graph)}, eager {_spread(eager)}"
    if repeated and max(min(graph), min(eager)) <= min(max(graph), max(eager)):
        return f"within noise: the timings of the two modes overlap ({spread})"
    caveat = "" if repeated else " (one run each: no spread measured, so noise is not ruled out)"
    # The ratio is said with the two numbers it is computed from (medians when repeated).
    basis = f"median {fmt_seconds(g)} vs {fmt_seconds(e)}; " if repeated else ""
    if g <= e:
        return f"graph mode {e / g:.1f}× faster ({basis}{spread}){caveat}"
    ratio = f"graph mode {g / e:.1f}× slower"
    spread = basis + spread
    # The watched (first) graph run holds the cell's tracing; compare it with eager.
    gap = graph[0] - e
    if traces and gap > 0 and trace_seconds >= _EXPLAINS * gap:
        share = min(1.0, trace_seconds / gap)
        return (
            f"{ratio} ({spread}): tracing ({fmt_seconds(trace_seconds)} for {traces} "
            f"trace{'s' if traces != 1 else ''}) is {share:.0%} of the gap — this cell does "
            f"too little work per trace to pay the tracing back{caveat}"
        )
    if traces:
        why = (
            f"tracing ({fmt_seconds(trace_seconds)}) explains only "
            f"{max(0.0, trace_seconds / gap) if gap > 0 else 0:.0%} of the gap"
        )
    else:
        why = "the cell traced nothing"
    if repeated:
        other = (
            "every graph run was slower, so it is not a one-off either: calling the graphs "
            "costs more here than running their ops eagerly (a graph call's fixed overhead "
            "outweighs small ops)"
        )
    else:
        other = (
            "something else cost more in graph mode (a first run's one-off start-up, or a "
            "graph call's fixed overhead on small ops)"
        )
    return f"{ratio} ({spread}), and not because of tracing: {why}; {other}{caveat}"


def report_verdict(report: TraceReport) -> str:
    """The sentence for a report: its tracing counts every function, framework ones included
    (a Keras ``fit`` traces only TF's functions, and that time is in the cell's too): the
    totals of ``Selection.ALL`` (graphs TF built around a function: time, no trace)."""
    every = report.totals(Selection.ALL)
    return compare_verdict(report.compare_eager or {}, every.trace_seconds, every.traces)
