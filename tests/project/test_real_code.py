"""Real code nobody here wrote, every cell under ``%%tracewatch``: counts and prints stay true.

The code is TensorFlow's own: the examples in the docstrings of the installed TensorFlow
(``tf.function``, ``tf.cond``, ``tf.while_loop``, ``tf.data.Dataset.map`` …, Apache-2.0,
written by the TensorFlow authors), read at test time from the package itself with
``doctest.DocTestParser`` — nothing is copied into this repository and nothing is downloaded.
Each docstring is played as a notebook, one example per cell, twice in a real IPython shell:
once plain, once with every cell under ``%%tracewatch``. For every cell the test asserts that

* each tf.function in the namespace has, in the report, exactly the traces TensorFlow's own
  ``experimental_get_tracing_count()`` added during that cell (0 when it has no row);
* the cell prints the same output (value shown, prints, error type) as the plain run.
"""

from __future__ import annotations

import contextlib
import doctest
import io
import re
from typing import Any

import pytest
import tensorflow as tf

from tfgraph_lab.model.places import code_location, innermost_python_function
from tfgraph_lab.watching.recorder import is_patched


def _function_method(name: str) -> Any:
    from tensorflow.python.eager.polymorphic_function import polymorphic_function

    return getattr(polymorphic_function.Function, name)


SOURCES = {
    "tf.function": lambda: tf.function,
    "tf.cond": lambda: tf.cond,
    "tf.while_loop": lambda: tf.while_loop,
    "tf.py_function": lambda: tf.py_function,
    "tf.numpy_function": lambda: tf.numpy_function,
    "tf.Variable": lambda: tf.Variable,
    "tf.TensorSpec": lambda: tf.TensorSpec,
    "tf.map_fn": lambda: tf.map_fn,
    "tf.data.Dataset.map": lambda: tf.data.Dataset.map,
    "tf.data.Dataset.filter": lambda: tf.data.Dataset.filter,
    "tf.data.Dataset.interleave": lambda: tf.data.Dataset.interleave,
    "tf.data.Dataset.scan": lambda: tf.data.Dataset.scan,
    "tf.data.Dataset.from_generator": lambda: tf.data.Dataset.from_generator,
    "tf.GradientTape": lambda: tf.GradientTape,
    "Function.experimental_get_tracing_count": lambda: _function_method("experimental_get_tracing_count"),
}

SETUP = "import numpy as np\nimport tensorflow as tf\nfrom tensorflow.data import Dataset\ntf.random.set_seed(7)\nnp.random.seed(7)\n"


def cells_of(name: str) -> list[str]:
    doc = SOURCES[name]().__doc__ or ""
    return [example.source for example in doctest.DocTestParser().get_examples(doc)]


def _functions(namespace: dict[str, Any]) -> dict[int, Any]:
    """The tf.functions a cell can see by name (a bound method's Function too)."""
    out = {}
    for value in list(namespace.values()):
        fn = getattr(value, "__func__", value)
        if hasattr(fn, "experimental_get_tracing_count") and hasattr(fn, "python_function"):
            out[id(fn)] = fn
    return out


def _key(fn: Any) -> tuple[str, str]:
    qualname, filename, _ = code_location(innermost_python_function(fn.python_function))
    if qualname.endswith("<lambda>") and "." not in qualname:
        qualname = "<lambda>"
    return qualname, filename


_ADDRESS = re.compile(r"0x[0-9a-f]+")
_OUT = re.compile(r"^Out\[\d+\]: \n?", re.M)  # IPython's prompt; a multi-line value starts below it
_ANSI = re.compile(r"\x1b\[[0-9;]*m")


def _normalise(text: str) -> str:
    """The cell's own output: no prompt, no addresses, and no traceback (the error's type is
    compared on its own; the magic's frames are hidden, so its traceback reads differently)."""
    text = _ANSI.sub("", text)
    text = text.split("-" * 75, 1)[0]
    return _OUT.sub("", _ADDRESS.sub("0x…", text))


def play(ip: Any, cells: list[str], watched: bool) -> list[tuple[str, str | None, Any]]:
    """Run the cells in a fresh namespace: (output, error type, per-cell trace check) each."""
    ip.reset(new_session=False)
    tf.config.run_functions_eagerly(False)
    ip.run_cell(SETUP)
    known: dict[int, Any] = {}
    results = []
    for source in cells:
        known.update(_functions(ip.user_ns))
        before = {i: fn.experimental_get_tracing_count() for i, fn in known.items()}
        cell = f"%%tracewatch -q -v __tracewatch_report\n{source}" if watched else source
        buffer = io.StringIO()
        with contextlib.redirect_stdout(buffer):
            result = ip.run_cell(cell)
        assert not is_patched()
        error = result.error_before_exec or result.error_in_exec
        known.update(_functions(ip.user_ns))
        check = None
        if watched:
            added: dict[tuple[str, str], int] = {}
            for i, fn in known.items():
                key = _key(fn)
                added[key] = added.get(key, 0) + fn.experimental_get_tracing_count() - before.get(i, 0)
            report = ip.user_ns.get("__tracewatch_report")
            ours = {}
            if report is not None:
                ours = {(f.qualname, f.filename): f.traces for f in report.functions if not f.wraps}
            check = {key: (ours.get(key, 0), theirs) for key, theirs in added.items()}
            ip.user_ns.pop("__tracewatch_report", None)
        results.append((_normalise(buffer.getvalue()), type(error).__name__ if error else None, check))
    tf.config.run_functions_eagerly(False)
    return results


@pytest.mark.slow
@pytest.mark.parametrize("name", sorted(SOURCES))
def test_tensorflow_docstring_examples_under_tracewatch(shell: Any, name: str) -> None:
    cells = cells_of(name)
    assert cells, f"{name} has no examples in this TensorFlow"
    plain = play(shell, cells, watched=False)
    watched = play(shell, cells, watched=True)
    checked = 0
    for source, (out, error, _), (w_out, w_error, check) in zip(cells, plain, watched):
        assert (w_out, w_error) == (out, error), f"cell {source!r} printed differently"
        assert check is not None
        for key, (ours, theirs) in check.items():
            assert ours == theirs, f"{key}: report {ours} traces, TensorFlow {theirs}, cell {source!r}"
            checked += theirs
    print(f"{name}: {len(cells)} cells, {checked} traces compared with TensorFlow's count")
    if "tf.function" in " ".join(cells):
        assert checked, f"{name}: no trace was compared"
