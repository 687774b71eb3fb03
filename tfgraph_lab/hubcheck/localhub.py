"""A real JupyterHub on loopback, for the project's tests and its load benchmark.

``jupyterhub`` (PyPI) behind ``configurable-http-proxy`` (npm), ``SimpleLocalProcessSpawner`` (no
system users: each learner's server is a local process with its own home folder under the hub's
temporary folder) and ``DummyAuthenticator`` (no real accounts). An admin service token is set in
the configuration: it is what ``tfgraph-lab workshop check --token`` needs on a real hub.

:class:`LocalHub` starts the hub and waits for its API; :meth:`LocalHub.stop` stops it and then
kills every process it started (proxy, single-user servers, kernels) that is still running, and
returns the ones it had to kill. psutil (a test extra) is imported lazily: the rest of
``hubcheck`` needs only ``requests`` and ``websocket-client``. Imports nothing of TensorFlow.
"""

from __future__ import annotations

import os
import secrets
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import requests

from ..model.errors import UsageProblem

__all__ = ["LocalHub", "find_proxy"]

#: Where ``.ci/run`` installs configurable-http-proxy (npm install --prefix .ci/npm ...).
PROXY_PREFIX = Path(".ci") / "npm"
PROXY_ENV = "TFGRAPH_LAB_CHP"
SERVICE_NAME = "workshop-check"
# What a learner's server and kernels keep of this environment (JupyterHub 5+ passes none of it
# on by default: Spawner.env_keep is only JUPYTERHUB_SINGLEUSER_APP).
_KEEP = ("PATH", "PYTHONPATH", "LANG", "LC_ALL", "VIRTUAL_ENV")
# What binder/start sets for the lessons (thread pools sized for a shared machine).
LESSON_ENV = {
    "TF_CPP_MIN_LOG_LEVEL": "2",
    "TF_ENABLE_ONEDNN_OPTS": "0",
    "TF_NUM_INTEROP_THREADS": "1",
    "TF_NUM_INTRAOP_THREADS": "2",
    "OMP_NUM_THREADS": "2",
}


def find_proxy(root: Path | None = None) -> str | None:
    """The ``configurable-http-proxy`` executable: ``$TFGRAPH_LAB_CHP``, the project-local npm
    install (``.ci/npm``), or one on ``PATH``; ``None`` when there is none."""
    explicit = os.environ.get(PROXY_ENV)
    if explicit:
        return explicit if os.access(explicit, os.X_OK) else None
    base = root if root is not None else Path(__file__).resolve().parents[2]
    local = base / PROXY_PREFIX / "node_modules" / ".bin" / "configurable-http-proxy"
    if os.access(local, os.X_OK):
        return str(local)
    return shutil.which("configurable-http-proxy")


def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _config(
    folder: Path, proxy: str, token: str, ports: tuple[int, int, int], env: dict[str, str], base_url: str
) -> str:
    public, hub, api = ports
    spawner_env = {key: os.environ[key] for key in _KEEP if key in os.environ}
    spawner_env.update(env)
    lines = [
        "c = get_config()  # noqa: F821",
        f"c.JupyterHub.ip = '127.0.0.1'; c.JupyterHub.port = {public}",
        f"c.JupyterHub.base_url = {base_url!r}",
        f"c.JupyterHub.hub_ip = '127.0.0.1'; c.JupyterHub.hub_port = {hub}",
        f"c.ConfigurableHTTPProxy.api_url = 'http://127.0.0.1:{api}'",
        f"c.ConfigurableHTTPProxy.command = [{proxy!r}]",
        f"c.ConfigurableHTTPProxy.pid_file = {str(folder / 'proxy.pid')!r}",
        f"c.JupyterHub.db_url = 'sqlite:///{folder / 'jupyterhub.sqlite'}'",
        f"c.JupyterHub.cookie_secret_file = {str(folder / 'cookie_secret')!r}",
        f"c.JupyterHub.pid_file = {str(folder / 'jupyterhub.pid')!r}",
        "c.JupyterHub.authenticator_class = 'dummy'",
        "c.Authenticator.allow_all = True",
        "c.JupyterHub.spawner_class = 'simple'",
        f"c.SimpleLocalProcessSpawner.home_dir_template = {str(folder / 'home' / '{username}')!r}",
        f"c.Spawner.cmd = [{sys.executable!r}, '-m', 'jupyterhub.singleuser']",
        f"c.Spawner.environment = {spawner_env!r}",
        # A learner's server refuses to run as root without this (CI runs as root).
        f"c.Spawner.args = {['--allow-root'] if os.geteuid() == 0 else []!r}",
        "c.Spawner.start_timeout = 300",
        "c.Spawner.http_timeout = 300",
        "c.JupyterHub.cleanup_servers = True",
        f"c.JupyterHub.services = [{{'name': {SERVICE_NAME!r}, 'api_token': {token!r}}}]",
        f"c.JupyterHub.load_roles = [{{'name': 'admin', 'services': [{SERVICE_NAME!r}]}}]",
    ]
    return "\n".join(lines) + "\n"


class LocalHub:
    """A JupyterHub on 127.0.0.1 in a temporary folder; use as a context manager.

    ``url`` is the public (proxy) URL, ``token`` an admin service token. ``env`` adds variables to
    every learner's server and kernels (default: what ``binder/start`` sets). ``base_url`` puts the hub under a prefix
    (``/jupyter/``), as some institutions run theirs.
    """

    def __init__(
        self,
        *,
        proxy: str | None = None,
        env: dict[str, str] | None = None,
        start_timeout: float = 120.0,
        base_url: str = "/",
    ) -> None:
        self.proxy = proxy or find_proxy()
        if self.proxy is None:
            raise UsageProblem(
                "configurable-http-proxy not found: install it with "
                f"`npm install --prefix {PROXY_PREFIX} configurable-http-proxy` (as .ci/run does) "
                f"or set ${PROXY_ENV}"
            )
        self.env = dict(LESSON_ENV if env is None else env)
        self.start_timeout = start_timeout
        self.token = secrets.token_hex(24)
        self.folder: Path | None = None
        self.process: subprocess.Popen[bytes] | None = None
        self.url = ""
        self.base_url = "/" + base_url.strip("/") + "/" if base_url.strip("/") else "/"
        self._seen: dict[int, Any] = {}
        self.final_log = ""

    def __enter__(self) -> LocalHub:
        self.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()

    @property
    def log(self) -> str:
        """The hub's log so far (its stdout and stderr)."""
        if self.folder is None or not (self.folder / "jupyterhub.log").exists():
            return self.final_log
        return (self.folder / "jupyterhub.log").read_text(encoding="utf-8", errors="replace")

    def start(self) -> None:
        self.folder = Path(tempfile.mkdtemp(prefix="tfgraph-lab-hub-"))
        ports = (_free_port(), _free_port(), _free_port())
        config = self.folder / "jupyterhub_config.py"
        config.write_text(
            _config(self.folder, str(self.proxy), self.token, ports, self.env, self.base_url),
            encoding="utf-8",
        )
        self.url = f"http://127.0.0.1:{ports[0]}{self.base_url}".rstrip("/")
        with open(self.folder / "jupyterhub.log", "wb") as log:
            self.process = subprocess.Popen(
                [sys.executable, "-m", "jupyterhub", "-f", str(config)],
                cwd=self.folder,
                stdout=log,
                stderr=subprocess.STDOUT,
                start_new_session=True,
            )
        deadline = time.monotonic() + self.start_timeout
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                log_text = self.log
                self.stop()
                raise RuntimeError(f"jupyterhub exited with {self.process.returncode}:\n{log_text[-3000:]}")
            try:
                if requests.get(f"{self.url}/hub/api/", timeout=5).ok:
                    return
            except requests.RequestException:
                pass
            time.sleep(0.5)
        log_text = self.log
        self.stop()
        raise RuntimeError(
            f"jupyterhub did not answer within {self.start_timeout:.0f} s:\n{log_text[-3000:]}"
        )

    def processes(self) -> list[Any]:
        """The hub and every process under it now (psutil.Process objects), with any process
        that runs from the hub's folder (a server orphaned by a hub that died: its home is
        there), all remembered for :meth:`stop`."""
        import psutil

        if self.process is None:
            return []
        try:
            hub = psutil.Process(self.process.pid)
            found = [hub, *hub.children(recursive=True)]
        except psutil.NoSuchProcess:
            found = []
        folder = str(self.folder)
        for proc in psutil.process_iter(["cmdline", "cwd"]):
            try:
                if folder in " ".join(proc.info["cmdline"] or []) or (proc.info["cwd"] or "").startswith(
                    folder
                ):
                    found.append(proc)
            except psutil.Error:
                continue
        for proc in found:
            self._seen.setdefault(proc.pid, proc)
        return found

    def stop(self, grace: float = 20.0) -> list[str]:
        """Stop the hub (it stops the servers and the proxy), then kill what is left of every
        process it started. Returns ``"pid name"`` of the processes that had to be killed."""
        import psutil

        if self.process is None:
            return []
        self.processes()
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)
            try:
                self.process.wait(grace)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait(5)
        self.processes()  # what the hub left behind, orphans included
        killed = []
        for proc in list(self._seen.values()):
            try:
                if proc.is_running() and proc.status() != psutil.STATUS_ZOMBIE:
                    killed.append(f"{proc.pid} {proc.name()}")
                    for child in proc.children(recursive=True):
                        child.kill()
                    proc.kill()
            except psutil.NoSuchProcess:
                continue
        psutil.wait_procs(list(self._seen.values()), timeout=5)
        self.final_log = self.log
        if self.folder is not None:
            shutil.rmtree(self.folder, ignore_errors=True)
        return killed

    def still_running(self) -> list[str]:
        """``"pid name"`` of every process this hub started that still runs (empty after stop)."""
        import psutil

        alive = []
        for proc in self._seen.values():
            try:
                if proc.is_running() and proc.status() != psutil.STATUS_ZOMBIE:
                    alive.append(f"{proc.pid} {proc.name()}")
            except psutil.NoSuchProcess:
                continue
        return alive
