"""The workshop paths in a real Chromium, started the way Binder starts them.

- App mode: ``voila lessons/labs_app.ipynb`` (through ``binder/start``) renders the labs with no
  code shown; clicking and changing a control changes the trace count in the DOM.
- Binder's URL forms on one JupyterLab server (root = a copy of ``lessons/`` under
  ``lessons/``): ``lab/tree/lessons/NAME.ipynb`` runs every cell without an unexpected error,
  and ``voila/render/lessons/labs_app.ipynb`` (the app-mode badge) renders the labs.

Timings (server start → first lab interaction) and server/kernel memory go to
``artifacts/binder_timings.json``, screenshots to ``artifacts/``. Without Chromium or
playwright the tests skip, except under ``CI=true``.
"""

from __future__ import annotations

import json
import os
import secrets
import shutil
import socket
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
from _page import CELLS_STARTED, NOTEBOOK_STATE, PYTEST_TIMEOUT_S, run_command, run_until_started, wait_until

pytestmark = [pytest.mark.browser, pytest.mark.slow]

ROOT = Path(__file__).resolve().parents[2]
LESSONS = ROOT / "lessons"
START = ROOT / "binder" / "start"
ARTIFACTS = ROOT / "artifacts"
APP = "labs_app.ipynb"
IN_CI = os.environ.get("CI", "").lower() == "true"
TIMINGS: dict[str, Any] = {}


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _rss_mb(pid: int) -> float:
    """Resident memory of one process, from /proc (Linux)."""
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    raise AssertionError(f"no VmRSS for pid {pid}")


def _children_rss_mb(pid: int) -> dict[int, float]:
    """RSS of the direct children of ``pid`` (the kernels a server started)."""
    out = {}
    for status in Path("/proc").glob("[0-9]*/status"):
        try:
            text = status.read_text()
        except OSError:
            continue
        fields = dict(line.split(":", 1) for line in text.splitlines() if ":" in line)
        if fields.get("PPid", "").strip() == str(pid) and "VmRSS" in fields:
            out[int(status.parent.name)] = int(fields["VmRSS"].split()[0]) / 1024
    return out


@dataclass
class Server:
    """A server started through ``binder/start``, with its URL, token and start time."""

    proc: subprocess.Popen[bytes]
    url: str
    token: str
    started: float
    log: Path
    ready: float = 0.0
    extra: dict[str, Any] = field(default_factory=dict)

    def wait_ready(self, path: str, timeout: float = 90) -> None:
        deadline = time.monotonic() + timeout
        while True:
            if self.proc.poll() is not None:
                pytest.fail(f"server exited with {self.proc.returncode}:\n{self.log.read_text()[-4000:]}")
            try:
                with urllib.request.urlopen(f"{self.url}{path}", timeout=2) as r:
                    if r.status == 200:
                        self.ready = time.monotonic()
                        return
            except OSError:
                pass
            if time.monotonic() > deadline:
                pytest.fail(f"server did not answer {path} in {timeout} s:\n{self.log.read_text()[-4000:]}")
            time.sleep(0.2)

    def stop(self) -> None:
        self.proc.terminate()
        try:
            self.proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()


def _start(cmd: list[str], base: Path, cwd: Path, port: int, token: str, lab: bool = False) -> Server:
    """Run ``cmd`` the way Binder does: through binder/start, TF variables left to it."""
    settings = base / "settings" / "@jupyterlab" / "apputils-extension"
    settings.mkdir(parents=True, exist_ok=True)
    (settings / "notification.jupyterlab-settings").write_text(json.dumps({"fetchNews": "false"}))
    env = {k: v for k, v in os.environ.items() if not k.startswith(("TF_", "OMP_"))}
    env.update(
        JUPYTER_CONFIG_DIR=str(base / "config"),
        JUPYTER_RUNTIME_DIR=str(base / "runtime"),
        IPYTHONDIR=str(base / "ipython"),
        JUPYTERLAB_SETTINGS_DIR=str(base / "settings"),
        JUPYTERLAB_WORKSPACES_DIR=str(base / "workspaces"),
    )
    if lab and hasattr(os, "geteuid") and os.geteuid() == 0:
        cmd = [*cmd, "--allow-root"]  # Binder runs as jovyan; CI runs as root
    log = base / "server.log"
    with log.open("w") as fh:
        started = time.monotonic()
        proc = subprocess.Popen([str(START), *cmd], env=env, cwd=cwd, stdout=fh, stderr=subprocess.STDOUT)
    return Server(proc, f"http://127.0.0.1:{port}", token, started, log)


@pytest.fixture
def tab(browser: Any) -> Iterator[Any]:
    """A page of the one Chromium that tests/browser/conftest.py starts for this folder."""
    context = browser.new_context(viewport={"width": 1400, "height": 1400})
    page = context.new_page()
    try:
        yield page
    finally:
        context.close()


@pytest.fixture(scope="module", autouse=True)
def _write_timings() -> Iterator[None]:
    yield
    if TIMINGS:
        ARTIFACTS.mkdir(exist_ok=True)
        (ARTIFACTS / "binder_timings.json").write_text(json.dumps(TIMINGS, indent=2, sort_keys=True))
        print("\nbinder timings:", json.dumps(TIMINGS, sort_keys=True))


@pytest.fixture(scope="module")
def lessons_root(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A copy of lessons/ under ``ROOT/lessons``: the repository layout Binder serves, without
    writing checkpoints into the checkout."""
    if not (LESSONS / APP).is_file():
        pytest.fail(f"lessons/{APP} is missing")
    root = tmp_path_factory.mktemp("binder-root")
    shutil.copytree(LESSONS, root / "lessons", ignore=shutil.ignore_patterns(".ipynb_checkpoints"))
    return root


@pytest.fixture(scope="module")
def lab_server(lessons_root: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    pytest.importorskip("jupyterlab")
    pytest.importorskip("voila")
    port, token = _free_port(), secrets.token_hex(16)
    cmd = [
        sys.executable, "-m", "jupyterlab", "--no-browser", "--ServerApp.ip=127.0.0.1",
        f"--ServerApp.port={port}", "--ServerApp.port_retries=0", f"--IdentityProvider.token={token}",
        f"--ServerApp.root_dir={lessons_root}", "--LabApp.expose_app_in_browser=True",
    ]  # fmt: skip
    server = _start(cmd, tmp_path_factory.mktemp("lab"), lessons_root, port, token, lab=True)
    try:
        server.wait_ready(f"/api/status?token={token}")
        TIMINGS["jupyterlab_ready_s"] = round(server.ready - server.started, 2)
        yield server
    finally:
        TIMINGS["jupyterlab_server_rss_mb"] = round(_rss_mb(server.proc.pid), 1)
        server.stop()


def _expect_text(page: Any, selector: str, text: str, timeout: float = 60_000) -> None:
    from playwright.sync_api import expect

    expect(page.locator(selector).first).to_have_text(text, timeout=timeout)


def _trace_count(lab: str) -> str:
    return f".{lab} .tfgl-trace-count .tfgl-value"


def _drive_first_lab(page: Any) -> float:
    """Call, change the dtype, call: the trace count goes 0 → 1 → 2. Returns when 1 showed."""
    lab = "tfgl-app-lab1"
    _expect_text(page, _trace_count(lab), "0", timeout=120_000)
    page.locator(f".{lab} .tfgl-call-button").first.click()
    _expect_text(page, _trace_count(lab), "1")
    first_interaction = time.monotonic()
    page.locator(f".{lab} .tfgl-call-button").first.click()  # cached: no new trace
    _expect_text(page, f".{lab} .tfgl-calls .tfgl-value", "2")
    _expect_text(page, _trace_count(lab), "1")
    page.locator(f".{lab} .tfgl-dtype select").first.select_option("float64")
    page.locator(f".{lab} .tfgl-call-button").first.click()
    _expect_text(page, _trace_count(lab), "2")
    _expect_text(page, f".{lab} .tfgl-graph-count .tfgl-value", "2")
    return first_interaction


def test_voila_app_renders_labs_without_code(tab: Any, tmp_path: Path, lessons_root: Path) -> None:
    pytest.importorskip("voila")
    port = _free_port()
    cmd = [
        sys.executable, "-m", "voila", "--no-browser", f"--port={port}", "--Voila.ip=127.0.0.1",
        f"lessons/{APP}",
    ]  # fmt: skip
    server = _start(cmd, tmp_path, lessons_root, port, "")
    try:
        server.wait_ready("/voila/static/voila.js", timeout=90)  # no kernel yet
        tab.goto(server.url + "/", timeout=120_000)
        first = _drive_first_lab(tab)
        TIMINGS["voila_server_start_to_first_trace_s"] = round(first - server.started, 2)
        kernels = _children_rss_mb(server.proc.pid)
        if kernels:
            TIMINGS["voila_kernel_rss_mb_after_interaction"] = round(max(kernels.values()), 1)
        TIMINGS["voila_server_rss_mb"] = round(_rss_mb(server.proc.pid), 1)
        # App mode: the markdown is there, the code is not.
        assert tab.get_by_text("Retracing labs").first.is_visible()
        assert tab.locator(".tfgl-app-lab2 .tfgl-loop-button").count() == 1
        assert tab.locator(".tfgl-app-lab3 .tfgl-prediction").count() == 1
        assert tab.locator(".jp-InputArea-editor, .CodeMirror, .cm-editor").count() == 0
        assert "RetraceLab(" not in tab.inner_text("body")
        stderr_outputs = tab.locator("[data-mime-type='application/vnd.jupyter.stderr']")
        assert stderr_outputs.count() == 0, stderr_outputs.first.inner_text()
        ARTIFACTS.mkdir(exist_ok=True)
        tab.screenshot(path=str(ARTIFACTS / "binder_voila_labs_app.png"), full_page=True)
    finally:
        server.stop()


def _open_in_lab(page: Any, server: Server, name: str) -> None:
    """Open ``name`` the way a fresh Binder session does and wait until it is the current tab,
    its kernel idle. One server serves every test here, and JupyterLab restores the tabs an
    earlier test left in its workspace: without ``reset`` the tab of the previous test was
    current for a moment, Run All went to it, and the notebook opened never ran a cell."""
    page.goto(f"{server.url}/lab/tree/lessons/{name}?reset&token={server.token}", timeout=60_000)
    path = f"lessons/{name}"
    idle = f"() => {{ const s = ({NOTEBOOK_STATE})(); return s && s.path === {json.dumps(path)} && s.status === 'idle'; }}"
    wait_until(page, idle, 90, f"{name} to open as the current tab with an idle kernel")
    tabs = page.evaluate(OPEN_NOTEBOOKS)
    assert tabs == [path], f"other notebooks open beside {path}: {tabs}"


OPEN_NOTEBOOKS = """() => Array.from(window.jupyterapp.shell.widgets('main'))
  .filter((w) => w.context && w.context.path.endsWith('.ipynb')).map((w) => w.context.path)"""


def _run_all(page: Any, deadline: float) -> dict[str, Any]:
    """Clear, then Run All through the states JupyterLab goes through (the kernel ready and
    idle, the command enabled, the first cell queued; Run All sent once more if it never
    started), then wait for the end until ``deadline`` (``time.monotonic()``): no fixed wait."""
    # A lesson saved with outputs has execution counts: clear them so "all counted" means "all ran".
    run_command(page, "notebook:clear-all-cell-outputs")
    cleared_js = (
        f"() => {{ const s = ({NOTEBOOK_STATE})(); return s && s.cells.every((c) => c.count === null); }}"
    )
    wait_until(page, cleared_js, 30, "outputs to clear")
    tries = run_until_started(page, "notebook:run-all-cells", CELLS_STARTED, timeout_s=60)
    timeout_s = max(deadline - time.monotonic(), 1.0)
    wait_until(
        page,
        f"() => {{ const s = ({NOTEBOOK_STATE})(); return s && s.status === 'idle' &&"
        " s.cells.every((c) => c.count !== null || c.errors.length > 0) ||"
        " (s && s.cells.some((c) => c.errors.length > 0 && !c.tags.includes('raises-exception'))); }",
        timeout_s,
        "run-all to finish",
    )
    state: dict[str, Any] = page.evaluate(NOTEBOOK_STATE)
    state["tries"] = tries
    return state


def _lessons_to_run() -> list[str]:
    """The app notebook and the first numbered lesson (if the lessons exist yet)."""
    others = sorted(p.name for p in LESSONS.glob("*.ipynb") if p.name != APP)
    return [APP, *others[:1]]


@pytest.mark.parametrize("name", _lessons_to_run())
def test_lesson_runs_via_binder_lab_url(tab: Any, lab_server: Server, name: str) -> None:
    t0 = time.monotonic()
    _open_in_lab(tab, lab_server, name)
    state = _run_all(tab, deadline=t0 + PYTEST_TIMEOUT_S - 90)  # the screenshot and clean-up after
    assert state["path"] == f"lessons/{name}"
    unexpected = [
        (i, c["errors"])
        for i, c in enumerate(state["cells"])
        if c["errors"] and "raises-exception" not in c["tags"]
    ]
    assert not unexpected, f"cells raised: {unexpected}"
    assert all(c["count"] is not None for c in state["cells"]), "run-all stopped before the end"
    TIMINGS[f"lab_open_and_run_all_s[{name}]"] = round(time.monotonic() - t0, 2)
    TIMINGS[f"lab_run_all_tries[{name}]"] = state["tries"]  # 2: the first Run All never started
    kernels = _children_rss_mb(lab_server.proc.pid)
    if kernels:
        TIMINGS[f"lab_kernel_rss_mb[{name}]"] = round(max(kernels.values()), 1)
    if name == APP:
        lab = "tfgl-app-lab1"
        _expect_text(tab, _trace_count(lab), "0")
        tab.locator(f".{lab} .tfgl-call-button").first.click()
        _expect_text(tab, _trace_count(lab), "1")
    ARTIFACTS.mkdir(exist_ok=True)
    tab.screenshot(path=str(ARTIFACTS / f"binder_lab_{Path(name).stem}.png"))
    # Shut the kernel down: Binder's memory holds one TF kernel at a time.
    _shutdown_kernels(lab_server)


# Run All sent and swallowed, as a loaded machine showed (issue 33.11): the page's command registry
# drops the first ``count`` run-all calls (all of them with a negative count).
SWALLOW_RUN_ALL = """(count) => {
  const commands = window.jupyterapp.commands;
  const execute = commands.execute.bind(commands);
  let left = count;
  commands.execute = (id, args) => {
    if (id === 'notebook:run-all-cells' && left !== 0) { left -= 1; return Promise.resolve(); }
    return execute(id, args);
  };
}"""


def test_run_all_is_sent_again_when_it_never_started(tab: Any, lab_server: Server) -> None:
    _open_in_lab(tab, lab_server, APP)
    tab.evaluate(SWALLOW_RUN_ALL, 1)
    state = _run_all(tab, deadline=time.monotonic() + 400)
    assert state["tries"] == 2  # the first never started; the one sent again ran every cell
    assert all(c["count"] is not None for c in state["cells"]), state
    _shutdown_kernels(lab_server)


def test_a_run_all_that_never_starts_fails_naming_that_state(tab: Any, lab_server: Server) -> None:
    from _page import reached

    _open_in_lab(tab, lab_server, APP)
    tab.evaluate(SWALLOW_RUN_ALL, -1)
    with pytest.raises(pytest.fail.Exception) as caught:
        run_until_started(tab, "notebook:run-all-cells", CELLS_STARTED, timeout_s=5)
    said = str(caught.value)
    assert "the first cell never queued or ran (2 tries" in said and '"status": "idle"' in said, said
    assert not reached(tab, CELLS_STARTED, 1)  # nothing ran: the message told the truth
    _shutdown_kernels(lab_server)


def _shutdown_kernels(server: Server) -> None:
    api = f"{server.url}/api/kernels"
    with urllib.request.urlopen(f"{api}?token={server.token}", timeout=10) as r:
        kernels = json.load(r)
    for kernel in kernels:
        request = urllib.request.Request(f"{api}/{kernel['id']}?token={server.token}", method="DELETE")
        with urllib.request.urlopen(request, timeout=30) as r:
            assert r.status == 204


def test_voila_render_url_on_the_lab_server(tab: Any, lab_server: Server) -> None:
    """The app-mode badge's URL form, ``voila/render/lessons/labs_app.ipynb``, on Binder's server."""
    tab.goto(f"{lab_server.url}/voila/render/lessons/{APP}?token={lab_server.token}", timeout=120_000)
    _drive_first_lab(tab)
    assert tab.locator(".jp-InputArea-editor, .CodeMirror, .cm-editor").count() == 0
