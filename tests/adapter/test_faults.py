"""Faults: every way a watched block can go wrong must leave TensorFlow exactly as it was and the
report intact, with trace counts equal to TensorFlow's own ``experimental_get_tracing_count()``.

The autouse fixture in conftest.py fails any test that leaves a hook, callback, log handler or the
``run_functions_eagerly`` flag changed. Cases that need a fresh process (logical CPUs for
MirroredStrategy, a Python without TensorFlow) run in a subprocess that prints JSON.
"""

from __future__ import annotations

import gc
import json
import logging
import os
import re
import subprocess
import sys
import textwrap
import threading
import traceback
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

tf = pytest.importorskip("tensorflow")

import tfgraph_lab  # noqa: E402
from tfgraph_lab import adapter as tfa  # noqa: E402
from tfgraph_lab.watching.recorder import is_patched  # noqa: E402

REPO = Path(__file__).resolve().parents[2]


def assert_intact(report: Any) -> None:
    """The report renders in every format and survives a JSON round trip."""
    assert str(report)
    assert "tfgl-report" in report._repr_html_()
    again = type(report).from_json(report.to_json())
    assert again.to_dict() == report.to_dict()


def subprocess_env() -> dict[str, str]:
    env = dict(os.environ, TF_CPP_MIN_LOG_LEVEL="3", TF_ENABLE_ONEDNN_OPTS="0")
    env["PYTHONPATH"] = os.pathsep.join(p for p in (str(REPO), env.get("PYTHONPATH", "")) if p)
    return env


def run_script(code: str, tmp_path: Path, timeout: int = 300) -> subprocess.CompletedProcess[str]:
    script = tmp_path / "fault_script.py"
    script.write_text(textwrap.dedent(code))
    return subprocess.run(
        [sys.executable, str(script)],
        capture_output=True,
        text=True,
        cwd=tmp_path,
        env=subprocess_env(),
        timeout=timeout,
    )


def last_json(stdout: str) -> Any:
    lines = [line for line in stdout.splitlines() if line.startswith("{")]
    assert lines, f"no JSON line in the subprocess output:\n{stdout}"
    return json.loads(lines[-1])


SHELL_SETUP = "import tensorflow as tf"  # run once in the shared `shell` (conftest.py)


def define(shell: Any, name: str, body: str = "return x * 2") -> None:
    assert shell.run_cell(f"@tf.function\ndef {name}(x):\n    {body}\n").success


def count(shell: Any, name: str) -> int:
    return int(shell.ev(f"{name}.experimental_get_tracing_count()"))


# ---------------------------------------------------------------- exceptions, interrupts


@pytest.mark.parametrize("exc_type", [RuntimeError, KeyboardInterrupt, SystemExit, GeneratorExit])
def test_exception_inside_a_watched_loop(exc_type: type[BaseException]) -> None:
    @tf.function
    def step(x):
        return x * 2

    with pytest.raises(exc_type), tfgraph_lab.watch() as w:
        for n in range(1, 10):
            step(tf.ones([n]))
            if n == 4:
                raise exc_type("stop")
    assert not is_patched()
    fn = w.report.function("step")
    assert fn.calls == 4
    assert fn.traces == step.experimental_get_tracing_count() == 4
    assert_intact(w.report)


def _raise_from(kind: str) -> Callable[[], Any]:
    """A fresh tf.function call that fails in one of the ways a user meets."""

    @tf.function
    def body_raises(x):
        raise ValueError("from the body, while tracing")

    @tf.function
    def op_fails(x):
        return tf.debugging.check_numerics(tf.math.log(x), "from an op, while running")

    @tf.function
    def two_args(x, y):
        return x + y

    @tf.function
    def interrupted(x):
        raise KeyboardInterrupt

    return {
        "trace": lambda: body_raises(tf.ones([2])),
        "runtime": lambda: op_fails(tf.constant([-1.0])),
        "arguments": lambda: two_args(tf.ones([2])),
        "interrupt": lambda: interrupted(tf.ones([2])),
    }[kind]


def _failure(call: Callable[[], Any]) -> tuple[Any, ...]:
    try:
        call()
    except BaseException as exc:
        # The hook's frame stands where TF's wrapper frame (traceback_utils.error_handler) was.
        frames = [
            (f.filename, f.name)
            for f in traceback.extract_tb(exc.__traceback__)
            if "tfgraph_lab" not in f.filename and f.name != "error_handler"
        ]
        # Two function objects, two addresses; a runtime error's message also lists where the
        # op was defined, a stack that holds the hook: compare its first and last lines.
        text = re.sub(r" at 0x[0-9a-f]+|_\d+\]", "", str(exc))  # ... and graph names (op_fails_34)
        lines = [line for line in text.splitlines() if line.strip()]
        message = (lines[0], lines[-1]) if lines else ()
        cause = exc.__cause__
        cause_text = None if cause is None else (type(cause), re.sub(r" at 0x[0-9a-f]+", "", str(cause)))
        return type(exc), message, cause_text, exc.__suppress_context__, frames
    raise AssertionError("did not raise")


@pytest.mark.parametrize("filtering", [True, False])
@pytest.mark.parametrize("kind", ["trace", "runtime", "arguments", "interrupt"])
def test_watched_calls_raise_exactly_what_tensorflow_raises(kind: str, filtering: bool) -> None:
    """The hook takes the place of TF's traceback-filtering wrapper: the same exception, message,
    chaining and (filtered or not) traceback frames as without tfgraph_lab."""
    was = tf.debugging.is_traceback_filtering_enabled()
    (tf.debugging.enable_traceback_filtering if filtering else tf.debugging.disable_traceback_filtering)()
    try:
        plain = _failure(_raise_from(kind))
        with tfgraph_lab.watch() as w:
            watched = _failure(_raise_from(kind))
    finally:
        (tf.debugging.enable_traceback_filtering if was else tf.debugging.disable_traceback_filtering)()
    assert watched == plain
    assert w.report.calls == 1
    assert len(plain[4]) > 0


@pytest.mark.parametrize("exc_type", [ValueError, KeyboardInterrupt])
def test_exception_while_tensorflow_is_tracing(exc_type: type[BaseException]) -> None:
    """The body of a tf.function raises during its trace: TF caches nothing for that call."""

    @tf.function
    def explode(x):
        if x.shape[0] == 3:
            raise exc_type("raised while tracing")
        return x + 1

    with tfgraph_lab.watch() as w:
        for n in (1, 2, 3, 2, 4):
            try:
                explode(tf.ones([n]))
            except exc_type:
                pass
    fn = w.report.function("explode")
    assert fn.calls == 5
    assert fn.traces == explode.experimental_get_tracing_count() == 3
    assert fn.failed_traces == 1
    (failed,) = [e for e in w.report.events if e.failed_trace]
    assert exc_type.__name__ in (failed.error or "")
    assert_intact(w.report)


@pytest.mark.slow
@pytest.mark.parametrize("raise_line", ["raise KeyboardInterrupt", "raise RuntimeError('mine')"])
def test_cell_interrupted_in_a_loop_shows_report_then_raises(shell: Any, raise_line: str) -> None:
    define(shell, "loop_fn")
    before = count(shell, "loop_fn")
    cell = f"%%tracewatch -q -v rep\nfor n in range(1, 9):\n    loop_fn(tf.ones([n]))\n    if n == 3:\n        {raise_line}\n"
    result = shell.run_cell(cell)
    assert not is_patched()
    assert type(result.error_in_exec).__name__ == raise_line.split()[1].split("(")[0]
    fn = shell.user_ns["rep"].function("loop_fn")
    assert fn.calls == 3
    assert fn.traces == count(shell, "loop_fn") - before == 3
    assert_intact(shell.user_ns["rep"])


@pytest.mark.slow
def test_cell_raises_while_tensorflow_is_tracing(shell: Any) -> None:
    define(
        shell, "bad_trace", "if x.shape[0] == 2:\n        raise ValueError('no graph for you')\n    return x"
    )
    before = count(shell, "bad_trace")
    result = shell.run_cell("%%tracewatch -q -v rep\nbad_trace(tf.ones([1]))\nbad_trace(tf.ones([2]))\n")
    assert not is_patched()
    assert isinstance(result.error_in_exec, ValueError)
    assert "no graph for you" in str(result.error_in_exec)
    fn = shell.user_ns["rep"].function("bad_trace")
    assert fn.traces == count(shell, "bad_trace") - before == 1
    assert fn.failed_traces == 1 and fn.calls == 2


@pytest.mark.slow
def test_traceback_of_a_failing_cell_shows_the_cell_not_our_machinery(shell: Any) -> None:
    assert shell.run_cell("@tf.function\ndef two_args_fn(x, y):\n    return x + y\n").success
    result = shell.run_cell("%%tracewatch -q\ntwo_args_fn(tf.ones([2]))\n")
    exc = result.error_in_exec
    assert isinstance(exc, TypeError)
    shown = "\n".join(shell.InteractiveTB.structured_traceback(type(exc), exc, exc.__traceback__))
    assert "missing a required argument" in shown and "two_args_fn(tf.ones([2]))" in shown
    assert not any(f in shown for f in ("_magic.py", "_hub.py", "_hooks.py")), shown
    assert "skipping hidden" in shown


# --------------------------------------------------------------------------- nesting


def test_nested_tracewatch_cells(shell: Any) -> None:
    define(shell, "nest_fn")
    before = count(shell, "nest_fn")
    cell = (
        "%%tracewatch -q -v outer\n"
        "nest_fn(tf.ones([1]))\n"
        "get_ipython().run_cell_magic('tracewatch', '-q -v inner', "
        "'nest_fn(tf.ones([2]))\\nnest_fn(tf.ones([2]))\\n')\n"
        "nest_fn(tf.ones([3]))\n"
    )
    assert shell.run_cell(cell).success
    assert not is_patched()
    outer = shell.user_ns["outer"].function("nest_fn")
    inner = shell.user_ns["inner"].function("nest_fn")
    assert (outer.calls, outer.traces) == (4, count(shell, "nest_fn") - before) == (4, 3)
    assert (inner.calls, inner.traces) == (2, 1)


def test_watch_inside_tracewatch_and_tracewatch_inside_watch(shell: Any) -> None:
    define(shell, "mixed_fn")
    before = count(shell, "mixed_fn")
    cell = (
        "%%tracewatch -q -v cellrep\n"
        "import tfgraph_lab\n"
        "with tfgraph_lab.watch() as w_inner:\n"
        "    mixed_fn(tf.ones([5]))\n"
        "mixed_fn(tf.ones([6]))\n"
    )
    assert shell.run_cell(cell).success
    assert shell.user_ns["cellrep"].function("mixed_fn").traces == 2
    assert shell.user_ns["w_inner"].report.function("mixed_fn").traces == 1
    with tfgraph_lab.watch() as w:
        assert shell.run_cell("%%tracewatch -q -v cellrep2\nmixed_fn(tf.ones([7]))\n").success
        assert is_patched()
        shell.user_ns["mixed_fn"](tf.ones([5]))
    assert not is_patched()
    assert w.report.function("mixed_fn").calls == 2
    assert w.report.function("mixed_fn").traces == 1
    assert shell.user_ns["cellrep2"].function("mixed_fn").traces == 1
    assert count(shell, "mixed_fn") - before == 3


def test_recorders_stopped_out_of_order() -> None:
    """Two recorders that overlap without nesting: A starts, B starts, A stops, B stops."""

    @tf.function
    def f(x):
        return x

    a = tfgraph_lab.TraceRecorder().start()
    try:
        f(tf.ones([1]))
        b = tfgraph_lab.TraceRecorder().start()
        try:
            f(tf.ones([2]))
            a.stop()
            assert is_patched()  # B still watches
            f(tf.ones([3]))
        finally:
            b.stop()
    finally:
        a.stop()
    assert not is_patched()
    assert (a.report.function("f").calls, a.report.function("f").traces) == (2, 2)
    assert (b.report.function("f").calls, b.report.function("f").traces) == (2, 2)
    assert f.experimental_get_tracing_count() == 3


# --------------------------------------------------------------------------- threads


def test_eight_threads_same_and_different_functions() -> None:
    @tf.function
    def shared(x):
        return x * 2.0

    own = []
    for i in range(8):

        @tf.function
        def mine(x, i=i):
            return x + i

        own.append(mine)
    barrier = threading.Barrier(8)
    errors: list[BaseException] = []

    def worker(i: int) -> None:
        try:
            barrier.wait()
            for k in range(12):
                shared(tf.ones([k % 3 + 1]))  # three shapes, raced by eight threads
                own[i](tf.ones([k % (i + 1) + 1]))  # thread i: i+1 shapes of its own
        except BaseException as exc:  # pragma: no cover - reported below
            errors.append(exc)

    with tfgraph_lab.watch() as w:
        threads = [threading.Thread(target=worker, args=(i,), name=f"worker-{i}") for i in range(8)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
    assert not errors
    report = w.report
    assert report.function("shared").calls == 96
    assert report.function("shared").traces == shared.experimental_get_tracing_count() == 3
    assert report.function("mine").calls == 96
    assert report.function("mine").function_objects == 8
    assert report.function("mine").traces == sum(m.experimental_get_tracing_count() for m in own) == 36
    assert sum(g.hits for g in report.function("shared").graphs) == 96
    assert_intact(report)


MIRRORED = """
import json
import tensorflow as tf

cpus = tf.config.list_physical_devices("CPU")
tf.config.set_logical_device_configuration(cpus[0], [tf.config.LogicalDeviceConfiguration()] * 2)

import tfgraph_lab
from tfgraph_lab.watching.recorder import is_patched
from tensorflow.python.distribute import mirrored_run

strategy = tf.distribute.MirroredStrategy(["/cpu:0", "/cpu:1"])


@tf.function
def replica_step(x):
    return x * 2.0


@tf.function
def step(x):
    return strategy.run(replica_step, args=(x,))


with tfgraph_lab.watch() as w:
    for n in (1, 2, 2):
        step(tf.ones([n]))
    for n in (3, 3, 4):
        strategy.run(replica_step, args=(tf.ones([n]),))
report = w.report.with_options(show_framework=True)
# MirroredStrategy runs a tf.function through a hidden clone (mirrored_run._cfer_fn_cache,
# TF 2.15-2.21): that clone, not replica_step itself, holds the graphs.
clone = mirrored_run._cfer_fn_cache[strategy][replica_step]
print(json.dumps({
    "ours": {f.label: {"traces": f.traces, "calls": f.calls, "framework": f.framework,
                       "qualname": f.qualname} for f in report.functions},
    "tf": {"step": step.experimental_get_tracing_count(),
           "replica_step": replica_step.experimental_get_tracing_count(),
           "clone": clone.experimental_get_tracing_count()},
    "shown": [f.label for f in w.report.shown_functions],
    "json_qualnames": sorted({f["qualname"] for f in report.to_dict()["functions"]}
                             | {e["qualname"] for e in report.to_dict()["events"]}),
    "patched": is_patched(),
}))
"""


@pytest.fixture(scope="module")
def mirrored(tmp_path_factory: pytest.TempPathFactory) -> Any:
    proc = run_script(MIRRORED, tmp_path_factory.mktemp("mirrored"))
    assert proc.returncode == 0, proc.stderr[-3000:]
    return last_json(proc.stdout)


@pytest.mark.slow
def test_mirrored_strategy_on_two_logical_cpus(mirrored: Any) -> None:
    ours, theirs = mirrored["ours"], mirrored["tf"]
    assert not mirrored["patched"]
    assert ours["step"]["traces"] == theirs["step"] == 2
    assert ours["step"]["calls"] == 3
    # every graph TF made is counted once: step's, and the replica clone's (replicas run on
    # MirroredStrategy's own threads)
    total = sum(f["traces"] for f in ours.values())
    assert total == theirs["step"] + theirs["replica_step"] + theirs["clone"]


@pytest.mark.slow
def test_mirrored_strategy_clone_is_shown_as_what_it_is(mirrored: Any) -> None:
    """The clone's graphs are TF's count on the clone, in a row of their own; replica_step's
    own traces are TF's count on replica_step (issue 12: not added to the user's function)."""
    ours, theirs = mirrored["ours"], mirrored["tf"]
    clone = ours["replica clone of replica_step"]
    assert clone["traces"] == theirs["clone"] == 4
    assert ours.get("replica_step", {"traces": 0})["traces"] == theirs["replica_step"]
    assert not clone["framework"]
    assert "replica clone of replica_step" in mirrored["shown"]
    # the JSON's qualname is the Python name (issue 33.5); the label says what the row is
    assert clone["qualname"] == "replica_step"
    assert not any(" of " in q or " around " in q for q in mirrored["json_qualnames"]), mirrored["json_qualnames"]


# ------------------------------------------------------------------ recursion, collection


@pytest.mark.slow
def test_recursion_through_tf_functions_and_python() -> None:
    @tf.function
    def recursive(n):
        return recursive(n - 1) + 1 if n > 0 else tf.constant(0)

    def python_recursion(k: int) -> None:
        if k == 0:
            return
        recursive(k % 4)  # eager call of a function that recurses while it traces
        python_recursion(k - 1)

    with tfgraph_lab.watch() as w:
        python_recursion(12)
    fn = w.report.function("recursive")
    # 4 top-level graphs (n = 3, 2, 1, 0) plus none new for the nested calls: TF's count says.
    assert fn.traces == recursive.experimental_get_tracing_count() == 4
    assert sum(1 for e in w.report.events if e.qualname.endswith("recursive") and e.via == "call") >= 12
    assert_intact(w.report)


def test_recursion_error_inside_a_watch_leaves_the_recorder_consistent() -> None:
    @tf.function
    def leaf(x):
        return x + 1

    @tf.function
    def after(x):
        return x * 3

    def deep(k: int) -> None:
        leaf(tf.constant(1.0))
        deep(k + 1)

    with tfgraph_lab.watch() as w:
        with pytest.raises(RecursionError):
            deep(0)
        after(tf.ones([1]))
        after(tf.ones([2]))
        after(tf.ones([2]))
    assert not is_patched()
    fn = w.report.function("after")
    assert (fn.calls, fn.traces) == (3, after.experimental_get_tracing_count()) == (3, 2)
    assert [g.hits for g in fn.graphs] == [1, 2]
    assert w.report.function("leaf").traces == leaf.experimental_get_tracing_count() == 1
    assert_intact(w.report)


@pytest.mark.slow
def test_functions_garbage_collected_mid_watch() -> None:
    """Dead Function objects' ids are reused by new ones: nothing may be attributed to the dead."""
    counts = []
    with tfgraph_lab.watch() as w:
        for i in range(6):
            fn = tf.function(lambda x: x * 2)
            fn(tf.ones([1]))
            fn(tf.ones([i % 2 + 1]))
            fn(tf.ones([1]))
            counts.append(fn.experimental_get_tracing_count())
            del fn
            gc.collect()

        class Model:
            @tf.function
            def call(self, x):
                return x + 1

        for _ in range(3):
            m = Model()
            m.call(tf.ones([2]))
            counts_method = m.call.experimental_get_tracing_count()
            del m
            gc.collect()
    lam = w.report.function("<lambda>")
    assert lam.traces == sum(counts) == 9
    assert lam.calls == 18
    assert lam.function_objects == 6
    assert sum(g.hits for g in lam.graphs) == 18
    method = w.report.function("Model.call")
    assert method.traces == 3 * counts_method == 3
    assert_intact(w.report)


# ------------------------------------------------------------------- TF's own switches


def test_run_functions_eagerly_toggled_inside_the_cell(shell: Any) -> None:
    define(shell, "toggle_fn")
    before = count(shell, "toggle_fn")
    cell = (
        "%%tracewatch -q -v rep\n"
        "toggle_fn(tf.ones([1]))\n"
        "tf.config.run_functions_eagerly(True)\n"
        "toggle_fn(tf.ones([2]))\n"
        "toggle_fn(tf.ones([3]))\n"
        "tf.config.run_functions_eagerly(False)\n"
        "toggle_fn(tf.ones([4]))\n"
        "toggle_fn(tf.ones([1]))\n"
    )
    try:
        assert shell.run_cell(cell).success
    finally:
        tf.config.run_functions_eagerly(False)
    rep = shell.user_ns["rep"]
    fn = rep.function("toggle_fn")
    assert fn.calls == 5
    assert fn.traces == count(shell, "toggle_fn") - before == 2
    assert fn.eager_calls == 2 and rep.eager_calls == 2
    assert "run_functions_eagerly" in str(rep)
    assert_intact(rep)


@pytest.mark.slow
def test_tf_logger_at_error_loses_tf_warnings_not_our_counts() -> None:
    logger = tf.get_logger()
    level, handlers = logger.level, list(logger.handlers)

    @tf.function
    def noisy(x):
        return x + 1

    logger.setLevel(logging.ERROR)
    try:
        with tfgraph_lab.watch() as w:
            for n in range(1, 12):
                noisy(tf.ones([n]))
        assert logger.level == logging.ERROR  # we never change the user's logger level
    finally:
        logger.setLevel(level)
    assert logger.handlers == handlers
    fn = w.report.function("noisy")
    assert fn.traces == noisy.experimental_get_tracing_count() == 11
    assert fn.retraces == 10
    assert len(w.report.retrace_events) == 10
    assert w.report.warnings == ()  # TF's own warning was silenced by the user's logger level
    assert_intact(w.report)


# ---------------------------------------------------------------- degraded (count-only)


@pytest.fixture
def unsupported_tf(monkeypatch: pytest.MonkeyPatch) -> Any:
    """Probe TensorFlow as if it were 2.14 (below the supported range): count-only mode."""
    real = tfa.handles()
    monkeypatch.setattr(tf, "__version__", "2.14.0")
    fake = tfa.probe()
    monkeypatch.setattr(tf, "__version__", real.version)
    assert not fake.full and any("2.14.0" in m for m in fake.missing)
    monkeypatch.setattr(tfa, "_HANDLES", fake)
    return fake


def test_unsupported_tensorflow_says_so(unsupported_tf: Any) -> None:
    @tf.function
    def f(x):
        return x

    with tfgraph_lab.watch() as w:
        f(tf.ones([1]))
    assert not is_patched()
    assert w.report.degraded == unsupported_tf.missing
    text = str(w.report)
    assert "count-only" in text and "2.14.0" in text
    assert "2.14.0" in w.report._repr_html_()


def test_unsupported_tensorflow_counts_are_exact(unsupported_tf: Any) -> None:
    @tf.function
    def f(x):
        return x * 2

    with tfgraph_lab.watch() as w:
        for n in (1, 2, 2, 3):
            f(tf.ones([n]))
    assert w.report.function("f").calls == 4
    assert w.report.function("f").traces == f.experimental_get_tracing_count() == 3


def test_unsupported_tensorflow_installs_no_graph_hook(unsupported_tf: Any) -> None:
    @tf.function
    def f(x):
        return x * 2

    f(tf.ones([1]))
    f(tf.ones([2]))  # two graphs from before the watch: the full mode would need _call_flat
    cf_class = unsupported_tf.concrete_function_class
    original = None if cf_class is None else cf_class.__dict__["_call_flat"]
    with tfgraph_lab.watch() as w:
        f(tf.ones([3]))
        assert cf_class is None or cf_class.__dict__["_call_flat"] is original
    assert w.report.function("f").calls == 1


# ---------------------------------------------------------------- IPython extension life


def test_unload_and_reload_extension(shell: Any) -> None:
    define(shell, "ext_fn")
    shell.run_line_magic("tracewatch", "on")
    shell.run_line_magic("unload_ext", "tfgraph_lab")
    assert "tracewatch" not in shell.magics_manager.magics["cell"]
    assert "tracewatch" not in shell.magics_manager.magics["line"]
    # the monitor stopped with the extension: no hook fires around later cells
    shell.run_cell(
        "from tfgraph_lab.watching.recorder import is_patched as _ip\n_during = _ip()\next_fn(tf.ones([1]))"
    )
    assert shell.user_ns["_during"] is False
    result = shell.run_cell("%%tracewatch -q\next_fn(tf.ones([1]))\n")
    assert type(result.error_in_exec).__name__ == "UsageError"

    shell.run_line_magic("load_ext", "tfgraph_lab")
    shell.run_line_magic("reload_ext", "tfgraph_lab")
    shell.run_line_magic("reload_ext", "tfgraph_lab")
    before = count(shell, "ext_fn")
    assert shell.run_cell("%%tracewatch -q -v rep\next_fn(tf.ones([2]))\next_fn(tf.ones([2]))\n").success
    fn = shell.user_ns["rep"].function("ext_fn")
    assert (fn.calls, fn.traces) == (2, count(shell, "ext_fn") - before) == (2, 1)
    # monitoring works once after reloads (registered once, not once per load)
    shell.run_line_magic("tracewatch", "on")
    try:
        for name in ("pre_run_cell", "post_run_cell"):
            hooks = [h for h in shell.events.callbacks[name] if "Monitor" in getattr(h, "__qualname__", "")]
            assert len(hooks) == 1
    finally:
        shell.run_line_magic("tracewatch", "off")
    assert not is_patched()


NO_TENSORFLOW = """
import contextlib, io, json, sys


class BlockTensorFlow:
    def find_spec(self, name, path=None, target=None):
        if name == "tensorflow" or name.startswith("tensorflow."):
            raise ModuleNotFoundError(f"No module named {name!r}", name=name)
        return None


sys.meta_path.insert(0, BlockTensorFlow())

from IPython.core.interactiveshell import InteractiveShell

out = {}
ip = InteractiveShell.instance()
buf = io.StringIO()
with contextlib.redirect_stdout(buf), contextlib.redirect_stderr(buf):
    ip.run_line_magic("load_ext", "tfgraph_lab")
    result = ip.run_cell("%%tracewatch\\nx = 1 + 1\\n")
out["magic_error"] = type(result.error_in_exec).__name__
out["magic_message"] = str(result.error_in_exec)
out["magic_shown"] = buf.getvalue()
buf = io.StringIO()
with contextlib.redirect_stdout(buf), contextlib.redirect_stderr(buf):
    result = ip.run_cell("%tracewatch on")
    ip.run_cell("y = 2")
out["on_error"] = type(result.error_in_exec).__name__
out["on_shown"] = buf.getvalue()

import tfgraph_lab
try:
    with tfgraph_lab.watch():
        pass
except Exception as exc:
    out["watch_error"] = [type(exc).__name__, str(exc), isinstance(exc, ImportError)]

from tfgraph_lab.faces import cli
with open("script.py", "w") as fh:
    fh.write("print('hi')\\n")
buf = io.StringIO()
with contextlib.redirect_stdout(buf), contextlib.redirect_stderr(buf):
    out["cli_status"] = cli.main(["run", "script.py"])
out["cli_shown"] = buf.getvalue()
buf = io.StringIO()
with contextlib.redirect_stdout(buf), contextlib.redirect_stderr(buf):
    out["demo_status"] = cli.main(["demo"])
out["demo_shown"] = buf.getvalue()
out["tf_imported"] = "tensorflow" in sys.modules
print(json.dumps(out))
"""


@pytest.mark.slow
def test_extension_where_tensorflow_is_not_installed(tmp_path: Path) -> None:
    proc = run_script(NO_TENSORFLOW, tmp_path, timeout=120)
    assert proc.returncode == 0, proc.stderr[-3000:]
    out = last_json(proc.stdout)
    assert not out["tf_imported"]
    assert out["magic_error"] == "UsageError"
    assert out["on_error"] == "UsageError"  # at %tracewatch on, not under every later cell
    for shown in (
        out["magic_message"],
        out["magic_shown"],
        out["on_shown"],
        out["cli_shown"],
        out["demo_shown"],
    ):
        assert "needs TensorFlow" in shown and 'pip install "tfgraph-lab[tf]"' in shown
        assert shown.count("needs TensorFlow") == 1, shown
        assert "Traceback" not in shown
        assert "tfgraph_lab" + os.sep not in shown  # no frame of our code
    assert out["watch_error"][0] == "TensorFlowMissingError" and out["watch_error"][2]
    assert out["cli_status"] == 2 and out["demo_status"] == 2
    assert "Traceback" not in proc.stderr


def test_logical_cpu_configuration_is_untouched() -> None:
    """Watching must not initialise or reconfigure devices behind the user's back."""
    before = [d.name for d in tf.config.list_logical_devices()]
    with tfgraph_lab.watch():
        pass
    assert [d.name for d in tf.config.list_logical_devices()] == before
