"""The pytest plugin, run in pytests of their own (pytester): the sample project's marked test fails
with the reason and fix and passes once fixed, also under pytest-xdist; ``--tracewatch`` prints one
summary and writes JUnit properties; loading the plugin imports no TensorFlow."""

from __future__ import annotations

import json
import shutil
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

# TensorFlow loaded before any pytester fixture: an in-process run drops the modules imported
# after its start, and numpy's C core cannot load twice in one process.
pytest.importorskip("tensorflow")

SAMPLE = Path(__file__).with_name("pytest_sample_project")
# The plugin is loaded by name whether or not the entry point is installed in this environment.
PLUGIN = ("-p", "tfgraph_lab.faces.pytest_plugin")
TRAP = "float(train_step(x, step))"
FIXED = "float(train_step(x, tf.constant(step)))"


@pytest.fixture
def sample(pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("PYTEST_DISABLE_PLUGIN_AUTOLOAD", "1")
    monkeypatch.setenv("TF_CPP_MIN_LOG_LEVEL", "3")
    for path in SAMPLE.glob("*.py"):
        shutil.copy(path, pytester.path / path.name)
    return pytester.path


def _apply_fix(project: Path) -> None:
    source = project / "sample_training.py"
    text = source.read_text()
    assert TRAP in text
    source.write_text(text.replace(TRAP, FIXED))


def test_pyproject_declares_the_entry_point() -> None:
    import tomllib

    data = tomllib.loads((Path(__file__).parents[2] / "pyproject.toml").read_text())
    assert data["project"]["entry-points"]["pytest11"] == {"tfgraph_lab": "tfgraph_lab.faces.pytest_plugin"}


@pytest.mark.slow
def test_marked_test_fails_with_reason_and_fix_then_passes_once_fixed(
    pytester: pytest.Pytester, sample: Path
) -> None:
    result = pytester.runpytest_subprocess(*PLUGIN, "-p", "no:cacheprovider")
    result.assert_outcomes(passed=2, failed=1)
    out = result.stdout.str()
    assert "FAILED test_sample_training.py::test_train_traces_once" in out
    assert "train_step traced 3× (budget 1)" in out
    assert "python-value-changed  step: 0 → 1" in out
    assert "step: 0 → 1 → 2" in out
    assert "tf.constant(step)" in out  # the fix the sample applies next
    _apply_fix(sample)
    pytester.runpytest_subprocess(*PLUGIN, "-p", "no:cacheprovider").assert_outcomes(passed=3)


@pytest.mark.slow
def test_under_xdist_the_same_and_one_merged_summary(pytester: pytest.Pytester, sample: Path) -> None:
    pytest.importorskip("xdist")
    args = (*PLUGIN, "-p", "xdist.plugin", "-p", "no:cacheprovider", "-n", "2", "--tracewatch")
    junit = sample / "junit.xml"
    result = pytester.runpytest_subprocess(*args, f"--junitxml={junit}", "--tracewatch-json=watch.json")
    result.assert_outcomes(passed=2, failed=1)
    out = result.stdout.str()
    assert "step: 0 → 1 → 2" in out and "tf.constant(step)" in out
    assert out.count("tfgraph_lab: retraces per test") == 1  # the controller's, once
    assert "test_sample_training.py::test_train_traces_once: 3 traces, 2 retraces" in out
    assert "3 tests watched:" in out
    properties = {
        case.get("name"): {p.get("name"): p.get("value") for p in case.iter("property")}
        for case in ET.parse(junit).getroot().iter("testcase")
    }
    assert properties["test_train_traces_once"]["tracewatch.traces"] == "3"
    assert properties["test_train_traces_once"]["tracewatch.retraces"] == "2"
    merged = json.loads((sample / "watch.json").read_text())
    assert sum(f["traces"] for f in merged["functions"] if f["qualname"] == "train_step") >= 3
    assert {p["name"] for p in merged["processes"]} <= {"gw0", "gw1"}
    assert not list(sample.glob("watch.json.tracewatch-part-*"))
    _apply_fix(sample)
    pytester.runpytest_subprocess(*args).assert_outcomes(passed=3)


def test_tracewatch_summary_and_junit_properties_in_process(pytester: pytest.Pytester, sample: Path) -> None:
    pytester.makepyfile(
        test_plugin_shapes="""
        import tensorflow as tf

        def test_shapes():
            f = tf.function(lambda x: x + 1)
            for n in (1, 2):
                f(tf.ones([n]))
        """
    )
    junit = sample / "junit.xml"
    result = pytester.runpytest_inprocess(*PLUGIN, "--tracewatch", f"--junitxml={junit}")
    result.assert_outcomes(passed=3, failed=1)
    out = result.stdout.str()
    assert "<lambda>: shape-changed x: (1,) → (2,)" in out
    assert "test_plugin_shapes.py::test_shapes: 2 traces, 1 retrace\n" in out  # one retrace, said so
    cases = {c.get("name"): c for c in ET.parse(junit).getroot().iter("testcase")}
    props = [(p.get("name"), p.get("value")) for p in cases["test_shapes"].iter("property")]
    assert ("tracewatch.traces", "2") in props and ("tracewatch.retraces", "1") in props


def test_xla_marker_fails_on_compiles(pytester: pytest.Pytester, sample: Path) -> None:
    pytester.makepyfile(
        test_plugin_xla="""
        import pytest
        import tensorflow as tf

        @pytest.mark.max_xla_compiles(step=1)
        def test_two_shapes():
            @tf.function(jit_compile=True)
            def step(x):
                return x * 2

            step(tf.ones([2]))
            step(tf.ones([3]))
        """
    )
    result = pytester.runpytest_inprocess(*PLUGIN, "test_plugin_xla.py")
    result.assert_outcomes(failed=1)
    assert "compiled by XLA" in result.stdout.str()


@pytest.mark.slow
def test_loading_the_plugin_imports_no_tensorflow(pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PYTEST_DISABLE_PLUGIN_AUTOLOAD", "1")
    pytester.makepyfile(
        test_plugin_plain="""
        import sys

        def test_no_tensorflow():
            assert "tensorflow" not in sys.modules
        """
    )
    pytester.runpytest_subprocess(*PLUGIN, "-p", "no:cacheprovider").assert_outcomes(passed=1)
    # with the option, the watch imports it (the test sees it loaded)
    result = pytester.runpytest_subprocess(*PLUGIN, "-p", "no:cacheprovider", "--tracewatch")
    result.assert_outcomes(failed=1)


def test_marker_misuse_is_a_usage_error(pytester: pytest.Pytester, sample: Path) -> None:
    pytester.makepyfile(
        test_plugin_bad="""
        import pytest

        @pytest.mark.max_traces()
        def test_nothing():
            pass
        """
    )
    result = pytester.runpytest_inprocess(*PLUGIN, "test_plugin_bad.py")
    assert "max_traces needs a number" in result.stdout.str() + result.stderr.str()
