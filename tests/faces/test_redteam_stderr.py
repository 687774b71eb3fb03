"""Red team, stderr (issue 33.3): under ``tfgraph-lab run`` and after ``%load_ext tfgraph_lab``
the user's stderr is what plain ``python`` gives — every byte, in order, crashes included. Each
case runs the same script both ways in a subprocess and compares the bytes (``run -q``: the
tool adds nothing when nothing retraced). Every case failed before the stderr relay."""

from __future__ import annotations

import os
import re
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

import pytest

import tfgraph_lab

pytestmark = pytest.mark.skipif(
    os.name != "posix", reason="the relay is POSIX only (fd 2 is left alone elsewhere)"
)

_ROOT = str(Path(tfgraph_lab.__file__).resolve().parent.parent)


def _env() -> dict[str, str]:
    env = dict(os.environ, TF_CPP_MIN_LOG_LEVEL="3", TF_ENABLE_ONEDNN_OPTS="0")
    env["PYTHONPATH"] = os.pathsep.join(p for p in (_ROOT, env.get("PYTHONPATH", "")) if p)
    return env


def _both(
    tmp_path: Path, body: str, joined: bool = False, named: str = ""
) -> tuple[subprocess.CompletedProcess[bytes], ...]:
    """The script run by plain python, then by ``tfgraph-lab run -q``; ``joined``: stderr into
    stdout's pipe (``2>&1``); ``named``: the script's path as typed (relative to ``tmp_path``,
    where both run), else its absolute path."""
    script = tmp_path / "script.py"
    script.write_text(textwrap.dedent(body))
    typed = named or str(script)
    err = subprocess.STDOUT if joined else subprocess.PIPE
    runs = []
    for args in ([typed], ["-m", "tfgraph_lab", "run", "-q", typed]):
        runs.append(
            subprocess.run(
                [sys.executable, *args],
                stdout=subprocess.PIPE,
                stderr=err,
                cwd=tmp_path,
                env=_env(),
                timeout=300,
            )
        )
    return tuple(runs)


def _same(plain: subprocess.CompletedProcess[bytes], watched: subprocess.CompletedProcess[bytes]) -> None:
    assert (watched.returncode, watched.stdout, watched.stderr) == (
        plain.returncode,
        plain.stdout,
        plain.stderr,
    )


@pytest.mark.slow
def test_the_last_line_before_os_exit(tmp_path: Path) -> None:
    plain, watched = _both(
        tmp_path,
        """
        import os, sys
        sys.stderr.write("the last line\\n")
        os.write(2, b"and one written to fd 2 itself\\n")
        os._exit(3)
        """,
    )
    assert plain.stderr == b"the last line\nand one written to fd 2 itself\n"
    _same(plain, watched)


@pytest.mark.slow
def test_a_c_message_before_abort(tmp_path: Path) -> None:
    """As TensorFlow's CHECK failures end: a FATAL log line (absl's format) written by C, then abort()."""
    plain, watched = _both(
        tmp_path,
        """
        import ctypes
        libc = ctypes.CDLL(None)
        for text in (b"F0000 00:00:1796280881.9   10342 op.cc:12] Check failed: x == y (1 vs. 2)\\n",
                     b"*** Check failure stack trace: ***\\n"):
            libc.write(2, text, len(text))
        libc.abort()
        """,
    )
    assert plain.returncode < 0 and b"Check failed" in plain.stderr
    _same(plain, watched)


@pytest.mark.slow
def test_faulthandlers_report_of_a_segfault(tmp_path: Path) -> None:
    """The crash is in a thread of the script, so the stack faulthandler prints is the same both
    ways. Thread addresses differ from run to run (read as placeholders), and the "Extension
    modules" line (Python >= 3.10: the third-party extension modules loaded) is left out: the
    tool loads some, plain python none."""
    plain, watched = _both(
        tmp_path,
        """
        import ctypes, faulthandler, threading
        faulthandler.enable(all_threads=False)

        def crash():
            ctypes.string_at(0)

        threading.Thread(target=crash).start()
        threading.Event().wait(60)
        """,
    )

    def read(err: bytes) -> bytes:
        err = re.sub(rb"0x[0-9a-f]+", b"0x?", err)
        return re.sub(rb"\nExtension modules: [^\n]*\n", b"", err)

    assert b"Fatal Python error: Segmentation fault" in plain.stderr and b"in crash" in plain.stderr
    assert (watched.returncode, read(watched.stderr)) == (plain.returncode, read(plain.stderr))


@pytest.mark.slow
def test_a_childs_stderr_written_after_the_script_ended(tmp_path: Path) -> None:
    plain, watched = _both(
        tmp_path,
        """
        import subprocess, sys
        subprocess.Popen([sys.executable, "-c",
                          "import sys, time; time.sleep(2); sys.stderr.write('the child, after its parent\\\\n')"])
        print("the script ends")
        """,
    )
    assert plain.stderr == b"the child, after its parent\n"
    _same(plain, watched)


@pytest.mark.slow
def test_stdout_and_stderr_into_one_pipe_keep_their_order(tmp_path: Path) -> None:
    plain, watched = _both(
        tmp_path,
        """
        import os, sys
        for i in range(1, 7):
            print(i, file=sys.stdout if i % 2 else sys.stderr, flush=True)
        os.write(1, b"7\\n"); os.write(2, b"8\\n"); os.write(1, b"9\\n")
        """,
        joined=True,
    )
    assert plain.stdout == b"".join(b"%d\n" % i for i in range(1, 10))
    _same(plain, watched)


# After %load_ext (before TensorFlow loads) the extension reads fd 2 until it is unloaded: it
# must neither keep a copy (the old reader kept all of stderr in an unlinked temporary file: 300
# MiB written, 300 MiB held) nor lose what a crash leaves in the pipe.
_SESSION = """
import os, stat
from IPython.core.interactiveshell import InteractiveShell

def held_bytes():
    '''Bytes in the unlinked files this process holds open (where /proc lists them).'''
    total = 0
    for name in os.listdir("/proc/self/fd"):
        try:
            info = os.stat(int(name))
        except OSError:
            continue
        if stat.S_ISREG(info.st_mode) and info.st_nlink == 0:
            total += info.st_size
    return total

ip = InteractiveShell.instance()
{load}
before = held_bytes()
line = b"x" * 99 + b"\\n"
for _ in range(100):
    os.write(2, line * 2000)  # 20 MB in all
print("HELD", held_bytes() - before, flush=True)
os.write(2, b"the last line\\n")
os._exit(0)
"""


@pytest.mark.slow
@pytest.mark.skipif(not os.path.isdir("/proc/self/fd"), reason="/proc lists the open files")
def test_after_load_ext_stderr_is_passed_on_not_kept_and_survives_os_exit(tmp_path: Path) -> None:
    runs = []
    for load in ("", "ip.run_line_magic('load_ext', 'tfgraph_lab')"):
        driver = tmp_path / "session.py"
        driver.write_text(_SESSION.format(load=load))
        runs.append(
            subprocess.run(
                [sys.executable, str(driver)], capture_output=True, cwd=tmp_path, env=_env(), timeout=300
            )
        )
    plain, loaded = runs
    assert plain.stdout == loaded.stdout == b"HELD 0\n", loaded.stdout
    assert plain.stderr == (b"x" * 99 + b"\n") * 200_000 + b"the last line\n"
    assert (loaded.returncode, len(loaded.stderr), loaded.stderr == plain.stderr) == (
        0,
        len(plain.stderr),
        True,
    )


def _runs(tmp_path: Path, body: str, **popen: Any) -> list[subprocess.Popen[bytes]]:
    script = tmp_path / "script.py"
    script.write_text(textwrap.dedent(body))
    return [
        subprocess.Popen([sys.executable, *args], cwd=tmp_path, env=_env(), **popen)
        for args in ([str(script)], ["-m", "tfgraph_lab", "run", "-q", str(script)])
    ]


@pytest.mark.slow
def test_a_script_whose_stderr_reader_went_away_ends_as_under_python(tmp_path: Path) -> None:
    """``run script.py 2>&1 | head -1``: python's next write fails (EPIPE) and the script ends;
    the relay wrote on into nothing and the script printed for ever."""
    codes = []
    for proc in _runs(
        tmp_path,
        """
        import sys
        while True:
            print("a line", file=sys.stderr, flush=True)
        """,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
    ):
        assert proc.stderr is not None
        assert proc.stderr.readline() == b"a line\n"
        proc.stderr.close()
        try:
            codes.append(proc.wait(timeout=120))
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
            codes.append(None)
    assert codes[0] is not None and codes[1] == codes[0]


_WRITES = """
import os, sys
print("out 1", flush=True)
sys.stderr.write("err 1\\n"); sys.stderr.flush()
os.write(2, b"err 2, fd 2 itself\\n")
print("isatty", sys.stderr.isatty() if sys.stderr else None, flush=True)
raise SystemExit(4)
"""


@pytest.mark.slow
def test_stderr_a_file_is_as_under_python(tmp_path: Path) -> None:
    script = tmp_path / "script.py"
    script.write_text(_WRITES)
    results = []
    for args in ([str(script)], ["-m", "tfgraph_lab", "run", "-q", str(script)]):
        err = tmp_path / "err"
        with open(err, "wb") as err_file:
            done = subprocess.run(
                [sys.executable, *args],
                stdout=subprocess.PIPE,
                stderr=err_file,
                cwd=tmp_path,
                env=_env(),
                timeout=300,
            )
        results.append((done.returncode, done.stdout, err.read_bytes()))
    plain, run = results
    assert plain == (4, b"out 1\nisatty False\n", b"err 1\nerr 2, fd 2 itself\n")
    assert run == plain


@pytest.mark.slow
@pytest.mark.skipif(not hasattr(os, "openpty"), reason="a pseudo-terminal")
def test_stderr_a_terminal_is_as_under_python(tmp_path: Path) -> None:
    """The relay writes to the terminal from a session of its own (no SIGTTOU, no Ctrl-C); what
    the terminal shows is what python wrote (fd 2 itself is the relay's pipe meanwhile: the
    script's ``isatty()`` says False, as under every watch before)."""
    script = tmp_path / "script.py"
    script.write_text(_WRITES.replace('print("isatty"', '# print("isatty"'))
    shown = []
    for args in ([str(script)], ["-m", "tfgraph_lab", "run", "-q", str(script)]):
        leader, follower = os.openpty()
        proc = subprocess.Popen(
            [sys.executable, *args], stdout=subprocess.PIPE, stderr=follower, cwd=tmp_path, env=_env()
        )
        os.close(follower)
        seen = b""
        while True:
            try:
                chunk = os.read(leader, 65536)
            except OSError:  # EIO: every writer of the terminal has closed it
                break
            if not chunk:
                break
            seen += chunk
        out, _ = proc.communicate(timeout=300)
        os.close(leader)
        shown.append((proc.returncode, out, seen))
    assert shown[0] == (4, b"out 1\n", b"err 1\r\nerr 2, fd 2 itself\r\n")
    assert shown[1] == shown[0]


# A script named as people type it (``tfgraph-lab run train.py``): python names its code by the
# absolute path (3.9+: ``__file__``, every traceback and warning line), keeps ``sys.argv[0]`` as
# typed and puts the script's real folder first on sys.path; the tool named the code
# ``train.py``, so every traceback and warning differed from python's, and ``__file__`` broke
# after an ``os.chdir``. A crash calls the script's own ``sys.excepthook`` (a logger, Sentry) as
# python does (the tool printed its own traceback instead), and a script that does not compile
# shows python's three lines, not a traceback through the tool.
_CRASHES = {
    "relative path": ("script.py", """
        import os, sys, warnings
        print(__file__, sys.argv[0], sys.path[0] == os.path.dirname(os.path.realpath(__file__)))
        print(type(__builtins__).__name__, __name__, __spec__, __package__, __cached__)
        warnings.warn("a warning names the script")
        os.chdir("/")
        def f():
            raise ValueError("from the script")
        f()
        """),
    "dot path": ("./sub/../script.py", """
        print(__file__)
        1 / 0
        """),
    "excepthook": ("script.py", """
        import sys
        def hook(kind, value, tb):
            sys.stderr.write(f"the script's hook: {kind.__name__}: {value} at line {tb.tb_lineno}\\n")
        sys.excepthook = hook
        raise RuntimeError("handled by the hook")
        """),
    "syntax error": ("script.py", """
        x = (
        """),
    "chained, in a thread": ("script.py", """
        import threading
        def g():
            try:
                {}["k"]
            except KeyError as e:
                raise RuntimeError("again") from e
        t = threading.Thread(target=g); t.start(); t.join()
        g()
        """),
}


@pytest.mark.slow
@pytest.mark.parametrize("case", list(_CRASHES))
def test_a_script_named_as_typed_crashes_as_under_python(tmp_path: Path, case: str) -> None:
    typed, body = _CRASHES[case]
    (tmp_path / "sub").mkdir()
    plain, watched = _both(tmp_path, body, named=typed)
    assert plain.returncode == 1 and plain.stderr, plain
    assert str(tmp_path).encode() in plain.stderr or case == "excepthook"
    _same(plain, watched)


@pytest.mark.slow
def test_a_script_reached_through_a_symlink_sees_what_python_shows_it(tmp_path: Path) -> None:
    real = tmp_path / "real"
    real.mkdir()
    (real / "helper.py").write_text("WHERE = 'next to the real script'\n")
    (real / "script.py").write_text(
        "import sys, helper\nprint(__file__, sys.argv[0], sys.path[0], helper.WHERE)\nraise SystemExit(5)\n"
    )
    (tmp_path / "link.py").symlink_to(real / "script.py")
    runs = [
        subprocess.run(
            [sys.executable, *args, "link.py"], capture_output=True, cwd=tmp_path, env=_env(), timeout=300
        )
        for args in ([], ["-m", "tfgraph_lab", "run", "-q"])
    ]
    assert runs[0].returncode == 5 and b"next to the real script" in runs[0].stdout, runs[0]
    _same(*runs)


@pytest.mark.slow
@pytest.mark.parametrize("module", ["pkg.mod", "pkg.bad", "pkg"], ids=["raises", "syntax error", "no __main__"])
def test_run_m_crashes_as_python_m(tmp_path: Path, module: str) -> None:
    """``python -m`` shows runpy's two frames first (the tool cut them); a module that does not
    compile and a package without ``__main__`` read as python's own messages."""
    (tmp_path / "pkg").mkdir()
    (tmp_path / "pkg" / "__init__.py").write_text("")
    (tmp_path / "pkg" / "mod.py").write_text("def f():\n    raise ValueError('in a module')\nf()\n")
    (tmp_path / "pkg" / "bad.py").write_text("x = (\n")
    runs = [
        subprocess.run(
            [sys.executable, *args, "-m", module], capture_output=True, cwd=tmp_path, env=_env(), timeout=300
        )
        for args in ([], ["-m", "tfgraph_lab", "run", "-q"])
    ]
    assert runs[0].returncode == 1 and runs[0].stderr, runs[0]
    _same(*runs)


_TF_SWITCHES = """\
import os
import tensorflow as tf
print(os.environ.get("TF_CPP_MIN_LOG_LEVEL"), os.environ.get("TF_CPP_VMODULE"))
"""


def _log_places(stderr: bytes) -> list[bytes]:
    """TensorFlow's C++ log lines on stderr, each as its severity and source place (the time and
    thread differ from run to run)."""
    return re.findall(rb"^([IWEF])\d{4} [\d:. ]+\d+ ([\w.]+:\d+)\]", stderr, re.MULTILINE)


@pytest.mark.slow
@pytest.mark.parametrize("level", [None, "1"])
def test_tensorflows_switches_and_start_up_lines_are_as_under_python(tmp_path: Path, level: str | None) -> None:
    """``run`` asks TF for its XLA compile log through ``TF_CPP_VMODULE`` and ``TF_CPP_MIN_LOG_LEVEL``
    before TF loads; the script then sees the user's own values (``None None`` when unset), and
    TF's start-up lines show as the user's level lets them (``run`` used to set level 2: none)."""
    script = tmp_path / "script.py"
    script.write_text(_TF_SWITCHES)
    env = _env()
    del env["TF_CPP_MIN_LOG_LEVEL"]
    if level is not None:
        env["TF_CPP_MIN_LOG_LEVEL"] = level
    plain, run = (
        subprocess.run([sys.executable, *args], capture_output=True, cwd=tmp_path, env=env, timeout=300)
        for args in ([str(script)], ["-m", "tfgraph_lab", "run", "-q", str(script)])
    )
    assert plain.stdout == f"{level} None\n".encode()
    assert (run.returncode, run.stdout) == (plain.returncode, plain.stdout)
    assert _log_places(run.stderr) == _log_places(plain.stderr)
    if level is None:
        assert _log_places(plain.stderr), "TF 2.21 logs its CPU features at INFO when it loads"


_LOADED_SWITCHES = """
import os
from IPython.core.interactiveshell import InteractiveShell

ip = InteractiveShell.instance()
{load}
ip.run_cell("import tensorflow as tf")
ip.run_cell("import os; print(os.environ.get('TF_CPP_MIN_LOG_LEVEL'), os.environ.get('TF_CPP_VMODULE'))")
{unload}
print(os.environ.get('TF_CPP_MIN_LOG_LEVEL'), os.environ.get('TF_CPP_VMODULE'))
"""


@pytest.mark.slow
@pytest.mark.parametrize("level", [None, "3"])
@pytest.mark.parametrize("tf_loaded", [True, False], ids=["tf-imported", "unloaded-before-tf"])
def test_after_load_ext_the_cells_see_the_users_tf_switches(
    tmp_path: Path, level: str | None, tf_loaded: bool
) -> None:
    """``%load_ext`` lowers TF's log switches before TF loads (for the XLA compile log); the
    cells after the one that imported TF, and the session after ``%unload_ext``, see the
    user's own values, as without the extension (it kept '0 device_compiler=2' for good)."""
    env = _env()
    del env["TF_CPP_MIN_LOG_LEVEL"]
    if level is not None:
        env["TF_CPP_MIN_LOG_LEVEL"] = level
    load = "ip.run_line_magic('load_ext', 'tfgraph_lab')"
    unload = "ip.run_line_magic('unload_ext', 'tfgraph_lab')"
    session = (
        _LOADED_SWITCHES
        if tf_loaded
        else _LOADED_SWITCHES.replace('ip.run_cell("import tensorflow as tf")\n', "")
    )
    outs = []
    for args in ({"load": "", "unload": ""}, {"load": load, "unload": unload}):
        driver = tmp_path / "session.py"
        driver.write_text(session.format(**args))
        done = subprocess.run(
            [sys.executable, str(driver)], capture_output=True, cwd=tmp_path, env=env, timeout=300
        )
        assert done.returncode == 0, done.stderr[-3000:]
        outs.append(done.stdout)
    assert outs[0] == f"{level} None\n{level} None\n".encode()
    if tf_loaded:
        assert outs[1] == outs[0]
    else:
        # Until TF loads, the switches must stay lowered (TF reads them once, at import), so a
        # cell sees them; %unload_ext before TF loaded gives the user's own values back.
        in_cell, after_unload = outs[1].decode().splitlines()
        assert in_cell != f"{level} None" and "device_compiler" in in_cell
        assert after_unload == f"{level} None"
