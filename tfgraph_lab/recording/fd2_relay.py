"""The relay process behind :class:`tfgraph_lab.recording.fd2_tee.Fd2Tee`: reads the watched
process's fd 2 from its stdin and writes every byte on to the real stderr (its own fd 2) as it
arrives, but TensorFlow's lines the user did not ask for (``xla_log.LineJudge``); takes TF's XLA
compile lines from the copy; answers each marker on its stdout with what it took since the last.

Run as ``python -S -c "...fd2_relay import main; main()" TOKEN HIDE USER_LEVEL RECORDING``; ends when
every writer of the pipe has closed it (the watch ended, and any child process that inherited
fd 2 ended too), or when the real stderr cannot take a write (its reader closed it). Writes
``READY`` on its stdout first. Holds the unfinished line only, and at most ``_LONGEST`` bytes of it.
"""

from __future__ import annotations

import json
import os
import re
import select
import signal
import sys
import time

from .fd2_tee import MARK, READY, write_all
from .xla_log import LineJudge

__all__ = ["Relay", "main", "pass_on"]

_SEGMENT = re.compile(rb"([^\r\n]*)(?:\r\n|\r|\n)")
_LONGEST = 1 << 20  # an unfinished piece that looks like a log line is held up to this, then written


class Relay:
    """The stream's judge and its answers: ``feed`` takes the next bytes read, returns the bytes
    to write on and the answers to send (one JSON line per marker)."""

    def __init__(self, token: bytes, judge: LineJudge) -> None:
        self.prefix = MARK + token + b":"
        self.judge = judge
        self.pending = b""  # an unfinished line held back (it may be a log line to judge)
        self.tail = b""  # bytes that may be the start of a marker

    def feed(self, chunk: bytes) -> tuple[bytes, list[bytes]]:
        data = self.tail + chunk
        self.tail = b""
        out: list[bytes] = []
        answers: list[bytes] = []
        while True:
            start = data.find(self.prefix)
            if start < 0:
                break
            end = data.find(b"\x00", start + len(self.prefix))
            if end < 0:  # the marker's end is in the next read
                self.tail = data[start:]
                data = data[:start]
                break
            out.append(self._text(data[:start]))
            answers.append(self._answer(data[start + len(self.prefix) : end]))
            data = data[end + 1 :]
        if not self.tail:
            keep = _marker_start(data, self.prefix)
            self.tail, data = data[len(data) - keep :], data[: len(data) - keep]
        out.append(self._text(data))
        return b"".join(out), answers

    def end(self) -> bytes:
        """The stream ended: what is still held, unjudged (a line without its end)."""
        rest, self.pending, self.tail = self.pending + self.tail, b"", b""
        return rest

    def _text(self, chunk: bytes) -> bytes:
        if not chunk:
            return b""
        seen = time.time()
        data = self.pending + chunk
        # lines and progress bars' "\r" pieces, up to the last line end: a long piece without
        # one is not searched again at every chunk (quadratic in its length)
        cut = max(data.rfind(b"\n"), data.rfind(b"\r")) + 1
        out = []
        dropping = False  # a C++ message and its continuation lines come in one write
        for match in _SEGMENT.finditer(data, 0, cut):
            keep, dropping = self.judge.keep(match.group(1), seen, dropping)
            if keep:
                out.append(match.group(0))
        rest = data[cut:]
        if rest and (len(rest) > _LONGEST or self.judge.partial(rest)):
            out.append(rest)  # a partial line (a progress bar): on at once
            rest = b""
        self.pending = rest
        return b"".join(out)

    def _answer(self, command: bytes) -> bytes:
        judge = self.judge
        number = command.rstrip(b"-")
        answer = {
            "sync": int(number) if number.isdigit() else 0,
            "compiles": judge.compiles,
            "launches": judge.launches,
            "proven": judge.proven,
        }
        judge.compiles, judge.launches = [], 0
        judge.recording = not command.endswith(b"-")
        return json.dumps(answer).encode() + b"\n"


def _marker_start(data: bytes, prefix: bytes) -> int:
    """How many of ``data``'s last bytes are the start of ``prefix`` (the rest is in the next read)."""
    for size in range(min(len(prefix) - 1, len(data)), 0, -1):
        if data.endswith(prefix[:size]):
            return size
    return 0


def main() -> None:
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # the script's Ctrl-C, not the relay's
    token, hide, level, recording = (
        sys.argv[1].encode(),
        sys.argv[2] == "1",
        int(sys.argv[3]),
        sys.argv[4] == "1",
    )
    relay = Relay(token, LineJudge(hide=hide, user_level=level, recording=recording))
    write_all(1, READY)  # the watched process points fd 2 here only after this
    while True:
        try:
            chunk = os.read(0, 1 << 20)
        except InterruptedError:
            continue
        except OSError:
            chunk = b""
        if not chunk:
            break
        text, answers = relay.feed(chunk)
        if not pass_on(2, text):
            # The real stderr is gone (its reader closed it): the relay ends, so the watched
            # process's next write to fd 2 fails as it would unwatched (EPIPE; a script printing
            # to a closed pipe dies of BrokenPipeError instead of writing on for ever).
            return
        write_all(1, b"".join(answers))
    pass_on(2, relay.end())


def pass_on(fd: int, data: bytes) -> bool:
    """Write all of ``data`` to ``fd``, waiting while a non-blocking ``fd`` is full (nothing is
    dropped); False when ``fd`` cannot take it (a closed pipe, an error)."""
    while data:
        try:
            written = os.write(fd, data)
        except InterruptedError:
            continue
        except BlockingIOError:
            try:
                select.select([], [fd], [], 1.0)
            except (InterruptedError, OSError, ValueError):
                pass
            continue
        except OSError:
            return False
        data = data[written:]
    return True
