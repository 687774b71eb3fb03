"""Ending a :class:`~tfgraph_lab.keras.TraceCallback` watch the moment a Keras call fails.

Keras 3.15's ``fit``/``evaluate``/``predict`` (keras/src/backend/tensorflow/trainer.py) and
Keras 2.15's (keras/src/engine/training.py) call no callback method once they raise: no
``on_*_end``, no try/finally around the loop. A callback alone cannot see the failure, so
while a watched call runs, three guards sit on the only code Keras does run when it fails,
each put back when the watch ends:

* :func:`guard_step` — the step function (``model.train_function``, ``test_function``,
  ``predict_function``), looked up on the model at every batch. Errors of steps (a wrong input
  shape fails the step's trace, bad data the step) and Ctrl-C, which lands where Keras spends
  its time, end the watch here, ``BaseException`` included.
* :func:`guard_callbacks` — the ``CallbackList`` that called the callback: every ``on_*``
  method of that object (the user's other callbacks, Keras's progress bar and History) ends the
  watch when it raises, ``KeyboardInterrupt`` included. Not the ``on_*_begin`` call that is
  running when the watch begins (a callback listed after this one raising there): an
  ``Exception`` there still ends the watch through the traceback filter below.
* :func:`guard_call` — Keras's own code between steps and callbacks (building the validation
  iterator, metrics): every ``Exception`` leaving a Keras API call passes through Keras's
  traceback filter, ``filter_traceback``'s ``error_handler``, which calls the module's
  ``_process_traceback_frames(e.__traceback__)`` (Keras 3.15 and 2.15 alike). While a watch
  runs that module function is wrapped: when the traceback holds the watched call's own frame,
  the exception is leaving that call. Keras skips the filter when traceback filtering is off
  (``keras.config.disable_traceback_filtering()``): then an error in Keras's own code between
  steps and callbacks ends the watch at the next watched call, ``cb.close()`` or garbage
  collection; so does a ``KeyboardInterrupt`` in Keras's own code outside steps and callbacks
  (the filter sees only ``Exception``).

A guard that sees an error does not decide that the call fails: Keras catches some errors of its
steps (the end of a dataset of unknown size: ``StopIteration``/``OutOfRangeError``, caught by
Keras 3.15's ``catch_stop_iteration``), and the user's own code may catch others (an
``evaluate`` of bad data inside their callback). :func:`ends_the_call` says which errors end the
watched call where a guard sees them; an ``Exception`` the traceback filter watches for is left to
the filter, which sees it leave the call. The callbacks listed after the watching one get their
``on_*_begin`` guarded once (:func:`guard_rest_of_begin`): a ``KeyboardInterrupt`` there, in the
``CallbackList`` call already running, left TensorFlow patched until garbage collection.

Each guard is shared by the watches that need it and removed with the last; what it wraps is
restored exactly. Imports Keras only through the objects it is given.
"""

from __future__ import annotations

import importlib
import sys
import threading
import weakref
from collections.abc import Callable
from contextlib import ExitStack
from types import FrameType, ModuleType, TracebackType
from typing import Any

__all__ = [
    "ends_the_call",
    "filter_watches",
    "find_caller",
    "guard_call",
    "guard_callbacks",
    "guard_rest_of_begin",
    "guard_step",
]

#: A handler: ``on_error(error, leaving)``, ``leaving`` True when the error is leaving the
#: watched call (Keras's traceback filter saw it), False when a guard saw it raised inside.
OnError = Callable[[BaseException | None, bool], None]


def _fire(handlers: dict[int, Any], error: BaseException | None, leaving: bool = False) -> None:
    """Call each live handler (``WeakMethod``s: a model or a CallbackList must not keep a
    callback alive); one that raises does not stop the others or replace the user's error."""
    for ref in list(handlers.values()):
        on_error = ref()
        if on_error is not None:
            try:
                on_error(error, leaving)
            except Exception:
                pass


def _end_of_data(error: BaseException) -> bool:
    """Keras's end of data: a dataset of unknown size ends its epoch by raising StopIteration
    or TensorFlow's OutOfRangeError out of the step, and Keras catches both (Keras 3.15's
    ``catch_stop_iteration``, Keras 2.15's ``catch_stop_iteration`` likewise)."""
    return isinstance(error, StopIteration) or any(
        kind.__name__ == "OutOfRangeError" for kind in type(error).__mro__
    )


def ends_the_call(error: BaseException, filter_watching: bool) -> bool:
    """Whether ``error``, seen raised by a step or a callback, ends the watched Keras call.
    Never Keras's end of data (Keras catches it). Always a ``BaseException`` that is no
    ``Exception`` (Ctrl-C's KeyboardInterrupt, SystemExit): Keras catches none, and the
    traceback filter never sees them. An ``Exception`` the user's code may catch (an
    ``evaluate`` of bad data inside their callback): only where the traceback filter does not
    watch (``filter_watching`` False: filtering off, or a Keras laid out otherwise); where it
    does, it says when the error leaves the call."""
    if _end_of_data(error):
        return False
    if not isinstance(error, Exception):
        return True
    return not filter_watching


# ----------------------------------------------------------------------- steps
class _StepGuard:
    """Keras's step function while a watched call runs; public attributes are the step's own."""

    _tfgraph_lab_step_guard = True

    def __init__(self, step: Any, on_error: Any) -> None:
        self.__wrapped__ = step
        self._on_error = on_error

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        __tracebackhide__ = True
        try:
            return self.__wrapped__(*args, **kwargs)
        except BaseException as error:
            _fire({0: self._on_error}, error)
            raise

    def __getattr__(self, name: str) -> Any:
        if name.startswith("_") and not name.startswith("__"):
            raise AttributeError(name)  # not Trackable by duck typing: Keras tracks the step
        return getattr(self.__wrapped__, name)


def guard_step(stack: ExitStack, model: Any, name: str, on_error: Any) -> None:
    """Put a :class:`_StepGuard` on ``model.<name>`` until ``stack`` closes."""
    step = getattr(model, name, None)
    if step is None or getattr(type(step), "_tfgraph_lab_step_guard", False):
        return
    guard = _StepGuard(step, on_error)
    setattr(model, name, guard)
    held: Callable[[], Any]
    try:  # weakly, as guard_callbacks holds its list: the model may hold the callback
        held = weakref.ref(model)
    except TypeError:
        strong = model
        held = lambda: strong  # noqa: E731

    def restore() -> None:
        target = held()
        if target is not None and getattr(target, name, None) is guard:  # Keras may have made a new one
            setattr(target, name, step)

    stack.callback(restore)


# ------------------------------------------------------------------- callbacks
class _ListGuard:
    """The ``on_*`` methods of one CallbackList, wrapped for the watches that hold it."""

    def __init__(self, callbacks: Any) -> None:
        self.handlers: dict[int, Any] = {}
        self.saved: dict[str, Any] = {}  # method name -> the instance's own value before (or _ABSENT)
        self.wrappers: dict[str, Any] = {}
        own = vars(callbacks)
        ref = weakref.ref(callbacks)  # held weakly: a CallbackList nobody ends must still be collected
        for name in dir(type(callbacks)):
            if not name.startswith("on_") or not callable(getattr(callbacks, name, None)):
                continue
            self.saved[name] = own.get(name, _ABSENT)
            self.wrappers[name] = wrapper = self._wrap(ref, name)
            setattr(callbacks, name, wrapper)

    def _wrap(self, ref: Any, name: str) -> Callable[..., Any]:
        handlers, before, method = self.handlers, self.saved[name], getattr(type(ref()), name)

        def guarded(*args: Any, **kwargs: Any) -> Any:
            __tracebackhide__ = True
            try:
                if before is not _ABSENT:
                    return before(*args, **kwargs)
                return method(ref(), *args, **kwargs)
            except BaseException as error:
                _fire(handlers, error)
                raise

        return guarded

    def restore(self, callbacks: Any) -> None:
        own = vars(callbacks)
        for name, wrapper in self.wrappers.items():
            if own.get(name) is not wrapper:
                continue  # someone else set it since: theirs now
            before = self.saved[name]
            if before is _ABSENT:
                delattr(callbacks, name)
            else:
                setattr(callbacks, name, before)


_ABSENT = object()
# Keyed weakly, and no guard refers to its CallbackList strongly (but an own on_* value it saved)
_LISTS: weakref.WeakKeyDictionary[Any, _ListGuard] = weakref.WeakKeyDictionary()
_LOCK = threading.Lock()


def find_caller(callback: Any, model: Any, call: str) -> tuple[Any, FrameType | None]:
    """From inside ``callback.on_<call>_begin``: the CallbackList calling it (the object whose
    ``callbacks`` list holds ``callback``) and the frame of Keras's ``call`` method running on
    ``model`` (``fit``, ``evaluate``, ``predict``); None for what is not found."""
    found_list: Any = None
    frame: FrameType | None = sys._getframe(1)
    while frame is not None:
        owner = frame.f_locals.get("self")
        if found_list is None and owner is not callback:
            members = getattr(owner, "callbacks", None)
            if isinstance(members, list) and any(c is callback for c in members):
                found_list = owner
        if owner is model and model is not None and frame.f_code.co_name == call:
            return found_list, frame
        frame = frame.f_back
    return found_list, None


def guard_callbacks(stack: ExitStack, callbacks: Any, on_error: Any) -> None:
    """Wrap ``callbacks``' ``on_*`` methods (one wrapper shared by every watch on that
    CallbackList) until ``stack`` closes; ``on_error`` (a WeakMethod) runs when one raises."""
    if callbacks is None:
        return
    key = id(on_error)
    with _LOCK:
        guard = _LISTS.get(callbacks)
        if guard is None:
            try:
                guard = _ListGuard(callbacks)
                _LISTS[callbacks] = guard
            except (TypeError, AttributeError):  # slots, no weak reference: left unguarded
                return
        guard.handlers[key] = on_error
    # Weakly: the stack lives as long as the callback's finalizer does (it is its argument), and
    # the CallbackList holds the callback, so a strong reference here would keep it alive forever.
    held = weakref.ref(callbacks)
    del callbacks

    def release() -> None:
        with _LOCK:
            guard.handlers.pop(key, None)
            target = held()
            if not guard.handlers and target is not None and _LISTS.get(target) is guard:
                del _LISTS[target]
                guard.restore(target)

    stack.callback(release)


# -------------------------------------------------------- Keras's own code
class _FilterHook:
    """Keras's ``traceback_utils._process_traceback_frames``, wrapped while watches run."""

    def __init__(self) -> None:
        self.module: ModuleType | None = None
        self.original: Any = None
        self.installed: Any = None
        # id(frame) -> on_error. Ids only: holding the frame would keep the call's locals (the
        # CallbackList, the callback) alive when no guard saw its failure, and the callback's own
        # finalizer, the last way such a watch ends, would never run. A dead frame's id matched
        # later means that call ended with no on_*_end: ending its watch then is right.
        self.watched: dict[int, Any] = {}

    def hook(self, original: Callable[[Any], Any]) -> Callable[[Any], Any]:
        watched = self.watched

        def _process_traceback_frames(tb: Any) -> Any:
            if watched:
                try:
                    leaving = set()
                    walk: TracebackType | None = tb
                    while walk is not None:
                        leaving.add(id(walk.tb_frame))
                        walk = walk.tb_next
                    for key, on_error in list(watched.items()):
                        if key in leaving:  # the watched call's own frame: leaving it
                            # Keras calls this inside ``except Exception as e``: the error is e
                            _fire({0: on_error}, sys.exc_info()[1], leaving=True)
                except Exception:
                    pass
            return original(tb)

        return _process_traceback_frames


_FILTER = _FilterHook()


def _traceback_utils(keras: ModuleType) -> ModuleType | None:
    """Keras's traceback_utils module (Keras 3 and 2.13+: ``<keras>.src.utils``), if it has the
    function its ``filter_traceback`` calls on a failure."""
    for name in (f"{keras.__name__}.src.utils.traceback_utils", f"{keras.__name__}.utils.traceback_utils"):
        try:
            module = importlib.import_module(name)
        except ImportError:
            continue
        if callable(getattr(module, "_process_traceback_frames", None)) and hasattr(
            module, "filter_traceback"
        ):
            return module
    return None


def filter_watches() -> bool:
    """Whether Keras's traceback filter is wrapped and on now: an ``Exception`` leaving a
    watched call is then seen leaving it (``keras.config.disable_traceback_filtering()`` turns
    it off at any time; Keras 2's filter reads ``tf.debugging.is_traceback_filtering_enabled()``;
    a Keras without either switch is taken as off)."""
    module = _FILTER.module
    if module is None or not _FILTER.watched:
        return False
    enabled = getattr(module, "is_traceback_filtering_enabled", None)
    if enabled is None:  # Keras 2 (tf.keras 2.15): its filter reads TF's own switch
        enabled = getattr(getattr(getattr(module, "tf", None), "debugging", None), "is_traceback_filtering_enabled", None)
    try:
        return bool(enabled()) if callable(enabled) else False
    except Exception:
        return False


def guard_call(stack: ExitStack, keras: ModuleType, frame: FrameType | None, on_error: Any) -> bool:
    """Until ``stack`` closes, run ``on_error`` (a WeakMethod) when an exception leaves the call
    running in ``frame`` through Keras's traceback filter. False when it cannot."""
    if frame is None:
        return False
    module = _traceback_utils(keras)
    if module is None:
        return False
    key = id(frame)
    with _LOCK:
        if not _FILTER.watched:
            _FILTER.module, _FILTER.original = module, module._process_traceback_frames
            _FILTER.installed = _FILTER.hook(_FILTER.original)
            module._process_traceback_frames = _FILTER.installed  # type: ignore[attr-defined]
        _FILTER.watched[key] = on_error

    def release() -> None:
        with _LOCK:
            _FILTER.watched.pop(key, None)
            if _FILTER.watched or _FILTER.module is None:
                return
            if getattr(_FILTER.module, "_process_traceback_frames", None) is _FILTER.installed:
                _FILTER.module._process_traceback_frames = _FILTER.original  # type: ignore[attr-defined]
            _FILTER.module = _FILTER.original = _FILTER.installed = None

    stack.callback(release)
    return True


# ------------------------------------- the callbacks after ours, in the running on_*_begin
def guard_rest_of_begin(stack: ExitStack, callbacks: Any, callback: Any, hook: str, on_error: Any) -> None:
    """Guard ``hook`` (``on_train_begin``, …) of each callback listed after ``callback`` in the
    CallbackList ``callbacks`` once: the CallbackList's own ``hook`` is running (it called
    ``callback``), so :func:`guard_callbacks` cannot wrap it, and a KeyboardInterrupt raised in
    a later callback's ``hook`` went past every guard. Each wrapper puts the callback's own
    attribute back when it is called, and ``stack`` puts back any not called."""
    members = getattr(callbacks, "callbacks", None)
    if not isinstance(members, list):
        return
    mine = next((i for i, c in enumerate(members) if c is callback), len(members))
    for other in members[mine + 1 :]:
        try:
            _guard_once(stack, other, hook, on_error)
        except (TypeError, AttributeError):  # slots, a read-only attribute: left unguarded
            continue


def _guard_once(stack: ExitStack, other: Any, hook: str, on_error: Any) -> None:
    own = vars(other).get(hook, _ABSENT)
    method = getattr(other, hook)

    def restore() -> None:
        if vars(other).get(hook) is guarded:
            if own is _ABSENT:
                delattr(other, hook)
            else:
                setattr(other, hook, own)

    def guarded(*args: Any, **kwargs: Any) -> Any:
        __tracebackhide__ = True
        restore()
        try:
            return method(*args, **kwargs)
        except BaseException as error:
            _fire({0: on_error}, error)
            raise

    setattr(other, hook, guarded)
    stack.callback(restore)
