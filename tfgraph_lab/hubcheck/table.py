"""The check's results as a table, a summary, z2jh sizing figures and a verdict (pure functions).

Memory per learner comes from psutil (:mod:`~tfgraph_lab.hubcheck.sampler`: peaks sampled once a
second while the notebooks ran) when the hub runs on this machine, otherwise from the probe that
ran in each kernel after its notebook (``VmHWM`` of the kernel and of its server: the sum of peaks
is an upper bound of their peak together). Sizes are decimal (1 GB = 10⁹ bytes), as Kubernetes
reads ``1G``. Imports nothing of TensorFlow or IPython.
"""

from __future__ import annotations

import math
import statistics
from dataclasses import dataclass
from typing import Any

from .learner import LearnerResult
from .load import CheckResult

__all__ = ["LearnerFigures", "figures", "format_result", "summary", "verdict", "z2jh_sizing"]

_LIMITLESS = 2**62  # cgroup memory.max of an unlimited group reads "max" or a number near 2**63


@dataclass(frozen=True)
class LearnerFigures:
    """One learner's row: seconds from login, cell counts, memory in bytes, CPU seconds."""

    name: str
    ready_s: float | None
    report_s: float | None
    done_s: float | None
    ok: int
    failed: int
    timed_out: int
    lost: int
    server: int
    kernels: tuple[int, ...]  # one per notebook, in the check's notebook order
    peak: int
    cpu: float
    source: str  # "psutil" or "probe"
    limit: int | None  # the container's memory limit (cgroup), when one is set


def _limit(probes: list[dict[str, Any]]) -> int | None:
    for probe in probes:
        raw = (probe.get("cgroup") or {}).get("max")
        if raw and str(raw).isdigit() and int(raw) < _LIMITLESS:
            return int(raw)
    return None


def _learner(result: CheckResult, learner: LearnerResult) -> LearnerFigures:
    probes = [nb.probe for nb in learner.notebooks]
    sampled = result.sampler.learners.get(learner.name) if result.sampler is not None else None
    kernel_pids = [(p.get("kernel") or {}).get("pid") for p in probes]
    if sampled is not None:
        kernels = tuple(sampled.kernel_peaks.get(pid, 0) if pid else 0 for pid in kernel_pids)
        server, peak, cpu, source = sampled.server_peak, sampled.total_peak, sampled.cpu, "psutil"
    else:
        kernels = tuple(int((p.get("kernel") or {}).get("VmHWM", 0)) for p in probes)
        server = max((int((p.get("server") or {}).get("VmHWM", 0)) for p in probes), default=0)
        peak, source = server + sum(kernels), "probe"
        server_cpu = max((float((p.get("server") or {}).get("cpu", 0.0)) for p in probes), default=0.0)
        cpu = server_cpu + sum(float((p.get("kernel") or {}).get("cpu", 0.0)) for p in probes)
    nbs = learner.notebooks
    return LearnerFigures(
        name=learner.name,
        ready_s=learner.server_ready_s,
        report_s=learner.first_report_s,
        done_s=learner.done_s,
        ok=sum(nb.ok + nb.expected_errors for nb in nbs),
        failed=sum(nb.failed for nb in nbs) + sum(nb.not_run for nb in nbs),
        timed_out=sum(nb.timed_out for nb in nbs),
        # A notebook that ran but did not come back counts as lost; one that never ran (its
        # kernel did not open) is a problem of the learner's, said in the verdict.
        lost=sum(nb.lost_cells for nb in nbs) + sum(1 for nb in nbs if nb.cells and not nb.saved),
        server=server,
        kernels=kernels,
        peak=peak,
        cpu=cpu,
        source=source,
        limit=_limit(probes),
    )


def figures(result: CheckResult) -> list[LearnerFigures]:
    return [_learner(result, learner) for learner in result.learners]


def _mb(n: int | None) -> str:
    if not n:
        return "–"
    return f"{n / 1e9:.2f} GB" if n >= 1e9 else f"{n / 1e6:.0f} MB"


def _s(x: float | None) -> str:
    return "–" if x is None else f"{x:.0f} s"


def summary(result: CheckResult) -> dict[str, Any]:
    """The figures of one run, for a table row per N (medians and maxima over learners)."""
    rows = figures(result)
    times = {
        key: [getattr(r, key) for r in rows if getattr(r, key) is not None]
        for key in ("ready_s", "report_s", "done_s")
    }
    out: dict[str, Any] = {
        "learners": len(rows),
        "passed": sum(1 for learner in result.learners if learner.passed),
        "failed": sum(r.failed for r in rows),
        "timed_out": sum(r.timed_out for r in rows),
        "lost": sum(r.lost for r in rows),
        "server_max": max((r.server for r in rows), default=0),
        "kernel_max": [
            max((r.kernels[i] for r in rows if len(r.kernels) > i), default=0)
            for i in range(len(result.notebooks))
        ],
        "peak_max": max((r.peak for r in rows), default=0),
        "cpu_median": statistics.median([r.cpu for r in rows]) if rows else 0.0,
        "source": rows[0].source if rows else "",
        "seconds": result.seconds,
    }
    for key, values in times.items():
        out[f"{key}_median"] = statistics.median(values) if values else None
        out[f"{key}_max"] = max(values) if values else None
    if result.sampler is not None:
        machine = result.sampler.machine
        out["machine"] = {
            "cores": machine.cores,
            "others_cores": machine.others_cpu / machine.seconds if machine.seconds else 0.0,
            "learners_cores": machine.learners_cpu / machine.seconds if machine.seconds else 0.0,
            "load_average": statistics.mean(machine.load_averages) if machine.load_averages else None,
            "min_available": machine.min_available,
        }
    return out


def _round_up(n: float, step: float = 0.25e9) -> float:
    return math.ceil(n / step) * step


def z2jh_sizing(stats: dict[str, Any]) -> dict[str, Any]:
    """Guarantee and limit per learner from the measured peak: the guarantee holds what a
    learner with these notebooks open used at peak; the limit adds one more kernel of the largest
    size measured (a lesson left open while the next starts)."""
    peak = float(stats["peak_max"])
    kernel = float(max(stats["kernel_max"], default=0))
    guarantee = _round_up(peak)
    limit = _round_up(peak + kernel)
    return {
        "guarantee": guarantee,
        "limit": limit,
        "per_node": {gb: int(gb * 1e9 // guarantee) if guarantee else 0 for gb in (8, 16, 32, 64)},
    }


def _learners(n: int) -> str:
    return "1 learner" if n == 1 else f"{n} learners"


def verdict(result: CheckResult, max_wait: float | None = None) -> tuple[bool, list[str]]:
    """Whether the N learners fit, and the lines that say why. ``max_wait``: seconds from login
    to the first report a learner may wait (``None``: any)."""
    rows = figures(result)
    n = len(result.learners)
    reasons = []
    started = sum(1 for r in rows if r.ready_s is not None)
    if started < n:
        reasons.append(f"{n - started} of {n} servers did not start")
    stats = summary(result)
    for key, what in (
        ("failed", "cells failed or did not run"),
        ("timed_out", "cells timed out"),
        ("lost", "notebooks or cells lost on saving"),
    ):
        if stats[key]:
            reasons.append(f"{stats[key]} {what}")
    died = sum(1 for learner in result.learners for nb in learner.notebooks if nb.kernel_died)
    if died:
        reasons.append(f"{died} kernels died (out of memory?)")
    problems = [f"{one.name}: {p}" for one in result.learners for p in one.problems]
    if problems:
        reasons.append(f"{len(problems)} problems, first: {problems[0]}")
    failures = [
        f"{one.name}, {nb.path.rsplit('/', 1)[-1]} {f}"
        for one in result.learners
        for nb in one.notebooks
        for f in nb.failures
    ]
    if failures:
        reasons.append(f"first failure: {failures[0]}")
    waits = [r.report_s for r in rows if r.report_s is not None]
    if max_wait is not None and waits and max(waits) > max_wait:
        slow = sum(1 for w in waits if w > max_wait)
        reasons.append(
            f"{slow} of {n} waited over {max_wait:.0f} s for their first report (up to {max(waits):.0f} s)"
        )
    machine = result.sampler.machine if result.sampler is not None else None
    if machine is not None and machine.total_memory and machine.min_available < 0.05 * machine.total_memory:
        reasons.append(f"this machine's free memory fell to {_mb(machine.min_available)}")
    for r in rows:
        if r.limit and r.peak > 0.9 * r.limit:
            reasons.append(f"{r.name} peaked at {_mb(r.peak)}, over 90% of its {_mb(r.limit)} limit")
            break
    if reasons:
        return False, [f"{_learners(n)} do NOT fit: " + "; ".join(reasons) + "."]
    per = f"{len(result.notebooks)} notebooks each" if len(result.notebooks) > 1 else "the notebook"
    return True, [f"{_learners(n)} {'fits' if n == 1 else 'fit'}: every server started, {per} ran with every cell passing, "
                  f"every notebook came back intact when saved."]  # fmt: skip


def format_result(result: CheckResult, max_wait: float | None = None) -> str:
    """The per-learner table, the summary, the sizing and the verdict, as text."""
    rows = figures(result)
    nb_heads = [name.removesuffix(".ipynb")[:16] for name in result.notebooks]
    head = [
        "learner",
        "ready",
        "report",
        "done",
        "cells ok",
        "failed",
        "timeout",
        "lost",
        "server",
        *nb_heads,
        "peak",
        "CPU",
    ]
    table = [head]
    for r in rows:
        table.append([r.name, _s(r.ready_s), _s(r.report_s), _s(r.done_s), str(r.ok), str(r.failed), str(r.timed_out),
                      str(r.lost), _mb(r.server), *(_mb(k) for k in r.kernels), _mb(r.peak), f"{r.cpu:.0f} s"])  # fmt: skip
    widths = [max(len(row[i]) if i < len(row) else 0 for row in table) for i in range(len(head))]
    lines = ["  ".join(cell.ljust(w) for cell, w in zip(row, widths)).rstrip() for row in table]
    stats = summary(result)
    lines += [
        "",
        f"hub {result.hub_url} (JupyterHub {result.hub_version}), {_learners(len(rows))}, {result.seconds:.0f} s; "
        "times are from login; memory: "
        + ("peaks sampled with psutil" if stats["source"] == "psutil" else "VmHWM read in each kernel"),
    ]
    if "machine" in stats:
        m = stats["machine"]
        load = "" if m["load_average"] is None else f", load average {m['load_average']:.1f}"
        lines.append(f"machine: {m['cores']} cores; learners used {m['learners_cores']:.2f} cores, other programs "
                     f"{m['others_cores']:.2f}{load}; lowest available memory {_mb(m['min_available'])}")  # fmt: skip
    if stats["peak_max"]:
        size = z2jh_sizing(stats)
        nodes = ", ".join(f"{gb} GB: {k}" for gb, k in size["per_node"].items())
        lines.append(f"z2jh: singleuser.memory.guarantee {size['guarantee'] / 1e9:g}G, limit {size['limit'] / 1e9:g}G "
                     f"(peak per learner {_mb(stats['peak_max'])}); learners per node by allocatable memory: {nodes}")  # fmt: skip
    said = verdict(result, max_wait)[1]
    lines += ["", "VERDICT: " + said[0]]
    if result.cleanup_problems:
        lines.append("cleanup: " + "; ".join(result.cleanup_problems))
    else:
        users = (
            "1 user and its server"
            if result.removed_users == 1
            else f"{result.removed_users} users and their servers"
        )
        lines.append(f"cleanup: {users} removed")
    return "\n".join(lines) + "\n"
