"""The lab's state machine: run lab actions under ``tfgraph_lab.watch()`` and keep what they showed.

``LabSession`` owns the current tf.function (re-built when the decorator settings change or the
cache is reset), runs each action (one call, a loop) inside its own watch, and folds the
TraceReport of each action into ``LabState``: calls, traces, the graph cache with hits, recent
call times and the reasons of the last trace. Counts come from the report and are checked
against TensorFlow's own ``experimental_get_tracing_count()``. Imports no ipywidgets.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from ..explain.failures import error_text
from ..model.counts import NOT_RETRACES
from ..model.records import Event, FixPlan, Reason
from ..model.vocab import Via
from ..render.format import visible
from ..watching.recorder import watch
from .scenario import LabScenario, LabSettings

__all__ = ["ActionResult", "CallPoint", "FixApplied", "GraphRow", "LabSession", "LabState"]

MAX_POINTS = 60  # calls kept for the timing chart
MAX_HISTORY = 500  # calls «Apply the fix» replays (the most recent)


@dataclass
class GraphRow:
    """One graph in the current function's cache, in the order it was traced."""

    signature: str
    hits: int = 0
    traced_at: int = 0  # the lab call number that traced it


@dataclass(frozen=True)
class CallPoint:
    """One call for the timing chart."""

    number: int
    seconds: float
    traced: bool
    failed: bool = False


@dataclass(frozen=True)
class ActionResult:
    """What one action (a call, or a loop of calls) did."""

    kind: str
    calls: int
    traces: int
    events: tuple[Event, ...]
    error: str | None = None
    graphs_hit: tuple[int, ...] = ()
    xla_compiles: int = 0  # XLA compilations (jit_compile=True), with or without a trace
    xla_kind: str = ""  # how they were counted: "exact" (TF's compile log), "at-least", "about"

    @property
    def traced(self) -> bool:
        return self.traces > 0

    @property
    def reasons(self) -> tuple[Reason, ...]:
        return tuple(r for e in self.events for r in e.reasons)

    @property
    def retraces(self) -> int:
        """Graphs this action traced that were retraces (decided when recorded)."""
        return sum(e.retraces for e in self.events)


@dataclass(frozen=True)
class FixApplied:
    """What «Apply the fix» did: the change, the graphs before and after (TensorFlow's own
    counts) for the same calls replayed, and TensorFlow's error if a replayed call raised."""

    plan: FixPlan
    calls: int
    graphs_before: int
    graphs_after: int
    error: str | None = None


@dataclass
class LabState:
    """What the lab shows: counts of the current function object and its graph cache."""

    calls: int = 0
    failed_calls: int = 0  # calls that raised (no graph ran)
    traces: int = 0
    tf_traces: int = 0
    xla_compiles: int = 0
    xla_kinds: tuple[str, ...] = ()  # each action's count kind: a modelled one makes the total "≥"
    last_compile: tuple[Reason, ...] = ()  # why XLA last compiled without a retrace
    last_compile_call: int | None = None
    graphs: list[GraphRow] = field(default_factory=list)
    points: list[CallPoint] = field(default_factory=list)
    last_trace: tuple[Reason, ...] = ()
    last_trace_call: int | None = None
    last_error: str | None = None
    last_action: ActionResult | None = None
    note: str = ""
    generation: int = 0  # +1 for every new tf.function object
    fixed: FixApplied | None = None  # set when «Apply the fix» built this function

    def graph_index(self, signature: str) -> int | None:
        for i, row in enumerate(self.graphs):
            if row.signature == signature:
                return i
        return None


class LabSession:
    """Runs the lab's actions and keeps :class:`LabState` in step with TensorFlow."""

    def __init__(
        self, fn: Callable[..., Any] | None = None, settings: LabSettings | Mapping[str, Any] | None = None
    ) -> None:
        if isinstance(settings, Mapping):
            settings = LabSettings(**settings)  # its checks name a bad value
        if settings is not None and not isinstance(settings, LabSettings):
            raise TypeError(
                f"settings must be a LabSettings or a dict of its fields, got {type(settings).__name__}"
            )
        self.scenario = LabScenario(fn)
        self.settings = settings or LabSettings()
        self.built = self.settings
        self.function: Any = None
        self.state = LabState()
        self.fix = ""  # a report's decorator change applied over the settings («Apply the fix»)
        self.history: list[tuple[LabSettings, int]] = []  # the current function's calls
        self.reset("")
        if self.scenario.python_fn is not fn:  # a tf.function: its own decorator is not the lab's
            self.state.note = (
                f"the lab traces {self.scenario.name}'s Python function with the decorator the "
                "settings below say; the options of the tf.function you passed are not used"
            )

    # --------------------------------------------------------------------- settings
    def update(self, **changes: Any) -> bool:
        """Change settings; a decorator change builds a new tf.function. True if it did."""
        new = self.settings.with_changes(**changes)
        rebuild = new.decorator() != self.settings.decorator()
        if rebuild:  # built first: a decorator TF refuses leaves the lab as it was
            function = self.scenario.build(new, "")
            self.settings = new
            self.reset(
                "the decorator changed: a new tf.function object, with an empty graph cache",
                function=function,
            )
        self.settings = new
        return rebuild

    def reset(
        self,
        note: str = "cache reset: a new tf.function object, with an empty graph cache",
        fix: str = "",
        function: Any = None,
    ) -> None:
        """A new tf.function (``function``, when already built from the settings and ``fix``)."""
        if function is None:
            function = self.scenario.build(self.settings, fix)  # may raise: nothing changed yet
        if self.fix and not fix:
            note += " (the applied fix is removed: the decorator is the settings' again)"
        self.built = self.settings
        self.fix = fix
        self.function = function
        generation = self.state.generation + 1
        self.state = LabState(note=note, generation=generation)
        self.history = []

    def suggested_fix(self) -> FixPlan | None:
        """The first decorator change the last trace's reasons give (what «Apply the fix»
        applies), or None: no retrace yet, a fix that changes call sites, or already applied."""
        for reason in self.state.last_trace:
            if reason.code in NOT_RETRACES:
                continue
            for plan in reason.plans:
                if plan.decorator and not plan.call and not plan.hoist and plan.decorator != self.fix:
                    return plan
        return None

    def apply_fix(self) -> FixApplied:
        """Build the function again with the suggested decorator change and replay the calls
        made so far on it: the graph cache it ends with, against the one before."""
        plan = self.suggested_fix()
        if plan is None:
            raise ValueError("no decorator fix to apply: call the function until it retraces first")
        calls, before = list(self.history), self.tracing_count
        self.reset(f"applied {plan.code(self.scenario.name)}: a new tf.function object", plan.decorator)
        result = self._run("fix", calls)
        self.state.fixed = FixApplied(plan, len(calls), before, self.tracing_count, result.error)
        self.state.note = f"applied {plan.code(self.scenario.name)}: a new tf.function object"
        return self.state.fixed

    @property
    def tracing_count(self) -> int:
        """TensorFlow's own count of graphs in the current function's cache."""
        return int(self.function.experimental_get_tracing_count())

    def code(self) -> str:
        """The code the settings amount to, invisible characters of the user's source written
        out (``\\u202e``: a Trojan Source shows what it holds)."""
        return visible(self.scenario.code(self.built, self.settings, self.fix))

    # ----------------------------------------------------------------------- actions
    def call_once(self) -> ActionResult:
        return self._run("call", [(self.settings, self.settings.batch)])

    def run_loop(self) -> ActionResult:
        return self._run("loop", [(self.settings, b) for b in self.settings.loop_batches()])

    def _run(self, kind: str, calls: list[tuple[LabSettings, int]]) -> ActionResult:
        fn = self.function
        # Build the tensors before watching: only the calls belong in the report.
        inputs = [self.scenario.arguments(settings, b) for settings, b in calls]
        error: str | None = None
        interrupted: BaseException | None = None
        made = 0  # calls made (the one that raised included): what «Apply the fix» replays
        with watch() as recorder:
            for x, flag in inputs:
                made += 1
                try:
                    fn(x, training=flag)
                except Exception as exc:  # shown to the learner, as TF says it
                    error = error_text(exc, limit=600)
                    break
                except BaseException as exc:  # Ctrl-C: show the calls made, then stop
                    interrupted = exc
                    error = f"{type(exc).__name__}: interrupted"
                    break
        del inputs
        self.history = (self.history + calls[:made])[-MAX_HISTORY:]
        report = recorder.report
        key = _own_key(report)
        events = tuple(e for e in report.events if e.key == key and e.via == Via.CALL)
        result = self._fold(kind, report, events, error, key)
        if interrupted is not None:
            raise interrupted
        return result

    def _fold(
        self,
        kind: str,
        report: Any,
        events: tuple[Event, ...],
        error: str | None,
        key: tuple[str, str] | None = None,
    ) -> ActionResult:
        state = self.state
        summary = next(
            (f for f in report.functions if f.key == key and not f.framework), None
        )
        hit_rows: list[int] = []
        row_of: dict[int, int] = {}  # index in this report's graphs → row of the lab's cache table
        if summary is not None:
            for i, graph in enumerate(summary.graphs):
                row_index = state.graph_index(graph.signature)
                if row_index is None:
                    state.graphs.append(GraphRow(graph.signature, 0, 0))
                    row_index = len(state.graphs) - 1
                row_of[i] = row_index
                state.graphs[row_index].hits += graph.hits
                if graph.hits:
                    hit_rows.append(row_index)
        traces = sum(e.traces for e in events)
        for e in events:
            state.calls += 1
            if e.error is not None:
                state.failed_calls += 1
            state.points.append(CallPoint(state.calls, e.seconds, e.traced, e.failed_trace or bool(e.error)))
            if e.xla_compiled and not e.traced:
                state.last_compile = e.xla_reasons
                state.last_compile_call = state.calls
            if e.traced or e.failed_trace:
                state.last_trace = e.reasons
                state.last_trace_call = state.calls
                if e.graph is not None and e.graph in row_of:
                    state.graphs[row_of[e.graph]].traced_at = state.calls
        del state.points[:-MAX_POINTS]
        state.traces += traces
        compiles = sum(1 for e in events if e.xla_compiled)
        xla_kind = ""
        if summary is not None:  # the report's count: from TF's compile log, or modelled
            compiles, xla_kind = summary.xla_compiles, summary.xla_compiles_kind
        state.xla_compiles += compiles
        if xla_kind and xla_kind not in state.xla_kinds:
            state.xla_kinds += (xla_kind,)
        state.tf_traces = self.tracing_count
        state.last_error = error
        state.note = ""
        result = ActionResult(kind, len(events), traces, events, error, tuple(hit_rows), compiles, xla_kind)
        state.last_action = result
        return result


def _own_key(report: Any) -> tuple[str, str] | None:
    """``(label, filename)`` the report gives the lab's own function: the last call of a lab
    action is always its own (a tf.function it calls records its call first, when that returns),
    whatever the callable is (a partial, an object, a lambda: the report names them its way)."""
    for e in reversed(report.events):
        if e.via == Via.CALL:
            key: tuple[str, str] = e.key
            return key
    return None
