"""A class on a JupyterHub, measured: N learners running lesson 00 and the labs app at once.

Starts a real JupyterHub on loopback (:class:`tfgraph_lab.hubcheck.localhub.LocalHub`:
configurable-http-proxy from npm, SimpleLocalProcessSpawner, DummyAuthenticator) and, for each N
given, runs what ``tfgraph-lab workshop check --learners N`` runs against it: N users log in
through the hub's REST API, start their servers, run both notebooks in kernels driven over the
kernel websocket, and save them back. psutil samples every learner's server and kernels once a
second. Prints each run's per-learner table, then one Markdown row per N (the table in
docs/JUPYTERHUB.md) and the z2jh sizing from the largest N.

Run: ``python benchmarks/hub_load.py --learners 1 4 8 [--json OUT.json]`` (needs the test extras
and ``npm install --prefix .ci/npm configurable-http-proxy``, as ``.ci/run`` does). Not run by
tests/project/test_benchmarks.py: tests/hubcheck/test_hub.py runs the same engine with 2 learners.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from tfgraph_lab.hubcheck.command import DEFAULT_NOTEBOOKS  # noqa: E402
from tfgraph_lab.hubcheck.load import run_check  # noqa: E402
from tfgraph_lab.hubcheck.localhub import LocalHub  # noqa: E402
from tfgraph_lab.hubcheck.table import format_result, summary, z2jh_sizing  # noqa: E402

HEAD = (
    "| N | passed | server ready (median / max) | first report (median / max) | all done (max) "
    "| cells failed / timed out / lost | server RSS (max) | kernel: lesson 00 / labs app (max) "
    "| peak per learner (max) | CPU per learner (median) | machine during the run |"
)


def _s(x: float | None) -> str:
    return "–" if x is None else f"{x:.0f} s"


def _mb(n: float) -> str:
    return f"{n / 1e9:.2f} GB" if n >= 1e9 else f"{n / 1e6:.0f} MB"


def row(stats: dict) -> str:
    m = stats.get("machine", {})
    machine = (
        f"learners {m.get('learners_cores', 0):.2f} cores, other programs {m.get('others_cores', 0):.2f} "
        f"of {m.get('cores', 0)}; load avg {m.get('load_average') or 0:.1f}; "
        f"lowest free memory {_mb(m.get('min_available', 0))}"
    )
    kernels = " / ".join(_mb(k) for k in stats["kernel_max"])
    return (
        f"| {stats['learners']} | {stats['passed']} | {_s(stats['ready_s_median'])} / {_s(stats['ready_s_max'])} "
        f"| {_s(stats['report_s_median'])} / {_s(stats['report_s_max'])} | {_s(stats['done_s_max'])} "
        f"| {stats['failed']} / {stats['timed_out']} / {stats['lost']} | {_mb(stats['server_max'])} | {kernels} "
        f"| {_mb(stats['peak_max'])} | {stats['cpu_median']:.0f} s | {machine} |"
    )


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--learners", type=int, nargs="+", default=[1, 4, 8], metavar="N")
    parser.add_argument("--start-timeout", type=float, default=600.0)
    parser.add_argument("--cell-timeout", type=float, default=600.0)
    parser.add_argument("--pause", type=float, default=20.0, help="seconds between runs (servers stop)")
    parser.add_argument("--json", metavar="PATH", help="write every run's summary as JSON")
    args = parser.parse_args()
    notebooks = {name: json.loads((ROOT / "lessons" / name).read_text(encoding="utf-8")) for name in DEFAULT_NOTEBOOKS}
    rows, runs = [], []
    with LocalHub() as hub:
        print(f"hub {hub.url} up; notebooks: {', '.join(notebooks)}", flush=True)
        for k, n in enumerate(args.learners):
            if k:
                time.sleep(args.pause)
            print(f"\n## N = {n}  ({time.strftime('%H:%M:%S', time.gmtime())} UTC, load average "
                  f"{os.getloadavg()[0]:.1f} before)", flush=True)  # fmt: skip
            result = run_check(hub.url, hub.token, notebooks, learners=n, start_timeout=args.start_timeout,
                               cell_timeout=args.cell_timeout, sample=True)  # fmt: skip
            print(format_result(result), flush=True)
            for one in result.learners:
                for problem in one.problems + [f for nb in one.notebooks for f in nb.failures]:
                    print(f"  {one.name}: {problem}")
            stats = summary(result)
            stats["started_utc"] = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(time.time() - result.seconds))
            runs.append(stats)
            rows.append(row(stats))
    print("\n" + HEAD)
    print("|" + " --- |" * HEAD.count(" | ") + " --- |")
    print("\n".join(rows))
    largest = max(runs, key=lambda s: s["learners"])
    size = z2jh_sizing(largest)
    print(f"\nz2jh from N = {largest['learners']}: guarantee {size['guarantee'] / 1e9:g}G, limit "
          f"{size['limit'] / 1e9:g}G; learners per node by allocatable memory: {size['per_node']}")  # fmt: skip
    if args.json:
        Path(args.json).write_text(json.dumps(runs, indent=1, default=str) + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
