"""A page per reason code: every code has one, every page a code, docs/reasons/ is generated from
the shipped pages, ``tfgraph-lab explain`` prints them, and each page's example retraces as the
page says — run under ``tfgraph-lab run``, TensorFlow's own ``experimental_get_tracing_count()``
compared with the page's ``traces: N`` line, the report's XLA count with ``xla compiles: N``, and
the report showing the page's code."""

from __future__ import annotations

import fnmatch
import json
import re
from pathlib import Path

import pytest
from _cli import run_cli

from tfgraph_lab.explain import pages
from tfgraph_lab.model.vocab import ReasonCode, XlaCode

ROOT = Path(__file__).resolve().parents[2]
SHIPPED = ROOT / "tfgraph_lab" / "explain" / "reason_pages"
DOCS = ROOT / "docs" / "reasons"
SECTIONS = ("## What ", "## An example", "## Fixes", "## What the tool cannot see")
# Codes whose example cannot show the code on a supported TensorFlow, each said on its page:
# `unexplained` only appears in count-only mode; `per-device` (TF 2.21, logical CPUs) is
# reported as a replica clone compiled once.
NOT_SHOWN = {"unexplained", "xla-per-device"}


def example(name: str) -> tuple[str, int, str, int | None]:
    """The page's snippet, its stated trace count, what it counts (default `f`), and its stated
    XLA compilations (None when the page states none)."""
    text = pages.page_text(name)
    (snippet,) = re.findall(r"```python\n(.*?)```", text, flags=re.S)
    traces = re.search(r"^traces: (\d+)(?: of `([\w.]+)`)?$", text, flags=re.M)
    assert traces, f"{name}: no 'traces: N' line"
    xla = re.search(r"^xla compiles: (\d+)$", text, flags=re.M)
    return snippet, int(traces.group(1)), traces.group(2) or "f", int(xla.group(1)) if xla else None


def test_every_code_has_a_page_and_every_page_a_code() -> None:
    expected = {c.value for c in ReasonCode} | {"xla-" + c.value for c in XlaCode}
    assert set(pages.page_names()) == expected
    assert {p.stem for p in SHIPPED.glob("*.md")} == expected


@pytest.mark.parametrize("name", pages.page_names())
def test_each_page_says_the_four_things_and_states_its_counts(name: str) -> None:
    text = pages.page_text(name)
    assert all(section in text for section in SECTIONS), name
    assert "trade-off" in text.lower(), name
    example(name)


def test_docs_reasons_is_generated_from_the_shipped_pages(tmp_path: Path) -> None:
    pages.write_docs(tmp_path)
    made = {p.name: p.read_text(encoding="utf-8") for p in tmp_path.iterdir()}
    there = {p.name: p.read_text(encoding="utf-8") for p in DOCS.iterdir()}
    assert made == there, "run: python -m tfgraph_lab.explain.pages docs/reasons"


def test_the_pages_ship_in_the_wheel_and_the_url_is_the_repositorys() -> None:
    tomllib = pytest.importorskip("tomllib")
    project = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
    data = project["tool"]["setuptools"]["package-data"]["tfgraph_lab"]
    for page in SHIPPED.glob("*.md"):
        assert any(fnmatch.fnmatch(str(page.relative_to(ROOT / "tfgraph_lab")), g) for g in data), page
    assert project["project"]["urls"]["Repository"] + "/blob/main/docs/reasons/" == pages.DOCS_URL
    assert pages.page_url("shape-changed") == pages.DOCS_URL + "shape-changed.md"
    assert pages.page_url("shape-changed", xla=True) == pages.DOCS_URL + "xla-shape-changed.md"


def test_explain_lists_prints_and_refuses_with_close_matches(tmp_path: Path) -> None:
    listed = run_cli("explain", cwd=tmp_path)
    assert listed.returncode == 0, listed.stderr
    assert [line.split()[0] for line in listed.stdout.splitlines()[: len(pages.page_names())]] == pages.page_names()
    one = run_cli("explain", "python-value-changed", cwd=tmp_path)
    assert one.returncode == 0 and "tf.constant(steps)" in one.stdout
    assert one.stdout.rstrip().endswith(pages.page_url("python-value-changed"))
    wrong = run_cli("explain", "shape-change", cwd=tmp_path)
    assert wrong.returncode == 2 and wrong.stdout == ""
    assert "no reason code 'shape-change'; did you mean shape-changed" in wrong.stderr


EPILOGUE = """
_counted = {counted}
_objects = _counted if isinstance(_counted, (list, tuple)) else [_counted]
print("TRACES", sum(o.experimental_get_tracing_count() for o in _objects))
"""


@pytest.mark.slow
@pytest.mark.parametrize("name", pages.page_names())
def test_each_pages_example_retraces_as_it_says(name: str, tmp_path: Path) -> None:
    pytest.importorskip("tensorflow")
    snippet, traces, counted, xla = example(name)
    script = tmp_path / "example.py"
    script.write_text(snippet + EPILOGUE.format(counted=counted), encoding="utf-8")
    out = tmp_path / "report.json"
    proc = run_cli("run", "-q", "--json", str(out), str(script), cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    (line,) = [x for x in proc.stdout.splitlines() if x.startswith("TRACES ")]
    assert int(line.split()[1]) == traces, f"{name}: TensorFlow counted {line}, the page says {traces}"
    report = json.loads(out.read_text(encoding="utf-8"))
    if xla is not None:
        assert sum(f.get("xla_compiles", 0) for f in report["functions"]) == xla, name
        assert all(f.get("xla_compiles_kind") in ("exact", "") for f in report["functions"]), name
    shown = {r["code"] for e in report["events"] for r in e.get("reasons", [])}
    shown |= {"xla-" + r["code"] for e in report["events"] for r in e.get("xla_reasons", [])}
    assert (name in shown) != (name in NOT_SHOWN), f"{name}: the report shows {sorted(shown)}"
