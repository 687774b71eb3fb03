"""The live log: one record on the ``tfgraph_lab`` logger per retrace, the moment it happens.

While any watch or monitor is active, the hub calls :func:`log_retrace_record` (its
``retrace_sink``, set by :mod:`tfgraph_lab.watching.recorder`) when a call that
retraced returns, or when a trace made without a call (tf.data, ``get_concrete_function``) is
recorded: never on a cache hit, and only once no call is in progress on the thread (a nested
function's retrace waits for the outermost call to return), so the reasons a line reads are
built outside every call's span (``CallRecord.reasons`` builds them when first read).

To a person's terminal (logging unconfigured: Python's last-resort handler; or
:func:`stream_to_stderr`, ``tfgraph-lab run``) a function's first :data:`AT_ONCE` retraces of a
watch are one line each, at once; its next ones are folded into one line, "tf.function f
retraced 37 more times (changed from the graph before: lr ×37) · … · reasons and fix: see the
report", written at its next retrace once :data:`FOLD_SECONDS` have passed since its last line,
and when the watch ends: a loop that retraces on every call prints a few lines, not one per
call, and no reasons are built for the folded ones (the report builds them). A configured
logging handler (an application's) gets one record per retrace, as ever; so does ``--all``. Standard :mod:`logging` at level
WARNING, so with logging unconfigured the lines reach stderr through Python's last-resort
handler, and a configured application gets them where it sends its warnings. Each record also
carries the plain data as ``record.tfgraph_lab`` (a dict) for structured handlers, with each
reason code's page (``pages``: ``{code: url}``, :func:`tfgraph_lab.explain.pages.page_url`).

Where the report is shown anyway (an IPython shell: ``%%tracewatch``, the labs) and nobody
configured logging, the record is not emitted to the last-resort handler: it would print the
same retrace twice, once in red above the report. :func:`stream_to_stderr` is what
``tfgraph-lab run`` and the Keras callback use to make sure the lines are seen.

Retraces of TensorFlow's and Keras's own functions (not named for the user, as a
``TraceCallback`` names Keras's steps) are folded, as the report's table folds their rows:
counted instead of logged, then one summary line when the watch ends (:func:`log_folded`,
called by the recorder). Under MirroredStrategy, 42 of 46 lines were about tf.data's
``_PerDeviceGenerator._init_func``, with a fix nobody can apply. While a watch whose view lists
the framework's functions is active (``%%tracewatch --all``, ``tfgraph-lab run --all``,
``watch(view=ViewOptions(framework=True))``), they are logged one by one: the watch says so
(:meth:`LiveLog.list_framework`) and unsays it when it stops. :data:`LIVE_LOG` holds that
state and the folded counts, as the hub holds the recording's.

Imports neither TensorFlow nor IPython.
"""

from __future__ import annotations

import logging
import sys
import time
import weakref
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any

from ..explain.fix_text import clip, short_fix
from ..explain.fixes import code_name
from ..explain.pages import page_names, page_url
from ..explain.trace import NOT_RETRACES
from ..model.places import running_ipython
from ..model.records import Reason
from ..model.signatures import Signature, is_under
from ..model.vocab import ReasonCode, Via
from ..recording.xla_log import LOG as XLA_LOG
from ..render.format import fmt_seconds, short_path

if TYPE_CHECKING:
    from ..recording.calllog import CallRecord

__all__ = [
    "LINE_CHARS",
    "LIVE_LOG",
    "LOGGER",
    "LiveLog",
    "format_retrace",
    "log_folded",
    "log_retrace_record",
    "stream_to_stderr",
    "telling_apart",
]

LOGGER = logging.getLogger("tfgraph_lab")
PREFIX = "tfgraph_lab: "  # what stream_to_stderr's formatter puts before each line
LINE_CHARS = 200 - len(PREFIX)  # a line a person reads in seconds: 200 characters with the prefix
MORE = " · see the report"


def format_retrace(
    label: str,
    reasons: Sequence[Reason],
    caller: str | None,
    seconds: float | None,
    thread: str | None = None,
    via: str = "call",
    labels: Mapping[str, str] | None = None,
    qualname: str = "",
    telling: str = "",
) -> str:
    """One line of at most :data:`LINE_CHARS`: function (its ``label``), reason code(s), argument
    before → after, what tells it from the retrace before it when the reasons do not
    (``telling``, see :func:`telling_apart`), the user's line, cost, the fix's one-line summary
    and where the full fix is (the report; the record's ``tfgraph_lab`` data holds it too).
    ``qualname``: the Python name a fix's code calls the function by (default: the label's, when
    that is a Python name)."""
    shown = _shown(reasons)
    said = _said_of(reasons)
    name = label if len(label) <= 32 else "…" + label[-31:]  # its end tells it apart
    parts = [f"tf.function {name} retraced ({clip(said, 60) or 'unexplained'})"]
    if via != Via.CALL:
        parts.append(f"via {via}")
    if caller:
        parts.append(f"at {short_path(caller, labels)}")
    if thread:
        parts.append(f"thread {thread}")
    # None: the trace began before the watch (another thread), its cost not measured
    parts.append(
        "began before the watch; cost not measured" if seconds is None else f"cost {fmt_seconds(seconds)}"
    )
    line = " · ".join(parts)
    room = LINE_CHARS - len(MORE) - len(line) - len(" · with ")
    if telling and room >= 12:  # after the where and the cost, before the fix's summary
        head, rest = line.split(" · ", 1) if " · " in line else (line, "")
        line = " · ".join(p for p in (head, f"with {clip(telling, min(40, room))}", rest) if p)
    reason = next((r for r in shown if r.fix), None)
    if reason is not None:
        room = LINE_CHARS - len(line) - len(" · fix: ") - len(MORE)
        summary = short_fix(reason, code_name(qualname or label)).summary
        if room >= 20:
            line += f" · fix: {clip(summary, room)}"
    return clip(line, LINE_CHARS - len(MORE)) + MORE


def _shown(reasons: Sequence[Reason]) -> list[Reason]:
    return [r for r in reasons if r.code not in NOT_RETRACES] or list(reasons)


def _said_of(reasons: Sequence[Reason]) -> str:
    """What a line says of its reasons: each code, then its arguments before → after
    (``shape-changed x: (1,) → (2,)``); two retraces whose lines say the same read alike."""
    changes: dict[str, list[str]] = {}  # one code, then its arguments: "shape-changed x: a → b, y: c → d"
    for r in _shown(reasons):
        text = r.argument
        if r.argument and (r.before or r.after):  # without an argument they are prose: the report says it
            text += f": {r.before or '?'} → {r.after or '?'}"
        changes.setdefault(r.code, []).append(text)
    return "; ".join(f"{code} {', '.join(t for t in texts if t)}".rstrip() for code, texts in changes.items())


class LiveLog:
    """The live log's state: the framework retraces folded since the last summary line, and
    the watches whose view lists the framework's functions (while any is active, those
    retraces are logged one by one)."""

    def __init__(self) -> None:
        self.folded: dict[str, int] = {}  # framework function's label -> retraces not logged one by one yet
        self._listing: list[object] = []  # the watches that list the framework's functions
        # per function object (held weakly): what each line logged for it said -> the signature
        # of the graph that line was about (the last one that said it)
        self._said: weakref.WeakKeyDictionary[Any, dict[str, Signature]] = weakref.WeakKeyDictionary()
        # Lines to a terminal (see _to_a_terminal): per function (its info.key), the lines
        # written at once since the watch began, and the retraces folded since its last line
        self.written: dict[Any, int] = {}
        self.more: dict[Any, _More] = {}
        self.clock = time.monotonic

    def list_framework(self, watch: object, listed: bool = True) -> None:
        """``watch`` starts (``listed``) or stops listing the framework's functions."""
        if listed:
            self._listing.append(watch)
        else:
            self._listing = [w for w in self._listing if w is not watch]

    @property
    def framework_listed(self) -> bool:
        return bool(self._listing)

    def record(self, record: CallRecord, labels: Mapping[str, str] | None = None) -> None:
        """The hub's retrace sink: emit one WARNING record for a call record that retraced
        (called on the trace path only); ``labels`` names notebook cells (the hub's, resolved
        when recorded)."""
        try:
            info = record.state.info
            if info.framework and not info.origin and not self._listing:
                retraces = sum(1 for g in record.traces if g.retrace)
                self.folded[info.label] = self.folded.get(info.label, 0) + retraces
                return
            if not LOGGER.isEnabledFor(logging.WARNING):
                return
            if not LOGGER.hasHandlers() and _report_shown_anyway():
                return
            if not self._listing and _to_a_terminal():  # --all: every line, one by one
                key = info.key
                if self.written.get(key, 0) >= AT_ONCE or key in self.more:
                    self._fold(key, record, labels)
                    return
                self.written[key] = self.written.get(key, 0) + 1
            reasons = record.reasons  # built now, for this line (calllog.CallRecord.reasons)
            data: dict[str, Any] = {
                "function": info.label,
                "qualname": info.qualname,
                "filename": info.filename,
                "codes": [r.code for r in reasons if r.code not in NOT_RETRACES],
                # each code's page (tfgraph-lab explain CODE prints it)
                "pages": {r.code: page_url(r.code) for r in reasons if r.code in page_names()},
                "reasons": [r.to_dict() for r in reasons],
                "caller": record.caller,
                "seconds": record.seconds,
                "thread": record.thread,
                "via": record.via,
            }
            if record.began_before_watch:
                data["began_before_watch"] = True  # ``seconds`` is not its cost
            seconds = None if record.began_before_watch else record.seconds
            try:
                telling = self._telling(record)
            except Exception:  # the line without it, never no line
                telling = ""
            line = format_retrace(
                info.label,
                reasons,
                record.caller,
                seconds,
                record.thread,
                record.via,
                labels,
                info.qualname,
                telling,
            )
            LOGGER.warning("%s", line, extra={"tfgraph_lab": data})
        except Exception:  # a broken handler or formatter must never break the user's call
            pass

    def _telling(self, record: CallRecord) -> str:
        """What tells this retrace's line from an earlier line of the same function object that
        says the same (:func:`_said_of`); ``""`` when no earlier line reads alike."""
        if not record.traces:
            return ""
        graph = record.traces[-1]
        said = _said_of(record.reasons)
        lines = self._said.setdefault(record.state, {})
        alike = lines.get(said)
        lines[said] = graph.signature
        return "" if alike is None else telling_apart(graph.signature, alike, record.reasons)

    def _fold(self, key: Any, record: CallRecord, labels: Mapping[str, str] | None) -> None:
        """A retrace past a function's first :data:`AT_ONCE` lines to a terminal: counted, with
        what told its graph from the one before (no reasons built); its line is written when
        :data:`FOLD_SECONDS` have passed since the function's last line, or the watch ends."""
        more = self.more.get(key)
        if more is None:
            more = self.more[key] = _More(record.state.info.label, self.clock())
        for graph in record.traces:
            if graph.retrace:
                more.add(graph, record.seconds if not record.began_before_watch else 0.0)
        more.caller = record.caller or more.caller
        more.labels = labels
        if self.clock() - more.since >= FOLD_SECONDS:
            self._write_more(key)

    def _write_more(self, key: Any) -> None:
        more = self.more.pop(key, None)
        if more is None or not more.retraces:
            return
        self.more[key] = _More(more.label, self.clock())  # the next ones fold again
        try:
            if LOGGER.isEnabledFor(logging.WARNING):
                changed = more.changed()
                LOGGER.warning("%s", more.line(changed), extra={"tfgraph_lab": more.data(changed)})
        except Exception:  # never break the user's program
            pass

    def flush_more(self) -> None:
        """The folded retraces' lines of every function (a watch ends), then start afresh."""
        for key in list(self.more):
            self._write_more(key)
        self.more.clear()
        self.written.clear()

    def flush_folded(self) -> None:
        """The retraces folded since the last call: each function's own (:meth:`flush_more`),
        then one WARNING record for the framework-internal ones (none: nothing);
        ``record.tfgraph_lab`` holds ``{"folded": {function: retraces}}``."""
        self.flush_more()
        folded = dict(self.folded)
        self.folded.clear()
        try:
            if not folded or not LOGGER.isEnabledFor(logging.WARNING):
                return
            if not LOGGER.hasHandlers() and _report_shown_anyway():
                return
            names = sorted(folded, key=lambda q: -folded[q])
            listed = ", ".join(f"{_short_label(q)} ×{folded[q]}" for q in names[:3]) + (
                ", …" if len(names) > 3 else ""
            )
            total = sum(folded.values())
            line = (
                f"{total} retrace{'s' if total != 1 else ''} inside TensorFlow/Keras folded ({listed}): "
                "not your code to change · --all logs each"
            )
            LOGGER.warning("%s", clip(line, LINE_CHARS), extra={"tfgraph_lab": {"folded": folded}})
        except Exception:  # never break the user's program
            pass


AT_ONCE = 3  # lines to a terminal written at once per function and watch; then folded
FOLD_SECONDS = 5.0  # a function's folded retraces are written at most this often
NEW_OBJECT = ReasonCode.NEW_FUNCTION_OBJECT.value


class _More:
    """A function's retraces folded since its last line to a terminal: how many, what told each
    graph from the graph before it (argument paths; ``new-function-object`` for a new object's
    first graph), their cost. Plain data read from the graphs; no reasons built.

    A retrace only adds its graph here (it runs on the trace path, inside the watch's own
    time); what told each graph apart is read when the line is written, every graph at once.
    Read right after TensorFlow traced, the fold took 19.8 µs a retrace, 5% of the watch's own
    time, on a loaded 2-core VM; the comparison read for 37 graphs at once when the line is
    written takes 3-5 µs a graph (TF 2.21, Python 3.11): a trace leaves the tool's code and
    data cold."""

    def __init__(self, label: str, since: float) -> None:
        self.label = label
        self.since = since
        self.retraces = 0
        self.seconds = 0.0
        self.graphs: list[Any] = []  # the folded retraces' graphs (held by their function's log already)
        self.caller: str | None = None
        self.labels: Mapping[str, str] | None = None

    def add(self, graph: Any, seconds: float) -> None:
        self.retraces += 1
        self.seconds += seconds
        self.graphs.append(graph)

    def changed(self) -> dict[str, int]:
        """What told the folded graphs from the graph before each: ``{argument path or
        new-function-object: retraces}``. A graph's function only adds graphs, so this reads
        the same whenever it is read."""
        changed: dict[str, int] = {}
        for graph in self.graphs:
            for what in _told(graph):
                changed[what] = changed.get(what, 0) + 1
        return changed

    def line(self, changed: Mapping[str, int]) -> str:
        """The folded line, ``changed`` being :meth:`changed`. Where the last one was and what
        they cost come first; what told the graphs apart takes the room left (its lead word
        shortened, then clipped), so a long function name or place never clips the line to
        "last at…" with no place and no cost."""
        name = self.label if len(self.label) <= 32 else "…" + self.label[-31:]
        n = self.retraces
        head = f"tf.function {name} retraced {n} more time{'s' if n != 1 else ''}"
        tail = [f"last at {short_path(self.caller, self.labels)}"] if self.caller else []
        tail.append(f"cost {fmt_seconds(self.seconds)}")
        end = " · reasons and fix: see the report"
        room = LINE_CHARS - len(end) - len(head) - len(" · ".join(tail)) - len(" · ") - len(" ()")
        counted = sorted(changed.items(), key=lambda i: -i[1])
        objects = [f"{NEW_OBJECT} ×{k}" for what, k in counted if what == NEW_OBJECT]
        paths = ", ".join(f"{what} ×{k}" for what, k in counted if what != NEW_OBJECT)
        told = ""
        for lead in ("changed from the graph before: ", "changed: "):
            told = "; ".join(objects + ([lead + paths] if paths else []))
            if len(told) <= room:
                break
        if told and room >= 12:
            head += f" ({clip(told, room)})"
        return clip(" · ".join([head, *tail]), LINE_CHARS - len(end)) + end

    def data(self, changed: Mapping[str, int]) -> dict[str, Any]:
        return {"function": self.label, "more": self.retraces, "seconds": self.seconds, "changed": dict(changed)}


def _told(graph: Any) -> list[str]:
    """What tells a retrace's graph from the graph its function traced before it: the argument
    paths whose leaves differ, or ``new-function-object`` for a new object's first graph (a
    first graph that retraced: see :func:`tfgraph_lab.explain.trace.trace_kind`)."""
    previous = None
    for g in reversed(graph.state.graph_list):  # the newest first: O(1) in a retracing loop
        if g is not graph and g.seq < graph.seq:
            previous = g
            break
    if previous is None:
        return [NEW_OBJECT]
    before = previous.signature.by_path()
    told = []
    for leaf in graph.signature.leaves:
        if leaf.kind != "container" and before.get(leaf.path) != leaf:
            told.append(leaf.path)
    return told


def _to_a_terminal() -> bool:
    """The live log's records go to a person's terminal: no handler configured (Python's
    last-resort handler), or only the tool's own stream (:func:`stream_to_stderr`). A
    configured application gets one record per retrace."""
    handlers = LOGGER.handlers
    if handlers:
        return not LOGGER.propagate and all(isinstance(h, (_StderrHandler, logging.NullHandler)) for h in handlers)
    return not LOGGER.hasHandlers()


def _short_label(label: str) -> str:
    """A folded function as the summary line names it: a qualname by its last part
    (``_init_func``), a label made for people whole (``tf.data wrapper around preprocess``)."""
    return label if " " in label else label.rsplit(".", 1)[-1]


def telling_apart(signature: Signature, alike: Signature, reasons: Sequence[Reason]) -> str:
    """The arguments that tell a retrace's graph (``signature``) from the graph of an earlier
    line that read alike (``alike``), besides those its reasons name, each as this graph has it:
    ``x (8, 8), y (8, 1)``, or ``""``.

    A retrace is explained against the closest cached graph, which need not be the last one: a
    loop that changes a Python learning rate each epoch over a dataset with a short last batch
    retraces twice per rate, and both lines read ``lr: 0.1 → 0.05`` — one at the full batch
    (against graph #0), one at the short batch (against graph #1). The second names its batch.
    An argument whose text reads the same in both (a Variable's shape, when only its aliasing
    differs) tells nobody anything and is left out."""
    before = alike.by_path()
    named = [r.argument for r in reasons if r.argument]
    told = []
    for leaf in signature.leaves:
        if leaf.kind == "container" or any(leaf.path == n or is_under(leaf.path, n) for n in named):
            continue
        old = before.get(leaf.path)
        if old is None or old == leaf:  # a new argument: its reason says so
            continue
        shown, was = _leaf_text(leaf), _leaf_text(old)
        if shown != was:
            told.append(f"{leaf.path} {shown}")
    return ", ".join(told)


def _leaf_text(leaf: Any) -> str:
    return str(leaf.shape_text if leaf.kind in ("tensor", "variable") else (leaf.value or leaf.describe()))


LIVE_LOG = LiveLog()  # the one live log of the process (the hub's retrace sink)


def log_retrace_record(record: CallRecord, labels: Mapping[str, str] | None = None) -> None:
    """:meth:`LiveLog.record` of :data:`LIVE_LOG`."""
    LIVE_LOG.record(record, labels)


def log_folded() -> None:
    """:meth:`LiveLog.flush_folded` of :data:`LIVE_LOG`."""
    LIVE_LOG.flush_folded()


def _report_shown_anyway() -> bool:
    """In an IPython shell the report (or the lab) shows every retrace already."""
    return running_ipython() is not None


class _StderrHandler(logging.Handler):
    """Writes to whatever ``sys.stderr`` is at the time (a notebook replaces it)."""

    def emit(self, record: logging.LogRecord) -> None:
        try:
            text = self.format(record) + "\n"
            stderr: Any = sys.stderr
            if stderr is not None and id(stderr) == id(sys.__stderr__):  # fd 2: maybe XLA's tee
                stderr.flush()
                encoding = getattr(stderr, "encoding", None) or "utf-8"
                if XLA_LOG.write_past_tee(text.encode(encoding, "backslashreplace")):
                    return
            sys.stderr.write(text)
            sys.stderr.flush()
        except Exception:
            self.handleError(record)


@contextmanager
def stream_to_stderr(quiet: bool = False, only_if_unconfigured: bool = False) -> Iterator[None]:
    """Within the block, retrace lines go to stderr as they happen (flushed at once).

    ``quiet`` silences them instead. ``only_if_unconfigured`` leaves logging alone when the
    application configured handlers itself (the Keras callback: the user's logging wins).
    Which retraces are logged one by one is the watches' view (:class:`LiveLog`).
    """
    if only_if_unconfigured and LOGGER.hasHandlers():
        yield
        return
    handler: logging.Handler = logging.NullHandler() if quiet else _StderrHandler(logging.WARNING)
    handler.setFormatter(logging.Formatter(PREFIX + "%(message)s"))
    propagate = LOGGER.propagate
    LOGGER.addHandler(handler)
    LOGGER.propagate = False  # a script that configured the root logger must not print it twice
    try:
        yield
    finally:
        LOGGER.removeHandler(handler)
        LOGGER.propagate = propagate
