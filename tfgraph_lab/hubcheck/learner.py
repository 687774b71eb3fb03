"""One simulated learner on a JupyterHub: log in, start a server, run the notebooks, save them.

The steps are the ones a learner's browser makes, through the hub's REST API and the learner's
server's REST API and kernel websocket: a token made for the learner by the admin token (the
"login"), ``POST /hub/api/users/NAME/server`` and a wait until it is ready, the notebooks
uploaded through the contents API (where nbgitpuller would put them), one kernel per notebook
(``POST /api/sessions``), all notebooks run at the same time, each saved back through the
contents API and read again to check nothing was lost. After a notebook has run, a snippet in
its kernel reads the kernel's and the server's memory and CPU time from ``/proc`` and the
container's from its cgroup (what a z2jh limit acts on). Imports nothing of TensorFlow or IPython.
"""

from __future__ import annotations

import copy
import json
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from .kernel import NotebookRun, run_notebook, run_snippet
from .rest import HubAPI, HubError, ServerAPI

__all__ = ["CHECK_FOLDER", "LearnerResult", "NotebookResult", "run_learner"]

CHECK_FOLDER = "tfgraph-lab-check"
PROBE_MARK = "TFGL-PROBE "
# Runs in the kernel after its notebook: stdlib only, Linux /proc and cgroup v2 (v1 names too).
PROBE = r"""
def _tfgl_probe():
    import json, os
    def status(pid):
        out = {"pid": pid}
        try:
            with open(f"/proc/{pid}/status") as fh:
                for line in fh:
                    key, _, value = line.partition(":")
                    if key in ("VmRSS", "VmHWM"):
                        out[key] = int(value.split()[0]) * 1024
            with open(f"/proc/{pid}/stat") as fh:
                fields = fh.read().rsplit(")", 1)[1].split()
            out["cpu"] = (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
        except (OSError, IndexError, ValueError):
            pass
        return out
    def read(path):
        try:
            with open(path) as fh:
                return fh.read().strip()
        except OSError:
            return None
    cg = "/sys/fs/cgroup/"
    return {"kernel": status(os.getpid()), "server": status(os.getppid()), "cpus": os.cpu_count(),
            "cgroup": {"current": read(cg + "memory.current") or read(cg + "memory/memory.usage_in_bytes"),
                       "peak": read(cg + "memory.peak") or read(cg + "memory/memory.max_usage_in_bytes"),
                       "max": read(cg + "memory.max") or read(cg + "memory/memory.limit_in_bytes"),
                       "cpu_max": read(cg + "cpu.max")}}
print("TFGL-PROBE " + __import__("json").dumps(_tfgl_probe()))
del _tfgl_probe
"""


@dataclass
class NotebookResult:
    """One notebook of one learner: cell counts, whether it came back intact, the kernel's
    memory (bytes) and CPU seconds, and the probe's reading of the server and the cgroup."""

    path: str
    cells: int = 0
    ok: int = 0
    failed: int = 0
    timed_out: int = 0
    not_run: int = 0
    expected_errors: int = 0
    kernel_died: bool = False
    saved: bool = False
    lost_cells: int = 0
    seconds: float = 0.0
    probe: dict[str, Any] = field(default_factory=dict)
    failures: list[str] = field(default_factory=list)


@dataclass
class LearnerResult:
    """One learner: seconds from login to each milestone (``None`` when it was not reached),
    every notebook's result, and the problems met (an empty list: nothing went wrong)."""

    name: str
    server_ready_s: float | None = None
    first_report_s: float | None = None
    first_widget_s: float | None = None
    done_s: float | None = None
    notebooks: list[NotebookResult] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)
    server_path: str = ""
    server_pid: int | None = None

    @property
    def passed(self) -> bool:
        return (
            not self.problems
            and bool(self.notebooks)
            and all(
                nb.saved
                and not nb.failed
                and not nb.timed_out
                and not nb.not_run
                and not nb.lost_cells
                and not nb.kernel_died
                for nb in self.notebooks
            )
        )


def _clean(notebook: dict[str, Any]) -> dict[str, Any]:
    """A copy with no outputs or execution counts: what a learner opens."""
    clean = copy.deepcopy(notebook)
    for cell in clean.get("cells", []):
        if cell.get("cell_type") == "code":
            cell["outputs"] = []
            cell["execution_count"] = None
    return clean


def _text(value: Any) -> Any:
    """Multi-line strings as one string (the contents API may split or join them)."""
    if isinstance(value, list) and all(isinstance(v, str) for v in value):
        return "".join(value)
    if isinstance(value, dict):
        return {k: _text(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_text(v) for v in value]
    return value


def lost_cells(sent: dict[str, Any], saved: dict[str, Any]) -> int:
    """Code cells whose outputs differ between the notebook sent and the one read back."""
    a = [c for c in sent.get("cells", []) if c.get("cell_type") == "code"]
    b = [c for c in saved.get("cells", []) if c.get("cell_type") == "code"]
    lost = abs(len(a) - len(b))
    for x, y in zip(a, b):
        if _text(x.get("outputs", [])) != _text(y.get("outputs", [])) or _text(x["source"]) != _text(
            y["source"]
        ):
            lost += 1
    return lost


def _probe(result: NotebookResult) -> Any:
    def after(conn: Any) -> None:
        try:
            out = run_snippet(conn, PROBE)
        except HubError as exc:
            result.failures.append(str(exc))
            return
        for line in out.splitlines():
            if line.startswith(PROBE_MARK):
                result.probe = json.loads(line[len(PROBE_MARK) :])

    return after


def _run_one(
    server: ServerAPI, path: str, notebook: dict[str, Any], cell_timeout: float, result: NotebookResult
) -> NotebookRun | None:
    begun = time.monotonic()
    session = server.new_session(path)
    try:
        run = run_notebook(
            server, session["kernel"]["id"], session["id"], notebook, cell_timeout, _probe(result)
        )
    finally:
        result.seconds = time.monotonic() - begun
    result.cells = len(run.cells)
    result.ok = run.count("ok")
    result.failed = run.count("error", "died")
    result.timed_out = run.count("timeout")
    result.not_run = run.count("not-run")
    result.expected_errors = run.count("expected-error")
    result.kernel_died = run.kernel_died
    result.failures += [
        f"cell {c.index}: {c.status} {c.error}".strip()
        for c in run.cells
        if c.status in ("error", "timeout", "died")
    ]
    server.put_notebook(path, run.notebook)
    result.lost_cells = lost_cells(run.notebook, server.get_notebook(path))
    result.saved = True
    try:
        server.delete_session(session["id"])
    except HubError as exc:
        result.failures.append(f"shutting the kernel down: {exc}")
    return run


def run_learner(
    admin: HubAPI,
    name: str,
    notebooks: dict[str, dict[str, Any]],
    *,
    start_timeout: float,
    cell_timeout: float,
    on_server: Callable[[str, int], None] | None = None,
) -> LearnerResult:
    """Log ``name`` in (a token made by ``admin``), start their server, upload ``notebooks``
    (file name → notebook), run them all at once, save them back. Never raises for what the hub
    does: problems are in the result. ``on_server(name, pid)`` is called once the server is ready,
    when the hub tells its process id (a local process spawner does)."""
    result = LearnerResult(name)
    login = time.monotonic()
    try:
        token = admin.new_token(name, note="tfgraph-lab workshop check", expires_in=3 * 3600)
        hub = HubAPI(admin.url, token)
        hub.start_server(name)
        model = hub.wait_ready(name, start_timeout)
        result.server_ready_s = time.monotonic() - login
        result.server_path = str(model.get("url") or f"/user/{name}/")
        pid = (admin.user(name).get("servers", {}).get("", {}).get("state") or {}).get("pid")
        result.server_pid = pid if isinstance(pid, int) else None
        if on_server is not None and result.server_pid is not None:
            on_server(name, result.server_pid)
        server = ServerAPI(admin.url, result.server_path, token)
        server.make_dir(CHECK_FOLDER)
        for file_name, notebook in notebooks.items():
            server.put_notebook(f"{CHECK_FOLDER}/{file_name}", _clean(notebook))
    except HubError as exc:
        result.problems.append(str(exc))
        return result
    runs: dict[str, NotebookRun | None] = {}
    threads = []
    for file_name, notebook in notebooks.items():
        path = f"{CHECK_FOLDER}/{file_name}"
        nb_result = NotebookResult(path)
        result.notebooks.append(nb_result)

        def work(path: str = path, nb: dict[str, Any] = notebook, res: NotebookResult = nb_result) -> None:
            try:
                runs[path] = _run_one(server, path, _clean(nb), cell_timeout, res)
            except Exception as exc:  # whatever broke, the learner's result must say so
                result.problems.append(f"{path}: {type(exc).__name__}: {exc}")

        threads.append(threading.Thread(target=work, name=f"{name}:{file_name}", daemon=True))
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    result.done_s = time.monotonic() - login
    reports = [r.first_report_at for r in runs.values() if r is not None and r.first_report_at is not None]
    widgets = [r.first_widget_at for r in runs.values() if r is not None and r.first_widget_at is not None]
    result.first_report_s = min(reports) - login if reports else None
    result.first_widget_s = min(widgets) - login if widgets else None
    return result
