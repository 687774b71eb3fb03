"""The relay process behind :class:`tfgraph_lab.recording.fd2_tee.Fd2Tee`: reads the watched
process's fd 2 from its stdin and writes every byte on to the real stderr (its own fd 2) as it
arrives, but TensorFlow's lines the user did not ask for (:class:`LineJudge`); takes TF's XLA
compile lines from the copy; answers each marker on its stdout with what it took since the last.

Run as ``python -S -c "...import fd2_relay; fd2_relay.main(); os._exit(0)" TOKEN HIDE USER_LEVEL
RECORDING``
(:meth:`Fd2Tee.start`): a top-level module, not through the package, so the process imports the
standard library's ``json``, ``re``, ``select`` and ``signal`` and nothing else, and is ready in
about the start-up of ``python -S`` (through the package it imported ``typing``, ``subprocess``,
``pathlib`` and ``dataclasses`` too: 56 ms before each watch of ``tfgraph-lab run``, CPython
3.11). Hence this module imports nothing of the project: the markers' wire format (:data:`MARK`,
:func:`marker`, :data:`READY`) and the judge of TensorFlow's log lines live here, and the
watched process's side imports them from here. Ends when every writer of the pipe has closed it
(the watch ended, and any child process that inherited fd 2 ended too), or when the real stderr
cannot take a write (its reader closed it). Writes ``READY`` on its stdout first. Holds the
unfinished line only, and at most ``_LONGEST`` bytes of it.
"""

from __future__ import annotations

import json
import os
import re
import select
import signal
import sys
import time

__all__ = ["MARK", "READY", "LineJudge", "Relay", "main", "marker", "pass_on"]

MARK = b"\x00tfgraph_lab-fd2:"  # a marker: MARK + token + b":" + number [+ b"-"] + b"\x00"
READY = b"ready\n"  # the relay's first answer: it reads its stdin from now on


def marker(token: bytes, number: int, recording: bool = True) -> bytes:
    """The marker of sync ``number``; ``-`` after it: record nothing until the next marker."""
    return MARK + token + b":" + str(number).encode() + (b"" if recording else b"-") + b"\x00"


_SEGMENT = re.compile(rb"([^\r\n]*)(?:\r\n|\r|\n)")
_LONGEST = 1 << 20  # an unfinished piece that looks like a log line is held up to this, then written


# TensorFlow's log lines, as the judge reads them.
_COMPILED = re.compile(rb"device_compiler\.\w+:\d+\] Instantly compiling for signature: (\S+)")
_DEVICE_COMPILER = re.compile(rb"device_compiler\.\w+:\d+\] ")
# Not a VLOG line, so no proof that the log is on: TF logs it once per process with LOG(INFO)
# (device_compiler.h:186 in TF 2.15, :208 in 2.21), and TF 2.15 writes it through absl even at
# TF_CPP_MIN_LOG_LEVEL=3 with no TF_CPP_VMODULE (measured, tensorflow-cpu 2.15.1).
_ONCE = re.compile(rb"device_compiler\.\w+:\d+\] Compiled cluster using XLA!")
# absl (TF >= 2.16): "I0000 00:00:1796280881.614313   10342 file.h:551] ..." (MMDD hh:mm:ss; before
# absl::InitializeLog the seconds field holds the Unix time); tsl (TF 2.15, local time, as
# captured from tensorflow-cpu 2.15.1 in tests/recording/test_xla_log.py):
# "2024-01-02 03:04:05.123456: I ./tensorflow/compiler/jit/device_compiler.h:478] ...".
_ABSL = re.compile(rb"^([IWEF])(\d\d)(\d\d) (\d\d):(\d\d):(\d+(?:\.\d+)?)\s+\d+ \S+:\d+\] ")
_TSL = re.compile(rb"^(\d{4})-(\d\d)-(\d\d) (\d\d):(\d\d):(\d\d(?:\.\d+)?): ([IWEF]) \S+:\d+\] ")
_LOG_START = re.compile(rb"^(?:[IWEF]\d{4} |\d{4}-\d\d-\d\d )")  # C++ writes a line at once
_SEVERITY = {b"I": 0, b"W": 1, b"E": 2, b"F": 3}
_ABSL_PREAMBLE = b"WARNING: All log messages before absl::InitializeLog() is called are written to STDERR"


class LineJudge:
    """The relay's judge of each line of fd 2: records TF's compile lines (``compiles``:
    wall-clock time, name), and keeps off the real stderr what the user's
    ``TF_CPP_MIN_LOG_LEVEL`` would have hidden (``user_level``, when ``XlaLog.prepare`` lowered
    it) and, when the user did not ask for them (``hide``), the ``device_compiler`` lines."""

    def __init__(self, hide: bool, user_level: int, recording: bool = True) -> None:
        self.hide = hide
        self.user_level = user_level
        self.recording = recording  # False between watches: compile lines are judged, not kept
        self.compiles: list[tuple[float, str]] = []
        self.launches = 0
        self.proven = False

    def partial(self, rest: bytes) -> bool:
        """Whether an unfinished line goes on at once: anything but the start of a C++ log line
        (written in one piece: its end comes in the same write)."""
        return _LOG_START.match(rest) is None

    def _took(self, line: bytes, seen: float) -> bool:
        """One line of fd 2: record it if it is a compile line; True to pass it on."""
        if _DEVICE_COMPILER.search(line) is not None and _ONCE.search(line) is None:
            match = _COMPILED.search(line)
            self.proven = True
            if not self.recording:
                return not self.hide
            self.launches += 1
            if match is not None:
                self.compiles.append((_logged_at(line, seen), match.group(1).decode("utf-8", "replace")))
            return not self.hide
        return True

    def keep(self, line: bytes, seen: float, dropping: bool) -> tuple[bool, bool]:
        """One line of fd 2 (``seen``: when it was read): (pass it on, drop its continuation lines)."""
        match = _ABSL.match(line) or _TSL.match(line)
        if match is None:
            if self.user_level and line == _ABSL_PREAMBLE:
                return False, dropping
            return not dropping, dropping
        letter = match.group(1) if match.re is _ABSL else match.group(7)
        if _SEVERITY.get(letter, 0) < self.user_level:
            self._took(line, seen)
            return False, True
        return self._took(line, seen), False


def _logged_at(line: bytes, seen: float) -> float:
    """The wall-clock time a log line was written, from its own timestamp (µs), else from when
    it was read (``seen``)."""
    wall = seen
    match = _ABSL.match(line)
    try:
        if match is not None:
            month, day, hour, minute, second = match.group(2, 3, 4, 5, 6)
            if month == b"00":  # before absl::InitializeLog: the seconds field is Unix time
                wall = float(second)
            else:
                now = time.localtime(seen)
                stamp = (now.tm_year, int(month), int(day), int(hour), int(minute), 0, 0, 0, -1)
                wall = time.mktime(stamp) + float(second)
        else:
            match = _TSL.match(line)
            if match is not None:
                year, month, day, hour, minute, second = (match.group(i) for i in range(1, 7))
                stamp = (int(year), int(month), int(day), int(hour), int(minute), 0, 0, 0, -1)
                wall = time.mktime(stamp) + float(second)
    except (ValueError, OverflowError):
        wall = seen
    if abs(wall - seen) > 60:  # a clock or format we misread: the read time is near enough
        wall = seen
    return wall


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
    pass_on(1, READY)  # the watched process points fd 2 here only after this
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
        pass_on(1, b"".join(answers))
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
