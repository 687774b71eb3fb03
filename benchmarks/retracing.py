"""The cost of watching where the trap is: loops that retrace, a Keras fit, a whole script run.

Each row times one whole run watched and unwatched, alternated A-B-B-A in one process, and prints
the ratio of medians with a 95% bootstrap interval (``overhead.py``'s helpers), the noise floor
(the same ratio between two halves of the unwatched runs), the watch's own time as the report
states it (``report.watch_seconds``) and its share of the unwatched run (the ratio by the watch's
own clock: steady on a day the shared machine makes the ratio wander) and whether the row is within its goal (issue 36: ≤ 1.05 for
a retracing loop, ≤ 1.03 for a whole script run), marked a noisy run when the noise floor is
beyond ±2%. It reports; it asserts no time.

Rows, each on a fresh ``tf.function`` (a retrace needs a function that has not seen the value):

* a loop of ``--calls`` calls on a changing Python float (one graph per call),
* the same on a changing shape,
* a new ``tf.function`` object per call,
* a Keras ``fit`` (a 2-layer model, random data) whose last batch is short, then a recompile
  and a second ``fit``,
* ``tfgraph-lab run script.py`` from start to exit against ``python script.py``, alternated
  subprocess runs (the script: the float loop and a few cached calls),

then import and start-up against their floors (``import_cost.py``'s rows).

A watched run is the whole ``with tfgraph_lab.watch():`` block (start, the loop, stop, the live
lines); ``watch()`` with no budget or output builds no report, so building it afterwards
(``recorder.report``: the reasons, the fixes) is timed apart and printed. Each run is checked
against TensorFlow's own count (``experimental_get_tracing_count()``).

While the loop rows run, fd 2 goes to a temporary file (the live lines of the watched runs and
TensorFlow's own warnings would flood the output): the same writes happen, to a file instead of
the terminal; the number of lines written is printed after the rows.

Run: ``python benchmarks/retracing.py [--rounds 10] [--script-rounds 5]`` (about 5 minutes);
``--quick`` for a tiny run that only shows the rows work.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
os.environ.setdefault("TF_ENABLE_ONEDNN_OPTS", "0")

import numpy as np
import tensorflow as tf

import tfgraph_lab

sys.path.insert(0, str(Path(__file__).resolve().parent))
from import_cost import alternated_walls, start_env, startup_rows
from overhead import bootstrap_interval, ratio_of_medians

LOOP_GOAL = 1.05
SCRIPT_GOAL = 1.03
# A row's verdict is not trusted when the unwatched runs' two halves differ by more than this:
# on the shared 2-core machine a row moved from 1.050 to 1.111 between two runs 15 minutes
# apart, the second with a noise floor of 0.973.
NOISY = 0.02

# A run: does its work once and returns the functions it traced, for TF's own count.
Run = Callable[[], list[object]]


def float_loop(calls: int) -> Run:
    x = tf.constant(2.0)

    def run() -> list[object]:
        @tf.function
        def scale(x, s):
            return x * s

        for i in range(calls):
            scale(x, 0.5 + i)  # a Python float is part of the cache key: a graph per value
        return [scale]

    return run


def shape_loop(calls: int) -> Run:
    inputs = [tf.ones([i + 1]) for i in range(calls)]

    def run() -> list[object]:
        @tf.function
        def total(x):
            return tf.reduce_sum(x * 2.0)

        # TF 2.21: without reduce_retracing every new shape is a new graph (no relaxing to None
        # after a few shapes), so this loop traces once per call.
        for x in inputs:
            total(x)
        return [total]

    return run


def new_function_loop(calls: int) -> Run:
    x = tf.constant(2.0)

    def run() -> list[object]:
        made = []
        for _ in range(calls):
            fn = tf.function(lambda x: x + 1.0)  # a new object per call: its own first trace
            fn(x)
            made.append(fn)
        return made

    return run


def keras_fit(calls: int) -> Run:
    """``3 × calls + 7`` samples at batch 32 (127 for 40: three full batches and a short one of
    31), 2 epochs, then a recompile (a new train function) and one more epoch."""
    rng = np.random.default_rng(0)
    samples = 3 * calls + 7
    x = rng.normal(size=(samples, 8)).astype("float32")
    y = rng.normal(size=(samples, 1)).astype("float32")

    def run() -> list[object]:
        model = tf.keras.Sequential(
            [tf.keras.Input((8,)), tf.keras.layers.Dense(16, activation="relu"), tf.keras.layers.Dense(1)]
        )
        model.compile("sgd", "mse")
        model.fit(x, y, batch_size=32, epochs=2, verbose=0)
        first = model.train_function
        model.compile("adam", "mse")  # a recompile: Keras makes a new train function
        model.fit(x, y, batch_size=32, epochs=1, verbose=0)
        return [f for f in (first, model.train_function) if hasattr(f, "experimental_get_tracing_count")]

    return run


ROWS: dict[str, Callable[[int], Run]] = {
    "retrace on a Python float": float_loop,
    "retrace on a shape": shape_loop,
    "new tf.function per call": new_function_loop,
    "keras fit + short batch + recompile": keras_fit,
}


def tf_traces(functions: list[object]) -> int:
    return sum(f.experimental_get_tracing_count() for f in functions)  # type: ignore[attr-defined]


def time_run(run: Run, watched: bool) -> tuple[float, float, float, int, int]:
    """Seconds of one run (the whole watch block when watched), seconds building the report
    afterwards, the report's ``watch_seconds``, the report's traces and TF's."""
    perf = time.perf_counter
    if not watched:
        t0 = perf()
        functions = run()
        seconds = perf() - t0
        return seconds, 0.0, 0.0, -1, tf_traces(functions)
    t0 = perf()
    with tfgraph_lab.watch() as recorder:
        functions = run()
    seconds = perf() - t0
    t0 = perf()
    report = recorder.report
    build = perf() - t0
    # the functions the run returned, as the report counts them (Keras's steps by their object)
    traces = report_traces(report, functions)
    return seconds, build, float(getattr(report, "watch_seconds", 0.0)), traces, tf_traces(functions)


def report_traces(report: object, functions: list[object]) -> int:
    """The report's traces of the Python functions ``functions`` wrap (one entry per function:
    every object of it summed, as TensorFlow's counts of those objects are summed)."""
    names = {getattr(getattr(f, "_python_function", None), "__qualname__", "") for f in functions}
    return sum(
        fs.traces for fs in report.functions if fs.qualname in names  # type: ignore[attr-defined]
    )


@contextmanager
def stderr_to_file() -> Iterator[list[int]]:
    """fd 2 (and ``sys.stderr``) to a temporary file in the block; yields ``[lines written]``,
    filled when it ends. Rows print to stdout, which stays."""
    count = [0]
    sys.stderr.flush()
    saved = os.dup(2)
    with tempfile.TemporaryFile() as sink:
        os.dup2(sink.fileno(), 2)
        try:
            yield count
        finally:
            sys.stderr.flush()
            os.dup2(saved, 2)
            os.close(saved)
            sink.seek(0)
            count[0] = sink.read().count(b"\n")


def measure_row(name: str, run: Run, rounds: int, goal: float) -> None:
    time_run(run, watched=False)  # warm up: TF's first trace of a kind and Keras's first fit
    time_run(run, watched=True)
    plain: list[list[float]] = []
    watched: list[list[float]] = []
    builds, own = [], []
    mismatches = []
    for i in range(rounds):
        for watch_it in (False, True, True, False) if i % 2 else (True, False, False, True):
            seconds, build, watch_seconds, traces, tf_count = time_run(run, watch_it)
            if watch_it:
                watched.append([seconds])
                builds.append(build)
                own.append(watch_seconds)
                if traces != tf_count:
                    mismatches.append((traces, tf_count))
            else:
                plain.append([seconds])
    unwatched = statistics.median(x for b in plain for x in b)
    # The watch's own share, from its own clock: what the ratio would be with no noise (its
    # extra time is its own work: README, "What watching costs"), steady when the ratio is not
    share = statistics.median(own) / unwatched if unwatched > 0 else 0.0
    print_row(name, watched, plain, goal, extra=(
        f" · the watch itself {statistics.median(own) * 1e3:.1f} ms (+{share:.1%} of the unwatched run: "
        f"{'within' if 1.0 + share <= goal else 'OVER'} the goal by its own clock), "
        f"report built after in {statistics.median(builds) * 1e3:.1f} ms"
    ))  # fmt: skip
    assert not mismatches, f"{name}: the report's traces differ from TensorFlow's count: {mismatches[:3]}"
    sys.stdout.flush()


def print_row(
    name: str, watched: list[list[float]], plain: list[list[float]], goal: float, extra: str = ""
) -> None:
    ratio = ratio_of_medians(watched, plain)
    low, high = bootstrap_interval(watched, plain)
    floor = ratio_of_medians(plain[0::2], plain[1::2]) if len(plain) > 1 else 1.0
    verdict = f"{'within' if ratio <= goal else 'OVER'} the goal ≤ {goal}"
    if abs(floor - 1.0) > NOISY:  # two halves of the same unwatched runs disagree by more
        verdict += f" (a noisy run: the noise floor is beyond ±{NOISY:.0%}; re-run when quieter)"
    print(
        f"{name:<36} {statistics.median(x for b in plain for x in b) * 1e3:8.1f} ms unwatched, "
        f"{statistics.median(x for b in watched for x in b) * 1e3:8.1f} ms watched · ratio {ratio:.3f} "
        f"(95% {low:.3f}–{high:.3f}) · noise floor {floor:.3f} · {verdict}"
        f" · {len(plain)} runs each side{extra}"
    )


SCRIPT = """
import tensorflow as tf

@tf.function
def scale(x, s):
    return x * s

x = tf.constant(2.0)
for i in range({calls}):
    scale(x, 0.5 + i)
for _ in range(100):
    scale(x, 0.5)
print("done")
"""


def measure_script(calls: int, rounds: int) -> None:
    """``python -m tfgraph_lab run`` (the console script's code, with this interpreter) on a
    short script against ``python`` on it, each a fresh process from start to exit."""
    env = start_env()
    with tempfile.TemporaryDirectory() as tmp:
        script = Path(tmp) / "retrace_script.py"
        script.write_text(SCRIPT.format(calls=calls), encoding="utf-8")
        report = Path(tmp) / "report.json"
        # untimed: warms the file cache, and reads what the watch itself spent from the report
        subprocess.run(
            [sys.executable, "-m", "tfgraph_lab", "run", "--json", str(report), str(script)],
            check=True, env=env, capture_output=True,
        )  # fmt: skip
        from tfgraph_lab.report import TraceReport

        done = TraceReport.from_json(report.read_text(encoding="utf-8"))
        commands = {
            "python": [sys.executable, str(script)],
            "run": [sys.executable, "-m", "tfgraph_lab", "run", str(script)],
        }
        walls = alternated_walls(commands, rounds, env)
    print_row(
        f"tfgraph-lab run script ({calls} retraces)",
        [[t] for t in walls["run"]],
        [[t] for t in walls["python"]],
        SCRIPT_GOAL,
        extra=f" · the watch itself {done.watch_seconds * 1e3:.1f} ms ({done.traces} traces)",
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=10, help="A-B-B-A rounds per loop row (default 10)")
    parser.add_argument("--calls", type=int, default=40, help="calls per retracing loop (default 40)")
    parser.add_argument(
        "--script-rounds", type=int, default=5, help="A-B-B-A rounds of the script and start-up rows"
    )
    parser.add_argument(
        "--quick", action="store_true", help="tiny sizes: shows the rows run, measures nothing"
    )
    args = parser.parse_args()
    rounds, calls, script_rounds = args.rounds, args.calls, args.script_rounds
    if args.quick:
        rounds, calls, script_rounds = 1, 3, 1
    print(f"TensorFlow {tf.__version__}, {os.cpu_count()} CPUs; medians of whole runs", flush=True)
    with stderr_to_file() as lines:
        for name, make in ROWS.items():
            measure_row(name, make(calls), rounds, LOOP_GOAL)
    print(f"(stderr of the rows above went to a file: {lines[0]} lines, live lines and TensorFlow's warnings)")
    measure_script(calls, script_rounds)
    startup_rows(script_rounds)


if __name__ == "__main__":
    main()
