"""The report's plain data: reasons with their fix plans, graphs, events, runs, function summaries.

Each type that appears in the JSON (version 1) has ``to_dict`` and, next to it, ``from_dict``.
Everything here is a frozen dataclass of strings (``vocab`` members are strings), numbers and
tuples. No TensorFlow, IPython or ipywidgets, and no reference to a user argument or to a
TensorFlow object: the recorder renders those to text before they arrive.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from .counts import is_retrace, mean_cached_seconds
from .vocab import Scope, Via

__all__ = [
    "CallEdit",
    "CallRun",
    "CallSite",
    "CallSource",
    "Event",
    "FixPlan",
    "FunctionSummary",
    "GraphSummary",
    "Reason",
    "call_sites",
    "name_match",
]


def _as_dict(obj: object, keys: tuple[str, ...], **values: object) -> dict[str, object]:
    """``{key: obj.key}`` for ``keys`` in order (the JSON's order); ``values`` replace an attribute
    that needs converting (tuples become lists, nested records dicts). For the few records per
    function; :meth:`Event.to_dict`, run per call, spells its dict out (3× faster)."""
    return {k: values[k] if k in values else getattr(obj, k) for k in keys}


@dataclass(frozen=True, slots=True)
class CallSource:
    """Where one of a function's calls that traced was made, and its source: ``text`` is the call
    expression exactly as written (``train_step(x, y, lr, True)``), at ``line``:``col`` to
    ``end_line``:``end_col`` (lines from 1, columns from 0 in characters, the end excluded);
    ``place`` is the caller as events name it (``file:line``), ``where`` as a reader reads it
    (``train.py:42``, ``In [3], line 2``). Without a source (a call from Keras's own code, code
    not on disk), ``text`` is "" and ``why`` says why. Built when the report is built, from the
    code object and instruction the watch kept of the call (never at call time)."""

    place: str
    where: str
    line: int = 0
    col: int = 0
    end_line: int = 0
    end_col: int = 0
    text: str = ""
    why: str = ""
    line_text: str = ""  # the whole line the call starts on, as written ("" when not read)


@dataclass(frozen=True, slots=True)
class CallEdit:
    """One call of the user's code as a fix rewrites it: ``was`` (the call as written, at
    ``line``:``col`` to ``end_line``:``end_col``, as in :class:`CallSource`) becomes ``code``.
    ``place``/``where`` as in :class:`CallSource`. Replacing ``was`` by ``code`` there applies
    the fix at that call."""

    place: str
    where: str
    line: int
    col: int
    end_line: int
    end_col: int
    was: str
    code: str

    @property
    def where_lines(self) -> str:
        """``where``, with the last line of a call spread over several (``train.py:42-44``)."""
        return self.where + (f"-{self.end_line}" if self.end_line > self.line else "")

    def text(self, layout: str = "report") -> str:
        """The edit as one line: ``train.py:42   train_step(x, tf.constant(lr))  # was: train_step(x, lr)``
        (``layout="report"``), or valid Python, the place in the comment (``"code"``); a call
        over several lines is joined into one."""
        code, was = _one_line(self.code), _one_line(self.was)
        if layout == "code":
            return f"{code}  # {self.where_lines}, was: {was}"
        return f"{self.where_lines}   {code}  # was: {was}"

    def to_dict(self) -> dict[str, object]:
        return _as_dict(self, ("place", "where", "line", "col", "end_line", "end_col", "was", "code"))

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> CallEdit:
        def number(key: str) -> int:
            return int(data.get(key, 0))

        def text(key: str) -> str:
            return str(data.get(key, ""))

        return cls(
            text("place"), text("where"), number("line"), number("col"), number("end_line"),
            number("end_col"), text("was"), text("code"),
        )  # fmt: skip


def _one_line(code: str) -> str:
    """A call written over several lines, joined into one (inside its brackets a line break is
    a space to Python)."""
    if "\n" not in code:
        return code
    return " ".join(part.strip() for part in code.splitlines() if part.strip())


@dataclass(frozen=True, slots=True)
class FixPlan:
    """One code change as data: what a fix's text shows, in a form a program can apply.

    ``decorator`` holds keyword arguments for ``tf.function`` as code
    (``reduce_retracing=True``); ``call`` the arguments to rewrite at every call site, as
    (parameter, expression in that parameter) pairs (``("x", "tf.cast(x, tf.float32)")``;
    ``args_0`` is the first of ``*args``); ``hoist`` means create the tf.function once and
    reuse it. ``graphs`` is how many graphs TensorFlow keeps for the calls seen once the change
    is applied (at most that many); ``trade`` what the change gives up.

    ``call_edits``: the user's own calls that traced, rewritten by ``call`` (one per distinct
    call site, the JSON's ``call_edits``); ``call_edits_note`` says which calls could not be
    rewritten and why (no source: Keras's own code, code not on disk), "" when none.
    """

    decorator: str = ""
    call: tuple[tuple[str, str], ...] = ()
    hoist: bool = False
    graphs: int = 1
    promise: str = ""
    trade: str = ""
    note: str = ""
    call_edits: tuple[CallEdit, ...] = ()
    call_edits_note: str = ""

    def code(self, name: str = "f") -> str:
        """The change as a learner pastes it: one line of valid Python (a decorator line goes
        above the ``def``), whatever follows the code in a comment. ``name`` is the Python name
        the code calls the function by (``explain.fixes.code_name``), never a label."""
        parts = []
        if self.hoist:
            parts.append(f"{name} = tf.function({name})  # once, outside the loop or cell; call that")
        if self.decorator:
            parts.append(f"@tf.function({self.decorator})")
        if self.call:
            call = self.call_code(name)
            parts.append(f"# and at every call: {call}" if parts else f"{call}  # at every call")
        return ("  " if self.decorator and self.call else " ").join(parts)

    def call_code(self, name: str = "f") -> str:
        """A call with the rewritten arguments: ``step(..., lr=tf.constant(lr))``; the first of
        ``*args`` (``args_0``) is passed by position."""
        positional = [e for p, e in self.call if _is_star_arg(p)]
        keywords = [f"{p}={e}" for p, e in self.call if not _is_star_arg(p)]
        return f"{name}({', '.join([*positional, '...', *keywords])})"

    def text(self, name: str = "f") -> str:
        """The code, then what it does for these calls and what it costs."""
        out = self.code(name)
        if self.note:
            out += f" ({self.note})"
        if self.promise:
            out += f" → {self.promise}"
        if self.trade:
            out += f", but {self.trade}"
        return out

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> FixPlan:
        return cls(
            decorator=str(data.get("decorator", "")),
            call=tuple((str(p), str(e)) for p, e in data.get("call", ())),
            hoist=bool(data.get("hoist", False)),
            graphs=int(data.get("graphs", 1)),
            promise=str(data.get("promise", "")),
            trade=str(data.get("trade", "")),
            note=str(data.get("note", "")),
            call_edits=tuple(CallEdit.from_dict(e) for e in data.get("call_edits") or ()),
            call_edits_note=str(data.get("call_edits_note", "")),
        )

    def to_dict(self) -> dict[str, object]:
        data = _as_dict(
            self,
            ("decorator", "call", "hoist", "graphs", "promise", "trade", "note"),
            call=[list(pair) for pair in self.call],
        )
        if self.call_edits:  # only when set: plans without recorded calls are written as before
            data["call_edits"] = [e.to_dict() for e in self.call_edits]
        if self.call_edits_note:
            data["call_edits_note"] = self.call_edits_note
        return data


@dataclass(frozen=True, slots=True)
class Reason:
    """Why a trace happened, for one argument (or for the whole function).

    ``plans`` are the fixes the ``fix`` text shows, as data (see :class:`FixPlan`).
    """

    code: str
    argument: str = ""
    before: str = ""
    after: str = ""
    message: str = ""
    fix: str = ""
    plans: tuple[FixPlan, ...] = ()

    def to_dict(self) -> dict[str, object]:
        data: dict[str, object] = _as_dict(self, ("code", "argument", "before", "after", "message", "fix"))
        if self.plans:
            data["fix_plans"] = [p.to_dict() for p in self.plans]
        return data

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> Reason:
        texts = {k: str(data.get(k, "")) for k in ("code", "argument", "before", "after", "message", "fix")}
        plans = tuple(FixPlan.from_dict(p) for p in data.get("fix_plans") or ())
        return cls(plans=plans, **texts)


@dataclass(frozen=True, slots=True)
class GraphSummary:
    """One graph (concrete function) in a function's cache, and the calls it served."""

    signature: str
    hits: int
    traced_in_watch: bool = True
    via: str = Via.CALL
    scope: str = Scope.NONE
    generalised: bool = False
    # The function object that traced it (events[].function_object's number), when the row's
    # graphs come from more than one (a Keras recompile, a tf.function made again); None else.
    function_object: int | None = None

    def to_dict(self) -> dict[str, object]:
        data = _as_dict(self, ("signature", "hits", "traced_in_watch", "via", "scope", "generalised"))
        if self.function_object is not None:  # only when set: reports of one object are unchanged
            data["function_object"] = self.function_object
        return data

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> GraphSummary:
        number = data.get("function_object")
        return cls(
            signature=data["signature"],
            hits=int(data["hits"]),
            traced_in_watch=bool(data.get("traced_in_watch", True)),
            via=str(data.get("via", "call")),
            scope=str(data.get("scope", "")),
            generalised=bool(data.get("generalised", False)),
            function_object=None if number is None else int(number),
        )


@dataclass(frozen=True, slots=True)
class Event:
    """One call of a tf.function, or one trace made without a call (``via`` says how).

    ``traces`` is the number of graphs this event added to the cache (2 for a first call that
    created variables). ``graph`` is the index, in the function's ``graphs``, of the graph that
    ran, when known. Reasons are filled only for events that traced. ``start`` is when the call
    began, in seconds from the watch's start (None in reports saved before it was recorded);
    ``thread`` names the thread when it is not the main thread. ``index`` numbers the events of
    the watch (every function's); ``call_number`` the calls of this function, from 1 (the
    report's ``call #N``). ``process``: the report a merged report took it from. ``qualname`` and
    ``label`` as in :class:`FunctionSummary`.
    """

    index: int
    qualname: str
    filename: str
    function_object: int
    via: str
    traced: bool
    traces: int
    seconds: float
    graph: int | None = None
    eager: bool = False
    failed_trace: bool = False
    wasted: bool = False
    error: str | None = None
    caller: str | None = None
    thread: str | None = None
    signature: str | None = None
    reasons: tuple[Reason, ...] = ()
    xla_compiled: bool = False  # XLA compiled on this call (a jit_compile=True graph in it)
    xla_estimated: bool = False  # ...judged from the call time (shapes Python cannot see)
    xla_reasons: tuple[Reason, ...] = ()
    start: float | None = None
    # graphs of this event that were retraces, decided when recorded (tfgraph_lab.model.counts)
    retraces: int = 0
    # a trace whose call began before the watch (another thread): ``seconds`` is not its cost
    began_before_watch: bool = False
    call_number: int | None = None
    process: str | None = None
    # the function whose call was in progress on this thread when this call was made (a
    # tf.function called inside another's trace): its trace's time holds this event's
    inside: str | None = None
    label: str = ""  # the name people read; "" on construction means the qualname

    def __post_init__(self) -> None:
        if not self.label:
            object.__setattr__(self, "label", self.qualname)

    @property
    def key(self) -> tuple[str, str]:
        """The report's row this event belongs to: its function's label and file."""
        return (self.label, self.filename)

    @property
    def retrace(self) -> bool:
        """This event traced at least one graph that is a retrace."""
        return self.retraces > 0

    def to_dict(self) -> dict[str, object]:
        data: dict[str, object] = {  # a literal: this runs once per call of a long watch
            "index": self.index,
            "qualname": self.qualname,
            "label": self.label,
            "filename": self.filename,
            "function_object": self.function_object,
            "traced": self.traced,
            "traces": self.traces,
            "via": self.via,
            "seconds": self.seconds,
            "graph": self.graph,
            "reasons": [r.to_dict() for r in self.reasons],
            "xla_compiled": self.xla_compiled,
        }
        if self.traced:
            data["retraces"] = self.retraces
        if self.xla_compiled:
            data["xla_reasons"] = [r.to_dict() for r in self.xla_reasons]
        for key in ("eager", "failed_trace", "wasted", "xla_estimated", "began_before_watch"):
            if getattr(self, key):
                data[key] = True
        for key in ("error", "caller", "thread", "signature", "start", "call_number", "process", "inside"):
            value = getattr(self, key)
            if value is not None:
                data[key] = value
        return data

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> Event:
        reasons = tuple(Reason.from_dict(r) for r in data.get("reasons", []))
        retraces = data.get("retraces")
        if retraces is None:  # JSON written before the flag was stored: the same rule, once
            retraces = int(bool(data["traced"]) and is_retrace([r.code for r in reasons]))
        return cls(
            index=int(data.get("index", 0)),
            qualname=data["qualname"],
            label=data.get("label") or data["qualname"],  # saved before labels: the qualname
            filename=data.get("filename", ""),
            function_object=int(data.get("function_object", 0)),
            via=data.get("via", "call"),
            traced=bool(data["traced"]),
            traces=int(data.get("traces", 1 if data["traced"] else 0)),
            seconds=float(data.get("seconds", 0.0)),
            graph=data.get("graph"),
            eager=bool(data.get("eager", False)),
            failed_trace=bool(data.get("failed_trace", False)),
            wasted=bool(data.get("wasted", False)),
            error=data.get("error"),
            caller=data.get("caller"),
            thread=data.get("thread"),
            signature=data.get("signature"),
            reasons=reasons,
            xla_compiled=bool(data.get("xla_compiled", False)),
            xla_estimated=bool(data.get("xla_estimated", False)),
            xla_reasons=tuple(Reason.from_dict(r) for r in data.get("xla_reasons", [])),
            start=_optional_float(data.get("start")),
            retraces=int(retraces),
            began_before_watch=bool(data.get("began_before_watch", False)),
            call_number=data.get("call_number"),
            process=data.get("process"),
            inside=data.get("inside"),
        )


@dataclass(frozen=True, slots=True)
class CallRun:
    """Consecutive cached calls summarised to keep long watches small (no per-call events).

    ``first`` is the call index of the first call in the run; ``functions`` the labels of the
    functions called (as the report's rows show them).
    ``start`` is when its first call began (seconds from the watch's start, when known) and
    ``thread`` the thread its calls ran on (None: the main thread); ``process`` as for events.
    """

    first: int
    calls: int
    seconds: float
    max_seconds: float
    functions: tuple[str, ...]
    start: float | None = None
    thread: str | None = None
    process: str | None = None

    def to_dict(self) -> dict[str, object]:
        data = _as_dict(
            self, ("first", "calls", "seconds", "max_seconds", "functions"), functions=list(self.functions)
        )
        data.update({k: v for k in ("start", "thread", "process") if (v := getattr(self, k)) is not None})
        return data

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> CallRun:
        return cls(
            int(data["first"]),
            int(data["calls"]),
            float(data["seconds"]),
            float(data["max_seconds"]),
            tuple(data.get("functions", ())),
            start=_optional_float(data.get("start")),
            thread=data.get("thread"),
            process=data.get("process"),
        )


@dataclass(frozen=True, slots=True)
class CallSite:
    """The traces one line of the user's code caused in one function: every call made from
    ``caller`` (``file:line``; ``""`` when the place is not known: a trace made without a call,
    a report saved before callers were recorded) that traced. ``trace_seconds`` is the time of
    those calls, ``retrace_seconds`` of those that retraced (a retrace's cost, as the report's
    ``cost`` says it: the call's time, its tracing included); a trace begun before the watch
    counts in ``traces`` but adds no time (it was not measured). ``codes``: the reason codes of
    its retraces, in the order first seen. ``qualname``, ``label`` and ``filename`` name the
    function's row (:attr:`key`)."""

    qualname: str
    filename: str
    caller: str
    traces: int
    retraces: int
    trace_seconds: float
    retrace_seconds: float
    codes: tuple[str, ...] = ()
    label: str = ""  # "" on construction means the qualname

    def __post_init__(self) -> None:
        if not self.label:
            object.__setattr__(self, "label", self.qualname)

    @property
    def key(self) -> tuple[str, str]:
        """The function's row (as :attr:`FunctionSummary.key`)."""
        return (self.label, self.filename)

    def to_dict(self) -> dict[str, object]:
        keys = ("qualname", "label", "filename", "caller", "traces", "retraces")
        return _as_dict(self, (*keys, "trace_seconds", "retrace_seconds", "codes"), codes=list(self.codes))


def call_sites(events: Iterable[Event]) -> tuple[CallSite, ...]:
    """One :class:`CallSite` per function and calling line that traced, in the order first
    seen (the JSON's ``call_sites``; ``--sort cost`` ranks them by ``retrace_seconds``). Read
    from the events, which keep every trace (only cached calls are summarised)."""
    sums: dict[tuple[str, str, str], list[Any]] = {}
    for e in events:
        if not e.traced:
            continue
        row = sums.setdefault((e.label, e.filename, e.caller or ""), [e.qualname, 0, 0, 0.0, 0.0, {}])
        seconds = 0.0 if e.began_before_watch else e.seconds
        row[1] += e.traces
        row[3] += seconds
        if e.retraces:
            row[2] += e.retraces
            row[4] += seconds
            for r in e.reasons:
                row[5].setdefault(str(r.code), None)
    return tuple(
        CallSite(q, filename, caller, traces, retraces, t, rt, tuple(codes), label=label)
        for (label, filename, caller), (q, traces, retraces, t, rt, codes) in sums.items()
    )


# FunctionSummary's JSON keys, in the JSON's order
_SUMMARY_KEYS = (
    *("qualname", "label", "filename", "firstlineno", "calls", "traces", "failed_traces", "trace_seconds"),
    *("call_seconds", "framework", "function_objects", "objects_traced", "traced_calls", "retraces"),
    *("eager_calls", "reduce_retracing", "input_signature", "wasted_retraces", "hints", "wraps"),
    *("jit_compile", "xla_compiles", "xla_estimated", "xla_compiles_kind", "xla_compiles_exact"),
    *("xla_seconds", "xla_cost_calls"),
    *("xla_slow_calls", "xla_slow_seconds", "graphs", "suggestion"),
)


@dataclass(frozen=True, slots=True)
class FunctionSummary:
    """Everything the watch saw of one Python function (all its tf.function objects summed).

    ``qualname`` is the Python ``__qualname__`` of the innermost function (what outside tools key
    on); ``label`` the name the report shows people: the qualname, or a name made for people
    ("sequential · fit · train step", "tf.data wrapper around preprocess", "restored f"). One row
    per label and file (:attr:`key`); a label is never written into a fix's code.
    """

    qualname: str
    filename: str
    firstlineno: int
    calls: int
    traces: int
    failed_traces: int
    trace_seconds: float
    call_seconds: float
    framework: bool
    graphs: tuple[GraphSummary, ...] = ()
    function_objects: int = 1
    objects_traced: int = 0
    traced_calls: int = 0
    retraces: int = 0
    eager_calls: int = 0
    reduce_retracing: bool = False
    input_signature: str | None = None
    wasted_retraces: int = 0
    hints: tuple[str, ...] = ()
    suggestion: str | None = None  # the change that would stop the retraces (suggest.py)
    # Set for a graph TF built around a user's tf.function (a tf.data wrapper, a replica
    # clone): that function's qualname. Its traces are not added to that function's.
    wraps: str = ""
    jit_compile: bool = False
    xla_compiles: int = 0  # XLA compilations of this function's graphs during the watch
    xla_estimated: int = 0  # ...of which judged from call time (see tfgraph_lab.recording.xla)
    xla_compiles_kind: str = ""  # "exact" (TF's log), "at-least"/"about" (modelled), "" (saved before)
    xla_seconds: float = 0.0  # time of the calls that compiled without tracing (run included)
    xla_cost_calls: float | None = None  # ...in cached calls of the functions that ran them
    xla_slow_calls: int = 0  # own calls that compiled without tracing (not "cached" calls)
    xla_slow_seconds: float = 0.0
    # Of trace_seconds, the traces made inside another watched function's call (a nested
    # tf.function traced while the outer one traced): the outer's trace_seconds holds them too,
    # so totals count them once (model.counts.totals). nested_framework_seconds: the part made
    # inside TF's or Keras's own functions only, which the user's totals leave out.
    nested_trace_seconds: float = 0.0
    nested_framework_seconds: float = 0.0
    label: str = ""  # "" on construction means the qualname

    def __post_init__(self) -> None:
        if not self.label:
            object.__setattr__(self, "label", self.qualname)

    @property
    def key(self) -> tuple[str, str]:
        """This row: its label and file (events and breakdowns are matched to it by it)."""
        return (self.label, self.filename)

    @property
    def cached_calls(self) -> int:
        return self.calls - self.traced_calls

    @property
    def mean_cached_seconds(self) -> float | None:
        """Mean time of a call that neither traced nor compiled with XLA, or None (none such)."""
        return mean_cached_seconds([self])

    def to_dict(self) -> dict[str, object]:
        data = _as_dict(
            self,
            _SUMMARY_KEYS,
            hints=list(self.hints),
            graphs=[g.to_dict() for g in self.graphs],
            xla_compiles_exact=self.xla_compiles_kind == "exact",
        )
        for key in ("nested_trace_seconds", "nested_framework_seconds"):  # only when there was any
            if getattr(self, key):
                data[key] = getattr(self, key)
        return data

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> FunctionSummary:
        return cls(
            qualname=data["qualname"],
            label=data.get("label") or data["qualname"],  # saved before labels: the qualname
            filename=data.get("filename", ""),
            firstlineno=int(data.get("firstlineno", 0)),
            calls=int(data["calls"]),
            traces=int(data["traces"]),
            failed_traces=int(data.get("failed_traces", 0)),
            trace_seconds=float(data.get("trace_seconds", 0.0)),
            call_seconds=float(data.get("call_seconds", 0.0)),
            framework=bool(data.get("framework", False)),
            graphs=tuple(GraphSummary.from_dict(g) for g in data.get("graphs", [])),
            function_objects=int(data.get("function_objects", 1)),
            objects_traced=int(data.get("objects_traced", 0)),
            traced_calls=int(data.get("traced_calls", 0)),
            retraces=int(data.get("retraces", 0)),
            eager_calls=int(data.get("eager_calls", 0)),
            reduce_retracing=bool(data.get("reduce_retracing", False)),
            input_signature=data.get("input_signature"),
            wasted_retraces=int(data.get("wasted_retraces", 0)),
            hints=tuple(data.get("hints", ())),
            suggestion=data.get("suggestion") or None,
            wraps=str(data.get("wraps", "")),
            jit_compile=bool(data.get("jit_compile", False)),
            xla_compiles=int(data.get("xla_compiles", 0)),
            xla_estimated=int(data.get("xla_estimated", 0)),
            xla_compiles_kind=str(data.get("xla_compiles_kind", "")),
            xla_seconds=float(data.get("xla_seconds", 0.0)),
            xla_cost_calls=data.get("xla_cost_calls"),
            xla_slow_calls=int(data.get("xla_slow_calls", 0)),
            xla_slow_seconds=float(data.get("xla_slow_seconds", 0.0)),
            nested_trace_seconds=float(data.get("nested_trace_seconds", 0.0)),
            nested_framework_seconds=float(data.get("nested_framework_seconds", 0.0)),
        )


def name_match(name: str, qualname: str, label: str = "") -> int:
    """How well ``name`` (what a user typed: ``report.function(name)``, ``--max-traces FN=N``)
    names the function ``qualname``/``label``: 2 exactly (its label or its Python qualname), 1 as
    an ending (``.name`` of either, ``· name`` of the label: ``fit · train step`` for
    ``sequential · fit · train step``), 0 not at all."""
    label = label or qualname
    if name in (label, qualname):
        return 2
    if qualname.endswith("." + name) or label.endswith(("." + name, " · " + name)):
        return 1
    return 0


def _is_star_arg(parameter: str) -> bool:
    """``args_0``: the first of ``*args`` (TensorFlow's name for it), passed by position."""
    head, _, number = parameter.rpartition("_")
    return head == "args" and number.isdigit()


def _optional_float(value: Any) -> float | None:
    return None if value is None else float(value)
