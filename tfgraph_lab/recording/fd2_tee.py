"""File descriptor 2 read while it is written: every line handed to a callback, the kept ones
written on to the real stderr.

A thread of this process cannot be the reader alone: it needs the GIL to return from each read,
and a C-level write to fd 2 made while the GIL is held (a C++ log burst from code that does not
release it) blocks once the pipe is full — the writer waits for the reader, the reader for the
writer's GIL, for ever. Measured (CPython 3.11, Linux): one 1.1 MB ``write`` through
``ctypes.PyDLL`` into the 1 MiB pipe (``F_SETPIPE_SZ``) hung the process; 1.0 MB did not.

So, where ``cat`` exists, fd 2 is a pipe read by a ``cat`` process into an unlinked temporary
file: ``cat`` needs no GIL and a file never blocks its writer, and the thread here reads the
file (``pread``) behind it. A child process that inherited fd 2 keeps ``cat`` (and this thread)
going after the watch until it closes fd 2, as the pipe alone did. Without ``cat`` (Windows),
the thread reads the pipe itself, as before. No TensorFlow import here.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable

__all__ = ["Fd2Tee", "pending_bytes", "write_all"]

_SEGMENT = re.compile(rb"([^\r\n]*)(?:\r\n|\r|\n)")
_PIPE_SIZE = 1 << 20  # Linux's default pipe-max-size: room for a burst while the reader catches up
_POLL = (0.001, 0.05)  # the file is read again after this long when idle: from 1 ms, doubling to 50


class Fd2Tee:
    """fd 2 made a pipe; ``keep(line, seen, dropping) -> (keep, dropping)`` judges each line
    (``seen``: when it was read); ``partial(rest)`` whether an unterminated rest goes on at once."""

    def __init__(
        self,
        keep: Callable[[bytes, float, bool], tuple[bool, bool]],
        partial: Callable[[bytes], bool],
    ) -> None:
        self.keep = keep
        self.partial = partial
        self.saved = -1  # the real stderr
        self.read_end = -1  # the pipe's read end (kept to ask how much is waiting in it)
        self.file = -1  # cat's temporary file, or -1: the thread reads the pipe
        self.offset = 0
        self.cat: subprocess.Popen[bytes] | None = None
        self.thread: threading.Thread | None = None
        self.done = threading.Event()
        self.busy = False  # the pump holds a chunk it has read but not yet handed on

    def start(self) -> bool:
        try:
            sys.stderr.flush()
            self.saved = os.dup(2)
            read_end, write_end = os.pipe()
        except (OSError, ValueError, AttributeError):
            return False
        try:
            import fcntl

            fcntl.fcntl(write_end, 1031, _PIPE_SIZE)  # F_SETPIPE_SZ (Linux); elsewhere 64 KiB
        except (ImportError, OSError, AttributeError):
            pass
        self.read_end = read_end
        self._start_cat()
        os.dup2(write_end, 2)
        os.close(write_end)
        self.thread = threading.Thread(target=self._pump, name="tfgraph_lab-fd2", daemon=True)
        self.thread.start()
        return True

    def _start_cat(self) -> None:
        cat = shutil.which("cat") if os.name == "posix" else None
        if cat is None:
            return
        try:
            with tempfile.TemporaryFile(prefix="tfgraph_lab-fd2-") as tmp:
                self.file = os.dup(tmp.fileno())  # unlinked: gone with its last descriptor
            self.cat = subprocess.Popen(
                [cat], stdin=self.read_end, stdout=self.file, stderr=self.saved, close_fds=True
            )
        except OSError:
            if self.file >= 0:
                os.close(self.file)
            self.file, self.cat = -1, None

    def flush(self) -> None:
        """Wait (briefly) until everything written to fd 2 so far has been read."""
        try:
            sys.stderr.flush()
        except (OSError, ValueError):
            return
        deadline = time.monotonic() + 0.5
        for _ in range(2):  # twice: a chunk between the pipe and the pump is in neither
            while time.monotonic() < deadline and (
                self.busy or pending_bytes(self.read_end) > 0 or self._unread() > 0
            ):
                time.sleep(0.002)
            time.sleep(0.003)

    def _unread(self) -> int:
        if self.file < 0:
            return 0
        try:
            return os.fstat(self.file).st_size - self.offset
        except OSError:
            return 0

    def stop(self) -> None:
        try:
            sys.stderr.flush()
        except (OSError, ValueError):
            pass
        os.dup2(self.saved, 2)  # the pipe's last write end closes: the reader reads to its end
        if self.cat is not None:
            fd, self.read_end = self.read_end, -1
            os.close(fd)  # cat's own copy reads on
        if self.thread is not None:
            self.thread.join(timeout=2.0)  # a child process still holding the pipe: left running
        if self.done.is_set():
            os.close(self.saved)

    def _chunks(self) -> bytes:
        """The next bytes written to fd 2; b"" once every writer has closed it."""
        if self.cat is None:
            while True:
                try:
                    return os.read(self.read_end, 65536)
                except InterruptedError:
                    continue
        pause = _POLL[0]
        while True:
            chunk = os.pread(self.file, 1 << 20, self.offset)
            if chunk:
                self.offset += len(chunk)
                return chunk
            if self.cat.poll() is not None:  # cat saw the pipe's end and wrote everything
                chunk = os.pread(self.file, 1 << 20, self.offset)
                self.offset += len(chunk)
                return chunk
            time.sleep(pause)
            pause = min(pause * 2, _POLL[1])

    def _pump(self) -> None:
        pending = b""
        try:
            while True:
                chunk = self._chunks()
                if not chunk:
                    break
                self.busy = True
                seen = time.time()
                data = pending + chunk
                # lines and progress bars' "\r" pieces, up to the last line end: a long piece
                # without one is not searched again at every chunk (quadratic in its length)
                cut = max(data.rfind(b"\n"), data.rfind(b"\r")) + 1
                out = []
                dropping = False  # a C++ message and its continuation lines come in one write
                for match in _SEGMENT.finditer(data, 0, cut):
                    keep, dropping = self.keep(match.group(1), seen, dropping)
                    if keep:
                        out.append(match.group(0))
                pending = data[cut:]
                if pending and self.partial(pending):
                    out.append(pending)  # a partial line (a progress bar): on at once
                    pending = b""
                write_all(self.saved, b"".join(out))
                self.busy = False
            if pending:
                write_all(self.saved, pending)
        finally:
            if self.cat is None:
                os.close(self.read_end)
            if self.file >= 0:
                os.close(self.file)
            if self.cat is not None:
                self.cat.wait()
            self.done.set()


def pending_bytes(fd: int) -> int:
    """Bytes waiting in the pipe (Linux FIONREAD); 0 where it cannot be asked."""
    if fd < 0:
        return 0
    try:
        import array
        import fcntl
        import termios

        buf = array.array("i", [0])
        fcntl.ioctl(fd, termios.FIONREAD, buf, True)
        return int(buf[0])
    except (ImportError, OSError, ValueError):
        return 0


def write_all(fd: int, data: bytes) -> None:
    while data:
        try:
            written = os.write(fd, data)
        except InterruptedError:
            continue
        except OSError:
            return
        data = data[written:]
