"""A fix tried on the learner's own code: which fix, the figures before and after, the verdict.

:func:`choose_fix` picks the fix to try from a report (the plan that saves most graphs for the
calls seen, of the first function that retraced); :class:`RunFigures` holds one run's figures
for that function, read from a report; :class:`FixTrial` is the result of trying it (modelled on
IPython's ``TimeitResult``: raw fields, derived properties, ``__str__`` and ``_repr_html_``).
Running the code with the fix applied is :mod:`tfgraph_lab.trial.tryfix`'s work.

A report is data, also when it is read back from a file: a plan's decorator text and its
call-site rewrites are never evaluated. :func:`parse_decorator` and :func:`parse_call` read
them with a tiny strict grammar (the keywords ``input_signature`` — nested lists, tuples and
dicts of ``tf.TensorSpec(shape, tf.<dtype>)`` —, ``reduce_retracing``, ``jit_compile``,
``autograph``; the rewrites ``tf.constant(p)``, ``tf.cast(p, tf.<dtype>)``, ``tf.stack(p)``)
into typed options, and refuse anything else (:class:`FixRefused`); :func:`decorator_kwargs`
builds TensorFlow's objects from those options with the ``tf`` module it is handed.

Pure: plain data only. Imports neither TensorFlow, IPython nor ipywidgets.
"""

from __future__ import annotations

import re
import statistics
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from ..explain.fixes import code_name
from ..explain.trace import NOT_RETRACES
from ..model.errors import UsageProblem
from ..model.records import FixPlan, FunctionSummary, name_match
from ..model.vocab import ReasonCode, Via
from ..render.xla import xla_kind

if TYPE_CHECKING:
    from .trace_report import TraceReport

__all__ = [
    "XLA_OFF",
    "CallRewrite",
    "DecoratorOption",
    "FixChoice",
    "FixRefused",
    "FixTrial",
    "RunFigures",
    "SpecData",
    "choose_fix",
    "decorator_kwargs",
    "parse_call",
    "parse_decorator",
]

# The fix for a function that XLA compiles again for every new shape (no retrace needed):
# measured on TF 2.21, jit_compile=False leaves 0 XLA compilations and the same graphs.
XLA_OFF = FixPlan(
    decorator="jit_compile=False",
    graphs=0,
    promise="no XLA compilation",
    trade="the function runs without XLA: whatever XLA's fused kernels saved is lost",
)


class FixRefused(UsageProblem):
    """A plan's text is outside the grammar of the fixes this tool writes: it is not tried."""


def _refuse(text: str, why: str) -> FixRefused:
    return FixRefused(
        f"try-fix refused the fix {text!r}: {why}. A report is data: the fix is read with a strict "
        "grammar (input_signature of tf.TensorSpec(shape, tf.<dtype>), reduce_retracing, "
        "jit_compile, autograph; tf.constant / tf.cast / tf.stack of a parameter at the call "
        "sites), never run as code"
    )


# The dtypes a TensorSpec of a fix may name (tf.dtypes.as_dtype takes the name).
DTYPES = frozenset(
    ["float16", "bfloat16", "float32", "float64", "int8", "int16", "int32", "int64", "uint8"]
    + ["uint16", "uint32", "uint64", "bool", "complex64", "complex128", "string"]
)

_TOKEN = re.compile(
    r"\s*(?:(?P<name>[A-Za-z_][A-Za-z0-9_]*(?:\.[A-Za-z_][A-Za-z0-9_]*)*)|(?P<int>[0-9]+)"
    r"|(?P<str>'[A-Za-z0-9_ .:/-]*'|\"[A-Za-z0-9_ .:/-]*\")|(?P<punct>[\[\](){},:=]))"
)


@dataclass(frozen=True)
class SpecData:
    """``tf.TensorSpec(shape, tf.<dtype>)`` as data: ``shape`` None for any rank."""

    shape: tuple[int | None, ...] | None
    dtype: str


SpecTree = SpecData | list[Any] | tuple[Any, ...] | dict[Any, Any]
OptionValue = bool | None | SpecTree


@dataclass(frozen=True)
class DecoratorOption:
    """One keyword of ``tf.function`` a fix sets, as data."""

    name: str
    value: OptionValue


class _Parser:
    """The tokens of one decorator text, read by the grammar's rules (recursive descent)."""

    def __init__(self, text: str) -> None:
        self.text, self.tokens, pos = text, [], 0
        while pos < len(text):
            if text[pos:].strip() == "":
                break
            m = _TOKEN.match(text, pos)
            if m is None or m.end() == pos:
                raise _refuse(text, f"unexpected text at {text[pos : pos + 20]!r}")
            kind = m.lastgroup
            assert kind is not None
            self.tokens.append((kind, m.group(kind)))
            pos = m.end()
        self.i = 0

    def peek(self) -> tuple[str, str]:
        return self.tokens[self.i] if self.i < len(self.tokens) else ("end", "")

    def take(self, value: str | None = None, kind: str | None = None) -> str:
        k, v = self.peek()
        if (value is not None and v != value) or (kind is not None and k != kind) or k == "end":
            raise _refuse(self.text, f"expected {value or kind}, found {v or 'the end'!r}")
        self.i += 1
        return v

    def at(self, value: str) -> bool:
        return self.peek()[1] == value and self.peek()[0] == "punct"

    def items(self, close: str, item: Any) -> list[Any]:
        out = []
        while not self.at(close):
            out.append(item())
            if not self.at(close):
                self.take(",")
        self.take(close)
        return out

    def decorator(self) -> tuple[DecoratorOption, ...]:
        options: list[DecoratorOption] = []
        while self.peek()[0] != "end":
            name = self.take(kind="name")
            self.take("=")
            if name in (o.name for o in options):
                raise _refuse(self.text, f"{name} is given twice")
            if name == "input_signature":
                self.take("[")
                value: OptionValue = self.items("]", self.spec)
            elif name in ("reduce_retracing", "autograph"):
                value = self.constant(allow_none=False)
            elif name == "jit_compile":
                value = self.constant(allow_none=True)
            else:
                raise _refuse(self.text, f"{name} is not a keyword a fix sets")
            options.append(DecoratorOption(name, value))
            if self.peek()[0] != "end":
                self.take(",")
        return tuple(options)

    def constant(self, allow_none: bool) -> bool | None:
        word = self.take(kind="name")
        if word in ("True", "False"):
            return word == "True"
        if word == "None" and allow_none:
            return None
        raise _refuse(self.text, f"{word!r} is not True or False")

    def spec(self) -> SpecTree:
        if self.at("["):
            self.take("[")
            return self.items("]", self.spec)
        if self.at("("):
            self.take("(")
            return tuple(self.items(")", self.spec))
        if self.at("{"):
            self.take("{")
            return dict(self.items("}", self.entry))
        self.take("tf.TensorSpec", kind="name")
        self.take("(")
        if self.peek() == ("name", "None"):
            self.take("None")
            shape: tuple[int | None, ...] | None = None
        else:
            self.take("[")
            shape = tuple(self.items("]", self.dim))
        self.take(",")
        dtype = self.take(kind="name")
        if not dtype.startswith("tf.") or dtype[3:] not in DTYPES:
            raise _refuse(self.text, f"{dtype} is not a TensorFlow dtype")
        self.take(")")
        return SpecData(shape, dtype[3:])

    def dim(self) -> int | None:
        if self.peek() == ("name", "None"):
            self.take("None")
            return None
        return int(self.take(kind="int"))

    def entry(self) -> tuple[Any, SpecTree]:
        if self.peek()[0] == "str":
            key: Any = self.take(kind="str")[1:-1]
        else:
            key = int(self.take(kind="int"))
        self.take(":")
        return key, self.spec()


def parse_decorator(text: str) -> tuple[DecoratorOption, ...]:
    """The keywords of a plan's decorator text, as data; :class:`FixRefused` for anything
    outside the grammar (see the module docstring). Never evaluates the text."""
    return _Parser(text).decorator()


def decorator_kwargs(text: str, tf: Any) -> dict[str, Any]:
    """``tf.function``'s keyword arguments for a plan's decorator text, built with the ``tf``
    module passed in from the options :func:`parse_decorator` reads."""

    def build(value: Any) -> Any:
        if isinstance(value, SpecData):
            return tf.TensorSpec(
                None if value.shape is None else list(value.shape), tf.dtypes.as_dtype(value.dtype)
            )
        if isinstance(value, list):
            return [build(v) for v in value]
        if isinstance(value, tuple):
            return tuple(build(v) for v in value)
        if isinstance(value, dict):
            return {k: build(v) for k, v in value.items()}
        return value

    return {o.name: build(o.value) for o in parse_decorator(text)}


_PATH = r"[A-Za-z_][A-Za-z0-9_]*(?:\[(?:[0-9]+|'[A-Za-z0-9_ ]*')\]|\.[A-Za-z_][A-Za-z0-9_]*)*"
_REWRITE = re.compile(
    rf"tf\.(?P<kind>constant|stack)\((?P<a>{_PATH})\)|tf\.cast\((?P<b>{_PATH}), tf\.(?P<dtype>[a-z0-9]+)\)"
)


@dataclass(frozen=True)
class CallRewrite:
    """One call-site rewrite as data: ``tf.constant(p)``, ``tf.cast(p, tf.<dtype>)`` or
    ``tf.stack(p)`` for the argument ``parameter``."""

    parameter: str
    kind: str  # "constant", "cast" or "stack"
    dtype: str = ""  # the cast's

    @property
    def whole(self) -> bool:
        """A parameter itself (``lr``, ``args_0``), not a part of one (``batch[0]``, ``p.x``)."""
        return self.parameter.isidentifier()


def parse_call(call: Sequence[tuple[str, str]]) -> tuple[CallRewrite, ...]:
    """A plan's call-site rewrites as data; :class:`FixRefused` for anything else."""
    out = []
    for parameter, expression in call:
        text = f"{parameter} → {expression}"
        m = _REWRITE.fullmatch(expression)
        if not re.fullmatch(_PATH, parameter) or m is None:
            raise _refuse(text, "not a rewrite a fix writes")
        if (m.group("a") or m.group("b")) != parameter:
            raise _refuse(text, "the rewrite names another argument")
        dtype = m.group("dtype") or ""
        if m.group("b") is not None and dtype not in DTYPES:
            raise _refuse(text, f"tf.{dtype} is not a TensorFlow dtype")
        out.append(CallRewrite(parameter, m.group("kind") or "cast", dtype))
    return tuple(out)


def _partial_rewrite(plan: FixPlan) -> bool:
    """A plan that rewrites a part of an argument (``batch[0]``): shown, not tried."""
    try:
        return any(not r.whole for r in parse_call(plan.call))
    except FixRefused:
        return False  # refused when tried, with the reason


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
        """A decorator change, "create it once" or a rewrite of whole arguments at the call
        sites: what a re-run can apply by itself (a rewrite through a thin wrapper)."""
        plan = self.plan
        if plan is None or not (plan.decorator or plan.hoist or plan.call):
            return False
        return not _partial_rewrite(plan)


def _retracing_functions(report: TraceReport) -> list[FunctionSummary]:
    return [
        f
        for f in report.counted_functions
        if f.retraces > 0 or (f.jit_compile and f.xla_compiles > max(f.traces, 1))
    ]


def choose_fix(report: TraceReport, name: str | None = None) -> FixChoice | None:
    """The fix to try for ``name`` (or for the first function that retraced, or that XLA
    compiled again without a retrace); None when nothing retraced.

    The best fix of the function's ranked plan (``report.plan``, :mod:`tfgraph_lab.explain.plan`):
    the first fix every view shows, the one that saves most graphs for the calls seen; a plan
    that saves no graph is never tried."""
    candidates = _retracing_functions(report)
    if name is not None:
        candidates = [f for f in candidates if name_match(name, f.qualname, f.label)]
    if not candidates:
        return None
    f = candidates[0]
    key = f.key
    reasons = [
        r
        for e in report.retrace_events
        if e.key == key
        for r in e.reasons
        if r.code not in NOT_RETRACES
    ]
    if reasons:
        plan = report.plan(f)
        if plan.best is not None:
            return FixChoice(f, plan.best.plan, plan.best.code)
        first = reasons[0]
        if not any(r.plans for r in reasons):
            return FixChoice(f, None, first.code, first.fix)
        return FixChoice(
            f,
            None,
            first.code,
            f"no fix of the report leaves fewer graphs than the {plan.before} the calls used: "
            + first.fix,
        )
    if f.jit_compile and f.xla_compiles > max(f.traces, 1):
        return FixChoice(f, XLA_OFF, "xla-recompile")
    return FixChoice(f, None, ReasonCode.UNEXPLAINED, f.suggestion or "")


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
        """The figures of the function at ``function``'s place (its row: label and file) in ``report``."""
        key = function.key
        matches = [f for f in report.functions if f.key == key]
        events = [e for e in report.events if e.key == key and e.via == Via.CALL]
        traced = [e for e in report.retrace_events if e.key == key]
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
VERDICTS = ("fails", "changes-outputs", "no-fewer-traces", "works", "not-tried", "not-applied")


@dataclass(frozen=True)
class FixTrial:
    """What trying one fix did. ``outputs`` is ``equal``, ``differ``, ``noisy`` (they cannot
    tell anything about the fix: the fixed graph draws other random numbers, or a run as
    written again differs from the first too; ``outputs_detail`` says which) or ``not compared``.
    ``untried`` says why a fix applied could not be tried (the code raised before it called
    the fixed function, or raises without the fix too); ``tried`` how a call-site change was
    tried without editing the code."""

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
    untried: str = ""  # why the fix, applied, could not be tried
    tried: str = ""  # how the fix was tried (a call-site change: the wrapper that converts)
    label: str = ""  # the function as the report shows it ("" means ``function``, its qualname)

    @property
    def shown_name(self) -> str:
        """The function as the trial's text names it: its label (its code calls it :attr:`name`)."""
        return self.label or self.function

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
        if self.untried:
            return "not-tried"
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
            "label": self.shown_name,
            "fix": self.plan.to_dict() if self.plan else None,
            "applied": self.applied,
            "verdict": self.verdict,
            "before": figures(self.before),
            "after": figures(self.after),
            "outputs": self.outputs,
            "error": self.error,
            "note": self.note,
            "untried": self.untried,
            "tried": self.tried,
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
