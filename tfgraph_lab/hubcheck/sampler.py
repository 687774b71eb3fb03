"""Memory and CPU of learners' servers on this machine, sampled with psutil while they run.

For a hub on this machine (LocalProcessSpawner: the hub's API gives each server's ``pid`` in its
state), :class:`ProcessSampler` reads, once a second, the resident memory of each learner's server
and of every process under it (the kernels), and their CPU time; it keeps each learner's peaks
and the last CPU figures, and how busy the whole machine was (its CPU time, so what other
programs used is what remains when the learners' share is taken out). psutil (a test extra) is
imported when a sampler starts. Imports nothing of TensorFlow or IPython.
"""

from __future__ import annotations

import os
import threading
import time
from dataclasses import dataclass, field
from typing import Any

__all__ = ["LearnerProcesses", "MachineLoad", "ProcessSampler"]


@dataclass
class LearnerProcesses:
    """One learner's processes as sampled: peak RSS of the server, of each kernel and of their
    sum (bytes, the sum taken at one instant), and CPU seconds of the server and kernels."""

    server_pid: int
    server_peak: int = 0
    kernel_peaks: dict[int, int] = field(default_factory=dict)
    total_peak: int = 0
    server_cpu: float = 0.0
    kernel_cpu: dict[int, float] = field(default_factory=dict)

    @property
    def cpu(self) -> float:
        return self.server_cpu + sum(self.kernel_cpu.values())


@dataclass
class MachineLoad:
    """The machine during the run: its cores, wall seconds sampled, CPU seconds used by every
    program and by the learners' processes, 1-minute load averages seen, the lowest available
    memory and the total (bytes)."""

    cores: int = 0
    seconds: float = 0.0
    busy_cpu: float = 0.0
    learners_cpu: float = 0.0
    load_averages: list[float] = field(default_factory=list)
    min_available: int = 0
    total_memory: int = 0

    @property
    def others_cpu(self) -> float:
        return max(0.0, self.busy_cpu - self.learners_cpu)


def _cpu(times: Any) -> float:
    return float(times.user + times.system)


class ProcessSampler:
    """Sample the processes of ``learners`` (name → server pid) every ``interval`` seconds until
    :meth:`stop`; :attr:`learners` and :attr:`machine` hold what was seen."""

    def __init__(self, learners: dict[str, int] | None = None, interval: float = 1.0) -> None:
        import psutil

        self._psutil = psutil
        self.interval = interval
        self.learners: dict[str, LearnerProcesses] = {}
        self.machine = MachineLoad(cores=os.cpu_count() or 0)
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._loop, name="hubcheck-sampler", daemon=True)
        for name, pid in (learners or {}).items():
            self.add(name, pid)

    def add(self, name: str, server_pid: int) -> None:
        with self._lock:
            self.learners.setdefault(name, LearnerProcesses(server_pid))

    def start(self) -> ProcessSampler:
        self._begun = time.monotonic()
        self._cpu0 = self._psutil.cpu_times()
        memory = self._psutil.virtual_memory()
        self.machine.min_available, self.machine.total_memory = int(memory.available), int(memory.total)
        self._thread.start()
        return self

    def stop(self) -> None:
        self._stop.set()
        self._thread.join()
        self._sample()
        cpu1 = self._psutil.cpu_times()
        idle = (cpu1.idle + getattr(cpu1, "iowait", 0.0)) - (
            self._cpu0.idle + getattr(self._cpu0, "iowait", 0.0)
        )
        total = sum(cpu1) - sum(self._cpu0)
        self.machine.seconds = time.monotonic() - self._begun
        self.machine.busy_cpu = max(0.0, total - idle)
        self.machine.learners_cpu = sum(p.cpu for p in self.learners.values())

    def _loop(self) -> None:
        while not self._stop.wait(self.interval):
            self._sample()

    def _sample(self) -> None:
        psutil = self._psutil
        with self._lock:
            learners = list(self.learners.values())
        for learner in learners:
            try:
                server = psutil.Process(learner.server_pid)
                with server.oneshot():
                    server_rss = int(server.memory_info().rss)
                    learner.server_cpu = _cpu(server.cpu_times())
                children = server.children(recursive=True)
            except psutil.Error:
                continue
            total = server_rss
            learner.server_peak = max(learner.server_peak, server_rss)
            for child in children:
                try:
                    with child.oneshot():
                        rss = int(child.memory_info().rss)
                        cpu = _cpu(child.cpu_times())
                except psutil.Error:
                    continue
                total += rss
                learner.kernel_peaks[child.pid] = max(learner.kernel_peaks.get(child.pid, 0), rss)
                learner.kernel_cpu[child.pid] = cpu
            learner.total_peak = max(learner.total_peak, total)
        self.machine.load_averages.append(os.getloadavg()[0])
        self.machine.min_available = min(self.machine.min_available, int(psutil.virtual_memory().available))
