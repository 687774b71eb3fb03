"""What the report says is true (issue 12): fixes work as printed, traces are TF's own count,
and the graph-vs-eager line blames only what the numbers show."""

from __future__ import annotations

import dataclasses
import gc
import re
import weakref
from typing import Any

import numpy as np
import pytest
import tensorflow as tf

import tfgraph_lab
from tfgraph_lab.explain.fix_text import short_fix


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
    short = short_fix(reason, "layer")
    assert short.summary in str(w.report) and short.code.split("  #")[0] in str(w.report)
    snippets = printed_decorators(reason.fix)
    assert printed_decorators(short.code)[0] in snippets  # the code the report prints is tested here
    assert snippets, reason.fix
    for snippet in snippets:
        fixed = tf.function(layer, **eval(f"dict({snippet})", {"tf": tf}))
        after = [np.asarray(fixed(x, t)) for x, t in calls]  # raised TypeError before the fix
        assert all(np.allclose(a, b) for a, b in zip(before, after)), snippet
        assert fixed.experimental_get_tracing_count() <= watched.experimental_get_tracing_count()
        if "input_signature" in snippet:  # it promises one graph for every call
            assert fixed.experimental_get_tracing_count() == 1


def test_tf_data_wrapper_is_not_a_trace_of_the_mapped_function() -> None:
    """Issue 12, item 3: `Dataset.map(preprocess)` on a tf.function that already traced for
    that input adds no trace to preprocess; tf.data's own graph gets a row of its own."""

    @tf.function
    def preprocess(x):  # type: ignore[no-untyped-def]
        return x * 2

    with tfgraph_lab.watch() as w:
        preprocess(tf.constant(1, tf.int64))
        ds = tf.data.Dataset.range(10).map(preprocess)
        values = list(ds.as_numpy_iterator())
    assert values == [2 * i for i in range(10)]
    report = w.report
    name = "test_tf_data_wrapper_is_not_a_trace_of_the_mapped_function.<locals>.preprocess"
    assert report.function(name).traces == preprocess.experimental_get_tracing_count() == 1
    (wrapper,) = [f for f in report.functions if f.wraps == name]
    # the JSON's qualname is the Python name (issue 33.5); what the row is, is its label
    assert wrapper.qualname == name and wrapper.label == f"tf.data wrapper around {name}"
    assert report.function(wrapper.label) is wrapper
    assert wrapper.traces == 1 and [g.via for g in wrapper.graphs] == ["tf.data"]
    data = report.to_dict()
    rows = {f["label"]: f for f in data["functions"]}  # type: ignore[union-attr, index]
    assert rows[name]["traces"] == 1 and rows[wrapper.label]["wraps"] == name
    assert rows[wrapper.label]["qualname"] == rows[name]["qualname"] == name
    assert {e["qualname"] for e in data["events"]} == {name}  # type: ignore[union-attr, index]
    text = str(report)
    assert f"tf.data wrapper around {name}" in text


def test_tf_data_map_tracing_the_function_counts_once() -> None:
    """When map is what first traces the tf.function, the function has TF's count (1) and the
    wrapper its own graph; a plain Python function mapped stays one row of its own."""

    @tf.function
    def scale(x):  # type: ignore[no-untyped-def]
        return x * 3

    def plain(x):  # type: ignore[no-untyped-def]
        return x + 1

    with tfgraph_lab.watch() as w:
        list(tf.data.Dataset.range(4).map(scale))
        list(tf.data.Dataset.range(4).map(plain))
    prefix = "test_tf_data_map_tracing_the_function_counts_once.<locals>."
    assert w.report.function(prefix + "scale").traces == scale.experimental_get_tracing_count() == 1
    assert w.report.function("tf.data wrapper around " + prefix + "scale").traces == 1
    assert w.report.function(prefix + "plain").traces == 1
    assert not any(f.wraps.endswith("plain") for f in w.report.functions)


def compare_report(compare: dict[str, Any], traces: int = 0, trace_seconds: float = 0.0) -> Any:
    from tfgraph_lab.model.records import FunctionSummary
    from tfgraph_lab.report import TraceReport

    fn = FunctionSummary("step", "cell.py", 1, 10, traces, 0, trace_seconds, trace_seconds + 0.01, False)
    return TraceReport(functions=(fn,), compare_eager=compare)


def test_graph_slower_without_a_trace_does_not_blame_tracing() -> None:
    """Issue 12, item 4: a cell that traced 0 times and ran 1.3x slower as a graph."""
    text = str(compare_report({"graph_seconds": 0.013, "eager_seconds": 0.010}))
    assert "tracing costs more than it saves" not in text
    assert "graph mode 1.3× slower" in text
    assert "not because of tracing: the cell traced nothing" in text
    assert "one run each: no spread measured" in text
    html = compare_report({"graph_seconds": 0.013, "eager_seconds": 0.010})._repr_html_()
    assert "not because of tracing" in html


def test_overlapping_repeated_timings_are_within_noise_with_their_spread() -> None:
    runs = {"graph_runs": [0.013, 0.009, 0.011], "eager_runs": [0.010, 0.012, 0.0105]}
    text = str(compare_report({"graph_seconds": 0.013, "eager_seconds": 0.0105, **runs}))
    assert "within noise" in text
    assert "graph 9.0 ms–13.0 ms over 3 runs, eager 10.0 ms–12.0 ms over 3 runs" in text
    assert "slower" not in text.split("graph vs eager", 1)[1]


def test_tracing_is_blamed_only_when_it_covers_the_gap() -> None:
    runs = {"graph_runs": [0.050, 0.011], "eager_runs": [0.010, 0.0101]}
    blamed = str(compare_report({"graph_seconds": 0.05, "eager_seconds": 0.01, **runs}, 3, 0.038))
    assert "tracing (38.0 ms for 3 traces) is 95% of the gap" in blamed
    small = str(compare_report({"graph_seconds": 0.05, "eager_seconds": 0.01, **runs}, 1, 0.004))
    assert "not because of tracing: tracing (4.0 ms) explains only 10% of the gap" in small


def test_graph_slower_in_every_repeated_run_says_so() -> None:
    runs = {"graph_runs": [0.021, 0.020, 0.0205], "eager_runs": [0.007, 0.0064, 0.0079]}
    text = str(compare_report({"graph_seconds": 0.021, "eager_seconds": 0.007, **runs}))
    assert "graph mode 2.9× slower" in text
    assert "every graph run was slower, so it is not a one-off either" in " ".join(text.split())
    assert "tracing costs more than it saves" not in text


def test_headline_and_totals_count_wrapper_graphs_apart() -> None:
    """The headline, JSON-derived totals and budgets count traces as TF does: `Dataset.map` of
    a traced tf.function is 1 function and 1 trace, plus tf.data wrapper graphs shown as such."""

    @tf.function
    def prep(x):  # type: ignore[no-untyped-def]
        return x * 2

    with tfgraph_lab.watch(max_traces=1) as w:  # raised TraceBudgetExceeded for the wrapper
        prep(tf.constant(1, tf.int64))
        for _ in range(2):
            list(tf.data.Dataset.range(3).map(prep))
    assert prep.experimental_get_tracing_count() == 1
    for report in (w.report, tfgraph_lab.TraceReport.from_json(w.report.to_json())):
        assert report.traces == 1 and report.retraces == 0
        assert report.wrapper_graphs == {"tf.data wrapper": 2}
        assert list(report.traces_by_function().values()) == [1]
        head = report.headline()
        assert head.startswith("1 function · 3 calls · 1 trace, 0 of them retraces · ")
        assert "· 2 tf.data wrapper graphs · tracing took" in head
        html = report._repr_html_()
        assert "tfgl-wrappers-count'>2</b> tf.data wrapper graphs" in html


@dataclasses.dataclass(frozen=True)
class Config:
    scale: float
    name: str = "a"


def test_frozen_dataclass_reason_shows_the_changed_field_and_a_fix_that_works() -> None:
    """A hashable object is keyed by ==/hash through a weak reference (TF 2.21): the reason
    names the field that changed, holds no reference to the objects, and its fix works."""

    def apply(x, cfg, scale=None):  # type: ignore[no-untyped-def]
        return x * (cfg.scale if scale is None else scale)

    watched = tf.function(apply)
    with tfgraph_lab.watch() as w:
        first = Config(2.0)
        watched(tf.constant(1.0), first)
        watched(tf.constant(1.0), Config(2.0))  # equal while the first lives: no trace
        assert watched.experimental_get_tracing_count() == 1
        watched(tf.constant(1.0), Config(3.0))
    assert watched.experimental_get_tracing_count() == 2
    (reason,) = [r for e in w.report.events for r in e.reasons if r.code == "object-changed"]
    assert (reason.before, reason.after) == ("Config(scale=2.0, …)", "Config(scale=3.0, …)")
    assert "changed value (scale: 2.0 → 3.0)" in reason.message
    assert "an equal new object reuses the graph while the first one is alive" in reason.message
    assert reason.fix.startswith("pass the changing field (scale) as a tensor argument")
    collected = weakref.ref(first)
    del first
    gc.collect()
    assert collected() is None  # the report holds text, not the user's object
    # the fix as printed: one object, the changing field passed as a tensor
    fixed, one = tf.function(apply), Config(2.0)
    assert [float(fixed(tf.constant(1.0), one, tf.constant(s))) for s in (2.0, 3.0)] == [2.0, 3.0]
    assert fixed.experimental_get_tracing_count() == 1


def test_equal_frozen_dataclass_after_the_first_was_collected_says_so() -> None:
    @tf.function
    def apply(x, cfg):  # type: ignore[no-untyped-def]
        return x * cfg.scale

    with tfgraph_lab.watch() as w:
        apply(tf.constant(1.0), Config(2.0))  # a temporary: collected after the call
        gc.collect()
        apply(tf.constant(1.0), Config(2.0))
    assert apply.experimental_get_tracing_count() == 2  # TF retraced for an equal object
    (reason,) = [r for e in w.report.events for r in e.reasons if r.code not in ("first-trace",)]
    assert reason.code == "object-changed"
    assert "equal Config, but the object the graph was traced for was garbage-collected" in reason.message
    assert reason.fix.startswith("keep one object alive")


LAYER_SOURCE = """
def layer(x, training):
    y = x * 2.0
    {body}
    return tf.reduce_sum(y, axis=1)
"""


def exec_layer(body: str) -> Any:
    """`layer` built by exec(): inspect.getsource cannot read it, so AutoGraph cannot convert it."""
    namespace: dict[str, Any] = {"tf": tf}
    exec(compile(LAYER_SOURCE.format(body=body), "<exec>", "exec"), namespace)
    return namespace["layer"]


def test_flag_fix_says_what_to_write_where_autograph_cannot_read_the_source() -> None:
    """TF 2.21: without source, `if training:` on a tensor raises OperatorNotAllowedInGraphError
    under the printed input_signature; the fix text offers the tf.cond form, which works."""
    plain = exec_layer("if training:\n        y = y + 1.0")
    calls = [(tf.ones([n, 8]), t) for n, t in ((32, True), (17, True), (32, False), (9, False))]
    with tfgraph_lab.watch() as w:
        watched = tf.function(plain)
        before = [np.asarray(watched(x, t)) for x, t in calls]
    (reason,) = [r for e in w.report.events for r in e.reasons if r.code == "shape-changed"][:1]
    (snippet,) = [s for s in printed_decorators(reason.fix) if "input_signature" in s]
    decorator = eval(f"dict({snippet})", {"tf": tf})
    with pytest.raises(tf.errors.OperatorNotAllowedInGraphError):  # no source: not converted
        tf.function(plain, **decorator)(*calls[0])
    assert "for exec'd code write tf.cond(training, lambda: ..., lambda: ...)" in reason.fix
    written = tf.function(exec_layer("y = tf.cond(training, lambda: y + 1.0, lambda: y)"), **decorator)
    after = [np.asarray(written(x, t)) for x, t in calls]
    assert all(np.allclose(a, b) for a, b in zip(before, after))
    assert written.experimental_get_tracing_count() == 1


def test_live_counters_leave_wrapper_graphs_out_like_the_report() -> None:
    @tf.function
    def prep(x):  # type: ignore[no-untyped-def]
        return x + 1

    with tfgraph_lab.watch() as w:
        prep(tf.constant(1, tf.int64))
        list(tf.data.Dataset.range(3).map(prep))
        live = w.live_counters()
    assert live.traces == w.report.traces == prep.experimental_get_tracing_count() == 1
