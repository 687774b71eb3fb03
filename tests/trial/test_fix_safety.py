"""The fix trial is safe to run on data and next to other watches (issues 33.1 and 33.8).

33.1: a report is data. ``TraceReport.from_json(path)`` then ``try_fix`` evaluated the plan's
decorator text, so a crafted report ran code. The decorator and the call-site rewrites are now
parsed by a tiny strict grammar (``report.fix_trial.parse_decorator`` / ``parse_call``) into
typed options; anything else is refused with a clear error, and nothing in the package
evaluates text that can come from a file, a name or a repr.

33.8: a trial in one thread while another watches left ``Function.__call__`` wrapped for good
(``is_patched()`` False); two trials in two threads left ``sys.stdout`` a StringIO. Trials are
refused while another runs, and a trial next to a watch leaves TensorFlow as it was.
"""

from __future__ import annotations

import ast
import json
import sys
import threading
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("tensorflow")
import tensorflow as tf
from tensorflow.python.eager.polymorphic_function import polymorphic_function as pf

import tfgraph_lab
from tfgraph_lab.model.errors import UsageProblem
from tfgraph_lab.report.fix_trial import decorator_kwargs, parse_call, parse_decorator
from tfgraph_lab.report.trace_report import TraceReport
from tfgraph_lab.watching.recorder import is_patched

PACKAGE = Path(tfgraph_lab.__file__).parent


def _watched(namespace: dict[str, Any]) -> TraceReport:
    exec(
        "@tf.function\ndef step(x):\n    return tf.reduce_sum(x * 2.0)\n"
        "def train():\n    return [step(tf.ones([n, 3])) for n in (4, 3, 2, 5)]\n",
        namespace,
    )
    with tfgraph_lab.watch() as w:
        namespace["train"]()
    return w.report


def _crafted(report: TraceReport, **plan: Any) -> TraceReport:
    """The report through JSON, each fix plan of ``step`` replaced by ``plan``'s fields."""
    data = json.loads(report.to_json())
    for event in data["events"]:
        for reason in event.get("reasons", []):
            for p in reason.get("fix_plans", []):
                p.update(plan)
    return TraceReport.from_json(json.dumps(data))


@pytest.mark.parametrize(
    "plan",
    [
        {"decorator": "reduce_retracing=__import__('pathlib').Path({marker!r}).touch() is None", "call": []},
        {"decorator": "input_signature=[tf.TensorSpec([None, 3], tf.float32)], **{{}}", "call": []},
        {"decorator": "", "call": [["x", "__import__('pathlib').Path({marker!r}).touch()"]]},
        {"decorator": "", "call": [["x", "tf.cast(x, tf.float32).__class__"]]},
    ],
    ids=["decorator-code", "decorator-extra", "call-code", "call-attribute"],
)
def test_a_crafted_report_runs_no_code(tmp_path: Path, plan: dict[str, Any]) -> None:
    marker = tmp_path / "ran"
    namespace: dict[str, Any] = {"tf": tf}
    report = _crafted(
        _watched(namespace),
        decorator=plan["decorator"].format(marker=str(marker)),
        call=[[p, e.format(marker=str(marker))] for p, e in plan["call"]],
        graphs=1,
    )
    with pytest.raises(UsageProblem, match="refused") as info:
        report.try_fix("step", rerun=namespace["train"], namespace=namespace)
    assert not marker.exists(), "the report's text was run as code"
    assert "a report is data" in str(info.value).lower()


def test_the_grammar_builds_what_tensorflow_takes() -> None:
    text = (
        "input_signature=[tf.TensorSpec([None, 128], tf.float32), (tf.TensorSpec([], tf.bool),), "
        "{'a': tf.TensorSpec(None, tf.int64), 1: [tf.TensorSpec([2], tf.float16)]}], "
        "reduce_retracing=True, jit_compile=False"
    )
    options = parse_decorator(text)
    assert [o.name for o in options] == ["input_signature", "reduce_retracing", "jit_compile"]
    kwargs = decorator_kwargs(text, tf)
    assert kwargs["reduce_retracing"] is True and kwargs["jit_compile"] is False
    spec = kwargs["input_signature"]
    assert spec[0] == tf.TensorSpec([None, 128], tf.float32)
    assert spec[1] == (tf.TensorSpec([], tf.bool),)
    assert spec[2] == {"a": tf.TensorSpec(None, tf.int64), 1: [tf.TensorSpec([2], tf.float16)]}
    assert decorator_kwargs("", tf) == {}
    rewrites = parse_call(
        (("lr", "tf.constant(lr)"), ("x", "tf.cast(x, tf.float32)"), ("xs", "tf.stack(xs)"))
    )
    assert [(r.parameter, r.kind, r.dtype) for r in rewrites] == [
        ("lr", "constant", ""),
        ("x", "cast", "float32"),
        ("xs", "stack", ""),
    ]
    assert not parse_call((("batch[0]", "tf.constant(batch[0])"),))[0].whole  # shown, not tried


@pytest.mark.parametrize(
    "text",
    [
        "reduce_retracing=1",
        "reduce_retracing=True, reduce_retracing=False",
        "experimental_compile=True",
        "input_signature=[tf.TensorSpec([None], tf.evil)]",
        "input_signature=[tf.TensorSpec([None], tf.float32, name='x')]",
        "input_signature=[tf.TensorSpec([-1], tf.float32)]",
        "input_signature=[tf.TensorSpec([None], tf.float32)] + []",
        "input_signature=[tf.RaggedTensorSpec([None], tf.float32)]",
        "input_signature=[{'a' + 'b': tf.TensorSpec([], tf.bool)}]",
        "jit_compile=open('x')",
    ],
)
def test_anything_else_is_refused(text: str) -> None:
    with pytest.raises(UsageProblem, match="refused"):
        parse_decorator(text)


@pytest.mark.parametrize(
    "pair",
    [
        ("x", "tf.constant(y)"),
        ("x", "tf.cast(x, tf.evil)"),
        ("x", "tf.cast(x)"),
        ("x", "x * 2"),
        ("x", "tf.constant(x); x"),
    ],
)
def test_a_call_rewrite_outside_the_grammar_is_refused(pair: tuple[str, str]) -> None:
    with pytest.raises(UsageProblem, match="refused"):
        parse_call((pair,))


# Calls of eval/exec the package may make, and why each is legitimate. Nothing else may
# evaluate text: a report, a file, a name or a repr is data.
ALLOWED_EVAL_EXEC = {
    # %%tracewatch runs the user's own cell, compiled by IPython from what they typed, exactly
    # as IPython would run it (its last expression is eval'd for the cell's value).
    ("faces/magic.py", "_exec", "exec"): "the magic runs the user's own cell",
    ("faces/magic.py", "_exec", "eval"): "the value of the cell's last expression",
    # tfgraph-lab run SCRIPT runs the user's script file, compiled from the file they named,
    # as python SCRIPT runs it (runpy.run_path did the same exec before, issue 33.3).
    ("faces/cli.py", "_run_script", "exec"): "tfgraph-lab run runs the user's own script",
    # The exercises' reference solutions are string constants of the package itself
    # (exercises/sources.py), never read from a file or a report.
    ("exercises/reference.py", "reference_value", "exec"): "the package's own reference solutions",
    ("exercises/capstone.py", "_train_slow", "exec"): "the package's own copy of the capstone's slow script",
}


class _Calls(ast.NodeVisitor):
    """Each call of ``eval``/``exec`` with the function it is in (``<module>`` at top level)."""

    def __init__(self, path: str) -> None:
        self.path, self.owners, self.found = path, ["<module>"], set()

    def visit_FunctionDef(self, node: ast.FunctionDef | ast.AsyncFunctionDef) -> None:
        self.owners.append(node.name)
        self.generic_visit(node)
        self.owners.pop()

    visit_AsyncFunctionDef = visit_FunctionDef  # type: ignore[assignment]

    def visit_Call(self, node: ast.Call) -> None:
        func = node.func
        name = func.id if isinstance(func, ast.Name) else func.attr if isinstance(func, ast.Attribute) else ""
        if name in ("eval", "exec"):
            self.found.add((self.path, self.owners[-1], name))
        self.generic_visit(node)


def _eval_exec_calls() -> set[tuple[str, str, str]]:
    found: set[tuple[str, str, str]] = set()
    for path in PACKAGE.rglob("*.py"):
        visitor = _Calls(path.relative_to(PACKAGE).as_posix())
        visitor.visit(ast.parse(path.read_text(encoding="utf-8")))
        found |= visitor.found
    return found


def test_the_package_evaluates_no_text_from_data() -> None:
    calls = _eval_exec_calls()
    assert calls <= set(ALLOWED_EVAL_EXEC), sorted(calls - set(ALLOWED_EVAL_EXEC))
    sources = [p.read_text(encoding="utf-8") for p in PACKAGE.rglob("*.py")]
    assert not any("literal_eval" in s or "builtins.eval" in s for s in sources)


# ------------------------------------------------------------------ threads (33.8)


def test_a_trial_next_to_another_threads_watch_leaves_tensorflow_as_it_was() -> None:
    namespace: dict[str, Any] = {"tf": tf}
    report = _watched(namespace)
    original_call = pf.Function.__dict__["__call__"]
    started, done = threading.Event(), threading.Event()

    def other_watch() -> None:
        with tfgraph_lab.watch():
            started.set()
            done.wait(30)

    other = threading.Thread(target=other_watch)
    train = namespace["train"]
    calls = []

    def rerun() -> Any:
        if not calls:  # the other thread's watch starts while the trial's first run runs
            other.start()
            assert started.wait(30)
        calls.append(1)
        return train()

    try:
        trial = report.try_fix("step", rerun=rerun, namespace=namespace)
    finally:
        done.set()
        if other.is_alive() or calls:
            other.join(30)
    assert trial.verdict == "works", str(trial)
    assert pf.Function.__dict__["__call__"] is original_call, "Function.__call__ was left wrapped"
    assert not is_patched()


def test_two_trials_at_once_the_second_is_refused() -> None:
    namespace: dict[str, Any] = {"tf": tf}
    report = _watched(namespace)
    stdout = sys.stdout
    inside, release = threading.Event(), threading.Event()
    train = namespace["train"]
    results: list[Any] = []

    def slow() -> Any:
        inside.set()
        release.wait(30)
        return train()

    first = threading.Thread(
        target=lambda: results.append(report.try_fix("step", rerun=slow, namespace=namespace))
    )
    first.start()
    try:
        assert inside.wait(30)
        with pytest.raises(UsageProblem, match="another fix trial is running"):
            report.try_fix("step", rerun=train, namespace=namespace)
    finally:
        release.set()
        first.join(60)
    assert results and results[0].verdict == "works", results
    assert sys.stdout is stdout, "sys.stdout was left redirected"
    assert not is_patched()
    # once the first is done, a trial runs again
    assert report.try_fix("step", rerun=train, namespace=namespace).verdict == "works"
