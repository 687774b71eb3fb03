"""The package's public surface: a complete ``__all__``, and a cheap, side-effect-free import."""

from __future__ import annotations

import json
import subprocess
import sys

import tfgraph_lab

PUBLIC = {"watch", "monitor", "TraceReport", "TraceRecorder", "TraceBudgetExceeded", "TfgraphLabError"}


def test_all_is_complete_and_resolves() -> None:
    assert set(tfgraph_lab.__all__) >= PUBLIC
    for name in tfgraph_lab.__all__:
        assert getattr(tfgraph_lab, name) is not None, name


def test_import_loads_neither_tensorflow_nor_ipython_nor_widgets() -> None:
    code = (
        "import json, sys, tfgraph_lab; "
        "print(json.dumps([m for m in ('tensorflow', 'IPython', 'ipywidgets') if m in sys.modules]))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert json.loads(out) == []


def test_unknown_attribute_is_a_clear_error() -> None:
    try:
        tfgraph_lab.not_a_thing  # noqa: B018
    except AttributeError as exc:
        assert "not_a_thing" in str(exc)
    else:
        raise AssertionError("expected AttributeError")
