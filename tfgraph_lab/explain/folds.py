"""Folds over the graphs of a history, kept for the next history: what a loop's n retraces
count over the graphs before each is counted once per graph.

A loop's n-th retrace is explained against the graphs before it, and its fixes count over them
(how many graphs a change leaves, the input_signature they need): its history is the (n-1)-th's
and one graph more. :class:`PrefixFolds` goes on from the state it kept for that history instead
of folding again from the first graph (n² before: the report of 800 shape retraces took 18 s,
TF 2.21). Pure: plain records only. Imports neither TensorFlow, IPython nor ipywidgets.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Sequence
from typing import Generic, TypeVar

from ..model.signatures import Signature

__all__ = ["PrefixFolds", "texts_seen"]

_S = TypeVar("_S")


class PrefixFolds(Generic[_S]):
    """A fold over the graphs of a history, its state kept for the last few histories folded
    and taken on from there when the next history extends one by a graph. Histories are told
    apart by the identity of their signatures: the states kept hold their signatures, so no
    other object can take their ``id``. Plain data only: signatures, their leaves and what is
    counted of them. A returned state is shared: read it, never change it."""

    def __init__(self, start: Callable[[], _S], step: Callable[[_S, Signature], None], copy: Callable[[_S], _S]) -> None:
        self._start, self._step, self._copy = start, step, copy
        self._kept: dict[tuple[int, ...], tuple[tuple[Signature, ...], _S]] = {}
        self._lock = threading.Lock()

    def over(self, history: Sequence[Signature], step: Callable[[_S, Signature], None] | None = None) -> _S:
        """The fold's state over ``history``; ``step``: the fold's own step, given again by a
        caller whose step is a closure (the same for every call on this instance)."""
        step = step or self._step
        sigs = tuple(history)
        ids = tuple(map(id, sigs))
        with self._lock:
            done = self._kept.get(ids) or self._kept.get(ids[:-1])
        if done is not None and len(done[0]) == len(sigs):
            return done[1]
        state, begin = (self._copy(done[1]), len(done[0])) if done is not None else (self._start(), 0)
        for sig in sigs[begin:]:
            step(state, sig)
        with self._lock:
            self._kept[ids] = (sigs, state)
            while len(self._kept) > _FOLDS_KEPT:
                del self._kept[next(iter(self._kept))]
        return state


_FOLDS_KEPT = 4  # histories kept per fold: a loop needs the one before (and asks it again)


_DISTINCT: dict[str, PrefixFolds[set[str]]] = {}
_DISTINCT_LOCK = threading.Lock()


def texts_seen(history: Sequence[Signature], name: str, text_of: Callable[[Signature], str]) -> set[str]:
    """The distinct ``text_of(sig)`` of the history's graphs (``name`` names ``text_of``
    exactly: one name, one function), gathered on from the history before it. Shared: read
    it, never change it."""
    with _DISTINCT_LOCK:
        folds = _DISTINCT.get(name)
        if folds is None:
            folds = _DISTINCT[name] = PrefixFolds(set, lambda seen, sig: seen.add(text_of(sig)), set)
            while len(_DISTINCT) > 4 * _FOLDS_KEPT:
                del _DISTINCT[next(iter(_DISTINCT))]
    return folds.over(history, lambda seen, sig: seen.add(text_of(sig)))
