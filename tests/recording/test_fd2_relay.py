"""The stderr relay (issue 33.3): the relay process's reading of the stream (markers, unfinished
lines, TF's lines) and the watched process's side of it, without TensorFlow."""

from __future__ import annotations

import ast
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from tfgraph_lab.recording import fd2_tee
from tfgraph_lab.recording.fd2_relay import LineJudge, Relay, marker
from tfgraph_lab.recording.fd2_tee import Fd2Tee
from tfgraph_lab.recording.xla_log import XlaLog

_COMPILE = (
    b"I0000 00:00:1796280881.614313   10342 device_compiler.h:551] Instantly compiling "
    b"for signature: __inference_head_17\n"
)


def _relay(**judge: Any) -> Relay:
    return Relay(b"t0", LineJudge(hide=judge.get("hide", True), user_level=judge.get("user_level", 2)))


def test_a_marker_split_over_reads_is_taken_out_and_answered_once() -> None:
    sync = marker(b"t0", 1)
    for cut in range(1, len(sync)):  # every split of the marker between two reads
        relay = _relay()
        first, answers = relay.feed(b"before\n" + _COMPILE + sync[:cut])
        second, more = relay.feed(sync[cut:] + b"after\n")
        assert first + second + relay.end() == b"before\nafter\n"
        assert answers == [] and len(more) == 1
        assert b'"sync": 1' in more[0] and b"__inference_head_17" in more[0]


def test_a_marker_inside_an_unfinished_line_leaves_the_line_whole() -> None:
    relay = _relay()
    out, answers = relay.feed(b"I0000 00:00:1.5   1 x.cc:1] half" + marker(b"t0", 4) + b" of a line\n")
    assert out == b"" and len(answers) == 1  # below the user's level 2: hidden, whole
    out, _ = relay.feed(b"W0000 00:00:1.5   1 x.cc:1] a warning, " + marker(b"t0", 5))
    assert out == b"" and relay.end() == b"W0000 00:00:1.5   1 x.cc:1] a warning, "
    assert (
        relay.feed(b"\x00tfgraph_lab-fd2:other:1\x00 and a NUL\n")[0]
        == b"\x00tfgraph_lab-fd2:other:1\x00 and a NUL\n"
    )


def test_between_watches_the_relay_keeps_no_compile_lines() -> None:
    relay = _relay()
    relay.feed(marker(b"t0", 1, recording=False))
    relay.feed(_COMPILE * 3)
    _, (answer,) = relay.feed(marker(b"t0", 2))
    assert b'"compiles": []' in answer and b'"launches": 0' in answer and b'"proven": true' in answer


@pytest.mark.skipif(os.name != "posix", reason="the relay is POSIX only")
def test_a_hidden_tf_line_does_not_take_the_next_writes_lines_with_it(capfd: Any) -> None:
    """A C++ message's continuation lines come in its own write and are hidden with it; the lines
    of the next write are the user's, however fast they follow (a plain pipe joins writes when
    its reader lags: the user's line was hidden as a continuation)."""
    log = XlaLog()
    log.requested, log.hide, log.user_level = True, True, 2  # as prepare() leaves it under run
    mark = log.open()
    assert mark is not None
    try:
        for i in range(50):
            os.write(
                2, b"I0000 00:00:1796280881.7   10342 cpu_feature_guard.cc:227] INFO\nits continuation\n"
            )
            os.write(2, b"the user's line %d\n" % i)
    finally:
        log.close(mark)
    assert capfd.readouterr().err == "".join(f"the user's line {i}\n" for i in range(50))


@pytest.mark.skipif(not hasattr(os, "fork"), reason="os.fork")
def test_a_forked_child_never_reads_the_parents_answers(capfd: Any) -> None:
    log = XlaLog()
    log.requested, log.hide = True, True
    mark = log.open()
    assert mark is not None
    try:
        pid = os.fork()
        if pid == 0:  # the child's watch ends: it asks nothing, its fd 2 is the real one again
            child = log.close(mark)
            os.write(2, b"child done %d\n" % child.launches)
            os._exit(0)
        os.waitpid(pid, 0)
        os.write(2, _COMPILE)
    finally:
        window = log.close(mark)
    assert [name for _, name in window.compiles] == ["__inference_head_17"]
    assert capfd.readouterr().err == "child done 0\n"


@pytest.mark.skipif(os.name != "posix", reason="the relay is POSIX only")
def test_a_relay_that_cannot_start_leaves_fd_2_alone(monkeypatch: Any, capfd: Any) -> None:
    """No Python at ``sys.executable`` (an embedded interpreter): the relay exits at once, and fd 2
    pointed at its pipe would have lost every byte (EPIPE) — it stays the real stderr."""
    false = shutil.which("false")
    if false is None:
        pytest.skip("no `false` program")
    monkeypatch.setattr(sys, "executable", false)
    before = os.fstat(2)
    tee = Fd2Tee(hide=True, user_level=0)
    assert tee.start() is False
    after = os.fstat(2)
    assert (after.st_dev, after.st_ino) == (before.st_dev, before.st_ino)
    os.write(2, b"still here\n")
    assert capfd.readouterr().err == "still here\n"


@pytest.mark.skipif(os.name != "posix", reason="the relay is POSIX only")
def test_a_watchs_end_reaps_its_relay() -> None:
    """No zombie left in a long session (a notebook, many watches): the relay has exited and
    been waited for when the watch ends."""
    log = XlaLog()
    log.requested = True
    mark = log.open()
    assert mark is not None and log._tee is not None
    relay = log._tee.relay
    log.close(mark)
    assert relay is not None and relay.returncode == 0


@pytest.mark.skipif(os.name != "posix", reason="the relay is POSIX only")
def test_a_ctrl_c_while_the_relay_answers_still_gives_fd_2_back(monkeypatch: Any) -> None:
    before = os.fstat(2)
    tee = Fd2Tee(hide=True, user_level=0)
    assert tee.start()

    def interrupted(recording: bool = True) -> None:
        raise KeyboardInterrupt

    monkeypatch.setattr(tee, "sync", interrupted)
    with pytest.raises(KeyboardInterrupt):
        tee.stop()
    after = os.fstat(2)
    assert (after.st_dev, after.st_ino) == (before.st_dev, before.st_ino)
    assert tee.relay is not None and tee.relay.returncode == 0


@pytest.mark.skipif(os.name != "posix", reason="the relay is POSIX only")
def test_the_relay_process_imports_the_standard_library_only() -> None:
    """The relay starts before each watch of ``tfgraph-lab run``: it runs as the top-level module
    ``fd2_relay``, not through the package (which imported ``typing``, ``subprocess``, ``pathlib``
    and ``dataclasses`` for it), and no module of its folder stands in for a standard one."""
    code = fd2_tee._RELAY_CODE.replace("fd2_relay.main(); os._exit(0)", "print(sorted(sys.modules))")
    assert code != fd2_tee._RELAY_CODE
    out = subprocess.run([sys.executable, "-S", "-c", code], capture_output=True, text=True, check=True)
    loaded = {name.partition(".")[0] for name in ast.literal_eval(out.stdout)}
    assert "fd2_relay" in loaded
    assert loaded - {"fd2_relay", "__main__"} <= set(sys.stdlib_module_names)
    assert not loaded & {"typing", "subprocess", "pathlib", "dataclasses", "tfgraph_lab"}
    folder = Path(fd2_tee.__file__).parent
    assert not {path.stem for path in folder.glob("*.py")} & set(sys.stdlib_module_names)


@pytest.mark.skipif(os.name != "posix", reason="the relay is POSIX only")
def test_a_relay_launched_before_the_watch_reads_from_the_watchs_start(capfd: Any) -> None:
    """``tfgraph-lab run`` launches the relay before it imports the recorder; fd 2 is the real
    stderr until the watch connects it, then the relay's, and nothing is lost either side."""
    log = XlaLog()
    log.requested, log.hide, log.user_level = True, True, 2
    log.launch()
    assert log._tee is not None and log._tee.relay is not None
    relay = log._tee.relay
    before = os.fstat(2)
    os.write(2, b"before the watch\n")
    mark = log.open()
    assert mark is not None
    try:
        assert os.fstat(2).st_ino != before.st_ino
        os.write(2, _COMPILE)
        os.write(2, b"during the watch\n")  # its own write: not a continuation of TF's line
    finally:
        window = log.close(mark)
    assert os.fstat(2).st_ino == before.st_ino
    assert [name for _, name in window.compiles] == ["__inference_head_17"]
    assert capfd.readouterr().err == "before the watch\nduring the watch\n"
    assert relay.returncode == 0


@pytest.mark.skipif(os.name != "posix", reason="the relay is POSIX only")
def test_a_relay_launched_but_never_connected_ends_when_stopped() -> None:
    """A run that ends before its watch starts (``-m`` names no module): the launched relay
    reads the end of its input and exits; fd 2 was never touched."""
    before = os.fstat(2)
    tee = Fd2Tee(hide=True, user_level=0)
    assert tee.launch()
    assert tee.stop() is None
    assert os.fstat(2).st_ino == before.st_ino
    assert tee.relay is not None and tee.relay.returncode == 0
