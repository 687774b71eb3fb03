"""Python's garbage collections, timed while a watch is active, so the watch's own clock leaves
them out.

A full collection of a process that imported TensorFlow walks its whole heap: 6 full collections
in ``tfgraph-lab demo`` took 433 ms, the longest 140 ms (TF 2.21, Python 3.11, a slow day of a
2-core VM). CPython starts one at whichever allocation crosses its threshold, and when that was
one the watch made inside its own work, the demo's report said "the watch itself: 143 ms over 22
traces" for work that takes 10 ms (9.5 ms with ``gc.disable()``). The collection is the
program's heap, which the program's own next allocations would have collected: the spans
the watch times itself by (:mod:`tfgraph_lab.recording.hub`) subtract what this clock counted
inside them. What the watch's own allocations add to the program's collections is in the
program's time, where ``benchmarks/retracing.py`` sees it.

One ``gc.callbacks`` entry while the hooks are installed, removed with them
(:func:`tfgraph_lab.recording.hub.hooks_installed` says if it is left behind). Python calls it at
the start and the end of every collection, on the thread that collects: about 1 µs a collection
(Python 3.11, TF 2.21), which is rare on the watch's paths: 3 collections in 10 000 cached calls
of a trivial tf.function, one in 4 retraces of a function retraced on a Python float.
"""

from __future__ import annotations

import gc
import time
from collections.abc import Callable
from typing import Any

__all__ = ["GcClock", "gc_clock_installed"]


class GcClock:
    """``seconds``: the time spent in garbage collection while installed, summed (it only
    grows). A span of the watch's own work that read it at its start takes the difference off.
    ``perf`` is the clock (tests pass a fake one)."""

    __slots__ = ("_began", "_perf", "seconds")

    def __init__(self, perf: Callable[[], float] = time.perf_counter) -> None:
        self.seconds = 0.0
        self._began: float | None = None
        self._perf = perf

    def __call__(self, phase: str, info: dict[str, Any]) -> None:
        # Called by the interpreter: must never raise. A "stop" with no "start" (installed
        # while a collection ran, as by a watch started from a finalizer) counts nothing.
        if phase == "start":
            self._began = self._perf()
        elif self._began is not None:
            self.seconds += self._perf() - self._began
            self._began = None

    def install(self) -> None:
        if self not in gc.callbacks:
            gc.callbacks.append(self)

    def remove(self) -> None:
        while self in gc.callbacks:
            gc.callbacks.remove(self)


def gc_clock_installed() -> bool:
    """True while any :class:`GcClock` is in ``gc.callbacks``."""
    return any(isinstance(cb, GcClock) for cb in gc.callbacks)
