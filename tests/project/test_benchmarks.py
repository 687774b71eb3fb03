"""The benchmark scripts still run (tiny sizes; they measure nothing here and assert no time).

Each is a script a maintainer runs by hand to get the figures in the issue notes; this keeps
them from rotting when the package changes under them.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("tensorflow")

ROOT = Path(__file__).resolve().parents[2]

SMALL = {
    "overhead.py": (["--rounds", "2", "--calls", "5"], ["ratio", "around a no-op"]),
    "memory.py": (["--calls", "2000", "--every", "1000", "--baseline", "1000"], ["watched"]),
    "render.py": (["--events", "2000", "--repeats", "1"], ["html"]),
    "import_cost.py": (["--runs", "2"], ["import tfgraph_lab", "tfgraph-lab run empty.py"]),
    "live_overhead.py": (["--calls", "500", "--rounds", "1"], ["ratio"]),
    "explain_cost.py": ([], ["explanation", "cache hits"]),
    "report_scaling.py": (["--sizes", "3", "6"], ["a new Python float", "a new shape", "per retrace at 6"]),
    "env_switch_cost.py": (["--runs", "2", "--lines", "100"], ["ratio", "per start-up"]),
    "retracing.py": (
        ["--quick"],
        [
            "retrace on a Python float",
            "retrace on a shape",
            "new tf.function per call",
            "keras fit + short batch + recompile",
            "tfgraph-lab run script",
            "the watch itself",
            "over 'import tensorflow'",
            "+ %load_ext tfgraph_lab",
            "tfgraph-lab run empty.py",
        ],
    ),
}


@pytest.mark.slow
@pytest.mark.parametrize("script", sorted(SMALL))
def test_benchmark_script_runs(script: str) -> None:
    args, expected = SMALL[script]
    env = dict(os.environ, TF_CPP_MIN_LOG_LEVEL="3", TF_ENABLE_ONEDNN_OPTS="0")
    proc = subprocess.run(
        [sys.executable, str(ROOT / "benchmarks" / script), *args],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=540,  # below pytest's 600 s: the script's output, not a thread dump
    )
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    for word in expected:
        assert word in proc.stdout, proc.stdout[-3000:]
