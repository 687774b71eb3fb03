"""XLA counts read from TensorFlow's own compile log, checked against that log.

With ``TF_CPP_VMODULE=device_compiler=2`` and ``TF_CPP_MIN_LOG_LEVEL=0`` set before TensorFlow
loads, TF logs "Instantly compiling for signature: <concrete function>" once per XLA
compilation (tensorflow/compiler/jit/device_compiler.h, TF 2.15-2.21). Scripts of the kinds
people write run in subprocesses; each test reads TF's lines from the subprocess's stderr itself
and compares them with the report: counted from the log, every count is exact; the model
alone (the same watch without the log) never claims more than TF compiled.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import textwrap
import time
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

tf = pytest.importorskip("tensorflow")

import tfgraph_lab  # noqa: E402
from tfgraph_lab.recording.xla_log import XlaLog, compile_name_parts  # noqa: E402

# The kinds of code the issue found miscounted, and the kinds handled before; tiny shapes (XLA's
# CPU compiles take 50-300 ms each on a loaded 2-core machine).
_SCENARIOS = textwrap.dedent(
    """
    import json, sys
    import numpy as np
    import tensorflow as tf
    cpu = tf.config.list_physical_devices("CPU")[0]
    tf.config.set_logical_device_configuration(cpu, [tf.config.LogicalDeviceConfiguration()] * 2)
    import keras
    import tfgraph_lab

    @tf.function(jit_compile=True)  # 1. a slice size from an argument tensor's value
    def head(x, k):
        return tf.reduce_sum(x[:k])

    @tf.function(jit_compile=True)  # 2. XLA nested in a plain function with [None, 12]
    def dense(x):
        return tf.tanh(x) * 2.0

    @tf.function(input_signature=[tf.TensorSpec([None, 12], tf.float32)])
    def outer(x):
        return dense(x) + 1.0

    strategy = tf.distribute.MirroredStrategy(["/cpu:0", "/cpu:1"])  # 3. replica threads
    with strategy.scope():
        w = tf.Variable(tf.ones([3, 1]))

    @tf.function(jit_compile=True)
    def compute_loss(x):
        return tf.reduce_sum(tf.matmul(x, w))

    def replica_step(x):
        with tf.GradientTape() as tape:
            loss = compute_loss(x)
        return tape.gradient(loss, w)

    @tf.function
    def distributed_train_step(batch):
        return strategy.run(replica_step, args=(batch,))

    @tf.function
    def dropped_step(batch):  # the suggested fix: drop_remainder=True
        return strategy.run(replica_step, args=(batch,))

    v = tf.Variable(tf.ones([3]))

    @tf.function(jit_compile=True)  # 4. a tape inside a tf.function around an XLA loss
    def tape_loss(x):
        return tf.reduce_sum(tf.tanh(x * v))

    @tf.function
    def grad_step(x):
        with tf.GradientTape() as tape:
            y = tape_loss(x)
        return tape.gradient(y, v)

    @tf.function(jit_compile=True)  # an eager tape around an XLA loss
    def eager_loss(x):
        return tf.reduce_sum(tf.tanh(x * v))

    @tf.function(jit_compile=True, reduce_retracing=True)
    def relaxed(x):
        return x * 2.0

    model = keras.Sequential([keras.Input((4,)), keras.layers.Dense(2)])
    model.compile("sgd", "mse", jit_compile=True)
    xs, ys = np.ones((10, 4), "float32"), np.ones((10, 2), "float32")

    with tfgraph_lab.watch() as rec:
        for k in [1, 2, 3, 2]:
            head(tf.ones([5]), tf.constant(k))
        for n in [4, 3, 4, 2, 3]:
            outer(tf.ones([n, 12]))
        ds = tf.data.Dataset.from_tensor_slices(tf.ones([10, 3])).batch(8)
        for batch in strategy.experimental_distribute_dataset(ds):
            distributed_train_step(batch)
        dropped = tf.data.Dataset.from_tensor_slices(tf.ones([10, 3])).batch(4, drop_remainder=True)
        for batch in strategy.experimental_distribute_dataset(dropped):
            dropped_step(batch)
        for shape in [[3], [3], [2, 3]]:
            grad_step(tf.ones(shape))
        for _ in range(2):
            with tf.GradientTape() as tape:
                y = eager_loss(tf.ones([3]))
            tape.gradient(y, v)
        for n in [2, 3, 4, 3]:
            relaxed(tf.ones([n]))
        model.fit(xs, ys, batch_size=4, epochs=2, verbose=0)  # batches of 4, 4, 2
        model.predict(np.ones((3, 4), "float32"), verbose=0)
        model.predict(np.ones((5, 4), "float32"), verbose=0)

    def counts(report):  # by Python name, as TF's log names them (Keras has 2 one_step_on_data)
        out = {}
        for f in report.functions:
            if f.xla_compiles or f.xla_compiles_kind:
                n, kind = out.get(f.label.rsplit(".", 1)[-1], (0, f.xla_compiles_kind))
                out[f.label.rsplit(".", 1)[-1]] = (n + f.xla_compiles, kind)
        return out

    logged = counts(rec.report)
    text = str(rec.report)
    suggestions = {f.label: f.suggestion for f in rec.report.functions}
    report = {"log": logged, "text": text, "suggestions": suggestions}
    report["dropped_traces"] = dropped_step.experimental_get_tracing_count()
    rec._xla_window = None  # the same watch as the model alone saw it
    rec._report = None
    report["model"] = counts(rec.report)
    print("REPORT " + json.dumps(report))
    """
)

_LOGGED = re.compile(r"device_compiler\.\w+:\d+\] Instantly compiling for signature: (\S+)")


def _env(**extra: str) -> dict[str, str]:
    env = dict(os.environ)
    env.update(TF_ENABLE_ONEDNN_OPTS="0", **extra)
    env["PYTHONPATH"] = os.pathsep.join(
        [str(Path(tfgraph_lab.__file__).parent.parent), env.get("PYTHONPATH", "")]
    )
    return env


def _tf_log(stderr: str) -> Counter[str]:
    """TF's compilations per Python function name (forward and backward under their function)."""
    return Counter(compile_name_parts(name)[0] for name in _LOGGED.findall(stderr))


def _tf_lines(stderr: str) -> list[str]:
    """TensorFlow's C++ log lines, each as its severity and source place (times and threads vary)."""
    return re.findall(r"^([IWEF])\d{4} [\d:. ]+\d+ ([\w.]+:\d+)\]|^\d{4}-\d\d-\d\d [\d:.]+: ([IWEF]) (\S+)", stderr, re.M)


def _run(args: list[str], env: dict[str, str], cwd: Path) -> subprocess.CompletedProcess[str]:
    done = subprocess.run(
        args, capture_output=True, text=True, env=env, cwd=cwd, timeout=540
    )  # below pytest's 600 s
    assert done.returncode == 0, done.stderr[-4000:]
    return done


@pytest.mark.slow
def test_every_count_equals_tensorflows_compile_log(tmp_path: Path) -> None:
    script = tmp_path / "scenarios.py"
    script.write_text(_SCENARIOS)
    env = _env(TF_CPP_VMODULE="device_compiler=2", TF_CPP_MIN_LOG_LEVEL="0")
    done = _run([sys.executable, str(script)], env, tmp_path)
    logged = _tf_log(done.stderr)  # the user asked for the lines: they stay on stderr
    if not logged:
        pytest.skip("this TensorFlow does not log XLA compilations under TF_CPP_VMODULE=device_compiler=2")
    report = json.loads(done.stdout.split("REPORT ", 1)[1])
    counted = {name: n for name, (n, kind) in report["log"].items() if n}
    # Keras's step is the user's row, one per use ("sequential · fit · train step", "… predict
    # step (XLA)"); TF's log names its code (Keras 3: one_step_on_data; Keras 2, TF 2.15's
    # tf.keras: run_step, inside train_function and predict_function): together, TF's count
    step = "one_step_on_data" if "one_step_on_data" in logged else "run_step"
    keras_rows = {name: counted.pop(name) for name in list(counted) if " · " in name}
    counted[step] = counted.get(step, 0) + sum(keras_rows.values())  # Keras 2: a row "run_step"
    assert counted == dict(logged), (counted, dict(logged))
    assert all(kind == "exact" for _, kind in report["log"].values()), report["log"]
    # the four kinds the model missed, as TF 2.21 (and 2.15: .ci/oldest_tf.sh) compiled them
    assert counted["head"] == 3  # one compilation per value of k (1, 2, 3), one graph
    assert counted["dense"] == 3  # batch sizes 4, 3, 2 under input_signature [None, 12]
    # 2 devices × forward and backward × 2 batch shapes in distributed_train_step, 1 in dropped_step
    assert counted["compute_loss"] == 12
    assert counted["tape_loss"] == 4  # forward and backward per shape
    assert counted["eager_loss"] == 2  # the forward twin, and the backward pass at tape.gradient
    assert counted["relaxed"] == 3  # 2 graphs, 3 concrete shapes
    # fit: batches of 4 and 2; predict: 3 and 5 rows
    assert counted[step] == 4, counted
    if step == "one_step_on_data":  # Keras 3: each use its own row
        assert sorted(keras_rows.values()) == [2, 2], keras_rows
    assert "constant-value  head" in report["text"] and "per-device  compute_loss" in report["text"]
    assert "≥" not in report["text"].splitlines()[0] and "(TensorFlow's compile log)" in report["text"]
    # the strategy's explanations: a PerReplica batch → drop_remainder (measured: 1 trace),
    # an input_signature leaves one graph per device, devices named without object addresses
    assert "drop_remainder=True" in report["suggestions"]["distributed_train_step"]
    assert report["dropped_traces"] == 1
    assert "1 graph per device" in report["suggestions"]["compute_loss"]
    assert "XLA compiles once per device and shape" in report["suggestions"]["compute_loss"]
    assert "object at 0x" not in report["text"] and "device /device:CPU:1" in report["text"]
    # the model alone: marked, and never more than TF compiled unless marked "about"
    for name, (n, kind) in report["model"].items():
        assert kind in ("at-least", "about"), (name, kind)
        assert n <= logged.get(step if " · " in name else name, 0) or kind == "about", (name, n, dict(logged))
    assert report["model"]["head"][0] < counted["head"]  # what the log adds


_HEAD = textwrap.dedent(
    """
    import tensorflow as tf

    @tf.function(jit_compile=True)
    def head(x, k):
        return tf.reduce_sum(x[:k])

    for k in [1, 2, 3, 2]:
        head(tf.ones([5]), tf.constant(k))
    """
)


@pytest.mark.slow
def test_run_turns_the_log_on_reads_it_and_keeps_it_off_stderr(tmp_path: Path) -> None:
    script = tmp_path / "head.py"
    script.write_text(_HEAD)
    out = tmp_path / "r.json"
    env = _env()
    for name in ("TF_CPP_VMODULE", "TF_CPP_MIN_LOG_LEVEL", "TF_CPP_MAX_VLOG_LEVEL"):
        env.pop(name, None)
    done = _run([sys.executable, "-m", "tfgraph_lab", "run", "--json", str(out), str(script)], env, tmp_path)
    plain = _run([sys.executable, str(script)], env, tmp_path)
    assert _LOGGED.search(done.stderr) is None  # the compile log: read, not shown
    # TF's own lines are the ones python shows (its INFO lines at the user's level 0 included:
    # TF 2.21 logs "Compiled cluster using XLA!" once); absl's format, TF >= 2.16; tsl's, TF 2.15
    assert _tf_lines(done.stderr) == _tf_lines(plain.stderr), done.stderr
    (fn,) = [f for f in json.loads(out.read_text())["functions"] if f["qualname"] == "head"]
    assert (fn["xla_compiles"], fn["xla_compiles_kind"], fn["xla_compiles_exact"]) == (3, "exact", True)
    assert "compiled by XLA 3×" in done.stderr and "constant-value" in done.stderr


@pytest.mark.slow
def test_the_extension_loaded_before_tensorflow_reads_the_log(tmp_path: Path) -> None:
    driver = tmp_path / "shell.py"
    driver.write_text(
        "from IPython.core.interactiveshell import InteractiveShell\n"
        "ip = InteractiveShell.instance()\n"
        "ip.run_line_magic('load_ext', 'tfgraph_lab')\n"
        f"ip.run_cell({_HEAD!r})\n"
        "r = ip.run_cell('%%tracewatch -q -v rep\\nfor k in [4, 5, 4]:\\n    head(tf.ones([5]), tf.constant(k))\\n')\n"
        "import json\n"
        "(fn,) = [f for f in ip.user_ns['rep'].functions if f.qualname == 'head']\n"
        "print('REPORT ' + json.dumps([fn.xla_compiles, fn.xla_compiles_kind]))\n"
    )
    env = _env()
    env.pop("TF_CPP_VMODULE", None)
    done = _run([sys.executable, str(driver)], env, tmp_path)
    assert json.loads(done.stdout.split("REPORT ", 1)[1]) == [2, "exact"]  # k = 4 and 5
    # the extension reads fd 2 from its load on: calls outside a watch (the first cell) log no
    # device_compiler line either
    assert "device_compiler" not in done.stderr


def test_a_log_asked_for_after_tensorflow_loaded_is_not_read() -> None:
    """TF reads its switches once, on load: this process's TF writes no compile lines, so the
    count stays modelled and says so, whatever the environment says now."""
    f = tf.function(lambda x: x * 2.0, jit_compile=True)
    old = {k: os.environ.get(k) for k in ("TF_CPP_VMODULE", "TF_CPP_MIN_LOG_LEVEL")}
    os.environ.update(TF_CPP_VMODULE="device_compiler=2", TF_CPP_MIN_LOG_LEVEL="0")
    try:
        with tfgraph_lab.watch() as w:
            f(tf.ones([3]))
    finally:
        for key, value in old.items():
            if value is None:
                os.environ.pop(key, None)
            else:
                os.environ[key] = value
    (fn,) = w.report.functions
    assert (fn.xla_compiles, fn.xla_compiles_kind) == (1, "at-least")


def test_the_tee_passes_everything_else_through(capfd: Any) -> None:
    log = XlaLog()
    log.requested, log.hide, log.user_level = True, True, 2  # as prepare() leaves it under run
    mark = log.open()
    assert mark is not None
    try:
        os.write(2, b"progress 10%\r")
        os.write(
            2,
            b"I0000 00:00:1796280881.614313   10342 device_compiler.h:551] Instantly compiling "
            b"for signature: __inference_head_17\n"
            b"I0000 00:00:1796280881.700000   10342 cpu_feature_guard.cc:227] an INFO line\n"
            b"To enable the following instructions: AVX2 FMA, in other operations\n",
        )
        os.write(2, b"W0000 00:00:1796280881.8   10342 x.cc:1] a warning\n")
        os.write(
            2, b"E0000 00:00:1796280881.9   10342 x.cc:2] an error\nTraceback (most recent call last):\n"
        )
    finally:
        window = log.close(mark)
    assert [name for _, name in window.compiles] == ["__inference_head_17"]
    assert window.launches == 1
    err = capfd.readouterr().err
    assert (
        err
        == "progress 10%\rE0000 00:00:1796280881.9   10342 x.cc:2] an error\nTraceback (most recent call last):\n"
    )


# TF 2.15.1's stderr under TF_CPP_VMODULE=device_compiler=2 TF_CPP_MIN_LOG_LEVEL=0 (tensorflow-cpu
# from PyPI, CPython 3.11), captured as written: tsl's "YYYY-MM-DD hh:mm:ss.uuuuuu: I file:line]"
# lines in local time, one absl line (XLA's own logging, Unix time before absl::InitializeLog) and
# absl's preamble; a first compilation of head, then tape.gradient's backward compilation of loss.
# Only the tsl time stamps are replaced (by {t0}, {t1}: near now), so the times can be checked.
_TF215_STDERR = """\
{t0}: I tensorflow/core/platform/cpu_feature_guard.cc:182] This TensorFlow binary is optimized to use available CPU instructions in performance-critical operations.
To enable the following instructions: AVX2 FMA, in other operations, rebuild TensorFlow with the appropriate compiler flags.
{t0}: I external/local_xla/xla/service/service.cc:168] XLA service 0x5586eaa20990 initialized for platform Host (this does not guarantee that XLA will be used). Devices:
{t0}: I external/local_xla/xla/service/service.cc:176]   StreamExecutor device (0): Host, Default Version
{t0}: I ./tensorflow/compiler/jit/device_compiler.h:404] DeviceCompiler::Compile DeviceCompiler
{t0}: I ./tensorflow/compiler/jit/device_compiler.h:407] num_inputs=2
{t0}: I ./tensorflow/compiler/jit/device_compiler.h:429] DeviceCompilationClusterSignature: __inference_head_17
{t0}: I ./tensorflow/compiler/jit/device_compiler.h:439] Compilation cache entry hit: 0 signature: __inference_head_17 with request count 1
{t0}: I ./tensorflow/compiler/jit/device_compiler.h:478] Instantly compiling for signature: __inference_head_17
WARNING: All log messages before absl::InitializeLog() is called are written to STDERR
I0000 00:00:1796295571.453843   28713 device_compiler.h:186] Compiled cluster using XLA!  This line is logged at most once for the lifetime of the process.
{t0}: I ./tensorflow/compiler/jit/device_compiler.h:465] Compilation of XLA executable time: 102 ms (cumulative: 102 ms, max: 102 ms, #called: 1)
{t0}: E external/local_xla/xla/stream_executor/stream_executor_internal.h:177] SetPriority unimplemented for this stream.
{t1}: I ./tensorflow/compiler/jit/device_compiler.h:404] DeviceCompiler::Compile DeviceCompiler
{t1}: I ./tensorflow/compiler/jit/device_compiler.h:407] num_inputs=4
{t1}: I ./tensorflow/compiler/jit/device_compiler.h:429] DeviceCompilationClusterSignature: __inference___backward_loss_52_67
{t1}: I ./tensorflow/compiler/jit/device_compiler.h:439] Compilation cache entry hit: 0 signature: __inference___backward_loss_52_67 with request count 1
{t1}: I ./tensorflow/compiler/jit/device_compiler.h:478] Instantly compiling for signature: __inference___backward_loss_52_67
{t1}: I ./tensorflow/compiler/jit/device_compiler.h:465] Compilation of XLA executable time: 105 ms (cumulative: 849 ms, max: 492 ms, #called: 5)
"""


def test_tensorflow_2_15_log_lines_are_read(capfd: Any) -> None:
    """TF 2.15 writes its log through tsl, not absl (TF >= 2.16): real lines, read by the tee."""
    now = time.time()
    stamps = [now - 2.0, now - 1.0]  # local time, as tsl's logging.cc formats it (localtime)
    t0, t1 = (
        time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(t)) + f".{int(t % 1 * 1e6):06d}" for t in stamps
    )
    log = XlaLog()
    log.requested, log.hide, log.user_level = True, True, 2  # as prepare() leaves it under run
    mark = log.open()
    assert mark is not None
    try:
        os.write(2, _TF215_STDERR.format(t0=t0, t1=t1).encode())
    finally:
        window = log.close(mark)
    assert [name for _, name in window.compiles] == [
        "__inference_head_17",
        "__inference___backward_loss_52_67",
    ]
    assert window.launches == 12 and window.proven  # the VLOG lines: not "Compiled cluster using XLA!"
    offset = time.time() - time.perf_counter()
    for (when, _), stamp in zip(window.compiles, stamps):
        assert abs(when + offset - stamp) < 0.05, (when + offset, stamp)  # the line's own time
    # the user's level 2 keeps INFO lines (and their continuations, absl's preamble) off stderr
    err = capfd.readouterr().err
    assert (
        err
        == f"{t0}: E external/local_xla/xla/stream_executor/stream_executor_internal.h:177] SetPriority unimplemented for this stream.\n"
    )


def test_the_once_per_process_line_proves_nothing() -> None:
    """TF 2.15 writes "Compiled cluster using XLA!" (LOG(INFO), once per process) even at
    TF_CPP_MIN_LOG_LEVEL=3 with no TF_CPP_VMODULE: taken as proof of the log, it made a modelled
    count of 1 an "exact" 0 (tensorflow-cpu 2.15.1, test_a_log_asked_for_after_tensorflow_loaded)."""
    log = XlaLog()
    log.requested = True
    mark = log.open()
    assert mark is not None
    try:
        os.write(2, _TF215_STDERR.splitlines(keepends=True)[10].encode())
    finally:
        window = log.close(mark)
    assert (window.compiles, window.launches, window.proven) == ([], 0, False)


@pytest.mark.parametrize(
    ("name", "parts"),
    [
        ("__inference_head_17", ("head", "inference")),
        ("__forward_compute_loss_262", ("compute_loss", "forward")),
        ("__inference___backward_loss_461_478", ("loss", "backward")),
        ("__inference_<lambda>_5", ("<lambda>", "inference")),
        ("cluster_3", ("cluster_3", "")),
    ],
)
def test_compile_names(name: str, parts: tuple[str, str]) -> None:
    assert compile_name_parts(name) == parts


@pytest.mark.slow
def test_retrace_lab_shows_the_logged_count_as_exact(tmp_path: Path) -> None:
    """The lab's XLA count is the report's: from TF's log it carries no "≥" (modelled, it does:
    tests/recording/test_xla.py), and it equals TF's own lines."""
    pytest.importorskip("ipywidgets")
    driver = tmp_path / "lab.py"
    driver.write_text(
        textwrap.dedent(
            """
            import re
            from tfgraph_lab.widgets import RetraceLab
            from tfgraph_lab.widgets.scenario import LabSettings

            lab = RetraceLab(settings=LabSettings(input_signature=True, flag="tensor"))
            lab.jit_compile.value = True
            for batch in (32, 20, 32):
                lab.batch.value = batch
                lab.call_button.click()
            print("REPORT " + re.sub("<[^>]+>", "", lab.xla_count.value) + " | " + lab.text().splitlines()[0])
            """
        )
    )
    env = _env(TF_CPP_VMODULE="device_compiler=2", TF_CPP_MIN_LOG_LEVEL="0")
    done = _run([sys.executable, str(driver)], env, tmp_path)
    logged = sum(_tf_log(done.stderr).values())
    if not logged:
        pytest.skip("this TensorFlow does not log XLA compilations under TF_CPP_VMODULE=device_compiler=2")
    shown, text = done.stdout.split("REPORT ", 1)[1].strip().split(" | ")
    assert logged == 2  # one graph, batch sizes 32 and 20
    assert shown == "2 XLA compilations", shown
    assert "compiled by XLA 2×," in text, text


_BURST = textwrap.dedent(
    """
    import ctypes, os, sys
    from tfgraph_lab.recording.xla_log import XlaLog

    log = XlaLog()
    log.requested = True
    mark = log.open()
    line = b"y" * 99 + b"\\n"
    burst = line * (int(sys.argv[1]) // 100)
    libc = ctypes.PyDLL(None)  # PyDLL: the C call keeps the GIL while it writes
    libc.write.argtypes = [ctypes.c_int, ctypes.c_char_p, ctypes.c_size_t]
    written = libc.write(2, burst, len(burst))
    os.write(2, b"a long piece with no line end: " + b"z" * 3_000_000)  # a progress bar's kind
    window = log.close(mark)
    print("WROTE", written, len(burst), window.launches, flush=True)
    """
)


@pytest.mark.slow
@pytest.mark.skipif(sys.platform == "win32", reason="ctypes.PyDLL(None) is the C library on POSIX only")
def test_a_burst_written_to_fd_2_with_the_gil_held_does_not_hang(tmp_path: Path) -> None:
    """A C-level write of several MB to fd 2 that keeps the GIL: the reader must not need the GIL
    to take it (a pipe read by a thread hung here for good with 1.1 MB: the writer waited for the
    reader, the reader for the writer's GIL). All of it reaches the real stderr, in order."""
    script = tmp_path / "burst.py"
    script.write_text(_BURST)
    size = 4_000_000
    env = _env()
    done = subprocess.run(
        [sys.executable, str(script), str(size)], capture_output=True, env=env, cwd=tmp_path, timeout=120
    )
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.split() == [b"WROTE", str(size).encode(), str(size).encode(), b"0"], done.stdout
    assert (
        done.stderr
        == (b"y" * 99 + b"\n") * (size // 100) + b"a long piece with no line end: " + b"z" * 3_000_000
    )


_PREDICT = textwrap.dedent(
    """
    import json, os
    import numpy as np
    import keras
    import tfgraph_lab

    model = keras.Sequential([keras.Input((4,)), keras.layers.Dense(2)])
    model.compile("sgd", "mse", jit_compile=True)
    with tfgraph_lab.watch() as rec:
        for rows in (3, 5, 40):  # 40 rows: batches of 32 and 8
            os.write(2, f"==PREDICT {rows}==\\n".encode())
            model.predict(np.ones((rows, 4), "float32"), verbose=0)

    def step(report):
        (f,) = [f for f in report.functions if f.xla_compiles or f.xla_compiles_kind]
        return [f.xla_compiles, f.xla_compiles_kind]

    out = {"log": step(rec.report), "keras": int(keras.__version__.split(".")[0])}
    rec._xla_window = None  # the same watch as the model alone saw it
    rec._report = None
    out["model"] = step(rec.report)
    print("REPORT " + json.dumps(out))
    """
)


@pytest.mark.slow
def test_keras_predict_on_new_lengths_counts_each_batch_size(tmp_path: Path) -> None:
    """Keras 3's predict step under XLA, as TF 2.21 logs it (TF 2.15's Keras 2 compiles the same 4): the first predict traces a graph for
    its 3 rows (1 compilation), the next relaxes to (None, 4) (5 rows: 1), and 40 rows run as
    batches of 32 and 8 (2 more). The model saw the 5-row run and missed 32 and 8 (2 where TF
    said 4): every call of that graph compiled, so its fastest call was a compilation."""
    script = tmp_path / "predict.py"
    script.write_text(_PREDICT)
    env = _env(TF_CPP_VMODULE="device_compiler=2", TF_CPP_MIN_LOG_LEVEL="0")
    done = _run([sys.executable, str(script)], env, tmp_path)
    per_predict = {
        int(part.split("==", 1)[0]): len(_LOGGED.findall(part))
        for part in done.stderr.split("==PREDICT ")[1:]
    }
    if not sum(per_predict.values()):
        pytest.skip("this TensorFlow does not log XLA compilations under TF_CPP_VMODULE=device_compiler=2")
    assert per_predict == {3: 1, 5: 1, 40: 2}, per_predict
    report = json.loads(done.stdout.split("REPORT ", 1)[1])
    assert report["log"] == [4, "exact"]
    n, kind = report["model"]
    assert (n <= 4 and kind in ("at-least", "about")) or kind == "about", report["model"]
    if report["keras"] >= 3:  # the 3-row graph and the first run of the relaxed one: certain
        assert n >= 2, report["model"]
    # Keras 2 (TF 2.15) feeds its run_step from a dataset iterator inside predict_function: the
    # sizes are hidden, the model sees the first compilation only (1, at least; TF's log: 4)
