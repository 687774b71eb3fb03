"""TraceReport: what a watch saw, as plain data with summaries, JSON and rich display.

A sink: the recorder builds it (:meth:`tfgraph_lab.watching.recorder.TraceRecorder.report`) or
:meth:`TraceReport.from_dict` reads it back; it holds only strings and numbers, so it can be
stored, compared, serialised and rendered anywhere. Imports nothing from the recording side
(recorder, hub, log, adapter), neither TensorFlow nor IPython.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Mapping, MutableMapping
from dataclasses import dataclass, field
from functools import cached_property
from typing import TYPE_CHECKING, Any

from ..model.counts import Selection, Totals, totals
from ..model.records import CallRun, CallSite, Event, FunctionSummary, call_sites, name_match
from ..model.view import ViewOptions
from .schema import first_problem

if TYPE_CHECKING:
    from ..explain.plan import FunctionPlan
    from .fix_trial import FixTrial

__all__ = ["JSON_VERSION", "TraceReport"]

JSON_VERSION = 1


@dataclass(frozen=True)
class TraceReport:
    """Per-function summaries and per-call events of one watch.

    ``functions`` lists user functions first, then framework (TF/Keras) ones; ``events`` are in
    call order. ``view`` (:class:`~tfgraph_lab.model.view.ViewOptions`) is how the report shows
    itself (``str(report)``, in a notebook): it changes what the renderings list, never a number.
    """

    functions: tuple[FunctionSummary, ...] = ()
    events: tuple[Event, ...] = ()
    warnings: tuple[str, ...] = ()
    seconds: float = 0.0
    tf_version: str = ""
    eager_calls: int = 0
    degraded: tuple[str, ...] = ()
    budget: str | None = None
    budget_warnings: tuple[str, ...] = ()  # FN=N budgets that named no function seen (typos)
    # graph_seconds, eager_seconds; graph_runs, eager_runs (every timing, watched run first)
    compare_eager: dict[str, Any] | None = None
    runs: tuple[CallRun, ...] = ()
    # {filename: "In [3]"}: notebook cells, named when the calls were recorded (renderers read
    # these, never a running IPython, so the JSON read in another process names them alike)
    labels: Mapping[str, str] = field(default_factory=dict)
    # a merged report's per-process breakdown, as its JSON holds it (see merge.MergedReport)
    processes: tuple[Mapping[str, Any], ...] = ()
    # the watch's own work on its slow path (trace callbacks, explaining, the live log): not in
    # any trace's cost, which is TensorFlow's own tracing time
    watch_seconds: float = 0.0
    view: ViewOptions = field(default_factory=ViewOptions, compare=False)

    def with_view(self, view: ViewOptions | None = None, **changes: Any) -> TraceReport:
        """The same report shown another way: ``report.with_view(ViewOptions.everything())``,
        or fields of the view changed (``report.with_view(framework=True)``). The data is the
        same object's; only :attr:`view` differs."""
        from dataclasses import replace

        chosen = replace(view or self.view, **changes)
        return self if chosen == self.view else replace(self, view=chosen)

    def with_options(self, show_framework: bool = False) -> TraceReport:
        """``report.with_options(show_framework=True)``: the report shown as ``--all`` shows it
        (every function, every graph). Kept for code written before :meth:`with_view`."""
        return self.with_view(ViewOptions.of_all(show_framework))

    def with_timings(self, compare_eager: dict[str, Any]) -> TraceReport:
        """The report with the graph-vs-eager timings of ``--compare-eager`` added."""
        from dataclasses import replace

        return replace(self, compare_eager=compare_eager)

    @property
    def show_framework(self) -> bool:
        """Whether the report lists TensorFlow's and Keras's own functions (``view.framework``)."""
        return self.view.framework

    # ----------------------------------------------------------------- summaries
    @property
    def shown_functions(self) -> tuple[FunctionSummary, ...]:
        """The functions :attr:`view` lists (framework ones only with ``view.framework``)."""
        return self.listed()

    def listed(self, view: ViewOptions | None = None) -> tuple[FunctionSummary, ...]:
        """The functions ``view`` (default :attr:`view`) lists, in its order: as first seen, or
        with ``sort="cost"`` the costliest retraces first (:meth:`retrace_seconds`; then the
        most tracing time)."""
        chosen = view or self.view
        rows = chosen.listed(self.functions)
        if chosen.sort != "cost":
            return rows
        return tuple(sorted(rows, key=lambda f: (-self.retrace_seconds(f), -f.trace_seconds)))

    @cached_property
    def call_sites(self) -> tuple[CallSite, ...]:
        """Per function, per line of the user's code that called it and traced: traces,
        retraces and what they cost, in the order first seen (the JSON's ``call_sites``)."""
        return call_sites(self.events)

    def retrace_seconds(self, fn: FunctionSummary) -> float:
        """The time of ``fn``'s calls that retraced (their tracing included): what its retraces
        cost, the sum of its call sites'."""
        return sum(s.retrace_seconds for s in self.call_sites if s.key == fn.key)

    @property
    def summarised_calls(self) -> int:
        """Cached calls summarised into runs (no per-call event) to keep a long watch small."""
        return sum(r.calls for r in self.runs)

    @property
    def selection(self) -> Selection:
        """The functions :attr:`view` totals: every one with ``view.framework``, else the
        user's. A rendering option: :attr:`traces` and the other numbers never change with it."""
        return self.view.selection

    def totals(self, selection: Selection | str = Selection.USER) -> Totals:
        """Calls, traces, retraces, tracing time, the mean cached call... of ``selection``
        (``"user"``: the functions the user wrote, the default; ``"all"``: TF's and Keras's
        too). The one sum: live counters, TensorBoard, the timeline and the renderings use it."""
        return totals(self.functions, Selection(selection))

    @property
    def shown_totals(self) -> Totals:
        """The totals of the functions the renderings list (:attr:`selection`)."""
        return self.totals(self.selection)

    def selects(self, event: Event, selection: Selection | str = Selection.USER) -> bool:
        """Whether ``event`` belongs to a function of ``selection``."""
        if Selection(selection) is Selection.ALL:
            return True
        framework = {f.key for f in self.functions if f.framework}
        return event.key not in framework

    @property
    def counted_functions(self) -> tuple[FunctionSummary, ...]:
        """The shown functions whose traces TF counts on the user's objects: not the graphs TF
        built around them (tf.data wrappers, replica clones; rows with ``wraps`` set)."""
        return tuple(f for f in self.shown_functions if not f.wraps)

    @property
    def wrapper_graphs(self) -> dict[str, int]:
        """``{"tf.data wrapper": 2, ...}``: graphs TF built around the user's functions, by kind.
        Not in :attr:`traces` (TF counts them on none of the user's functions); their tracing
        time is in :attr:`trace_seconds` (it is time the cell spent tracing)."""
        return self.totals().wrapper_graphs

    @property
    def hidden_functions(self) -> int:
        return len(self.functions) - len(self.shown_functions)

    @property
    def calls(self) -> int:
        """Calls of the user's functions (``totals("all")`` for TF's and Keras's too)."""
        return self.totals().calls

    @property
    def traces(self) -> int:
        """Traces of the user's functions as TF counts them (graphs built around them apart)."""
        return self.totals().traces

    @property
    def retraces(self) -> int:
        """Retraces of the user's functions (decided when each graph was recorded)."""
        return self.totals().retraces

    @property
    def trace_seconds(self) -> float:
        return self.totals().trace_seconds

    @property
    def mean_cached_seconds(self) -> float | None:
        """Mean time of a user function's call that neither traced nor compiled with XLA."""
        return self.totals().mean_cached_seconds

    @property
    def xla_compiles(self) -> int:
        """XLA compilations of the user's functions' graphs (``jit_compile=True``)."""
        return self.totals().xla_compiles

    @property
    def retrace_events(self) -> tuple[Event, ...]:
        """Events of the shown functions that retraced (a rendering's list: see :attr:`selection`)."""
        return tuple(e for e in self.events if e.retrace and self.selects(e, self.selection))

    def untimed_traces(self, fn: FunctionSummary | None = None, selection: Selection | str | None = None) -> int:
        """Traces of ``fn`` (or of the functions of ``selection``, default :attr:`selection`)
        whose call began before the watch, on another thread: counted, but their cost was not
        measured (not in ``trace_seconds``)."""
        if fn is not None:
            return sum(e.traces for e in self.events if e.began_before_watch and e.key == fn.key)
        chosen = self.selection if selection is None else selection
        return sum(e.traces for e in self.events if e.began_before_watch and self.selects(e, chosen))

    def function(self, name: str) -> FunctionSummary:
        """The summary of the function whose label or Python qualname is ``name``, else whose
        label or qualname ends in ``.name``, or whose label ends in ``· name``: ``"fit · train
        step"`` finds ``"sequential · fit · train step"``, ``"one_step_on_data"`` Keras's step
        (the label first: a qualname several rows share finds the first of them)."""
        matches = [f for f in self.functions if name_match(name, f.qualname, f.label)]
        matches.sort(key=lambda f: (-name_match(name, f.qualname, f.label), f.label != name))
        if not matches:
            known = ", ".join(sorted({f.label for f in self.functions})) or "none"
            raise KeyError(f"no function {name!r} in this report; functions seen: {known}")
        return matches[0]

    def traces_by_function(self) -> dict[str, int]:
        """``{label: traces}`` (the label is the qualname but for names made for people, e.g.
        Keras's steps), summed over files, for every function seen (not the graphs TF built
        around them: see :attr:`wrapper_graphs`)."""
        out: dict[str, int] = {}
        for f in self.functions:
            if f.wraps:
                continue
            out[f.label] = out.get(f.label, 0) + f.traces
        return out

    def plan(self, function: FunctionSummary | str) -> FunctionPlan:
        """The ranked fixes of a function (a summary of this report, or a name as
        :meth:`function` takes it): best first, each with the graphs it leaves for the calls seen;
        a change that saves no graph is not among them (:mod:`tfgraph_lab.explain.plan`)."""
        from ..explain.plan import plan_fixes

        fn = function if isinstance(function, FunctionSummary) else self.function(function)
        reasons = [r for e in self.events if e.key == fn.key for r in e.reasons]
        return plan_fixes(fn, reasons)

    def suggest(self, name: str) -> str | None:
        """The decorator or call change that would stop ``name`` (a label or qualname, as for
        :meth:`function`) retracing, if any."""
        return self.function(name).suggestion

    def explore(self) -> Any:
        """An explorer widget: filter by function, pick a call to see its graph and reasons.
        A shim for :func:`tfgraph_lab.explore` (the views sit above the report, which is data:
        the shim reaches them through the package's public names, never by importing them)."""
        import tfgraph_lab

        return tfgraph_lab.explore(self)

    def try_fix(
        self,
        name: str | None = None,
        *,
        rerun: Callable[[], Any],
        namespace: MutableMapping[str, Any] | None = None,
    ) -> FixTrial:
        """Run ``rerun`` again with the fix that saves most graphs for ``name`` (default: the
        first function that retraced) applied, and return the figures before → after (a
        :class:`~tfgraph_lab.report.fix_trial.FixTrial`). ``rerun`` runs two or three times:
        once as written (for the outputs to compare), once with the fix, and once more as
        written when the outputs differ or the fix raised; each run starts from the state of
        now, which is restored afterwards (names in ``namespace``, default ``rerun``'s globals,
        the contents of their lists/dicts/sets, reachable tf.Variables, the RNGs). The fix is
        read from the report as data, never evaluated. ``%%tracewatch --try-fix`` does the same
        for a cell. A shim for :func:`tfgraph_lab.try_fix`, reached through the package's
        public names."""
        import tfgraph_lab

        return tfgraph_lab.try_fix(self, name, rerun=rerun, namespace=namespace)

    def headline(self) -> str:
        from ..render.text import headline

        return headline(self, self.view)

    # ---------------------------------------------------------------------- JSON
    def to_dict(self) -> dict[str, Any]:
        """The report as JSON version 1 (see docs/ARCHITECTURE.md)."""
        return {
            "version": JSON_VERSION,
            "tf_version": self.tf_version,
            "seconds": self.seconds,
            "eager_calls": self.eager_calls,
            "degraded": list(self.degraded),
            "budget": self.budget,
            **({"budget_warnings": list(self.budget_warnings)} if self.budget_warnings else {}),
            "functions": [f.to_dict() for f in self.functions],
            "events": [e.to_dict() for e in self.events],
            "events_summarised": self.summarised_calls,
            "summarised_runs": [r.to_dict() for r in self.runs],
            "call_sites": [s.to_dict() for s in self.call_sites],
            "warnings": list(self.warnings),
            **({"compare_eager": self.compare_eager} if self.compare_eager else {}),
            **({"labels": dict(self.labels)} if self.labels else {}),
            **({"processes": [dict(p) for p in self.processes]} if self.processes else {}),
            **({"watch_seconds": self.watch_seconds} if self.watch_seconds else {}),
        }

    def to_json(self, indent: int | None = None) -> str:
        return json.dumps(self.to_dict(), indent=indent, ensure_ascii=False)

    def to_chrome_trace(self) -> dict[str, Any]:
        """The calls as a timeline in Chrome Trace Event Format (open it in Perfetto or
        ``chrome://tracing``): one event per call, traced calls with ``"cat": "trace"``."""
        from ..render.chrome_trace import render_chrome_trace

        return render_chrome_trace(self)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> TraceReport:
        """Rebuild a report from :meth:`to_dict` output (e.g. a ``--json`` file). Checked
        against JSON version 1's schema first: a ValueError names the first bad field
        (``$.compare_eager.graph_seconds: expected a number >= 0, got 'x'``), never a failure
        later, when the report is shown."""
        if isinstance(data, dict) and data.get("version") != JSON_VERSION:
            raise ValueError(
                f"unsupported tfgraph_lab JSON version {data.get('version')!r}; "
                f"this version reads version {JSON_VERSION}"
            )
        problem = first_problem(data)
        if problem is not None:
            raise ValueError(f"not the shape of a report (JSON version 1): {problem}")
        return cls(
            functions=tuple(FunctionSummary.from_dict(f) for f in data.get("functions", [])),
            events=tuple(Event.from_dict(e) for e in data.get("events", [])),
            warnings=tuple(data.get("warnings", [])),
            seconds=float(data.get("seconds", 0.0)),
            tf_version=str(data.get("tf_version", "")),
            eager_calls=int(data.get("eager_calls", 0)),
            degraded=tuple(data.get("degraded", [])),
            budget=data.get("budget"),
            budget_warnings=tuple(str(w) for w in data.get("budget_warnings") or ()),
            compare_eager=data.get("compare_eager"),
            runs=tuple(CallRun.from_dict(r) for r in data.get("summarised_runs", [])),
            labels={str(k): str(v) for k, v in (data.get("labels") or {}).items()},
            processes=tuple(data.get("processes") or ()),
            watch_seconds=float(data.get("watch_seconds") or 0.0),
        )

    @classmethod
    def from_json(cls, text: str) -> TraceReport:
        return cls.from_dict(json.loads(text))

    # ------------------------------------------------------------------- display
    def __str__(self) -> str:
        from ..render.text import render_text

        if self.view.brevity == "summary":
            from ..render.summary import render_summary

            return render_summary(self, self.view)
        return render_text(self, self.view)

    def __repr__(self) -> str:
        return f"<TraceReport: {self.headline()}>"

    def _repr_pretty_(self, p: Any, cycle: bool) -> None:
        p.text(str(self) if not cycle else "<TraceReport …>")

    def _repr_html_(self) -> str:
        from ..render.html import render_html

        if self.view.brevity == "summary":
            from ..render.summary import render_summary_html

            return render_summary_html(self, self.view)
        return render_html(self, self.view)

    def _repr_mimebundle_(self, include: Iterable[str] | None = None, exclude: Any = None) -> dict[str, str]:
        return {"text/plain": str(self), "text/html": self._repr_html_()}
