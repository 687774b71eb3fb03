"""File descriptor 2 read while it is written, by a relay process that writes every byte on to
the real stderr as it arrives (:mod:`tfgraph_lab.recording.fd2_relay`); this side makes fd 2 the
relay's pipe, and asks the relay what it read of TensorFlow's log.

The relay is its own process, so nothing the watched process does can lose a byte of its
stderr: its last line before ``os._exit``, faulthandler's report of a segfault and a C message
before ``abort()`` are in the pipe, and the relay writes them on after the process is gone; a
child process that inherited fd 2 keeps the relay going after the script ended, until it closes
fd 2 (as it would keep the real stderr). The relay needs no GIL of this process, so a C-level
write of megabytes made with the GIL held never waits for it (a reader thread here hung for good
on one 1.1 MB write through ``ctypes.PyDLL`` into a 1 MiB pipe, CPython 3.11). It holds only the
line it is reading (bounded), never a copy of the stream.

When fd 1 and fd 2 are one file or pipe (``2>&1``, not a terminal), fd 1 goes into the same
pipe: the bytes keep the order of the writes that made them, as they would unwatched.

To know what the relay has read so far, :meth:`Fd2Tee.sync` writes a marker to fd 2 (one write,
shorter than ``PIPE_BUF``: never split by another writer) and waits for the relay's answer on a
second pipe: what it took from TensorFlow's log before the marker. The relay never shows the
marker. POSIX only (elsewhere fd 2 is left alone and XLA counts stay modelled). No TensorFlow
import here.
"""

from __future__ import annotations

import atexit
import json
import os
import select
import stat
import subprocess
import sys
import time
import warnings
from pathlib import Path
from typing import Any

from . import fd2_relay
from .fd2_relay import READY, marker, pass_on

__all__ = ["Fd2Tee"]

_PIPE_SIZE = 1 << 20  # Linux's default pipe-max-size: room for a burst while the relay writes
_ANSWER_WAIT = 30.0  # seconds for the relay's answer (it waits only for its own writes)
_START_WAIT = 30.0  # seconds for the relay to start (a loaded machine), else fd 2 is left alone
_END_WAIT = 0.5  # seconds a watch's end waits for its relay to exit (reaped: no zombie)
# The relay runs as the top-level module ``fd2_relay`` of its own directory (it imports nothing
# of the project: see its docstring); that directory replaces ``-c``'s current directory at the
# head of its ``sys.path``, so no module of the user's working directory is imported instead.
# It ends with ``os._exit``: all it writes went out through ``os.write``, and finalizing the
# interpreter took 4-5 ms more that the watch's end waited for (CPython 3.11).
_RELAY_CODE = (
    f"import os, sys; sys.path[0] = {str(Path(fd2_relay.__file__).resolve().parent)!r}; "
    "import fd2_relay; fd2_relay.main(); os._exit(0)"
)


class Fd2Tee:
    """fd 2 made the pipe of a relay process; ``judge`` (``hide``, ``user_level``) tells the
    relay which of TensorFlow's lines to keep off the real stderr (see ``xla_log.LineJudge``)."""

    def __init__(self, hide: bool, user_level: int, recording: bool = True) -> None:
        self.hide = hide
        self.user_level = user_level
        self.recording = recording  # the relay keeps TF's compile lines for the next answer
        self.saved = -1  # the real stderr (the relay writes to its own copy)
        self.saved_out = -1  # the real stdout, when fd 1 went into the pipe too
        self.answers = -1  # the relay's answers
        self.relay: subprocess.Popen[bytes] | None = None
        self.token = os.urandom(8).hex().encode()
        self.pid = os.getpid()
        self._asked = 0
        self._unread = b""
        self._pipe: tuple[int, int] | None = None  # the pipe's identity (st_dev, st_ino)
        self._write_end = -1  # the pipe's write end between launch() and connect()

    @property
    def launched(self) -> bool:
        """Launched, and not connected yet (nor stopped)."""
        return self._write_end >= 0

    def start(self) -> bool:
        """Start the relay and make fd 2 its pipe; False (fd 2 left alone) when it cannot."""
        return self.launch() and self.connect()

    def launch(self) -> bool:
        """Start the relay process, without waiting for it: :meth:`connect` waits, so the work
        between the two (``tfgraph-lab run`` imports the recorder) overlaps its start-up."""
        if os.name != "posix" or self.relay is not None:
            return self.relay is not None
        try:
            self.saved = os.dup(2)
        except OSError:
            return False
        try:
            read_end, write_end = _packet_pipe()
            answers, answer_end = os.pipe()
        except OSError:
            os.close(self.saved)
            self.saved = -1
            return False
        _widen(write_end)
        try:
            # -S: no site-packages to scan; a session of its own: a terminal's Ctrl-C is for the script
            self.relay = subprocess.Popen(
                [sys.executable, "-S", "-c", _RELAY_CODE, self.token.decode(), *self._judge()],
                stdin=read_end,
                stdout=answer_end,
                stderr=self.saved,
                close_fds=True,
                start_new_session=True,
            )
        except (OSError, TypeError, ValueError):  # no sys.executable (an embedded interpreter)
            for fd in (read_end, write_end, answers, answer_end, self.saved):
                os.close(fd)
            self.saved = -1
            return False
        os.close(read_end)
        os.close(answer_end)
        self.answers = answers
        self._write_end = write_end
        return True

    def connect(self) -> bool:
        """Wait for the launched relay to be ready, then make fd 2 (and fd 1, when it is the same
        pipe or file) its pipe. False, with fd 2 left alone, when it did not start."""
        write_end, self._write_end = self._write_end, -1
        if write_end < 0:
            return self._pipe is not None  # connected before, or never launched
        try:
            started = self._answer(_START_WAIT) == READY.rstrip(b"\n")
        except BaseException:  # a Ctrl-C while it starts: nothing left behind
            self._give_up(write_end)
            raise
        if not started:
            # The relay did not start (no Python at sys.executable, an embedded interpreter, a
            # broken install): fd 2 stays the real stderr, and nothing written is lost.
            self._give_up(write_end)
            return False
        self._pipe = _identity(write_end)
        if _same_file(1, 2):
            self.saved_out = os.dup(1)
            os.dup2(write_end, 1)
        os.dup2(write_end, 2)
        os.close(write_end)
        return True

    def _give_up(self, write_end: int) -> None:
        relay, self.relay = self.relay, None
        for fd in (write_end, self.answers, self.saved):
            os.close(fd)
        self.answers = self.saved = -1
        if relay is not None:
            relay.kill()
            relay.wait()

    def _judge(self) -> list[str]:
        return [str(int(self.hide)), str(self.user_level), str(int(self.recording))]

    def sync(self, recording: bool = True) -> dict[str, Any] | None:
        """What the relay took from TensorFlow's log since the last sync, once it has written on
        everything written to fd 2 before this call; None when it cannot say. After it, the relay
        keeps TF's compile lines for the next answer only when ``recording``."""
        if self.answers < 0 or os.getpid() != self.pid:  # a forked child: the answers are the parent's
            return None
        if not self._ours(2):  # the script closed fd 2, or pointed it elsewhere: no marker there
            return None
        self._asked += 1
        number = self._asked
        if not pass_on(2, marker(self.token, number, recording)):
            return None
        while True:
            line = self._answer()
            if line is None:
                return None
            try:
                answer = json.loads(line)
            except ValueError:
                continue
            if answer.get("sync") == number:
                return dict(answer)

    def _answer(self, wait: float = _ANSWER_WAIT) -> bytes | None:
        while b"\n" not in self._unread:
            try:
                ready, _, _ = select.select([self.answers], [], [], wait)
                chunk = os.read(self.answers, 65536) if ready else b""
            except InterruptedError:
                continue
            except OSError:
                chunk = b""
            if not chunk:
                return None
            self._unread += chunk
        line, _, self._unread = self._unread.partition(b"\n")
        return line

    def stop(self) -> dict[str, Any] | None:
        """The last answer; fd 2 (and fd 1) are the real ones again. The relay goes on until
        every other holder of the pipe (a child process) has closed it."""
        last = None
        try:
            last = self.sync()
        finally:  # a Ctrl-C while the relay answers still gives fd 2 back
            self._restore()
        return last

    def _restore(self) -> None:
        if self.launched:  # never connected: the relay reads its end of input
            os.close(self._write_end)
            self._write_end = -1
        if self.saved < 0:
            return
        if self.saved_out >= 0:
            if self._ours(1):
                os.dup2(self.saved_out, 1)
            os.close(self.saved_out)
            self.saved_out = -1
        if self._ours(2) or not _open(2):  # fd 2 the script pointed elsewhere stays so
            os.dup2(self.saved, 2)  # this process's write end closes
        os.close(self.saved)
        self.saved = -1
        relay = self.relay
        ours = relay is not None and os.getpid() == self.pid  # a forked child's relay is the parent's
        # The relay's stdout closes when it exits: read to its end instead of polling for the
        # exit (Popen.wait's timed wait sleeps 0.5, 1, 2, 4 ms... between polls: 8 ms for a
        # relay that took 5 to exit, CPython 3.11).
        ended = ours and _read_to_end(self.answers, _END_WAIT)
        if self.answers >= 0:
            os.close(self.answers)
            self.answers = -1
        if relay is None or not ours:
            return
        _STILL_RELAYING[:] = [p for p in _STILL_RELAYING if p.poll() is None]  # reap ended ones
        try:
            if not ended:  # a child process still holds the pipe: the relay goes on
                raise subprocess.TimeoutExpired(relay.args, _END_WAIT)
            relay.wait(_END_WAIT)
        except subprocess.TimeoutExpired:
            _STILL_RELAYING.append(relay)  # reaped by a later watch's end, else by init

    def _ours(self, fd: int) -> bool:
        return self._pipe is not None and _identity(fd) == self._pipe


_STILL_RELAYING: list[subprocess.Popen[bytes]] = []  # relays a child process keeps going


@atexit.register
def _outlived() -> None:
    """A relay still writing a child's stderr outlives this process on purpose (then its parent
    is init, which reaps it): not the "still running" ResourceWarning of a forgotten Popen."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ResourceWarning)
        _STILL_RELAYING.clear()


def _read_to_end(fd: int, wait: float) -> bool:
    """Read ``fd`` (a pipe) until its writer closed it, for at most ``wait`` seconds; True when
    it did."""
    if fd < 0:
        return False
    deadline = time.monotonic() + wait
    while True:
        left = deadline - time.monotonic()
        if left <= 0:
            return False
        try:
            ready, _, _ = select.select([fd], [], [], left)
            if ready and not os.read(fd, 65536):
                return True
        except InterruptedError:
            continue
        except OSError:
            return False


def _identity(fd: int) -> tuple[int, int] | None:
    try:
        info = os.fstat(fd)
    except OSError:
        return None
    return (info.st_dev, info.st_ino)


def _open(fd: int) -> bool:
    return _identity(fd) is not None


def _same_file(a: int, b: int) -> bool:
    """fd ``a`` and fd ``b`` are one pipe, socket or file, and not a terminal."""
    try:
        first, second = os.fstat(a), os.fstat(b)
        if os.isatty(a) or os.isatty(b):
            return False
    except OSError:
        return False
    if stat.S_ISCHR(first.st_mode):
        return False  # /dev/null and the like: no order to keep
    return (first.st_dev, first.st_ino) == (second.st_dev, second.st_ino)


def _packet_pipe() -> tuple[int, int]:
    """A pipe whose reads return one write each (Linux's packet mode, ``O_DIRECT``; writes over
    ``PIPE_BUF`` come as several): the relay then tells a C++ message's continuation lines
    (one write) from the next write's lines, which a plain pipe joins when the relay lags.
    Elsewhere a plain pipe."""
    direct = getattr(os, "O_DIRECT", 0)
    if direct and hasattr(os, "pipe2"):
        try:
            return os.pipe2(direct)
        except OSError:
            pass
    return os.pipe()


def _widen(fd: int) -> None:
    try:
        import fcntl

        fcntl.fcntl(fd, 1031, _PIPE_SIZE)  # F_SETPIPE_SZ (Linux); elsewhere 64 KiB
    except (ImportError, OSError, AttributeError):
        pass
