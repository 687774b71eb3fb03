"""A fix tried on the learner's own code: which fix, the figures before and after, the verdict.

:func:`choose_fix` picks the fix to try from a report (the first fix the report prints for the
first function that retraced); :class:`RunFigures` holds one run's figures for that function,
read from a report; :class:`FixTrial` is the result of trying it (modelled on IPython's
``TimeitResult``: raw fields, derived properties, ``__str__`` and ``_repr_html_``). Running
the code with the fix applied is :mod:`tfgraph_lab.trial.tryfix`'s work.

Pure: plain data only. Imports neither TensorFlow, IPython nor ipywidgets.
"""

from __future__ import annotations

import statistics
from dataclasses import dataclass
from typing import TYPE_CHECKING

from ..explain.fixes import code_name
from ..explain.trace import NOT_RETRACES
from ..model.records import FixPlan, FunctionSummary
from ..model.vocab import ReasonCode, Via
from ..render.xla import xla_kind

if TYPE_CHECKING:
    from .trace_report import TraceReport

__all__ = ["XLA_OFF", "FixChoice", "FixTrial", "RunFigures", "choose_fix"]

# The fix for a function that XLA compiles again for every new shape (no retrace needed):
# measured on TF 2.21, jit_compile=False leaves 0 XLA compilations and the same graphs.
XLA_OFF = FixPlan(
    decorator="jit_compile=False",
    graphs=0,
    promise="no XLA compilation",
    trade="the function runs without XLA: whatever XLA's fused kernels saved is lost",
)


@dataclass(frozen=True)
class FixChoice:
    """The fix to try for one function, and whether a program can apply it."""

    function: FunctionSummary
    plan: FixPlan | None  # None: the report gives advice only
    code: str  # the reason code it cures
    advice: str = ""  # the fix text when there is no plan

    @property
    def name(self) -> str:
        return code_name(self.function.qualname)

    @property
    def applicable(self) -> bool:
        """A decorator change or "create it once": what a re-run can apply by itself."""
        return self.plan is not None and not self.plan.call and bool(self.plan.decorator or self.plan.hoist)


def _retracing_functions(report: TraceReport) -> list[FunctionSummary]:
    return [
        f
        for f in report.counted_functions
        if f.retraces > 0 or (f.jit_compile and f.xla_compiles > max(f.traces, 1))
    ]


def choose_fix(report: TraceReport, name: str | None = None) -> FixChoice | None:
    """The first fix the report prints for ``name`` (or for the first function that retraced,
    or that XLA compiled again without a retrace); None when nothing retraced.

    The fix is the first plan of the function's first retrace reason, as of that reason's last
    occurrence: a plan is built from the graphs seen so far, so the last one of the same kind
    (same code and argument, same decorator keyword or call-site rewrite) covers every call of
    the run — an input_signature wide enough for all of them, the graphs it leaves for all."""
    candidates = _retracing_functions(report)
    if name is not None:
        candidates = [f for f in candidates if f.qualname == name or f.qualname.endswith("." + name)]
    if not candidates:
        return None
    f = candidates[0]
    reasons = [
        r
        for e in report.retrace_events
        if (e.qualname, e.filename) == (f.qualname, f.filename)
        for r in e.reasons
        if r.code not in NOT_RETRACES
    ]
    if reasons:
        first = reasons[0]
        if not first.plans:
            return FixChoice(f, None, first.code, first.fix)
        plan = first.plans[0]
        for later in reversed(reasons):
            same = [p for p in later.plans if _kind(p) == _kind(plan)]
            if (later.code, later.argument) == (first.code, first.argument) and same:
                return FixChoice(f, same[0], first.code)
    if f.jit_compile and f.xla_compiles > max(f.traces, 1):
        return FixChoice(f, XLA_OFF, "xla-recompile")
    return FixChoice(f, None, ReasonCode.UNEXPLAINED, f.suggestion or "")


def _kind(plan: FixPlan) -> tuple[str, tuple[tuple[str, str], ...], bool]:
    """What a plan changes: the decorator keyword, the call-site rewrites, hoisting."""
    return plan.decorator.split("=", 1)[0], plan.call, plan.hoist


@dataclass(frozen=True)
class RunFigures:
    """One run of the code, for the function a fix is tried on."""

    traces: int
    retraces: int
    xla_compiles: int
    seconds: float  # the whole run (cell or callable)
    calls: int
    call_seconds: float  # time in the function's calls
    call_times: tuple[float, ...] = ()  # per-call times (calls kept as events)
    xla_kind: str = ""  # how xla_compiles was obtained: "exact", "at-least", "about" (render/xla.py)

    @classmethod
    def from_report(cls, report: TraceReport, function: FunctionSummary, seconds: float) -> RunFigures:
        """The figures of the function at ``function``'s place (qualname and file) in ``report``."""
        key = (function.qualname, function.filename)
        matches = [f for f in report.functions if (f.qualname, f.filename) == key]
        events = [e for e in report.events if (e.qualname, e.filename) == key and e.via == Via.CALL]
        traced = [e for e in report.retrace_events if (e.qualname, e.filename) == key]
        retraces = len(traced)
        # A re-run's first object is "new" to the history (its code traced before): its first
        # trace is a first trace of this run, not a retrace.
        first = next((e for e in events if e.traced), None)
        if first is not None and first.reasons and first.reasons[0].code == ReasonCode.NEW_FUNCTION_OBJECT:
            retraces -= 1
        return cls(
            traces=sum(f.traces for f in matches),
            retraces=max(retraces, 0),
            xla_compiles=sum(f.xla_compiles for f in matches),
            seconds=seconds,
            calls=sum(f.calls for f in matches),
            call_seconds=sum(f.call_seconds for f in matches),
            call_times=tuple(e.seconds for e in events),
            xla_kind=next((xla_kind(f) for f in matches if f.xla_compiles), ""),
        )

    @property
    def mean(self) -> float | None:
        return self.call_seconds / self.calls if self.calls else None

    @property
    def stdev(self) -> float | None:
        return statistics.stdev(self.call_times) if len(self.call_times) >= 2 else None

    @property
    def median(self) -> float | None:
        return statistics.median(self.call_times) if self.call_times else None


# Verdicts, most serious first (also CSS classes: tfgl-trial-<verdict>).
VERDICTS = ("fails", "changes-outputs", "no-fewer-traces", "works", "not-applied")


@dataclass(frozen=True)
class FixTrial:
    """What trying one fix did. ``outputs`` is ``equal``, ``differ``, ``noisy`` (they differ
    between two runs without the fix too) or ``not compared``."""

    function: str
    plan: FixPlan | None
    applied: bool
    before: RunFigures
    after: RunFigures | None = None
    outputs: str = "not compared"
    outputs_detail: str = ""
    error: str | None = None  # TensorFlow's error when the code raised with the fix
    note: str = ""  # why it was not applied, or what the re-run could not restore
    reruns: tuple[str, ...] = ()  # the runs made after the watched one, in order, and why
    code: str = ""  # the reason code the fix cures
    advice: str = ""  # the report's fix text when no plan could be applied

    @property
    def name(self) -> str:
        return code_name(self.function)

    @property
    def measure(self) -> str:
        """What the fix should reduce: ``traces``, or ``xla_compiles`` for jit_compile=False."""
        return (
            "xla_compiles" if self.plan is not None and self.plan.decorator == XLA_OFF.decorator else "traces"
        )

    @property
    def verdict(self) -> str:
        if not self.applied or self.after is None:
            return "fails" if self.error else "not-applied"
        if self.error:
            return "fails"
        if self.outputs == "differ":
            return "changes-outputs"
        if getattr(self.after, self.measure) >= getattr(self.before, self.measure):
            return "no-fewer-traces"
        return "works"

    @property
    def saved(self) -> int:
        """Traces (or XLA compilations) the fix saved; negative when it added some."""
        if self.after is None:
            return 0
        return int(getattr(self.before, self.measure)) - int(getattr(self.after, self.measure))

    def to_dict(self) -> dict[str, object]:
        def figures(r: RunFigures | None) -> dict[str, object] | None:
            if r is None:
                return None
            return {
                "traces": r.traces,
                "retraces": r.retraces,
                "xla_compiles": r.xla_compiles,
                "seconds": r.seconds,
                "calls": r.calls,
                "mean_call_seconds": r.mean,
                "stdev_call_seconds": r.stdev,
            }

        return {
            "function": self.function,
            "fix": self.plan.to_dict() if self.plan else None,
            "applied": self.applied,
            "verdict": self.verdict,
            "before": figures(self.before),
            "after": figures(self.after),
            "outputs": self.outputs,
            "error": self.error,
            "note": self.note,
            "reruns": list(self.reruns),
        }

    def __str__(self) -> str:
        from ..render.fix_trial import render_trial_text

        return render_trial_text(self)

    def __repr__(self) -> str:
        after = "-" if self.after is None else getattr(self.after, self.measure)
        return f"<FixTrial {self.function}: {self.verdict}, {self.measure} {getattr(self.before, self.measure)} → {after}>"

    def _repr_pretty_(self, p: object, cycle: bool) -> None:
        p.text(str(self))  # type: ignore[attr-defined]

    def _repr_html_(self) -> str:
        from ..render.fix_trial import render_trial_html

        return render_trial_html(self)
