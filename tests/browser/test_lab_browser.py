"""RetraceLab in a real JupyterLab and Chromium: click, change the batch size, read the DOM.

The DOM's trace count and cache table are compared with TensorFlow's own count, printed by a
second cell run after the clicks. A screenshot is kept in ``artifacts/``.
"""

from __future__ import annotations

import re
import time
from pathlib import Path
from typing import Any

import pytest
from _page import run_command

pytestmark = [pytest.mark.browser, pytest.mark.slow]

SETUP = """\
import os
os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
os.environ.setdefault("TF_ENABLE_ONEDNN_OPTS", "0")
from tfgraph_lab.widgets import RetraceLab
lab = RetraceLab()
lab"""
CHECK = """\
print(f"TF count: {lab.session.function.experimental_get_tracing_count()}")
print("renders:", "; ".join(f"{what}={s * 1000:.2f}ms" for what, s in lab.render_log))"""

# Waits for the DOM text of `selector` to change after clicking `button`; returns milliseconds.
CLICK_TO_DOM = """([button, selector]) => new Promise((resolve) => {
  const target = document.querySelector(selector);
  const before = target.textContent;
  const t0 = performance.now();
  const obs = new MutationObserver(() => {
    if (target.textContent !== before) { obs.disconnect(); resolve(performance.now() - t0); }
  });
  obs.observe(target, {subtree: true, childList: true, characterData: true});
  document.querySelector(button).click();
})"""


def _open_and_run(page: Any, server: Any, name: str) -> None:
    server.open_notebook(page, name)
    page.evaluate("() => { window.jupyterapp.shell.currentWidget.content.activeCellIndex = 0; }")
    run_command(page, "notebook:run-cell")  # not awaited: the test waits for what it shows


def _run_check_cell(page: Any) -> str:
    page.evaluate("() => { window.jupyterapp.shell.currentWidget.content.activeCellIndex = 1; }")
    run_command(page, "notebook:run-cell")
    out = page.locator(".jp-Notebook .jp-Cell").nth(1).locator(".jp-OutputArea-output")
    out.first.wait_for(timeout=30_000)
    return str(out.first.inner_text())


def test_retrace_lab_in_jupyterlab(lab_server: Any, page: Any, artifacts: Path) -> None:
    from playwright.sync_api import expect

    lab_server.write_notebook("lab.ipynb", [SETUP, CHECK])
    t_open = time.perf_counter()
    _open_and_run(page, lab_server, "lab.ipynb")
    count = page.locator(".tfgl-trace-count .tfgl-value")
    calls = page.locator(".tfgl-calls .tfgl-value")
    rows = page.locator(".tfgl-cache-table tr.tfgl-graph-row")
    expect(count).to_have_text("0", timeout=90_000)  # TF's import happens in the kernel here
    open_seconds = time.perf_counter() - t_open

    # First call: one trace, one graph.
    page.locator(".tfgl-call-button").click()
    expect(count).to_have_text("1", timeout=30_000)
    expect(rows).to_have_count(1)
    expect(rows.first).to_contain_text("shape=(32, 16)")

    # Same settings again: no trace, the graph's hits go up (browser round trip, cached call).
    cached_ms = page.evaluate(CLICK_TO_DOM, [".tfgl-call-button", ".tfgl-calls"])
    expect(calls).to_have_text("2")
    expect(count).to_have_text("1")

    # Change the batch size through the slider's editable readout, then call: a retrace.
    readout = page.locator(".tfgl-batch .widget-readout")
    readout.click()
    page.keyboard.press("ControlOrMeta+a")
    page.keyboard.type("20")
    page.keyboard.press("Enter")
    expect(page.locator(".tfgl-code-block")).to_contain_text("tf.ones((20, 16), tf.float32)")
    retrace_ms = page.evaluate(CLICK_TO_DOM, [".tfgl-call-button", ".tfgl-trace-count"])
    expect(count).to_have_text("2")
    expect(rows).to_have_count(2)
    expect(rows.nth(1)).to_contain_text("shape=(20, 16)")
    expect(page.locator(".tfgl-reason")).to_contain_text("shape-changed")
    expect(page.locator(".tfgl-reason")).to_contain_text("(32, 16)")

    # TensorFlow's own count, from the kernel, agrees with the DOM.
    text = _run_check_cell(page)
    match = re.search(r"TF count: (\d+)", text)
    assert match is not None, text
    assert int(match.group(1)) == int(count.inner_text()) == rows.count() == 2
    run_command(page, "application:toggle-left-area")
    page.locator(".tfgl-retrace-lab").scroll_into_view_if_needed()
    page.locator(".tfgl-retrace-lab").screenshot(path=str(artifacts / "retrace_lab.png"))
    page.screenshot(path=str(artifacts / "retrace_lab_page.png"), full_page=True)
    print(
        f"\nnotebook open + kernel + TF import: {open_seconds:.1f} s; click → DOM: cached call "
        f"{cached_ms:.0f} ms, retrace {retrace_ms:.0f} ms; kernel-side {text.splitlines()[-1]}"
    )
