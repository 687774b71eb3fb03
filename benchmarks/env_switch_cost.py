"""What ``tfgraph_lab.pth`` costs every Python start-up when ``TFGRAPH_LAB`` is unset.

1. Fresh interpreters of a new virtual environment, ``python -c pass``, alternated: its
   site-packages holding the project's ``tfgraph_lab.pth`` (as an install leaves it) and not
   holding it (the file renamed away between runs); medians over ``--runs`` each, and their ratio.
2. In one process, switch unset, ``--lines`` times each: ``site.addpackage`` on the file (what
   start-up does with it: open, read, run its line) and the line alone (compiled once, ``exec``):
   microseconds per start-up. The start-ups of 1. vary by milliseconds on a shared machine; these
   say what the file itself adds.

Run: ``python benchmarks/env_switch_cost.py [--runs 41] [--lines 200000]``.
"""

from __future__ import annotations

import argparse
import os
import site
import statistics
import subprocess
import sys
import tempfile
import time
import timeit
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PTH = ROOT / "tfgraph_lab.pth"


def start_up(python: Path, env: dict[str, str]) -> float:
    t0 = time.perf_counter()
    subprocess.run([str(python), "-c", "pass"], check=True, env=env, capture_output=True)
    return time.perf_counter() - t0


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=41)
    parser.add_argument("--lines", type=int, default=200_000)
    args = parser.parse_args()
    env = {k: v for k, v in os.environ.items() if k not in ("TFGRAPH_LAB", "PYTHONPATH")}
    with tempfile.TemporaryDirectory() as tmp:
        venv = Path(tmp, "env")
        subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True)
        python = venv / ("Scripts/python.exe" if os.name == "nt" else "bin/python")
        purelib = Path(
            subprocess.run(
                [str(python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
                check=True, capture_output=True, text=True,
            ).stdout.strip()
        )  # fmt: skip
        installed, away = purelib / PTH.name, purelib / (PTH.name + ".away")
        away.write_text(PTH.read_text())
        without, with_pth = [], []
        start_up(python, env)  # warm the file cache
        for i in range(args.runs):
            order = [(False, without), (True, with_pth)]
            for present, sink in order if i % 2 else order[::-1]:
                if present:
                    away.rename(installed)
                try:
                    sink.append(start_up(python, env))
                finally:
                    if present:
                        installed.rename(away)
    base, pth = statistics.median(without), statistics.median(with_pth)
    print(f"python -c pass, no tfgraph_lab.pth            {base * 1e3:7.2f} ms (median of {args.runs})")
    print(f"python -c pass, tfgraph_lab.pth, switch unset {pth * 1e3:7.2f} ms (median of {args.runs})")
    spread = statistics.quantiles(without, n=4) if len(without) > 1 else [base, base, base]
    print(
        f"  ratio {pth / base:.3f} (difference {(pth - base) * 1e3:+.2f} ms; the runs without it "
        f"spread {spread[0] * 1e3:.2f}–{spread[-1] * 1e3:.2f} ms between quartiles)"
    )
    line = next(text for text in PTH.read_text().splitlines() if text.startswith("import"))
    code = compile(line, str(PTH), "exec")
    saved = os.environ.pop("TFGRAPH_LAB", None)
    try:
        whole = timeit.timeit(lambda: site.addpackage(str(PTH.parent), PTH.name, set()), number=args.lines)
        seconds = timeit.timeit(lambda: exec(code, {}), number=args.lines)
    finally:
        if saved is not None:
            os.environ["TFGRAPH_LAB"] = saved
    print(f"site.addpackage(tfgraph_lab.pth), switch unset: {whole / args.lines * 1e6:.2f} µs per start-up")
    print(f"the .pth line alone, switch unset: {seconds / args.lines * 1e6:.2f} µs per start-up ({args.lines} runs)")


if __name__ == "__main__":
    main()
