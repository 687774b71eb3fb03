"""How the report and a lab look and read where learners are: JupyterLab Light and Dark, an
untrusted saved notebook, a static HTML export, Notebook 7, Voila, VS Code's dark theme.

One JupyterLab server for the module (it also serves Notebook 7 and Voila). In each place every
visible text of the report and of the lab is measured in the page (``_contrast.py``) and must
reach WCAG 2.1 AA (4.5:1). The untrusted notebook is written to disk with the outputs of a real
run and opened fresh: the sanitizer drops ``<style>`` and ``<svg>``, and the report must still
read right. One lab is driven with the keyboard only. Screenshots go to ``artifacts/``; with
``TFGL_DOCS_SCREENSHOTS=1`` the ones the docs show are written to ``docs/screenshots/`` too.
"""

from __future__ import annotations

import json
import os
import re
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from _contrast import AA, worst
from _page import KERNEL_IDLE, run_command, wait_until

pytestmark = [pytest.mark.browser, pytest.mark.slow]

SETUP = """\
import os
os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
os.environ.setdefault("TF_ENABLE_ONEDNN_OPTS", "0")
import tensorflow as tf
%load_ext tfgraph_lab

@tf.function
def train_step(x, lr):
    return tf.reduce_sum(x) * lr"""
WATCHED = """\
%%tracewatch
for lr in (0.1, 0.05):
    for rows in (32, 32, 4):
        train_step(tf.ones((rows, 8)), lr)"""
LAB = """\
from tfgraph_lab.widgets import RetraceLab
lab = RetraceLab()
lab"""
CELLS = [SETUP, WATCHED, LAB]
REPORT = ".tfgl-report"
LAB_ROOT = ".tfgl-retrace-lab"
SHOTS: dict[str, Path] = {}
ARTIFACTS = Path(__file__).resolve().parents[2] / "artifacts"
DOCS = Path(__file__).resolve().parents[2] / "docs" / "screenshots"
IN_DOCS = {
    "report_jupyterlab_light", "report_jupyterlab_dark", "lab_jupyterlab_dark", "report_untrusted",
    "lab_notebook7", "lab_voila_dark", "lab_untrusted_snapshot",
}  # fmt: skip


def _kernel_idle(page: Any) -> None:
    wait_until(page, KERNEL_IDLE, 90, "the kernel to be idle")


def _run_all(page: Any) -> None:
    from playwright.sync_api import expect

    run_command(page, "notebook:run-all-cells")
    expect(page.locator(REPORT).first).to_be_visible(timeout=120_000)
    expect(page.locator(f"{LAB_ROOT} .tfgl-trace-count .tfgl-value")).to_have_text("0", timeout=60_000)


def _check_contrast(page: Any, where: str, selectors: tuple[str, ...] = (REPORT, LAB_ROOT)) -> float:
    lowest = 99.0
    for selector in selectors:
        # JupyterLab 4 may leave cells far outside the viewport unrendered (windowed notebook):
        # after the keyboard test scrolled to the lab, the report above it held 0 texts in CI.
        page.locator(selector).first.scroll_into_view_if_needed()
        ratio, low = worst(page, selector)
        assert not low, f"{where}: texts under {AA}:1 in {selector}: {low[:8]}"
        lowest = min(lowest, ratio)
    CONTRAST[where] = round(lowest, 2)
    return lowest


CONTRAST: dict[str, float] = {}


def _shot(page_or_locator: Any, artifacts: Path, name: str) -> None:
    path = artifacts / f"{name}.png"
    page_or_locator.screenshot(path=str(path))
    SHOTS[name] = path
    if name in IN_DOCS and os.environ.get("TFGL_DOCS_SCREENSHOTS") == "1":
        DOCS.mkdir(exist_ok=True)
        shutil.copyfile(path, DOCS / path.name)


@pytest.fixture(scope="module", autouse=True)
def _report_figures(artifacts_dir: Path) -> Iterator[None]:
    yield
    if CONTRAST:
        (artifacts_dir / "contrast.json").write_text(json.dumps(CONTRAST, indent=2, sort_keys=True))
        print("\nlowest contrast per place:", json.dumps(CONTRAST, sort_keys=True))


@pytest.fixture(scope="module")
def artifacts_dir() -> Path:
    ARTIFACTS.mkdir(exist_ok=True)
    return ARTIFACTS


@pytest.fixture(scope="module")
def lab_page(browser: Any, lab_server: Any) -> Iterator[Any]:
    """One JupyterLab tab with the notebook run: the report, and the lab after one call."""
    lab_server.write_notebook("looks.ipynb", CELLS)
    context = browser.new_context(viewport={"width": 1300, "height": 1500})
    page = context.new_page()
    try:
        lab_server.open_notebook(page, "looks.ipynb")
        _run_all(page)
        yield page
    finally:
        context.close()


def _set_theme(page: Any, theme: str) -> None:
    run_command(page, "apputils:change-theme", {"theme": theme})
    # Wait for the theme's own variables, not only its body attribute: its CSS loads after.
    layout0 = "white" if "Light" in theme else "#111"
    page.wait_for_function(
        "(want) => getComputedStyle(document.body).getPropertyValue('--jp-layout-color0').trim() === want",
        arg=layout0,
        timeout=30_000,
    )


def test_jupyterlab_light(lab_page: Any, artifacts_dir: Path) -> None:
    from playwright.sync_api import expect

    _set_theme(lab_page, "JupyterLab Light")
    lab_page.locator(f"{LAB_ROOT} .tfgl-call-button").click()
    expect(lab_page.locator(f"{LAB_ROOT} .tfgl-trace-count .tfgl-value")).to_have_text("1")
    assert _check_contrast(lab_page, "JupyterLab Light") >= AA
    lab_page.locator(REPORT).scroll_into_view_if_needed()
    _shot(lab_page.locator(REPORT), artifacts_dir, "report_jupyterlab_light")


def test_keyboard_only(lab_page: Any, artifacts_dir: Path) -> None:
    """Tab reaches every control of the lab, each with a visible label; Enter and Space press
    buttons; the trace count is announced (an ARIA live region) when it changes."""
    from playwright.sync_api import expect

    lab = lab_page.locator(LAB_ROOT)
    lab.locator(".tfgl-flag button").first.focus()
    focused: list[str] = []
    for _ in range(60):
        owner = lab_page.evaluate(
            "() => { const e = document.activeElement; const c = e && e.closest("
            "'.tfgl-control, .tfgl-call-button, .tfgl-loop-button, .tfgl-reset-button, .tfgl-fix-button,"
            " .tfgl-predict-mode');"
            " return c ? c.className.toString() : null; }"
        )
        if owner is None:
            break
        focused.append(owner)
        lab_page.keyboard.press("Tab")
    reached = " ".join(focused)
    for name in (
        "tfgl-flag", "tfgl-training", "tfgl-batch", "tfgl-features", "tfgl-dtype", "tfgl-rank",
        "tfgl-input-signature", "tfgl-reduce-retracing", "tfgl-loop-calls", "tfgl-partial-last",
        "tfgl-call-button", "tfgl-loop-button", "tfgl-reset-button", "tfgl-predict-mode",
    ):  # fmt: skip
        assert name in reached, f"Tab never reached {name}: {focused}"
    # Every control has a visible label next to it.
    unlabelled = lab_page.evaluate(
        """(root) => [...document.querySelectorAll(root + ' .tfgl-control, ' + root + ' .tfgl-predict-mode')]
          .filter((c) => !(c.innerText || '').trim() && !(c.previousElementSibling || {}).innerText)
          .map((c) => c.className)""",
        LAB_ROOT,
    )
    assert not unlabelled, unlabelled
    live = lab.locator("[aria-live]")
    expect(live).to_have_count(1)
    before = live.inner_text()
    count = lab.locator(".tfgl-trace-count .tfgl-value")
    start = int(count.inner_text())
    # Change the batch size with the keyboard (the slider's readout), then press «Call once».
    readout = lab.locator(".tfgl-batch .widget-readout")
    readout.focus()
    lab_page.keyboard.press("ControlOrMeta+a")
    lab_page.keyboard.type("20")
    lab_page.keyboard.press("Enter")
    expect(lab.locator(".tfgl-code-block")).to_contain_text("tf.ones((20, 16), tf.float32)")
    lab.locator(".tfgl-call-button").focus()
    lab_page.keyboard.press("Enter")
    expect(count).to_have_text(str(start + 1))
    # The focus stays on the button just pressed: the next key press works without the mouse.
    assert lab_page.evaluate("() => document.activeElement.closest('.tfgl-call-button') !== null")
    expect(live).not_to_have_text(before)
    expect(live).to_contain_text(f"{start + 1} trace{'s' if start + 1 != 1 else ''} (")
    lab.locator(".tfgl-call-button").focus()
    lab_page.keyboard.press("Space")
    expect(lab.locator(".tfgl-calls .tfgl-value")).to_have_text(str(start + 2), timeout=30_000)
    expect(count).to_have_text(str(start + 1))
    _shot(lab, artifacts_dir, "lab_keyboard_focus")


def test_jupyterlab_dark(lab_page: Any, artifacts_dir: Path) -> None:
    _set_theme(lab_page, "JupyterLab Dark")
    try:
        assert _check_contrast(lab_page, "JupyterLab Dark") >= AA
        lab_page.locator(REPORT).scroll_into_view_if_needed()
        _shot(lab_page.locator(REPORT), artifacts_dir, "report_jupyterlab_dark")
        lab_page.locator(LAB_ROOT).scroll_into_view_if_needed()
        _shot(lab_page.locator(LAB_ROOT), artifacts_dir, "lab_jupyterlab_dark")
    finally:
        _set_theme(lab_page, "JupyterLab Light")


def _saved_outputs(page: Any, lab_server: Any) -> dict[str, Any]:
    """Save the notebook from JupyterLab and read it back with its outputs."""
    run_command(page, "docmanager:save")
    wait_until(page, "() => !window.jupyterapp.shell.currentWidget.context.model.dirty", 30, "the save")
    data: dict[str, Any] = json.loads((lab_server.root / "looks.ipynb").read_text())
    return data


@pytest.fixture(scope="module")
def untrusted(lab_page: Any, lab_server: Any) -> str:
    """A copy of the run notebook, outputs kept, never signed: JupyterLab opens it untrusted."""
    import nbformat

    data = _saved_outputs(lab_page, lab_server)
    nb = nbformat.from_dict(data)
    nb.metadata.pop("widgets", None)  # the widget state: a static page has no kernel
    # Any change of content breaks the signature JupyterLab gave the copy it saved.
    nb.cells.insert(0, nbformat.v4.new_markdown_cell("Saved with outputs elsewhere, opened fresh."))
    nbformat.write(nb, str(lab_server.root / "untrusted.ipynb"))
    return "untrusted.ipynb"


def test_untrusted_notebook(browser: Any, lab_server: Any, untrusted: str, artifacts_dir: Path) -> None:
    """The sanitized report: no <style>, no <svg>; numbers keep their words, no tooltip spills."""
    from playwright.sync_api import expect

    context = browser.new_context(viewport={"width": 1300, "height": 1500})
    page = context.new_page()
    try:
        # ?reset: a fresh workspace, not the one that still has the trusted original open.
        page.goto(lab_server.notebook_url(untrusted).replace("?token", "?reset&token"))
        page.wait_for_function(
            "(name) => { const w = window.jupyterapp && window.jupyterapp.shell.currentWidget;"
            " return w && w.context && w.context.path === name; }",
            arg=untrusted,
            timeout=60_000,
        )
        report = page.locator(REPORT).first
        expect(report).to_be_visible(timeout=60_000)
        trusted = page.evaluate(
            "() => { const cells = window.jupyterapp.shell.currentWidget.content.model.cells;"
            " return [...Array(cells.length).keys()].map((i) => cells.get(i))"
            ".filter((c) => c.type === 'code' && c.outputs.length).map((c) => c.trusted); }"
        )
        assert trusted == [False, False], trusted  # the report's cell and the lab's
        assert report.locator("style").count() == 0 and report.locator("svg").count() == 0
        text = " ".join(report.inner_text().split())
        assert re.search(r"1 function · 6 calls · 4 traces · 3 retraces · [\d.]+ \S+ tracing", text), text[
            :300
        ]
        assert "call 0:" not in text and "(traced)" not in text, "a chart tooltip spilled into the page"
        image = report.locator("img.tfgl-timeline-chart")
        assert image.get_attribute("src").startswith("data:image/svg+xml;base64,")
        assert page.evaluate("(img) => img.complete && img.naturalWidth > 0", image.element_handle())
        assert "train_step" in report.locator("table.tfgl-functions tbody tr").first.inner_text()
        # The lab's saved output: its static snapshot says what the lab showed.
        snapshot = page.locator(".tfgl-lab-snapshot").first
        expect(snapshot).to_be_visible()
        expect(snapshot).to_contain_text("traces")
        _check_contrast(page, "JupyterLab Light, untrusted", (REPORT, ".tfgl-lab-snapshot"))
        _shot(report, artifacts_dir, "report_untrusted")
        snapshot.scroll_into_view_if_needed()
        _shot(snapshot, artifacts_dir, "lab_untrusted_snapshot")
    finally:
        context.close()


def test_static_html_export(browser: Any, lab_server: Any, untrusted: str, artifacts_dir: Path) -> None:
    """``jupyter nbconvert --to html`` (no JavaScript): the report and the lab's snapshot read."""
    from nbconvert import HTMLExporter

    body, _ = HTMLExporter().from_filename(str(lab_server.root / untrusted))
    path = lab_server.root / "untrusted.html"
    path.write_text(body)
    context = browser.new_context(viewport={"width": 1300, "height": 1500}, java_script_enabled=False)
    page = context.new_page()
    try:
        page.goto(path.as_uri())
        report = page.locator(REPORT).first
        assert report.is_visible()
        assert re.search(r"\b4\b", report.locator(".tfgl-traces-count").inner_text())
        assert page.locator(".tfgl-lab-snapshot").first.is_visible()
        _check_contrast(page, "nbconvert HTML export", (REPORT, ".tfgl-lab-snapshot"))
        _shot(report, artifacts_dir, "report_nbconvert")
    finally:
        context.close()


VSCODE_DARK_MODERN = {  # VS Code's default theme ("Dark Modern"), the variables its webviews get
    "--vscode-editor-background": "#1f1f1f",
    "--vscode-editor-foreground": "#cccccc",
    "--vscode-descriptionForeground": "#9d9d9d",
    "--vscode-editorWidget-background": "#202020",
    "--vscode-editorWidget-border": "#313131",
}


def test_vscode_dark_theme_variables(browser: Any, untrusted: str, lab_server: Any) -> None:
    """VS Code cannot be driven here: its notebook output webview is stood in for by a page with
    the ``--vscode-*`` variables of the default dark theme and no ``--jp-*`` ones."""
    data = json.loads((lab_server.root / untrusted).read_text())
    outputs = [o for c in data["cells"] for o in c.get("outputs", []) if "text/html" in o.get("data", {})]
    html = "".join("".join(o["data"]["text/html"]) for o in outputs)
    variables = ";".join(f"{k}:{v}" for k, v in VSCODE_DARK_MODERN.items())
    page_html = (
        f"<html><body style='{variables};background:var(--vscode-editor-background);"
        f"color:var(--vscode-editor-foreground)'>{html}</body></html>"
    )
    context = browser.new_context(viewport={"width": 1300, "height": 1500})
    page = context.new_page()
    try:
        page.set_content(page_html)
        _check_contrast(page, "VS Code Dark Modern (variables)", (REPORT, ".tfgl-lab-snapshot"))
    finally:
        context.close()


def test_notebook_7(browser: Any, lab_server: Any, artifacts_dir: Path) -> None:
    pytest.importorskip("notebook")
    from playwright.sync_api import expect

    lab_server.write_notebook("looks_nb7.ipynb", CELLS)
    context = browser.new_context(viewport={"width": 1300, "height": 1500})
    page = context.new_page()
    try:
        lab_server.open_notebook(page, "looks_nb7.ipynb", app="notebook")
        assert page.locator("#main-panel, .jp-NotebookPanel").count() >= 1
        assert "/notebooks/" in page.url
        _run_all(page)
        page.locator(f"{LAB_ROOT} .tfgl-call-button").click()
        expect(page.locator(f"{LAB_ROOT} .tfgl-trace-count .tfgl-value")).to_have_text("1")
        assert _check_contrast(page, "Notebook 7") >= AA
        _shot(page.locator(REPORT), artifacts_dir, "report_notebook7")
        _shot(page.locator(LAB_ROOT), artifacts_dir, "lab_notebook7")
    finally:
        context.close()


@pytest.mark.parametrize("theme", ["light", "dark"])
def test_voila(browser: Any, lab_server: Any, theme: str, artifacts_dir: Path) -> None:
    pytest.importorskip("voila")
    from playwright.sync_api import expect

    name = f"looks_voila_{theme}.ipynb"
    lab_server.write_notebook(name, CELLS)
    context = browser.new_context(viewport={"width": 1300, "height": 1500})
    page = context.new_page()
    try:
        page.goto(f"{lab_server.notebook_url(name, 'voila')}&theme={theme}", timeout=180_000)
        count = page.locator(f"{LAB_ROOT} .tfgl-trace-count .tfgl-value")
        expect(count).to_have_text("0", timeout=180_000)
        page.locator(f"{LAB_ROOT} .tfgl-call-button").click()
        expect(count).to_have_text("1", timeout=30_000)
        assert _check_contrast(page, f"Voila {theme}") >= AA
        _shot(page.locator(LAB_ROOT), artifacts_dir, f"lab_voila_{theme}")
    finally:
        context.close()
