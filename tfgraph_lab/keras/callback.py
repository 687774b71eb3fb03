"""``TraceCallback``: watch Keras's ``fit``/``evaluate``/``predict`` for retraces.

Pass it to the calls you want watched: it watches only while such a call runs (``evaluate``
run by ``fit`` for validation nests inside the fit's watch), accumulates over calls, logs each
retrace the moment it happens (see :mod:`tfgraph_lab.watching.livelog`), keeps ``cb.report`` (a
:class:`~tfgraph_lab.report.TraceReport` whose rows are Keras's step functions, named for the
call that ran them — "fit · train step", "predict step" — see :mod:`tfgraph_lab.keras.names`,
with fixes a Keras user can apply, :mod:`tfgraph_lab.explain.keras_fixes`; each traced call mapped to
the user's line) and, with ``max_retraces``, raises
:class:`~tfgraph_lab.model.errors.TraceBudgetExceeded` out of the call that went over, with
TensorFlow left unpatched. With ``log_dir`` it writes TensorBoard scalars after each epoch.

Importing this module imports Keras (Keras 3 on the TensorFlow backend, tested; Keras 2 as
TensorFlow 2.15 bundles it, tested in the oldest-TF CI run, tests/keras/test_keras2.py; tf-keras when
``TF_USE_LEGACY_KERAS=1`` selects it, untested: installing tf-keras pulls in the full
``tensorflow`` wheel next to ``tensorflow-cpu``); ``import tfgraph_lab`` does not import it.
"""

from __future__ import annotations

import importlib
import os
import warnings
import weakref
from contextlib import ExitStack
from typing import Any

from ..model.errors import TfgraphLabError, TraceBudgetExceeded, UsageProblem
from ..report.merge import merge_reports
from ..report.trace_report import TraceReport
from ..watching.livelog import LOGGER, stream_to_stderr
from ..watching.recorder import TraceRecorder
from ..watching.tensorboard import TraceScalars, check_log_dir
from .guard import (
    ends_the_call,
    filter_watches,
    find_caller,
    guard_call,
    guard_callbacks,
    guard_rest_of_begin,
    guard_step,
)
from .names import KerasNames

__all__ = ["TraceCallback"]


def _keras() -> Any:
    if os.environ.get("TF_USE_LEGACY_KERAS", "").lower() in ("1", "true", "yes"):
        try:
            return importlib.import_module("tf_keras")
        except ImportError:
            pass
    return importlib.import_module("keras")


_KERAS = _keras()
_Callback: Any = _KERAS.callbacks.Callback


_FUNCTION_KIND = {"fit": "train", "evaluate": "test", "predict": "predict"}
_BEGIN_HOOK = {"fit": "on_train_begin", "evaluate": "on_test_begin", "predict": "on_predict_begin"}


def _stop_quietly(watch: list[Any]) -> None:
    """End a watch: close each ExitStack (recorder, logging set-up, step guards). Also the
    finalizer, for a watch nothing else ended."""
    for item in watch:
        item.close()
    watch.clear()


class TraceCallback(_Callback):  # type: ignore[misc]
    """Watch the Keras calls this callback is passed to; ``cb.report`` is what they traced.

    ``max_retraces``: how many retraces (traces after a function object's first, and traces of
    new function objects, Keras's own included) all calls together may make; one more raises
    ``TraceBudgetExceeded`` out of the call. ``log_dir``: write TensorBoard scalars there after
    each epoch of ``fit`` and at the end of ``evaluate``/``predict`` run on their own, one
    point each at steps 0, 1, 2, … in that order (never back, never twice: a second ``fit``
    goes on from where the last point was).

    A watched call that raises ends its watch as the error leaves it (TensorFlow unpatched, a
    ``tfgraph_lab:`` warning says so, and ``cb.ended_early`` lists it); errors Keras or the
    user's code catch inside the call (a dataset of unknown size ending its epoch, an
    ``evaluate`` of bad data in a callback's ``try``) end nothing.
    """

    def __init__(
        self, max_retraces: int | None = None, log_dir: str | os.PathLike[str] | None = None
    ) -> None:
        super().__init__()
        if max_retraces is not None and (
            isinstance(max_retraces, bool) or not isinstance(max_retraces, int) or max_retraces < 0
        ):
            raise UsageProblem(f"max_retraces must be a whole number >= 0 or None, got {max_retraces!r}")
        backend = getattr(getattr(_KERAS, "backend", None), "backend", lambda: "tensorflow")()
        if backend != "tensorflow":
            raise UsageProblem(
                f"TraceCallback watches TensorFlow's tf.function, but this Keras runs on the "
                f"{backend!r} backend; set KERAS_BACKEND=tensorflow before importing Keras"
            )
        self.max_retraces = max_retraces
        self.log_dir = None if log_dir is None else check_log_dir(log_dir, "log_dir")  # before fit
        self._depth = 0
        self._kind = ""
        self._recorder: TraceRecorder | None = None
        self._open: list[Any] = []  # ExitStack of the running call (logging set-up, recorder)
        self._finished: list[TraceRecorder] = []  # one per watched call, in order
        self._names = KerasNames()
        self._merged: TraceReport | None = None
        self._scalars = TraceScalars(self.log_dir) if self.log_dir is not None else None
        self._tb_step = 0  # the next TensorBoard step: one point per fit epoch or lone call
        self._filtered = False  # Keras's traceback filter watches the running call (guard_call)
        #: One line per watched call that raised: its watch ended there, early.
        self.ended_early: list[str] = []
        self._finalizer = weakref.finalize(self, _stop_quietly, self._open)

    # ----------------------------------------------------------------- Keras hooks
    def on_train_begin(self, logs: Any = None) -> None:
        self._begin("fit")

    def on_train_end(self, logs: Any = None) -> None:
        self._end("fit")

    def on_test_begin(self, logs: Any = None) -> None:
        self._begin("evaluate")

    def on_test_end(self, logs: Any = None) -> None:
        self._end("evaluate")

    def on_predict_begin(self, logs: Any = None) -> None:
        self._begin("predict")

    def on_predict_end(self, logs: Any = None) -> None:
        self._end("predict")

    def on_train_batch_end(self, batch: int, logs: Any = None) -> None:
        self._check_live()

    def on_test_batch_end(self, batch: int, logs: Any = None) -> None:
        self._check_live()

    def on_predict_batch_end(self, batch: int, logs: Any = None) -> None:
        self._check_live()

    def on_epoch_end(self, epoch: int, logs: Any = None) -> None:
        if self._scalars is not None and self._recorder is not None:
            self._write_scalars(self._combined(self._recorder.report))

    # --------------------------------------------------------------------- public
    @property
    def report(self) -> TraceReport:
        """Everything the watched calls traced, summed over calls (live while one runs)."""
        if self._recorder is not None and self._recorder.active:
            return self._combined(self._recorder.report)
        if self._merged is None:
            self._merged = self._combined(None)
        return self._merged

    @property
    def retraces(self) -> int:
        """Retraces so far over all watched calls (Keras's own functions included)."""
        done = sum(r.report.totals("all").retraces for r in self._finished)
        if self._recorder is not None and self._recorder.active:
            done += self._recorder.live_counters(recent=0, selection="all").retraces
        return done

    def close(self) -> None:
        """End a watch that a failed call left running, and close the TensorBoard writer."""
        if self._depth:
            self._stop()
        if self._scalars is not None:
            self._scalars.close()

    # ----------------------------------------------------------------- internals
    def _begin(self, kind: str) -> None:
        if self._depth and self._recorder is not None and not self._recorder.active:
            self._depth = 0  # defensive: a watch someone else ended
        if self._depth and self._kind == kind:
            # A new fit while our fit "runs": the last one raised (Keras then skips on_*_end).
            self._stop()
        self._depth += 1
        if self._depth > 1:
            self._name_functions(kind)  # evaluate inside fit (validation): the fit's watch covers it
            if self._open:
                self._guard(self._open[-1], kind)
            return
        self._kind = kind
        stack = ExitStack()
        stack.enter_context(stream_to_stderr(only_if_unconfigured=True))
        try:
            recorder = TraceRecorder()
            recorder.start()
        except BaseException:
            stack.close()
            self._depth = 0
            raise
        stack.callback(recorder.stop)
        self._recorder = recorder
        self._open.append(stack)
        self._name_functions(kind)  # before the guard: KerasNames reads Keras's own function
        self._guard(stack, kind)
        # the failure paths outside the step: the other callbacks, Keras's own code (keras_guard)
        self._filtered = False
        try:
            callbacks, frame = find_caller(self, getattr(self, "model", None), kind)
            guard_callbacks(stack, callbacks, weakref.WeakMethod(self._failed))
            self._filtered = guard_call(stack, _KERAS, frame, weakref.WeakMethod(self._failed))
            guard_rest_of_begin(stack, callbacks, self, _BEGIN_HOOK[kind], weakref.WeakMethod(self._failed))
        except Exception:  # a Keras laid out otherwise: those failures end the watch later
            pass

    def _guard(self, stack: ExitStack, kind: str) -> None:
        model = getattr(self, "model", None)
        if model is not None:
            guard_step(stack, model, f"{_FUNCTION_KIND[kind]}_function", weakref.WeakMethod(self._failed))

    def _failed(self, error: BaseException | None, leaving: bool) -> None:
        """A guard saw ``error``: raised inside the watched call (its step, another callback),
        or ``leaving`` it (Keras's traceback filter). End the watch only when the call fails
        with it (``guard.ends_the_call``): Keras will call no ``on_*_end`` then."""
        if not self._depth:
            return
        if not leaving and error is not None and not ends_the_call(error, self._filtered and filter_watches()):
            return  # Keras's end of data, or an Exception the filter will see if it leaves the call
        what = f"{type(error).__name__}" if error is not None else "an error"
        note = (
            f"TraceCallback's watch of {self._kind} ended early: {self._kind} raised {what}; "
            "cb.report holds what ran until then"
        )
        self.ended_early.append(note)
        LOGGER.warning(note)  # while the watch's logging set-up still shows it
        self._stop()

    def _name_functions(self, kind: str) -> None:
        """Name the model's train/test/predict functions for this call (see keras_names)."""
        if self._recorder is None or getattr(self, "model", None) is None:
            return
        if self._names.name(self._recorder, self.model, self._kind, _FUNCTION_KIND[kind]):
            for recorder in self._finished:
                recorder.rebuild_report()
            self._merged = None

    def _end(self, kind: str) -> None:
        if self._depth == 0:
            return
        if kind != self._kind:
            # a call inside the watched one ended (fit's validation evaluate); one that raised
            # (caught by the user's code) never said so: the watched call's own end ends the watch
            self._depth = max(1, self._depth - 1)
            return
        self._stop()
        if self._scalars is not None and self._kind != "fit":
            self._write_scalars(self.report)
        over = self._over_budget()
        if over is not None:
            raise over

    def _write_scalars(self, report: TraceReport) -> None:
        """One TensorBoard point at the next step: steps only go forward over fit, evaluate
        and predict (TensorBoard 2.21 shows only the points after a step that went back)."""
        assert self._scalars is not None
        try:
            self._scalars.write(report, self._tb_step)
        except TfgraphLabError as exc:
            # A side channel: a write that fails (the folder went away, a full disk) warns once
            # and stops the scalars; training goes on.
            self._scalars = None
            warnings.warn(f"tfgraph_lab: {exc}; no more scalars are written for this callback", stacklevel=2)
        self._tb_step += 1

    def _stop(self) -> None:
        recorder, self._recorder = self._recorder, None
        self._depth = 0
        _stop_quietly(self._open)  # stops the recorder and restores logging
        if recorder is not None:
            self._finished.append(recorder)
            self._merged = None

    def _check_live(self) -> None:
        if self.max_retraces is None or self._recorder is None:
            return
        if self.retraces > self.max_retraces:
            self._stop()  # TensorFlow unpatched before the error leaves the call
            over = self._over_budget()
            assert over is not None
            raise over

    def _over_budget(self) -> TraceBudgetExceeded | None:
        if self.max_retraces is None:
            return None
        report = self.report
        total = report.totals("all").retraces
        if total <= self.max_retraces:
            return None
        overruns = [(f.label, f.retraces, self.max_retraces) for f in report.functions if f.retraces]
        error = TraceBudgetExceeded(overruns, report)
        named = ", ".join(f"{name} ×{n}" for name, n, _ in overruns)
        error.args = (
            f"Keras {self._kind} went over max_retraces={self.max_retraces}: {total} retraces "
            f"({named}). The retrace lines above and cb.report say why each happened and how "
            "to fix it.",
        )
        return error

    def _combined(self, running: TraceReport | None) -> TraceReport:
        parts = [(r.report, r.started_at) for r in self._finished]
        if running is not None and self._recorder is not None:
            parts.append((running, self._recorder.started_at))
        if not parts:
            return TraceReport()
        if len(parts) == 1:
            return parts[0][0]
        origin = parts[0][1]
        merged = merge_reports(
            [(str(i), r) for i, (r, _) in enumerate(parts)],
            start_offsets=[at - origin for _, at in parts],
            label_tracks=False,
        )
        return merged.report
