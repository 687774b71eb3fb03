"""What the report says is true (issue 12): fixes work as printed, traces are TF's own count,
and the graph-vs-eager line blames only what the numbers show."""

from __future__ import annotations

import re

import numpy as np
import tensorflow as tf

import tfgraph_lab


def printed_decorators(fix: str) -> list[str]:
    """The ``@tf.function(...)`` snippets in a fix text, parentheses balanced."""
    out = []
    for match in re.finditer(r"@tf\.function\(", fix):
        depth, i = 1, match.end()
        while depth and i < len(fix):
            depth += {"(": 1, ")": -1}.get(fix[i], 0)
            i += 1
        out.append(fix[match.end() : i - 1])
    return out


def layer(x, training):  # type: ignore[no-untyped-def]
    y = x * 2.0
    if training:
        y = y + 1.0
    return tf.reduce_sum(y, axis=1)


def test_shape_fix_for_a_tensor_and_a_python_flag_works_as_printed() -> None:
    """Issue 12, item 1: the fix for `layer(x, training)` whose batch size changed must run."""
    calls = [(tf.ones([n, 8]), t) for n, t in ((32, True), (17, True), (32, False), (9, False))]
    watched = tf.function(layer)
    with tfgraph_lab.watch() as w:
        before = [np.asarray(watched(x, t)) for x, t in calls]
    (reason,) = [r for e in w.report.events for r in e.reasons if r.code == "shape-changed"][:1]
    assert reason.fix in str(w.report)
    snippets = printed_decorators(reason.fix)
    assert snippets, reason.fix
    for snippet in snippets:
        fixed = tf.function(layer, **eval(f"dict({snippet})", {"tf": tf}))
        after = [np.asarray(fixed(x, t)) for x, t in calls]  # raised TypeError before the fix
        assert all(np.allclose(a, b) for a, b in zip(before, after)), snippet
        assert fixed.experimental_get_tracing_count() < watched.experimental_get_tracing_count()
