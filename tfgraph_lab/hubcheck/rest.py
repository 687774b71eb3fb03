"""JupyterHub's REST API and a single-user server's (contents, sessions, kernels), over ``requests``.

:class:`HubAPI` is what an admin token can do on a hub (create and delete users, make a token for
a user, read a user's server) and what a learner's token does (start and stop its own server).
:class:`ServerAPI` talks to one learner's Jupyter server through the hub's proxy, with that
learner's token: the calls JupyterLab makes to open a notebook and run it. Plain HTTP; the kernel
websocket is in :mod:`tfgraph_lab.hubcheck.kernel`. Imports nothing of TensorFlow or IPython.
"""

from __future__ import annotations

import time
from typing import Any
from urllib.parse import quote, urlsplit

import requests

from ..model.errors import TfgraphLabError, UsageProblem

__all__ = ["HubAPI", "HubError", "ServerAPI", "check_hub_url"]


class HubError(TfgraphLabError):
    """The hub or a learner's server answered something other than what the check needs."""


def check_hub_url(url: str) -> str:
    """``url`` without a trailing slash, or :class:`UsageProblem` when it is not http(s)."""
    parts = urlsplit(url.strip())
    if parts.scheme not in ("http", "https") or not parts.netloc:
        raise UsageProblem(f"--hub {url!r} is not a JupyterHub URL like https://hub.example.org")
    return url.strip().rstrip("/")


def _raise_for(response: requests.Response, what: str) -> None:
    if response.status_code >= 400:
        try:
            message = response.json().get("message") or response.text
        except ValueError:
            message = response.text
        raise HubError(f"{what}: HTTP {response.status_code} {str(message).strip()[:300]}")


class _Client:
    def __init__(self, base: str, token: str, timeout: float = 60.0) -> None:
        self.base = base.rstrip("/")
        self.timeout = timeout
        self.session = requests.Session()
        self.session.headers["Authorization"] = f"token {token}"

    def call(self, method: str, path: str, what: str, **kwargs: Any) -> requests.Response:
        kwargs.setdefault("timeout", self.timeout)
        try:
            response = self.session.request(method, self.base + path, **kwargs)
        except requests.RequestException as exc:
            raise HubError(f"{what}: {type(exc).__name__}: {exc}") from exc
        _raise_for(response, what)
        return response

    def close(self) -> None:
        self.session.close()


class HubAPI(_Client):
    """``/hub/api`` of the hub at ``url`` with ``token`` (an admin's token, or a learner's)."""

    def __init__(self, url: str, token: str, timeout: float = 60.0) -> None:
        self.url = check_hub_url(url)
        super().__init__(self.url + "/hub/api", token, timeout)

    def info(self) -> dict[str, Any]:
        """``GET /hub/api/``: the hub's version (any token, or none)."""
        return dict(self.call("GET", "/", "reading the hub's version").json())

    def whoami(self) -> dict[str, Any]:
        """The token's owner, with its scopes (``GET /hub/api/user``)."""
        return dict(self.call("GET", "/user", "checking the token").json())

    def create_users(self, names: list[str]) -> None:
        self.call("POST", "/users", "creating the learners' users", json={"usernames": names})

    def delete_user(self, name: str) -> None:
        self.call("DELETE", f"/users/{quote(name)}", f"deleting user {name}")

    def user(self, name: str) -> dict[str, Any]:
        return dict(self.call("GET", f"/users/{quote(name)}", f"reading user {name}").json())

    def new_token(self, name: str, note: str, expires_in: int = 3 * 3600) -> str:
        """A token for user ``name`` (the learner's "login"): ``POST /users/NAME/tokens``."""
        body = {"note": note, "expires_in": expires_in}
        reply = self.call("POST", f"/users/{quote(name)}/tokens", f"making a token for {name}", json=body)
        return str(reply.json()["token"])

    def start_server(self, name: str) -> None:
        """``POST /users/NAME/server``: 201 started, 202 starting (poll :meth:`wait_ready`)."""
        self.call("POST", f"/users/{quote(name)}/server", f"starting {name}'s server", json={})

    def stop_server(self, name: str) -> None:
        self.call("DELETE", f"/users/{quote(name)}/server", f"stopping {name}'s server")

    def wait_ready(self, name: str, timeout: float, poll: float = 0.5) -> dict[str, Any]:
        """The user's default server model once ``ready``; :class:`HubError` after ``timeout``
        seconds or when the spawn failed (no pending spawn and no server)."""
        begun = time.monotonic()
        deadline = begun + timeout
        while True:
            model = self.user(name)
            server = (model.get("servers") or {}).get("")
            if server and server.get("ready"):
                return dict(server)
            # A spawn that failed leaves neither a server nor a pending action behind.
            if not server and not model.get("pending") and time.monotonic() - begun > 5:
                raise HubError(f"{name}'s server failed to start (no server and no spawn pending)")
            if time.monotonic() > deadline:
                raise HubError(f"{name}'s server was not ready after {timeout:.0f} s")
            time.sleep(poll)

    def wait_stopped(self, name: str, timeout: float, poll: float = 0.5) -> bool:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            try:
                model = self.user(name)
            except HubError:
                return True
            if not (model.get("servers") or {}).get("") and not model.get("pending"):
                return True
            time.sleep(poll)
        return False


class ServerAPI(_Client):
    """A learner's Jupyter server at ``server_path`` (``/user/NAME/``) on the hub's origin, with
    the learner's token."""

    def __init__(self, hub_url: str, server_path: str, token: str, timeout: float = 60.0) -> None:
        # The hub's server path (``/user/NAME/``, or ``/PREFIX/user/NAME/`` on a hub with a base
        # URL) is absolute: it goes on the hub's origin, not on its URL.
        parts = urlsplit(check_hub_url(hub_url))
        self.server_url = f"{parts.scheme}://{parts.netloc}/" + server_path.strip("/")
        self.token = token
        super().__init__(self.server_url + "/api", token, timeout)

    def status(self) -> dict[str, Any]:
        return dict(self.call("GET", "/status", "reading the server's status").json())

    def make_dir(self, path: str) -> None:
        self.call("PUT", f"/contents/{quote(path)}", f"making folder {path}", json={"type": "directory"})

    def put_notebook(self, path: str, notebook: dict[str, Any]) -> dict[str, Any]:
        """Save ``notebook`` at ``path`` through the contents API (as JupyterLab's Save does)."""
        body = {"type": "notebook", "format": "json", "content": notebook}
        return dict(self.call("PUT", f"/contents/{quote(path)}", f"saving {path}", json=body).json())

    def get_notebook(self, path: str) -> dict[str, Any]:
        reply = self.call("GET", f"/contents/{quote(path)}", f"reading {path}", params={"content": "1"})
        return dict(reply.json()["content"])

    def new_session(self, path: str, kernel_name: str = "python3") -> dict[str, Any]:
        """A kernel for the notebook at ``path`` (``POST /api/sessions``, as JupyterLab opens one)."""
        body = {
            "path": path,
            "name": path.rsplit("/", 1)[-1],
            "type": "notebook",
            "kernel": {"name": kernel_name},
        }
        return dict(self.call("POST", "/sessions", f"starting a kernel for {path}", json=body).json())

    def delete_session(self, session_id: str) -> None:
        self.call("DELETE", f"/sessions/{quote(session_id)}", "shutting the kernel down")

    def interrupt(self, kernel_id: str) -> None:
        self.call("POST", f"/kernels/{quote(kernel_id)}/interrupt", "interrupting the kernel")

    def kernel_ws_url(self, kernel_id: str, session_id: str) -> str:
        """The kernel's websocket (``/api/kernels/ID/channels``), ws:// or wss:// like the hub."""
        base = self.server_url.replace("https://", "wss://", 1).replace("http://", "ws://", 1)
        return f"{base}/api/kernels/{quote(kernel_id)}/channels?session_id={quote(session_id)}"
