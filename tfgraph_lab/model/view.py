"""ViewOptions: what a rendering of a report shows, one frozen value every face hands down.

A report is what a watch saw; a view is how much of it a reader gets: TensorFlow's and Keras's
own functions or only the user's, the graphs traced before the watch that no call used, every
row of a long graph cache or its first and last rows, the whole report or nothing. ``--all``
(the magic's, the CLI's) is :meth:`ViewOptions.everything`.

The view never changes a number: the report's counts (``report.traces``, ``report.calls``...)
are the user's functions' whatever the view (see :mod:`tfgraph_lab.model.counts`); a view picks
which rows a rendering lists and which totals its headline adds (:attr:`ViewOptions.selection`).
The live log reads it too: a watch whose view lists the framework's functions logs their
retraces one by one instead of folding them into one line.

Plain data; imports nothing from the package but :mod:`tfgraph_lab.model.counts`.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, replace
from typing import Any, TypeVar

from .counts import Selection

__all__ = ["BREVITIES", "SORTS", "ViewOptions"]

# How much a face shows: the whole report, a summary (headline, one line per function with its
# best fix: --summary), or nothing (the report is still built and written).
BREVITIES = ("full", "summary", "quiet")
# The order functions and call sites are listed in: as first seen, or the costliest retraces
# first (--sort cost; the report computes the cost: TraceReport.listed).
SORTS = ("seen", "cost")

_Row = TypeVar("_Row")


@dataclass(frozen=True)
class ViewOptions:
    """What a rendering shows (never what a watch records).

    ``framework``: list TensorFlow's and Keras's own functions (and log their retraces one by
    one). ``earlier_graphs``: list the graphs traced before the watch that no call of it used
    (folded into one line otherwise: by a notebook's 8th cell, most rows). ``whole_caches``:
    every row of a long graph cache (otherwise its first 5 and last 2). ``brevity``: one of
    :data:`BREVITIES`. ``sort``: one of :data:`SORTS` (``"cost"``: the functions whose retraces
    cost most first, and a list of the call sites, costliest first).
    """

    framework: bool = False
    earlier_graphs: bool = False
    whole_caches: bool = False
    brevity: str = "full"
    sort: str = "seen"

    def __post_init__(self) -> None:
        if self.brevity not in BREVITIES:
            raise ValueError(f"brevity must be one of {', '.join(BREVITIES)}, got {self.brevity!r}")
        if self.sort not in SORTS:
            raise ValueError(f"sort must be one of {', '.join(SORTS)}, got {self.sort!r}")

    @classmethod
    def everything(cls, **changes: Any) -> ViewOptions:
        """The view of ``--all``: every function, every graph, no row folded."""
        return replace(cls(framework=True, earlier_graphs=True, whole_caches=True), **changes)

    @classmethod
    def of_all(cls, shown: bool, **changes: Any) -> ViewOptions:
        """:meth:`everything` when ``shown`` (an ``--all`` flag), else the default view."""
        return cls.everything(**changes) if shown else cls(**changes)

    @property
    def shows_everything(self) -> bool:
        return self.framework and self.earlier_graphs and self.whole_caches

    @property
    def quiet(self) -> bool:
        return self.brevity == "quiet"

    @property
    def selection(self) -> Selection:
        """The functions a rendering totals: every one when it lists the framework's, else the
        user's."""
        return Selection.ALL if self.framework else Selection.USER

    def listed(self, functions: Iterable[_Row]) -> tuple[_Row, ...]:
        """The rows (anything with a ``framework`` flag) this view lists, in their order."""
        return tuple(f for f in functions if self.framework or not getattr(f, "framework", False))
