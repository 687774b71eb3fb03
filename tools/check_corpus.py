"""Run every scenario of a retracing corpus under ``tfgraph-lab run --json`` and compare counts.

Each scenario prints one JSON line with TensorFlow's own ``experimental_get_tracing_count()``
per function (its keys are labels such as ``obj1.testDouble`` or ``tf.function(f)#0``). This
script compares, per scenario, the total of those counts with the total traces tfgraph_lab
attributed to the scenario's functions, and prints tfgraph_lab's per-qualname counts next to
the scenario's for review, plus the reason codes it gave.

    python tools/check_corpus.py PATH/TO/cases [--reasons]
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path


def run_case(path: Path, workdir: Path) -> tuple[dict[str, int], dict, str]:
    out_json = workdir / (path.stem + ".json")
    env = dict(os.environ, TF_CPP_MIN_LOG_LEVEL="3", TF_ENABLE_ONEDNN_OPTS="0")
    proc = subprocess.run(
        [sys.executable, "-m", "tfgraph_lab", "run", "--json", str(out_json), str(path)],
        capture_output=True,
        text=True,
        cwd=workdir,
        env=env,
        timeout=600,
    )
    line = next((ln for ln in proc.stdout.splitlines() if ln.startswith("{")), "{}")
    printed = json.loads(line).get("traces", {})
    report = json.loads(out_json.read_text()) if out_json.exists() else {}
    return printed, report, proc.stderr


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("cases", type=Path)
    parser.add_argument("--reasons", action="store_true", help="print reason codes per event")
    args = parser.parse_args()
    cases = sorted(p.resolve() for p in args.cases.glob("*.py"))
    agree = 0
    with tempfile.TemporaryDirectory() as tmp:
        for case in cases:
            printed, report, stderr = run_case(case, Path(tmp))
            # Keys with "@" are snapshots of a function counted under its own key too.
            expected = sum(v for k, v in printed.items() if "@" not in k)
            ours: dict[str, int] = {}
            for fn in report.get("functions", []):
                if fn["traces"] or not fn["framework"]:
                    ours[fn["qualname"]] = ours.get(fn["qualname"], 0) + fn["traces"]
            user_total = sum(f["traces"] for f in report.get("functions", []) if not f["framework"])
            # Keras's trainer functions are framework code, but the Keras scenario counts them.
            keras_total = sum(
                f["traces"]
                for f in report.get("functions", [])
                if f["framework"] and f["qualname"].startswith("TensorFlowTrainer.")
            )
            got = user_total + keras_total
            ok = got == expected and bool(report)
            agree += ok
            print(f"{'OK ' if ok else 'BAD'} {case.stem}: scenario {expected} = {printed}")
            print(f"    tfgraph_lab {got} = {ours}")
            if not report:
                print("    no report:", stderr[-800:])
            if args.reasons:
                for e in report.get("events", []):
                    if e["traced"] or e.get("failed_trace"):
                        codes = [
                            r["code"] + (":" + r["argument"] if r["argument"] else "") for r in e["reasons"]
                        ]
                        print(f"      {e['qualname']} via {e['via']}: {codes}")
    print(f"{agree}/{len(cases)} scenarios agree")
    return 0 if agree == len(cases) else 1


if __name__ == "__main__":
    sys.exit(main())
