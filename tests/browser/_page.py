"""Driving JupyterLab from a test with bounded waits (shared by the browser tests).

Never await a JupyterLab command's promise (:func:`run_command`); wait for what the page shows
with a deadline well below pytest's timeout (:func:`wait_until`), which fails with the notebook's
state (kernel status, each code cell's count and errors) instead of hanging.
"""

from __future__ import annotations

import json
from typing import Any

import pytest

# pytest-timeout's limit (pyproject.toml): every wait here ends well before it, so a stuck page
# fails with what it showed instead of a thread dump at 600 s.
PYTEST_TIMEOUT_S = 600

NOTEBOOK_STATE = """() => {
  const w = window.jupyterapp && window.jupyterapp.shell.currentWidget;
  if (!w || !w.content || !w.content.model || !w.sessionContext) return null;
  const kernel = w.sessionContext.session && w.sessionContext.session.kernel;
  const cells = [];
  const model = w.content.model;
  for (let i = 0; i < model.cells.length; i++) {
    const c = model.cells.get(i);
    if (c.type !== 'code') continue;
    const errors = c.outputs.toJSON().filter((o) => o.output_type === 'error')
      .map((o) => o.ename + ': ' + o.evalue);
    cells.push({count: c.executionCount, tags: c.getMetadata('tags') || [], errors: errors});
  }
  return {status: kernel ? kernel.status : null, path: w.context.path, cells: cells};
}"""


def run_command(page: Any, command: str, args: dict[str, Any] | None = None) -> None:
    """Start a JupyterLab command without awaiting it. ``page.evaluate`` awaits a promise the
    script returns, and ``notebook:run-all-cells`` resolves only when every cell has run: awaited,
    a slow kernel hung the test to pytest's timeout. Wait with :func:`wait_until` instead."""
    page.evaluate(
        "([command, args]) => { window.jupyterapp.commands.execute(command, args || undefined); }",
        [command, args],
    )


def wait_until(page: Any, script: str, timeout_s: float, what: str, arg: Any = None) -> None:
    """Poll ``script`` until truthy, at most ``timeout_s`` (below pytest's timeout); on timeout
    fail with the notebook's state (kernel status, each code cell's count and errors)."""
    from playwright.sync_api import TimeoutError as PlaywrightTimeout

    assert timeout_s < PYTEST_TIMEOUT_S - 60, f"{what}: {timeout_s} s is too close to pytest's timeout"
    try:
        page.wait_for_function(script, arg=arg, timeout=timeout_s * 1000, polling=250)
    except PlaywrightTimeout:
        try:
            state = page.evaluate(NOTEBOOK_STATE)
        except Exception as exc:  # the page itself is gone
            state = f"(no state: {exc})"
        pytest.fail(f"{what}: not within {timeout_s:.0f} s; notebook: {json.dumps(state)}")


KERNEL_IDLE = (
    "() => { const w = window.jupyterapp && window.jupyterapp.shell.currentWidget;"
    " const k = w && w.sessionContext && w.sessionContext.session && w.sessionContext.session.kernel;"
    " return k && k.status === 'idle'; }"
)


# The states JupyterLab goes through before a command runs cells, each waited for by itself so a
# failure names the one that never came (issue 33.11: under a loaded CI machine Run All was sent
# and never started, and the test waited out 300 s saying only that run-all did not finish).
KERNEL_READY = (
    "() => { const w = window.jupyterapp && window.jupyterapp.shell.currentWidget;"
    " const c = w && w.sessionContext;"
    " const k = c && c.session && c.session.kernel;"
    " return !!(c && c.isReady && !c.isTerminating && !c.isRestarting && k"
    " && k.connectionStatus === 'connected' && k.status === 'idle'); }"
)
COMMAND_ENABLED = (
    "(command) => { const app = window.jupyterapp; const w = app && app.shell.currentWidget;"
    " return !!(w && w.content && w.content.model && app.commands.hasCommand(command)"
    " && app.commands.isEnabled(command)); }"
)
# Run All started: a cell queued ("[*]" in its prompt), the kernel busy, or a cell counted.
CELLS_STARTED = """() => {
  const w = window.jupyterapp && window.jupyterapp.shell.currentWidget;
  if (!w || !w.content || !w.content.node) return false;
  const queued = Array.from(w.content.node.querySelectorAll('.jp-InputPrompt'))
    .some((p) => p.textContent.includes('*'));
  const kernel = w.sessionContext && w.sessionContext.session && w.sessionContext.session.kernel;
  const counted = Array.from({length: w.content.model.cells.length}, (_, i) => w.content.model.cells.get(i))
    .some((c) => c.type === 'code' && c.executionCount !== null);
  return queued || counted || !!(kernel && kernel.status === 'busy');
}"""


def reached(page: Any, script: str, timeout_s: float, arg: Any = None) -> bool:
    """Whether ``script`` became truthy within ``timeout_s`` (no failure: the caller decides)."""
    from playwright.sync_api import TimeoutError as PlaywrightTimeout

    try:
        page.wait_for_function(script, arg=arg, timeout=max(timeout_s, 0.1) * 1000, polling=250)
    except PlaywrightTimeout:
        return False
    return True


def run_until_started(page: Any, command: str, started: str, timeout_s: float, tries: int = 2) -> int:
    """Run ``command`` once its notebook's kernel is ready and the command enabled, and wait
    for ``started``; if it never starts, once more (``tries`` in all). Returns the try that
    started it; fails naming the state that never came, with the notebook's state."""
    for attempt in range(1, tries + 1):
        wait_until(page, KERNEL_READY, timeout_s, f"{command} (try {attempt}): the kernel ready and idle")
        wait_until(
            page, COMMAND_ENABLED, timeout_s, f"{command} (try {attempt}): the command enabled", command
        )
        run_command(page, command)
        if reached(page, started, timeout_s):
            return attempt
    state = page.evaluate(NOTEBOOK_STATE)
    pytest.fail(
        f"{command}: the first cell never queued or ran ({tries} tries, {timeout_s:.0f} s each, the "
        f"kernel ready and the command enabled before each); notebook: {json.dumps(state)}"
    )
