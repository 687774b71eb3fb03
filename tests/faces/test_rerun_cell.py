"""A notebook cell run again defines its tf.function again: a new object, traced once more.

That is expected (once per re-run), not a tf.function re-created in a loop: the report says so
and suggests no `f = tf.function(f)` "outside the loop" for a function already decorated. A
tf.function re-created in a loop inside one cell still gets the hoisting fix.
"""

from __future__ import annotations

from typing import Any

from IPython.core.interactiveshell import InteractiveShell

DEFINE = "import tensorflow as tf\n@tf.function\ndef loss_at(x):\n    return tf.reduce_sum(x * x)\n"


def _report(ip: Any, cell: str) -> Any:
    result = ip.run_cell(f"%%tracewatch -q -o\n{cell}")
    assert result.success, result.error_in_exec
    return result.result


def test_a_rerun_definition_cell_is_said_to_be_one_not_a_loop(tmp_path: Any) -> None:
    ip: Any = InteractiveShell.instance()
    ip.run_line_magic("load_ext", "tfgraph_lab")
    try:
        define = f"# {tmp_path}\n{DEFINE}"  # a cell of its own in the shared shell
        ip.run_cell(define)
        _report(ip, "loss_at(tf.ones([3]))")
        ip.run_cell(define)  # the definition cell, run again
        report = _report(ip, "loss_at(tf.ones([3]))")
        (reason,) = [r for e in report.events for r in e.reasons]
        assert reason.code == "new-function-object"
        assert "re-running the cell that defines loss_at made a new tf.function" in reason.message
        assert "expected, once per re-run" in reason.message
        assert not reason.plans
        text = str(report)
        assert "tf.function(loss_at)" not in text and "outside the loop" not in text, text
        assert "suggested fix" not in text
        # a loop that re-creates the tf.function in one cell is still told to hoist it
        loop = _report(
            ip, "def g(x):\n    return x + 1\nfor _ in range(2):\n    tf.function(g)(tf.ones([2]))\n"
        )
        (hoist,) = [r for e in loop.events for r in e.reasons if r.code == "new-function-object"]
        assert hoist.plans and hoist.plans[0].hoist
        assert "g = tf.function(g)" in str(loop)
    finally:
        ip.run_line_magic("unload_ext", "tfgraph_lab")
