"""Import and start-up cost: ``import tfgraph_lab``, ``%load_ext tfgraph_lab``, ``tfgraph-lab run``.

1. Fresh interpreters, alternated: ``python -c "import tfgraph_lab"`` against ``python -c "pass"``
   (medians over ``--runs`` each); the difference is what importing the package costs. Also
   checks that the import loaded neither TensorFlow nor IPython nor ipywidgets.
2. In one fresh interpreter: ``import tensorflow``, then time ``%load_ext tfgraph_lab`` in an IPython
   ``InteractiveShell`` (and the first ``%%tracewatch`` cell, which installs the hooks).
3. Start-up against its floors (issue 36.4), whole fresh processes alternated in rotating order:
   ``python -c pass``, ``python -c "import tensorflow"``, an IPython ``InteractiveShell`` with
   TensorFlow imported, the same shell after ``%load_ext tfgraph_lab``, and ``tfgraph-lab run`` on
   an empty script; each printed as its median and its difference from (and ratio to) its floor.

Budgets of issue 7: 50 ms and 0.3 s. Run: ``python benchmarks/import_cost.py [--runs 15]``.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

IMPORT_BUDGET = 0.050
LOAD_EXT_BUDGET = 0.3

LOAD_EXT = """
import json, time
import tensorflow as tf
from IPython.core.interactiveshell import InteractiveShell
ip = InteractiveShell.instance()
t0 = time.perf_counter()
ip.run_line_magic("load_ext", "tfgraph_lab")
load = time.perf_counter() - t0
ip.run_cell("@tf.function\\ndef f(x):\\n    return x + 1\\nf(tf.ones([1]))")
t0 = time.perf_counter()
ip.run_cell("%%tracewatch -q\\nf(tf.ones([1]))")
cell = time.perf_counter() - t0
t0 = time.perf_counter()
ip.run_cell("f(tf.ones([1]))")
plain = time.perf_counter() - t0
print(json.dumps({"load_ext": load, "first_cell": cell, "plain_cell": plain}))
"""


SHELL = (
    "import tensorflow\n"
    "from IPython.core.interactiveshell import InteractiveShell\n"
    "ip = InteractiveShell.instance()\n"
)


def start_env() -> dict[str, str]:
    """The environment of the timed processes: TensorFlow's start-up lines off, and the package's
    bytecode cached as ``pip install`` leaves it. A ``PYTHONDONTWRITEBYTECODE`` left in the shell
    (an editable install writes no ``.pyc`` then) makes every start compile the package's modules
    from source: ``tfgraph-lab run empty.py`` measured +173 ms over ``import tensorflow`` that
    way on the 2-core machine, against +66 ms with the bytecode cached."""
    import compileall

    import tfgraph_lab

    compileall.compile_dir(str(Path(tfgraph_lab.__file__).parent), quiet=1)
    env = dict(os.environ, TF_CPP_MIN_LOG_LEVEL="3", TF_ENABLE_ONEDNN_OPTS="0")
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    return env


def wall(code: str, env: dict[str, str]) -> float:
    return wall_of([sys.executable, "-c", code], env)


def wall_of(argv: list[str], env: dict[str, str]) -> float:
    """Seconds of one fresh process from start to exit."""
    t0 = time.perf_counter()
    subprocess.run(argv, check=True, env=env, capture_output=True)
    return time.perf_counter() - t0


def alternated_walls(
    commands: dict[str, list[str]], rounds: int, env: dict[str, str]
) -> dict[str, list[float]]:
    """Wall times of each command, ``2 × rounds`` runs each: every round runs them all in order
    and then in reverse (A-B-B-A for two), so a drift of the machine hits each alike."""
    walls: dict[str, list[float]] = {name: [] for name in commands}
    names = list(commands)
    for i in range(rounds):
        order = names if i % 2 else names[::-1]
        for name in [*order, *order[::-1]]:
            walls[name].append(wall_of(commands[name], env))
    return walls


def startup_rows(rounds: int) -> None:
    """Prints each start-up against its floor, medians of ``2 × rounds`` alternated processes."""
    env = start_env()
    with tempfile.TemporaryDirectory() as tmp:
        empty = Path(tmp) / "empty.py"
        empty.write_text("", encoding="utf-8")
        py = sys.executable
        commands = {
            "python -c pass": [py, "-c", "pass"],
            "import tfgraph_lab": [py, "-c", "import tfgraph_lab"],
            "import tensorflow": [py, "-c", "import tensorflow"],
            "IPython shell + tensorflow": [py, "-c", SHELL],
            "+ %load_ext tfgraph_lab": [py, "-c", SHELL + 'ip.run_line_magic("load_ext", "tfgraph_lab")'],
            "tfgraph-lab run empty.py": [py, "-m", "tfgraph_lab", "run", str(empty)],
        }
        for argv in commands.values():
            wall_of(argv, env)  # untimed: warms the file cache
        walls = alternated_walls(commands, rounds, env)
    median = {name: statistics.median(times) for name, times in walls.items()}
    floors = {
        "import tfgraph_lab": "python -c pass",
        "import tensorflow": "python -c pass",
        "IPython shell + tensorflow": "import tensorflow",
        "+ %load_ext tfgraph_lab": "IPython shell + tensorflow",
        "tfgraph-lab run empty.py": "import tensorflow",
    }
    print(f"start-up, whole processes (medians of {2 * rounds} alternated runs each):")
    for name in walls:
        line = f"  {name:<28} {median[name] * 1e3:7.0f} ms"
        if name in floors:
            floor = floors[name]
            extra = median[name] - median[floor]
            line += f"  {extra * 1e3:+6.0f} ms ({median[name] / median[floor]:.3f}×) over {floor!r}"
        print(line)
    extra = median["tfgraph-lab run empty.py"] - median["python -c pass"]
    print(
        f"  tfgraph-lab run empty.py over python -c pass: {extra * 1e3:+.0f} ms (TensorFlow's import included)"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=15)
    args = parser.parse_args()
    env = start_env()
    heavy = subprocess.run(
        [sys.executable, "-c", "import sys, tfgraph_lab; print(sorted(m for m in ('tensorflow', "
         "'IPython', 'ipywidgets') if m in sys.modules))"],
        check=True, env=env, capture_output=True, text=True,
    ).stdout.strip()  # fmt: skip
    wall("import tfgraph_lab", env)  # warm the file cache
    base, pkg = [], []
    for i in range(args.runs):
        order = [("pass", base), ("import tfgraph_lab", pkg)]
        for code, sink in order if i % 2 else order[::-1]:
            sink.append(wall(code, env))
    base_m, pkg_m = statistics.median(base), statistics.median(pkg)
    cost = pkg_m - base_m
    print(f"python -c 'pass'                {base_m * 1e3:7.1f} ms (median of {args.runs})")
    print(f"python -c 'import tfgraph_lab'  {pkg_m * 1e3:7.1f} ms (median of {args.runs})")
    print(
        f"  import cost {cost * 1e3:6.1f} ms = {cost / IMPORT_BUDGET:.2f}× the {IMPORT_BUDGET * 1e3:.0f} ms budget; "
        f"heavy modules loaded by the import: {heavy}"
    )
    loads = []
    for _ in range(3):
        out = subprocess.run(
            [sys.executable, "-c", LOAD_EXT], check=True, env=env, capture_output=True, text=True
        ).stdout
        loads.append(json.loads(out.strip().splitlines()[-1]))
    load = statistics.median(x["load_ext"] for x in loads)
    cell = statistics.median(x["first_cell"] for x in loads)
    plain = statistics.median(x["plain_cell"] for x in loads)
    print(
        f"%load_ext tfgraph_lab (TF imported) {load * 1e3:7.1f} ms = {load / LOAD_EXT_BUDGET:.2f}× the "
        f"{LOAD_EXT_BUDGET} s budget (median of {len(loads)} fresh processes)"
    )
    print(
        f"first %%tracewatch cell {cell * 1e3:7.1f} ms vs the same cell unwatched {plain * 1e3:6.1f} ms "
        f"(ratio {cell / plain:.1f}×; includes the first hook install)"
    )
    startup_rows(max(1, args.runs // 3))


if __name__ == "__main__":
    main()
