"""A real JupyterLab server on 127.0.0.1 and Debian's Chromium, for the widget tests.

Nothing is installed or downloaded here: the browser is the system's Chromium (``.ci/run``
installs it), driven by pip's ``playwright`` package. Without a browser the tests skip, except
under ``CI=true`` where a missing browser is a failure.
"""

from __future__ import annotations

import itertools
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
from _page import KERNEL_IDLE, wait_until

CHROMIUM_ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-dev-shm-usage",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
]
ARTIFACTS = Path(__file__).resolve().parents[2] / "artifacts"


def _missing(reason: str) -> None:
    if os.environ.get("CI", "").lower() == "true":
        pytest.fail(f"{reason} (CI=true: the browser tests must run in CI)")
    pytest.skip(reason)


def chromium_path() -> str:
    for candidate in (os.environ.get("TFGL_CHROMIUM"), shutil.which("chromium"), "/usr/bin/chromium"):
        if candidate and os.path.exists(candidate):
            return candidate
    _missing("Chromium not found: apt-get install chromium fonts-liberation")
    raise AssertionError("unreachable")


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@dataclass
class LabServer:
    url: str
    token: str
    root: Path
    workspaces: itertools.count = field(default_factory=itertools.count)

    def notebook_url(self, name: str, app: str = "lab") -> str:
        """The URL that opens ``name``; in JupyterLab, in a workspace of its own each time, so no
        test sees the tabs and layout an earlier test on this (session-wide) server left."""
        if app == "voila":
            return f"{self.url}/voila/render/{name}?token={self.token}"
        if app == "notebook":  # Notebook 7, served by the same server
            return f"{self.url}/notebooks/{name}?token={self.token}"
        return f"{self.url}/lab/workspaces/test-{next(self.workspaces)}/tree/{name}?token={self.token}"

    def open_notebook(self, page: Any, name: str, timeout_ms: float = 60_000, app: str = "lab") -> None:
        """Open ``name`` in JupyterLab (or Notebook 7: ``app="notebook"``) and wait until its
        kernel is idle."""
        page.goto(self.notebook_url(name, app), timeout=timeout_ms)
        wait_until(page, KERNEL_IDLE, timeout_ms / 1000, f"the kernel of {name} to be idle")

    def shutdown_kernels(self) -> None:
        """Shut every kernel of this server down (each test starts its own)."""
        headers = {"Authorization": f"token {self.token}"}
        try:
            with urllib.request.urlopen(
                urllib.request.Request(f"{self.url}/api/kernels", headers=headers), timeout=10
            ) as r:
                kernels = json.load(r)
            for k in kernels:
                request = urllib.request.Request(
                    f"{self.url}/api/kernels/{k['id']}", method="DELETE", headers=headers
                )
                urllib.request.urlopen(request, timeout=30).close()
        except OSError:
            pass  # the server is gone: its kernels with it

    def write_notebook(self, name: str, cells: list[str]) -> None:
        import nbformat

        nb = nbformat.v4.new_notebook()
        nb.cells = [nbformat.v4.new_code_cell(src) for src in cells]
        nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
        nbformat.write(nb, str(self.root / name))


@pytest.fixture
def artifacts() -> Path:
    """Where screenshots go (gitignored): ``artifacts/`` at the repository root."""
    ARTIFACTS.mkdir(exist_ok=True)
    return ARTIFACTS


@pytest.fixture(scope="session")
def lab_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LabServer]:
    """One JupyterLab server for the whole session (Lab, Notebook 7 and Voila pages alike)."""
    pytest.importorskip("jupyterlab")
    base = tmp_path_factory.mktemp("jupyter")
    root = base / "root"
    root.mkdir()
    settings = base / "settings" / "@jupyterlab" / "apputils-extension"
    settings.mkdir(parents=True)
    # No news toast over the notebook.
    (settings / "notification.jupyterlab-settings").write_text(json.dumps({"fetchNews": "false"}))
    env = {
        **os.environ,
        "JUPYTER_CONFIG_DIR": str(base / "config"),
        "JUPYTER_RUNTIME_DIR": str(base / "runtime"),
        "IPYTHONDIR": str(base / "ipython"),
        "JUPYTERLAB_SETTINGS_DIR": str(base / "settings"),
        "JUPYTERLAB_WORKSPACES_DIR": str(base / "workspaces"),
        "TF_CPP_MIN_LOG_LEVEL": "3",
        "TF_ENABLE_ONEDNN_OPTS": "0",
    }
    port, token = free_port(), secrets.token_hex(16)
    cmd = [
        sys.executable, "-m", "jupyter", "lab", "--no-browser",
        "--ServerApp.ip=127.0.0.1", f"--ServerApp.port={port}", "--ServerApp.port_retries=0",
        f"--IdentityProvider.token={token}", f"--ServerApp.root_dir={root}",
        "--LabApp.expose_app_in_browser=True", "--JupyterNotebookApp.expose_app_in_browser=True",
    ]  # fmt: skip
    if hasattr(os, "geteuid") and os.geteuid() == 0:
        cmd.append("--allow-root")
    log = (base / "server.log").open("w")
    proc = subprocess.Popen(cmd, env=env, stdout=log, stderr=subprocess.STDOUT)
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 60
        while True:
            if proc.poll() is not None:
                pytest.fail(f"JupyterLab exited with {proc.returncode}:\n{(base / 'server.log').read_text()}")
            try:
                with urllib.request.urlopen(f"{url}/api/status?token={token}", timeout=2) as r:
                    if r.status == 200:
                        break
            except OSError:
                pass
            if time.monotonic() > deadline:
                pytest.fail(f"JupyterLab did not answer in 60 s:\n{(base / 'server.log').read_text()}")
            time.sleep(0.2)
        yield LabServer(url, token, root)
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=15)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
        log.close()


@pytest.fixture(scope="session")
def browser() -> Iterator[Any]:
    path = chromium_path()
    try:
        from playwright.sync_api import sync_playwright
    except ImportError:
        _missing("playwright is not installed: pip install playwright (never `playwright install`)")
    with sync_playwright() as p:
        b = p.chromium.launch(executable_path=path, headless=True, args=CHROMIUM_ARGS)
        try:
            yield b
        finally:
            b.close()


@pytest.fixture
def page(browser: Any, request: pytest.FixtureRequest) -> Iterator[Any]:
    context = browser.new_context(viewport={"width": 1400, "height": 1900})
    pg = context.new_page()
    try:
        yield pg
    finally:
        context.close()
        if "lab_server" in request.fixturenames:  # no kernel outlives its test
            request.getfixturevalue("lab_server").shutdown_kernels()
