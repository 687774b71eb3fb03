"""Import cost: ``import tfgraph_lab`` without TensorFlow, and ``%load_ext tfgraph_lab`` with it.

1. Fresh interpreters, alternated: ``python -c "import tfgraph_lab"`` against ``python -c "pass"``
   (medians over ``--runs`` each); the difference is what importing the package costs. Also
   checks that the import loaded neither TensorFlow nor IPython nor ipywidgets.
2. In one fresh interpreter: ``import tensorflow``, then time ``%load_ext tfgraph_lab`` in an IPython
   ``InteractiveShell`` (and the first ``%%tracewatch`` cell, which installs the hooks).

Budgets of issue 7: 50 ms and 0.3 s. Run: ``python benchmarks/import_cost.py [--runs 15]``.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time

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


def wall(code: str, env: dict[str, str]) -> float:
    t0 = time.perf_counter()
    subprocess.run([sys.executable, "-c", code], check=True, env=env, capture_output=True)
    return time.perf_counter() - t0


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=15)
    args = parser.parse_args()
    env = dict(os.environ, TF_CPP_MIN_LOG_LEVEL="3", TF_ENABLE_ONEDNN_OPTS="0")
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


if __name__ == "__main__":
    main()
