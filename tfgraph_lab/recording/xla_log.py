"""TensorFlow's own log of its XLA compilations, read from the process's stderr while a watch runs.

TensorFlow logs every XLA compilation at ``VLOG(2)`` of ``device_compiler``: "Instantly compiling
for signature: __inference_f_17" (tensorflow/compiler/jit/device_compiler.h, TF 2.15-2.21), and
every launch of a compiled cluster, cached or not, with other ``device_compiler`` lines. No Python
API reads it (nor the ``/tensorflow/core/xla_compilations`` counter: see :mod:`tfgraph_lab.recording.xla`),
and the switch is read once, when TensorFlow's C++ library loads: ``TF_CPP_VMODULE`` set after
``import tensorflow`` is ignored (TF 2.21, measured), and ``TF_CPP_MIN_LOG_LEVEL`` must be 0 (at 1,
2 or 3 no VLOG line is written). So:

* :meth:`XlaLog.prepare` asks for the log through the environment, *before* TensorFlow is imported
  (``tfgraph-lab run`` calls it; ``%load_ext tfgraph_lab`` calls :meth:`XlaLog.hold`, which also
  keeps fd 2 read until the extension is unloaded, since the lines the switches let through would
  show outside the cells' watches too); it also notices a user who set
  ``TF_CPP_VMODULE=device_compiler=2`` themselves;
* while a watch runs, file descriptor 2 is the pipe of a relay process
  (:class:`tfgraph_lab.recording.fd2_tee.Fd2Tee`, :mod:`tfgraph_lab.recording.fd2_relay`): it
  writes everything on to the real stderr as it arrives, except what the user's own
  ``TF_CPP_MIN_LOG_LEVEL`` would have hidden when :meth:`prepare` lowered it (TF's INFO lines)
  and, when the user did not ask for them, the ``device_compiler`` lines themselves; it takes the
  compile lines with their time (``fd2_relay.LineJudge``) and hands them over when a watch asks.

The log proves itself: a watch whose log shows no ``device_compiler`` line although XLA ran is
not read (TensorFlow was imported before the switch), and the count stays modelled. Plain
data out: :class:`LogWindow`. No TensorFlow import here.
"""

from __future__ import annotations

import os
import re
import sys
import threading
import time
from dataclasses import dataclass, field
from typing import Any

from .fd2_relay import pass_on
from .fd2_tee import Fd2Tee

__all__ = ["LOG", "LogWindow", "XlaLog", "compile_name_parts"]


@dataclass
class LogWindow:
    """What TensorFlow logged during one watch: ``compiles`` as (``perf_counter`` time, name)."""

    compiles: list[tuple[float, str]] = field(default_factory=list)
    launches: int = 0  # device_compiler lines of any kind: XLA ran with the log on
    proven: bool = False  # this process's TensorFlow has written its compile log


class XlaLog:
    """The process's reader of TensorFlow's compile log (one per process: fd 2 is one)."""

    def __init__(self) -> None:
        self.requested = False  # the environment asked TF for the compile lines
        self.hide = False  # the user did not ask for them: keep them off their stderr
        self.user_level = 0  # the TF_CPP_MIN_LOG_LEVEL the user wanted (we may have lowered it)
        self.proven = False
        self._lock = threading.Lock()
        self._tee: Fd2Tee | None = None
        self._users = 0
        self.compiles: list[tuple[float, str]] = []
        self.launches = 0
        self._held = False  # the extension reads fd 2 from its load to its unload
        self._lent: dict[str, str | None] = {}  # what prepare() changed in os.environ: the user's values

    def prepare(self, environ: dict[str, str] | None = None) -> bool:
        """Ask TensorFlow for its compile log through the environment; True when it will be on.

        Only before TensorFlow is imported (its C++ side reads the switches once, on load).
        Lowers ``TF_CPP_MIN_LOG_LEVEL`` to 0 (VLOG lines need it) and remembers the user's
        level, so that lines below it are still kept off stderr."""
        env = os.environ if environ is None else environ
        if "tensorflow" in sys.modules:
            return self.notice(env)
        lent = {key: env.get(key) for key in ("TF_CPP_VMODULE", "TF_CPP_MIN_LOG_LEVEL")}
        vmodule = env.get("TF_CPP_VMODULE", "")
        if _vlog_level(vmodule) < 2:
            self.hide = True
            env["TF_CPP_VMODULE"] = ",".join(p for p in (vmodule, "device_compiler=2") if p)
        self.user_level = _int(env.get("TF_CPP_MIN_LOG_LEVEL", "0"))
        env["TF_CPP_MIN_LOG_LEVEL"] = "0"
        if environ is None:
            self._lent = {key: value for key, value in lent.items() if env.get(key) != value}
        self.requested = True
        return True

    def give_back_environment(self) -> None:
        """Once TensorFlow has loaded, ``os.environ`` holds the user's own ``TF_CPP_*`` values
        again: TF's C++ side read the switches as its library loaded and does not read them
        again (its compile lines keep coming with both variables put back or unset, TF 2.21,
        measured), so the program, and any process it starts, sees the environment it would
        see unwatched. A no-op before TensorFlow is imported and after the first call."""
        if "tensorflow" in sys.modules:
            self._put_back()

    def _put_back(self) -> None:
        for key, value in self._lent.items():
            if value is None:
                os.environ.pop(key, None)
            else:
                os.environ[key] = value
        self._lent = {}

    def hold(self) -> bool:
        """:meth:`prepare`, and read fd 2 from now until :meth:`release` (the notebook
        extension: outside ``%%tracewatch`` cells too, the TF lines the switches let through
        are kept off the user's stderr; between watches the relay records nothing, so memory
        stays bounded). Only before TensorFlow is imported; True when holding."""
        if "tensorflow" in sys.modules or self._held or not self.prepare():
            return self._held
        with self._lock:
            if self._tee is None:
                tee = Fd2Tee(self.hide, self.user_level, recording=False)
                if not tee.start():
                    return False
                self._tee = tee
            self._held = True
        return True

    def release(self) -> None:
        with self._lock:
            if not self._held:
                return
            self._held = False
            if "tensorflow" not in sys.modules:  # TF never loaded: it will read the user's switches
                self.requested = self.hide = False
            self._put_back()
            tee = self._tee
            if tee is not None and self._users <= 0:
                self._tee = None
                tee.stop()
                self.compiles.clear()
                self.launches = 0

    def notice(self, env: os._Environ[str] | dict[str, str]) -> bool:
        """The user's own switches (read at the first watch): the log is requested when they ask
        for ``device_compiler`` VLOG 2 at log level 0 (whether they did so before TensorFlow
        loaded, only the log itself will tell)."""
        if not self.requested:
            level = max(
                _vlog_level(env.get("TF_CPP_VMODULE", "")), _int(env.get("TF_CPP_MAX_VLOG_LEVEL", "0"))
            )
            self.requested = level >= 2 and _int(env.get("TF_CPP_MIN_LOG_LEVEL", "0")) == 0
        return self.requested

    def launch(self) -> None:
        """Start the relay process now, when the log was requested; the next :meth:`open`
        connects fd 2 to it. ``tfgraph-lab run`` calls it after :meth:`prepare`, so the relay's
        start-up (a ``python -S``) overlaps the import of the recorder instead of delaying the
        script."""
        with self._lock:
            if self.requested and self._tee is None:
                tee = Fd2Tee(self.hide, self.user_level)
                if tee.launch():
                    self._tee = tee  # launched: the next open() connects it

    def abandon(self) -> None:
        """Undo :meth:`prepare` and :meth:`launch` when no watch followed: the relay ends (it
        reads the end of its input), the environment is the user's again."""
        with self._lock:
            tee = self._tee
            if tee is not None and tee.launched:
                self._tee = None
                tee.stop()
            if not self._held:
                self._put_back()

    def open(self) -> tuple[int, int] | None:
        """A watch begins: read fd 2 (if the log was requested). Returns the watch's mark."""
        if not self.notice(os.environ):
            return None
        with self._lock:
            tee = self._tee
            if tee is not None and tee.launched:  # launch()ed before the watch: connected now
                if not tee.connect():  # it did not start: fd 2 left alone, nothing left behind
                    self._tee = None
                    return None
            elif self._tee is None:
                tee = Fd2Tee(self.hide, self.user_level)
                if not tee.start():
                    return None
                self._tee = tee
            else:  # what the relay read before this watch is not the watch's
                self._take(self._tee.sync(recording=True))
            self._users += 1
            return (len(self.compiles), self.launches)

    def write_past_tee(self, data: bytes) -> bool:
        """Write ``data`` straight to the real stderr while fd 2 is the relay's pipe (False when
        no relay runs): a line that must be out at once — a live-log retrace line of a job that
        may be SIGKILLed next — must not wait in the pipe for the relay."""
        tee = self._tee
        if tee is None or tee.saved < 0:
            return False
        # written the direct way, or not at all: a failed write is not tried again through the
        # pipe, which may hold a part of it already
        pass_on(tee.saved, data)
        return True

    def window(self, mark: tuple[int, int]) -> LogWindow:
        """What was logged since ``mark`` (a snapshot; reading goes on)."""
        with self._lock:
            if self._tee is not None:
                self._take(self._tee.sync())
            return LogWindow(list(self.compiles[mark[0] :]), self.launches - mark[1], self.proven)

    def close(self, mark: tuple[int, int]) -> LogWindow:
        """A watch ends: its window; fd 2 is the real stderr again once no watch reads it (and
        the extension does not hold it)."""
        with self._lock:
            self._users -= 1
            tee = self._tee
            if tee is not None and self._users <= 0 and not self._held:
                self._tee = None
                self._users = 0
                self._take(tee.stop())
            elif tee is not None:
                self._take(tee.sync(recording=self._users > 0))
            window = LogWindow(list(self.compiles[mark[0] :]), self.launches - mark[1], self.proven)
            if self._users <= 0:
                self.compiles.clear()
                self.launches = 0
        return window

    def _take(self, answer: dict[str, Any] | None) -> None:
        """The relay's answer: the compile lines it read, with their wall-clock times."""
        if not answer:
            return
        offset = time.time() - time.perf_counter()
        for wall, name in answer.get("compiles", ()):
            self.compiles.append((float(wall) - offset, str(name)))
        self.launches += int(answer.get("launches", 0))
        self.proven = self.proven or bool(answer.get("proven"))


LOG = XlaLog()


def compile_name_parts(name: str) -> tuple[str, str]:
    """``__inference_f_17`` → ("f", "inference"); ``__forward_loss_158`` → ("loss", "forward");
    ``__inference___backward_loss_148_159`` → ("loss", "backward"); else (name, "")."""
    match = re.match(r"^__inference___backward_(.+?)_\d+_\d+$", name)
    if match:
        return match.group(1), "backward"
    match = re.match(r"^__(inference|forward)_(.+?)_\d+$", name)
    if match:
        return match.group(2), match.group(1)
    return name, ""


def _vlog_level(vmodule: str) -> int:
    for part in vmodule.split(","):
        name, _, level = part.partition("=")
        if name.strip() in ("device_compiler", "device_compiler*"):
            return _int(level)
    return 0


def _int(text: str) -> int:
    try:
        return int(text.strip() or 0)
    except ValueError:
        return 0
