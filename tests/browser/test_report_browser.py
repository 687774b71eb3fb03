"""The %%tracewatch HTML report in a real JupyterLab and Chromium.

A notebook loads the extension and runs a cell with the classic traps (a Python float learning
rate, the smaller last batch); the test reads the rendered report from the DOM and compares its
numbers with TensorFlow's own count, printed by the next cell. A screenshot is kept in
``artifacts/`` (it is the picture in the README).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from _page import run_command

pytestmark = [pytest.mark.browser, pytest.mark.slow]

CELLS = [
    """\
import os
os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
os.environ.setdefault("TF_ENABLE_ONEDNN_OPTS", "0")
import tensorflow as tf
%load_ext tfgraph_lab

w = tf.Variable(tf.zeros([8, 1]))
data = tf.data.Dataset.from_tensor_slices(
    (tf.random.normal([100, 8]), tf.random.normal([100, 1]))).batch(32)

@tf.function
def train_step(x, y, lr):
    with tf.GradientTape() as tape:
        loss = tf.reduce_mean((tf.matmul(x, w) - y) ** 2)
    w.assign_sub(lr * tape.gradient(loss, w))
    return loss""",
    """\
%%tracewatch
lr = 0.1
for epoch in range(3):
    for x, y in data:
        train_step(x, y, lr)
    lr /= 2""",
    'print("TF count:", train_step.experimental_get_tracing_count())',
]


def _run_all(page: Any, server: Any, name: str) -> None:
    server.open_notebook(page, name)
    run_command(page, "notebook:run-all-cells")  # not awaited: the test waits for the report


def test_tracewatch_report_renders_in_jupyterlab(lab_server: Any, page: Any, artifacts: Path) -> None:
    from playwright.sync_api import expect

    lab_server.write_notebook("report.ipynb", CELLS)
    _run_all(page, lab_server, "report.ipynb")
    report = page.locator(".tfgl-report").first
    expect(report).to_be_visible(timeout=120_000)
    tf_count = page.locator(".jp-Cell").nth(2).locator(".jp-OutputArea-output").first
    expect(tf_count).to_contain_text("TF count:", timeout=60_000)
    traced_by_tf = int(tf_count.inner_text().split(":")[1])
    assert traced_by_tf == 6  # 3 learning rates × (full batch, last batch of 4)
    expect(report.locator(".tfgl-traces-count")).to_have_text(str(traced_by_tf))
    expect(report.locator(".tfgl-retraces-count")).to_have_text(str(traced_by_tf - 1))
    assert report.locator(".tfgl-cache-table tr").count() == traced_by_tf + 1  # header + graphs
    assert report.locator(".tfgl-reason-shape-changed").count() >= 1
    assert report.locator(".tfgl-reason-python-value-changed").count() >= 1
    chart = report.locator("img.tfgl-timeline-chart")  # an image: it survives sanitizers
    assert "12 calls in 12 bars: 6 traced (orange)" in (chart.get_attribute("alt") or "")
    assert page.evaluate("(img) => img.complete && img.naturalWidth > 0", chart.element_handle())
    expect(report.locator(".tfgl-suggestion")).to_contain_text("tf.constant")
    report.scroll_into_view_if_needed()
    report.screenshot(path=str(artifacts / "tracewatch_report.png"))
