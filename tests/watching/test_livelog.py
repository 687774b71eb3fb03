"""The live log: one WARNING record on the ``tfgraph_lab`` logger per retrace, when it happens."""

from __future__ import annotations

import logging
import os
import signal
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from _cli import run_cli

tf = pytest.importorskip("tensorflow")

import tfgraph_lab  # noqa: E402
from tfgraph_lab.explain import pages  # noqa: E402
from tfgraph_lab.recording.calllog import CallRecord  # noqa: E402
from tfgraph_lab.watching import livelog  # noqa: E402


class Records(logging.Handler):
    def __init__(self) -> None:
        super().__init__(logging.DEBUG)
        self.records: list[logging.LogRecord] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.records.append(record)


@pytest.fixture
def records() -> list[logging.LogRecord]:
    handler = Records()
    logger = logging.getLogger("tfgraph_lab")
    logger.addHandler(handler)
    try:
        yield handler.records
    finally:
        logger.removeHandler(handler)


def test_one_record_per_retrace_with_everything_a_reader_needs(records: list[logging.LogRecord]) -> None:
    @tf.function
    def step(x):
        return x * 2

    with tfgraph_lab.watch() as w:
        for n in (1, 1, 1, 2, 2, 2, 3):
            step(tf.ones([n]))  # the line the records must point at
        line = sys._getframe().f_lineno - 1
    assert len(records) == w.report.retraces == 2
    first, second = records
    assert first.levelno == logging.WARNING and first.name == "tfgraph_lab"
    text = first.getMessage()
    assert text.startswith("tf.function ") and "step retraced (shape-changed x: (1,) → (2,))" in text
    assert f"test_livelog.py:{line}" in text and "cost " in text and "fix: " in text
    assert "(2,) → (3,)" in second.getMessage()
    data = first.tfgraph_lab  # type: ignore[attr-defined]
    assert data["function"].endswith(".step") and data["codes"] == ["shape-changed"]
    assert data["caller"].endswith(f"test_livelog.py:{line}") and data["seconds"] > 0
    assert data["pages"] == {"shape-changed": pages.page_url("shape-changed")}  # the code's page
    assert data["pages"]["shape-changed"].endswith("/docs/reasons/shape-changed.md")


def test_two_retraces_for_one_new_python_value_say_what_tells_them_apart(
    records: list[logging.LogRecord],
) -> None:
    # A Python learning rate changed per epoch over a dataset with a short last batch retraces
    # twice per rate, each explained against its closest graph: both reasons read
    # "lr: 0.1 → 0.05". The second line names the batch that tells it from the first (TF 2.21:
    # 6 traces); the first, when it is logged, reads like no line before it.
    # (With x alone, the short batch's retrace is as close to the full batch at the new rate —
    # one leaf apart either way — and is explained as the shape change against it.)
    @tf.function
    def step(x, y, lr):
        return x * lr + y

    with tfgraph_lab.watch() as w:
        for lr in (0.1, 0.05, 0.025):
            for batch in (4, 4, 2):
                step(tf.ones([batch, 3]), tf.ones([batch, 1]), lr)
    assert step.experimental_get_tracing_count() == 6 == w.report.function("step").traces
    lines = [r.getMessage() for r in records]
    value_lines = [line for line in lines if "python-value-changed lr: 0.1 → 0.05" in line]
    assert len(value_lines) == 2, lines
    # (the line is near its length: a longer cost may clip the last character or two)
    assert " · with " not in value_lines[0] and " · with x (2, 3), y (2" in value_lines[1]
    shape_line = next(line for line in lines if "shape-changed" in line)
    assert " with " not in shape_line  # its reason names every difference


@tf.function
def add(a, b):  # a short name: the line has room for everything it could say
    return a + b


def test_lines_that_already_differ_say_nothing_more(records: list[logging.LogRecord]) -> None:
    # Lesson 05's four calls: the aliasing retrace names b, the trainable one a. The last is
    # explained against graph #0 (not the aliasing graph #2 before it), and b's text, "()", is
    # the same in both: "with b ()" told nobody anything (issue 34).
    v1, v2 = tf.Variable(1.0), tf.Variable(2.0)
    with tfgraph_lab.watch() as w:
        add(v1, v2)
        add(v2, v1)
        add(v1, v1)
        add(tf.Variable(3.0, trainable=False), v2)
    assert add.experimental_get_tracing_count() == 3 == w.report.function("add").traces
    assert all(" · fix: " in r.getMessage() for r in records)  # the line was not cut short
    lines = [r.getMessage() for r in records]
    assert len(lines) == 2 and "variable-changed b" in lines[0] and "variable-changed a" in lines[1], lines
    assert not any(" · with " in line for line in lines), lines


def test_a_retrace_against_the_last_graph_says_nothing_more(records: list[logging.LogRecord]) -> None:
    @tf.function
    def scaled(x, lr):
        return x * lr

    with tfgraph_lab.watch():
        for lr in (0.1, 0.2, 0.3):
            scaled(tf.ones([2]), lr)
    lines = [r.getMessage() for r in records]
    assert len(lines) == 2 and not any(" · with " in line for line in lines), lines


def test_no_record_for_first_traces_variable_creation_or_cache_hits(records: list[logging.LogRecord]) -> None:
    class Model(tf.Module):
        def __init__(self) -> None:
            self.v: tf.Variable | None = None

        @tf.function
        def __call__(self, x):
            if self.v is None:
                self.v = tf.Variable(1.0)
            return x * self.v

    model = Model()
    with tfgraph_lab.watch() as w:
        for _ in range(50):
            model(tf.constant(2.0))
    assert w.report.traces == 2 and w.report.retraces == 0
    assert records == []


def test_new_function_objects_are_logged(records: list[logging.LogRecord]) -> None:
    def body(x):
        return x + 1

    with tfgraph_lab.watch():
        for _ in range(3):
            tf.function(body)(tf.constant(1.0))
    assert [r.tfgraph_lab["codes"] for r in records] == [["new-function-object"]] * 2  # type: ignore[attr-defined]
    assert "create the tf.function once" in records[0].getMessage()


RETRACE_THEN_DIE = """
import os, signal, sys, time
import tensorflow as tf

@tf.function
def step(x):
    return x * 2

for n in (1, 2, 3, 4):
    step(tf.ones([n]))
sys.stdout.flush()
os.kill(os.getpid(), signal.SIGKILL)
time.sleep(60)
"""


@pytest.mark.slow
def test_a_job_killed_after_three_retraces_has_printed_three_lines(tmp_path: Path) -> None:
    (tmp_path / "job.py").write_text(RETRACE_THEN_DIE)
    proc = run_cli("run", "job.py", cwd=tmp_path)
    assert proc.returncode == -signal.SIGKILL
    lines = [line for line in proc.stderr.splitlines() if line.startswith("tfgraph_lab: tf.function ")]
    assert len(lines) == 3, proc.stderr
    assert all("step retraced (shape-changed x: " in line and "job.py:10" in line for line in lines)
    assert "tracewatch ·" not in proc.stderr  # the final report never came: the lines did
    quiet = run_cli("run", "-q", "job.py", cwd=tmp_path)
    assert quiet.returncode == -signal.SIGKILL and "tfgraph_lab:" not in quiet.stderr


@pytest.mark.slow
def test_lines_come_before_the_report_and_a_script_logging_setup_does_not_double_them(tmp_path: Path) -> None:
    script = "import logging\nlogging.basicConfig()\n" + RETRACE_THEN_DIE.replace(
        "os.kill(os.getpid(), signal.SIGKILL)", "pass"
    ).replace("time.sleep(60)", "")
    (tmp_path / "job.py").write_text(script)
    proc = run_cli("run", "job.py", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    err = proc.stderr
    assert err.count("step retraced") == 3, err  # not again through the script's root handler
    assert err.rindex("tfgraph_lab: tf.function step retraced") < err.index("tracewatch ·")


@pytest.mark.slow
def test_plain_script_with_watch_prints_lines_where_logging_is_unconfigured(tmp_path: Path) -> None:
    script = textwrap.dedent(
        """
        import tensorflow as tf, tfgraph_lab

        @tf.function
        def step(x):
            return x * 2

        with tfgraph_lab.watch():
            for n in (1, 2):
                step(tf.ones([n]))
        """
    )
    (tmp_path / "plain.py").write_text(script)
    env = dict(os.environ, TF_CPP_MIN_LOG_LEVEL="3", TF_ENABLE_ONEDNN_OPTS="0")
    proc = subprocess.run(
        [sys.executable, "plain.py"], capture_output=True, text=True, cwd=tmp_path, env=env, timeout=300
    )
    assert proc.returncode == 0, proc.stderr
    assert proc.stderr.count("tf.function step retraced") == 1


@pytest.mark.slow
def test_notebook_magic_shows_the_report_without_doubling_it_in_stderr(tmp_path: Path) -> None:
    code = textwrap.dedent(
        """
        import logging
        from IPython.core.interactiveshell import InteractiveShell
        ip = InteractiveShell.instance()
        ip.run_line_magic("load_ext", "tfgraph_lab")
        ip.run_cell("import tensorflow as tf\\n@tf.function\\ndef f(x):\\n    return x + 1\\n")
        ip.run_cell("%%tracewatch\\nfor n in (1, 2):\\n    f(tf.ones([n]))\\n")
        logging.basicConfig()  # a user who configured logging gets the records
        ip.run_cell("%%tracewatch -q\\nfor n in (3, 4):\\n    f(tf.ones([n]))\\n")
        """
    )
    env = dict(os.environ, TF_CPP_MIN_LOG_LEVEL="3", TF_ENABLE_ONEDNN_OPTS="0")
    proc = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, cwd=tmp_path, env=env, timeout=300
    )
    assert proc.returncode == 0, proc.stderr
    assert "shape-changed" in proc.stdout  # the report
    assert proc.stderr.count("f retraced") == 2, proc.stderr  # only the configured cell's retraces
    assert "(3,) → (4,)" in proc.stderr and "(1,) → (2,)" not in proc.stderr


MIRRORED = """
import tensorflow as tf
cpu = tf.config.list_physical_devices("CPU")[0]
tf.config.set_logical_device_configuration(cpu, [tf.config.LogicalDeviceConfiguration()] * 2)
strategy = tf.distribute.MirroredStrategy(["/cpu:0", "/cpu:1"])
with strategy.scope():
    v = tf.Variable(1.0)

@tf.function
def step(x):
    return strategy.run(lambda x: tf.reduce_sum(x) * v, args=(x,))

for n in (8, 6, 4, 2):
    ds = tf.data.Dataset.from_tensor_slices(tf.ones([n * 3, 4])).batch(n)
    for batch in strategy.experimental_distribute_dataset(ds):
        step(batch)
"""


@pytest.mark.slow
def test_tensorflows_own_retraces_fold_into_one_line_per_watch(tmp_path: Path) -> None:
    """MirroredStrategy's tf.data helpers (_PerDeviceGenerator) retrace for every new dataset:
    one summary line instead of one line each; ``run --all`` logs them one by one."""
    script = tmp_path / "mirrored.py"
    script.write_text(MIRRORED)
    lines = [
        line
        for line in run_cli("run", str(script), cwd=tmp_path).stderr.splitlines()
        if line.startswith("tfgraph_lab:")
    ]
    user = [line for line in lines if line.startswith("tfgraph_lab: tf.function step retraced")]
    (folded,) = [line for line in lines if "inside TensorFlow/Keras folded" in line]
    assert len(lines) == len(user) + 1 and len(user) >= 3  # batch sizes 4, 3, 2, 1 per replica
    assert "_init_func" in folded and "--all logs each" in folded and len(folded) <= 200
    every = [line for line in run_cli("run", "--all", str(script), cwd=tmp_path).stderr.splitlines()]
    logged = [line for line in every if line.startswith("tfgraph_lab: tf.function ")]
    total = int(folded.split("tfgraph_lab: ", 1)[1].split(" ", 1)[0])
    assert len(logged) == len(user) + total and not any("folded" in line for line in every)
    assert any("_init_func retraced" in line for line in logged)


def test_keras_steps_are_named_under_watch_and_by_a_callback(records: list[logging.LogRecord]) -> None:
    keras = pytest.importorskip("keras")
    import numpy as np

    from tfgraph_lab.keras import TraceCallback

    model = keras.Sequential([keras.Input((4,)), keras.layers.Dense(1)])
    with tfgraph_lab.watch():
        for n in (3, 5):
            model.predict(np.zeros((n, 4), "float32"), verbose=0)
    # Keras's predict step is the user's row in any watch (keras_steps): one line, named for
    # the model (it was folded as "1 retrace inside TensorFlow/Keras folded (…)")
    (line,) = [r.getMessage() for r in records]
    assert line.startswith(f"tf.function {model.name} · predict step retraced (shape-changed"), line
    records.clear()
    model = keras.Sequential([keras.Input((4,)), keras.layers.Dense(1)])
    cb = TraceCallback()
    for n in (3, 5):
        model.predict(np.zeros((n, 4), "float32"), verbose=0, callbacks=[cb])
    assert [r.getMessage().split(" (", 1)[0] for r in records] == ["tf.function predict step retraced"]


def test_a_loop_on_the_terminal_prints_three_lines_then_folds_the_rest(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    # To a terminal (tfgraph-lab run's stream, or unconfigured logging) a function's first 3
    # retraces are one line each; the next ones are counted, without building their reasons,
    # and written as one line once 5 s passed since the function's last line (a clock made to
    # jump here) and when the watch ends. The report explains every one.
    # What told a folded graph from the one before is read when its line is written, not on the
    # trace path (there it ran with the tool's code and data cold).
    now = [0.0]
    monkeypatch.setattr(livelog.LIVE_LOG, "clock", lambda: now[0])
    told: list[object] = []
    real_told = livelog._told
    monkeypatch.setattr(livelog, "_told", lambda graph: told.append(graph) or real_told(graph))

    @tf.function
    def scale(x, s):
        return x * s

    x = tf.constant(2.0)
    with livelog.stream_to_stderr(), tfgraph_lab.watch() as w:
        for i in range(6):
            scale(x, 0.5 + i)  # 5 retraces: 3 lines, 2 folded
        records = [e for e in w.entries() if isinstance(e, CallRecord) and e.traces]
        assert [r.explain is None for r in records] == [False, True, True, True, False, False]
        assert told == []  # folded, not yet compared
        now[0] = livelog.FOLD_SECONDS
        scale(x, 10.5)  # the 6th: its function's folded line comes now (3 folded)
        assert len(told) == 3
        scale(x, 11.5)  # the 7th: folded again, written when the watch ends
        assert len(told) == 3
    assert len(told) == 4
    lines = [line for line in capsys.readouterr().err.splitlines() if line.startswith("tfgraph_lab: ")]
    assert len(lines) == 5, lines
    assert all("scale retraced (python-value-changed s: " in line for line in lines[:3])
    # the test's long name and place leave room for the short lead only
    assert "scale retraced 3 more times (changed: s ×3) · last at " in lines[3]
    assert "scale retraced 1 more time (changed: s ×1) · last at " in lines[4] and " · cost " in lines[4]
    assert lines[4].endswith("reasons and fix: see the report")
    report = w.report
    assert scale.experimental_get_tracing_count() == 8 == report.function("scale").traces
    retraces = [e for e in report.events if e.retrace]
    assert len(retraces) == 7 and all(e.reasons[0].code == "python-value-changed" for e in retraces)


def test_a_folded_line_keeps_its_place_and_cost_when_what_changed_is_long() -> None:
    # `tfgraph-lab demo` printed "…retraced 18 more times (changed from the graph before: x ×18,
    # y ×18, lr ×9, training ×1) · last at… · reasons and fix: see the report": no place, no cost.
    changed = {"x": 18, "y": 18, "lr": 9, "training": 1}
    for caller, told in (
        ("tfgraph_lab/faces/demo.py:73", "(changed: x ×18, y ×18, lr ×9"),
        ("/home/someone/project/tfgraph_lab/faces/demo.py:73", "(changed: x"),
    ):
        more = livelog._More("trap.<locals>.train_step", 0.0)
        more.retraces, more.seconds, more.caller = 18, 0.402, caller
        line = more.line(changed)
        assert len(livelog.PREFIX + line) <= 200
        assert line.startswith(f"tf.function trap.<locals>.train_step retraced 18 more times {told}")
        assert line.endswith(f"· last at {caller} · cost 402 ms · reasons and fix: see the report")
    short = livelog._More("scale", 0.0)
    short.retraces, short.seconds, short.caller = 3, 0.012, "train.py:9"
    assert short.line({"s": 3}) == (
        "tf.function scale retraced 3 more times (changed from the graph before: s ×3) · last at "
        "train.py:9 · cost 12.0 ms · reasons and fix: see the report"
    )
