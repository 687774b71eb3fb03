"""Run a notebook in a kernel of a learner's Jupyter server, over the kernel websocket.

What nbclient does, without a local kernel: each code cell is one ``execute_request`` on the shell
channel; the cell's outputs are built from its iopub messages (``stream``, ``display_data``,
``update_display_data``, ``execute_result``, ``error``, ``clear_output``) until the kernel is idle
and the reply has come. A cell whose reply says ``error`` failed, unless it is tagged
``raises-exception`` (as nbval and nbclient read it); a cell that does not finish within the cell
timeout is interrupted, counted as timed out, and the rest of the notebook is not run. Messages
use the websocket's JSON form (the binary form, for messages with buffers, is decoded too).
Widget state (``metadata.widgets``) is not saved. Imports nothing of TensorFlow or IPython.
"""

from __future__ import annotations

import json
import struct
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import websocket

from .rest import HubError, ServerAPI

__all__ = ["CellOutcome", "NotebookRun", "run_notebook", "run_snippet"]

REPORT_MARK = "tfgl-report"  # the HTML class of a tfgraph_lab report (render.html)
WIDGET_MIME = "application/vnd.jupyter.widget-view+json"


@dataclass
class CellOutcome:
    """One code cell: its index in the notebook, ``ok`` / ``error`` / ``expected-error`` /
    ``timeout`` / ``not-run``, seconds it took, and the error's name when it failed."""

    index: int
    status: str
    seconds: float = 0.0
    error: str = ""


@dataclass
class NotebookRun:
    """The run of one notebook: the executed notebook, each code cell's outcome, and when (in
    ``time.monotonic()`` seconds) the first tfgraph_lab report and the first widget appeared."""

    notebook: dict[str, Any]
    cells: list[CellOutcome] = field(default_factory=list)
    first_report_at: float | None = None
    first_widget_at: float | None = None
    kernel_died: bool = False

    def count(self, *statuses: str) -> int:
        return sum(1 for cell in self.cells if cell.status in statuses)


def _message(channel: str, msg_type: str, content: dict[str, Any], session: str) -> dict[str, Any]:
    header = {
        "msg_id": uuid.uuid4().hex,
        "msg_type": msg_type,
        "session": session,
        "username": "tfgraph-lab",
        "version": "5.3",
        "date": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
    }
    return {
        "header": header,
        "parent_header": {},
        "metadata": {},
        "content": content,
        "channel": channel,
        "buffers": [],
    }


def _decode(frame: str | bytes) -> dict[str, Any]:
    """A websocket frame as a message: JSON text, or the binary form (a count, offsets, then
    the JSON message and its buffers, which are dropped here)."""
    if isinstance(frame, str):
        return dict(json.loads(frame))
    (count,) = struct.unpack_from("!I", frame, 0)
    offsets = struct.unpack_from(f"!{count}I", frame, 4)
    end = offsets[1] if count > 1 else len(frame)
    return dict(json.loads(frame[offsets[0] : end].decode("utf-8")))


def _add_output(
    outputs: list[dict[str, Any]], msg_type: str, content: dict[str, Any]
) -> dict[str, Any] | None:
    """Append the nbformat output for an iopub message (``None`` for the other kinds)."""
    if msg_type == "stream":
        if outputs and outputs[-1].get("output_type") == "stream" and outputs[-1]["name"] == content["name"]:
            outputs[-1]["text"] += content["text"]
            return outputs[-1]
        output = {"output_type": "stream", "name": content["name"], "text": content["text"]}
    elif msg_type in ("display_data", "execute_result"):
        output = {"output_type": msg_type, "data": content["data"], "metadata": content.get("metadata", {})}
        if msg_type == "execute_result":
            output["execution_count"] = content.get("execution_count")
    elif msg_type == "error":
        output = {
            "output_type": "error",
            "ename": content["ename"],
            "evalue": content["evalue"],
            "traceback": content["traceback"],
        }
    else:
        return None
    outputs.append(output)
    return output


class _Cell:
    """The state of one executing cell: outputs, display ids, the pending clear_output."""

    def __init__(self, cell: dict[str, Any]) -> None:
        self.cell = cell
        self.outputs: list[dict[str, Any]] = []
        self.displays: dict[str, list[dict[str, Any]]] = {}
        self.clear_pending = False
        self.idle = False
        self.reply: dict[str, Any] | None = None

    def iopub(self, msg_type: str, content: dict[str, Any]) -> None:
        if msg_type == "status":
            self.idle = content.get("execution_state") == "idle"
            return
        if msg_type == "execute_input":
            self.cell["execution_count"] = content.get("execution_count")
            return
        if msg_type == "clear_output":
            if content.get("wait"):
                self.clear_pending = True
            else:
                self.outputs.clear()
            return
        if msg_type == "update_display_data":
            for shown in self.displays.get((content.get("transient") or {}).get("display_id", ""), []):
                shown["data"] = content["data"]
                shown["metadata"] = content.get("metadata", {})
            return
        if self.clear_pending and msg_type in ("stream", "display_data", "execute_result", "error"):
            self.outputs.clear()
            self.clear_pending = False
        output = _add_output(self.outputs, msg_type, content)
        display_id = (content.get("transient") or {}).get("display_id")
        if output is not None and display_id:
            self.displays.setdefault(display_id, []).append(output)


class _Connection:
    """The websocket of one kernel, with the session id the messages carry."""

    def __init__(self, server: ServerAPI, kernel_id: str, session_id: str, timeout: float) -> None:
        self.server = server
        self.kernel_id = kernel_id
        self.session = uuid.uuid4().hex
        url = server.kernel_ws_url(kernel_id, self.session)
        # The server completes the handshake once the kernel has started; on a busy machine that
        # took over 60 s (8 learners, 16 kernels starting on 2 shared cores). JupyterLab keeps
        # reconnecting; so does this, until ``timeout`` seconds have passed.
        deadline = time.monotonic() + timeout
        while True:
            try:
                self.ws = websocket.create_connection(
                    url,
                    header=[f"Authorization: token {server.token}"],
                    timeout=max(1.0, deadline - time.monotonic()),
                )
                return
            except (OSError, websocket.WebSocketException) as exc:
                if time.monotonic() >= deadline - 1.0:
                    raise HubError(
                        f"opening the kernel's websocket (tried for {timeout:.0f} s): {type(exc).__name__}: {exc}"
                    ) from exc
                time.sleep(1.0)

    def send(self, msg_type: str, content: dict[str, Any]) -> str:
        message = _message("shell", msg_type, content, self.session)
        self.ws.send(json.dumps(message))
        return str(message["header"]["msg_id"])

    def receive(self, until: float) -> dict[str, Any] | None:
        """The next message, or ``None`` when ``until`` (monotonic) passes first."""
        remaining = until - time.monotonic()
        if remaining <= 0:
            return None
        self.ws.settimeout(min(remaining, 5.0))
        try:
            return _decode(self.ws.recv())
        except websocket.WebSocketTimeoutException:
            return None

    def wait_ready(self, timeout: float) -> None:
        """Wait for the kernel's ``kernel_info_reply`` (a kernel answers it once it has started,
        as nbclient waits before the first cell)."""
        msg_id = self.send("kernel_info_request", {})
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            message = self.receive(deadline)
            if (
                message
                and (message.get("parent_header") or {}).get("msg_id") == msg_id
                and message["header"]["msg_type"] == "kernel_info_reply"
            ):
                return
        raise HubError(f"the kernel did not answer within {timeout:.0f} s")

    def close(self) -> None:
        try:
            self.ws.close()
        except (OSError, websocket.WebSocketException):
            pass


def _execute(
    conn: _Connection,
    source: str,
    cell: dict[str, Any],
    timeout: float,
    on_output: Callable[[dict[str, Any]], None] | None = None,
) -> tuple[str, str]:
    """Run ``source``; fill ``cell["outputs"]``. Returns (``ok``/``error``/``timeout``/``died``,
    error name)."""
    state = _Cell(cell)
    content = {"code": source, "silent": False, "store_history": True, "user_expressions": {},
               "allow_stdin": False, "stop_on_error": False}  # fmt: skip
    msg_id = conn.send("execute_request", content)
    deadline = time.monotonic() + timeout
    while not (state.idle and state.reply is not None):
        try:
            message = conn.receive(deadline)
        except (OSError, websocket.WebSocketException):
            cell["outputs"] = state.outputs
            return "died", "the kernel's websocket closed"
        if message is None:
            if time.monotonic() >= deadline:
                cell["outputs"] = state.outputs
                return "timeout", ""
            continue
        if (message.get("parent_header") or {}).get("msg_id") != msg_id:
            continue
        channel, msg_type = message.get("channel"), message["header"]["msg_type"]
        if channel == "iopub":
            if msg_type == "status" and message["content"].get("execution_state") in ("dead", "restarting"):
                cell["outputs"] = state.outputs
                return "died", "the kernel died"
            state.iopub(msg_type, message["content"])
            if on_output is not None and msg_type in ("display_data", "execute_result"):
                on_output(message["content"])
        elif channel == "shell" and msg_type == "execute_reply":
            reply = dict(message["content"])
            state.reply = reply
            if reply.get("execution_count") is not None:
                cell["execution_count"] = reply["execution_count"]
    cell["outputs"] = state.outputs
    reply = state.reply or {}
    if reply.get("status") == "error":
        return "error", str(reply.get("ename", "error"))
    return "ok", ""


def _source(cell: dict[str, Any]) -> str:
    source = cell.get("source", "")
    return "".join(source) if isinstance(source, list) else str(source)


def _open(server: ServerAPI, kernel_id: str, session_id: str, timeout: float) -> _Connection:
    """A websocket to a kernel that has answered ``kernel_info``. The server closes a socket
    whose kernel does not answer in time (seen at N = 12 on 2 shared cores): open another, as
    JupyterLab does, until ``timeout`` seconds have passed."""
    deadline = time.monotonic() + timeout
    while True:
        conn = _Connection(server, kernel_id, session_id, timeout=max(1.0, deadline - time.monotonic()))
        try:
            conn.wait_ready(max(1.0, deadline - time.monotonic()))
            return conn
        except (OSError, websocket.WebSocketException) as exc:
            conn.close()
            if time.monotonic() >= deadline - 1.0:
                raise HubError(f"the kernel's websocket kept closing before it answered: {exc}") from exc
            time.sleep(1.0)
        except HubError:
            conn.close()
            raise


def run_notebook(
    server: ServerAPI,
    kernel_id: str,
    session_id: str,
    notebook: dict[str, Any],
    cell_timeout: float,
    after: Callable[[_Connection], None] | None = None,
) -> NotebookRun:
    """Run every code cell of ``notebook`` (changed in place) in the kernel; then ``after(conn)``
    while the kernel is still open (to read its memory, say)."""
    run = NotebookRun(notebook)

    def seen(content: dict[str, Any]) -> None:
        data = content.get("data") or {}
        now = time.monotonic()
        if run.first_report_at is None and REPORT_MARK in str(data.get("text/html", "")):
            run.first_report_at = now
        if run.first_widget_at is None and WIDGET_MIME in data:
            run.first_widget_at = now

    conn = _open(server, kernel_id, session_id, cell_timeout)
    try:
        stopped = False
        for index, cell in enumerate(notebook.get("cells", [])):
            if cell.get("cell_type") != "code":
                continue
            if stopped:
                run.cells.append(CellOutcome(index, "not-run"))
                continue
            begun = time.monotonic()
            status, error = _execute(conn, _source(cell), cell, cell_timeout, seen)
            tags = (cell.get("metadata") or {}).get("tags") or []
            if status == "error" and "raises-exception" in tags:
                status = "expected-error"
            run.cells.append(CellOutcome(index, status, time.monotonic() - begun, error))
            if status == "timeout":
                try:
                    server.interrupt(kernel_id)
                except HubError:
                    pass
                stopped = True
            elif status == "died":
                run.kernel_died = stopped = True
        if after is not None and not run.kernel_died:
            after(conn)
    finally:
        conn.close()
    return run


def run_snippet(conn: _Connection, code: str, timeout: float = 60.0) -> str:
    """Run ``code`` (not stored in history) and return what it printed to stdout."""
    cell: dict[str, Any] = {}
    status, error = _execute(conn, code, cell, timeout)
    if status != "ok":
        raise HubError(f"the measuring snippet did not run: {status} {error}".strip())
    return "".join(
        o["text"]
        for o in cell.get("outputs", [])
        if o.get("output_type") == "stream" and o["name"] == "stdout"
    )
