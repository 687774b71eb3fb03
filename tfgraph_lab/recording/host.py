"""What the hooks and the XLA path see of the hub: a call's :class:`Frame` on its thread's
stack, and :class:`Host`, the hub's methods they call.

The hub (:mod:`tfgraph_lab.recording.hub`) makes the hooks (:mod:`tfgraph_lab.recording.hooks`) and the XLA path
(:mod:`tfgraph_lab.recording.xla`) and hands itself to them; they know it only as a :class:`Host`, so
neither imports the hub (no import circle, not even for types). Plain Python: imports no
TensorFlow, no IPython.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, Protocol

from ..model.vocab import Via
from .calllog import CallLog, CallRecord, FunctionState, GraphState, ThreadStack

if TYPE_CHECKING:
    from ..adapter import TFHandles

__all__ = ["NO_TRACES", "Frame", "Host", "XlaPath"]

NO_TRACES: list[GraphState] = []  # shared and never appended to (see Hub.on_concrete_function)


class Frame:
    """One call in progress on its thread's stack, pushed by a hook.

    ``state``: the function object called; ``via``: how (``Via.CALL``,
    ``Via.GET_CONCRETE_FUNCTION``); ``served``: ``id()`` of the concrete function that ran (set
    by the ``_call_flat`` hook) or None; ``traces``: the graphs the call traced, the shared
    :data:`NO_TRACES` until it traces. One is made per call on the hot path: slots, and an
    ``__init__`` of four stores (``benchmarks/overhead.py`` measures it).
    """

    __slots__ = ("served", "state", "traces", "via")

    def __init__(self, state: FunctionState, via: Via) -> None:
        self.state = state
        self.via = via
        self.served: int | None = None
        self.traces: list[GraphState] = NO_TRACES


class XlaPath(Protocol):
    """The hub's XLA path (``_xla.XlaModel``), as the ``__call__`` hook calls it."""

    #: Reads a jit_compile call's cache key from its arguments; None: TF moved the names.
    key: Callable[[Any, Any], tuple[Any, ...]] | None

    def call(
        self,
        hub: Host,
        frame: Frame,
        seconds: float,
        fn: Any,
        args: Any,
        kwargs: Any,
        start: float | None = None,
        stack: Any = None,
    ) -> None: ...


class Host(Protocol):
    """The hub (``_hub.Hub``), as the hooks and the XLA path use it."""

    @property
    def calllog(self) -> CallLog: ...

    @property
    def tls(self) -> threading.local: ...

    @property
    def states(self) -> dict[int, FunctionState]: ...

    @property
    def handles(self) -> TFHandles | None: ...

    @property
    def xla(self) -> XlaPath: ...

    def stack(self) -> ThreadStack: ...

    def state_for(self, fn: Any) -> FunctionState: ...

    def summarise_log(self) -> None: ...

    def add_record(self, record: CallRecord, in_trace: bool = False) -> None: ...

    def record_slow_call(
        self,
        frame: Frame,
        seconds: float,
        fn: Any,
        args: tuple[Any, ...],
        kwargs: dict[str, Any],
        exc: BaseException | None,
        xla: Any = None,
        graph: GraphState | None = None,
    ) -> None: ...
