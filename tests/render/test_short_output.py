"""Output a person reads in seconds (issue 22): short fixes said once, live-log lines of at most
200 characters, TensorFlow's retracing warning not printed by TF's default handler while a watch explains it
(the user's handlers still get it) and back after."""

from __future__ import annotations

import logging
from typing import Any

import pytest

tf = pytest.importorskip("tensorflow")

import tfgraph_lab  # noqa: E402
from tfgraph_lab.explain.arguments import LAST_BATCH_FIX  # noqa: E402
from tfgraph_lab.explain.fix_text import SUMMARY_CHARS, short_fix  # noqa: E402
from tfgraph_lab.explain.fixes import code_name  # noqa: E402
from tfgraph_lab.model.records import Reason  # noqa: E402
from tfgraph_lab.recording.tf_warnings import tf_default_handlers  # noqa: E402
from tfgraph_lab.watching.livelog import LINE_CHARS, PREFIX, format_retrace  # noqa: E402


class Records(logging.Handler):
    def __init__(self) -> None:
        super().__init__(logging.DEBUG)
        self.messages: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.messages.append(record.getMessage())


def _retrace_often(fn) -> None:  # type: ignore[no-untyped-def]
    for n in range(1, 9):  # 8 traces in 8 calls: TF warns ("5 out of the last 5 calls ...")
        fn(tf.ones([n]))


def test_tf_retracing_warning_is_quiet_inside_a_watch_and_back_after() -> None:
    logger = tf.get_logger()
    records = Records()
    logger.addHandler(records)
    filters = list(logger.filters)
    try:

        @tf.function
        def inside(x):
            return x + 1

        @tf.function
        def after(x):
            return x + 2

        defaults = tf_default_handlers(logger)
        with tfgraph_lab.watch() as w:
            _retrace_often(inside)
            said = logging.LogRecord("tensorflow", logging.WARNING, "f.py", 1, w.report.warnings[0], None, None)
            assert all(not h.filter(said) for h in defaults)  # TF's default handler prints none
        # the user's own handler on TF's logger still gets it (issue 33.2)
        assert [m for m in records.messages if "retracing" in m and "inside" in m], records.messages
        assert w.report.warnings and "retracing" in w.report.warnings[0]  # kept for the report
        assert logger.filters == filters  # restored exactly
        _retrace_often(after)  # TensorFlow warns again once no watch explains it
        assert [m for m in records.messages if "retracing" in m and "after" in m], records.messages
    finally:
        logger.removeHandler(records)
    text = str(w.report)
    assert "kept quiet while the watch explained it" in text and " at 0x" not in text


def test_fix_is_said_once_in_its_short_form_and_whole_in_the_json() -> None:
    @tf.function
    def step(x, y):
        return tf.reduce_sum(x) + tf.reduce_sum(y)

    with tfgraph_lab.watch() as w:
        for n in (32, 32, 8):
            step(tf.ones([n, 4]), tf.ones([n, 1]))
    reasons = [r for e in w.report.events for r in e.reasons if r.code == "shape-changed"]
    assert [r.argument for r in reasons] == ["x", "y"] and reasons[0].fix == reasons[1].fix
    short = short_fix(reasons[0], "step")
    # the fix that holds for any source of batches leads; tf.data's drop_remainder stays in the data
    assert short.summary == "declare an input_signature with None where dimensions vary"
    assert reasons[0].fix.endswith("; or " + LAST_BATCH_FIX)
    assert short.code.startswith("@tf.function(input_signature=[tf.TensorSpec([None, 4], tf.float32)")
    assert short.tradeoff.startswith("another dtype or rank then raises TypeError")
    text = str(w.report)
    assert text.count(short.summary) == 1 and "fix: as for `x` above" in text
    assert short.code.split("  #")[0] in text and f"trade-off: {short.tradeoff}" in text
    assert reasons[0].fix not in text  # the long paragraph stays in the data (JSON, log record)
    assert reasons[0].fix in w.report.to_json()
    html = w.report._repr_html_()
    assert "<summary>full fix</summary>" in html


def test_live_log_line_is_at_most_200_characters_and_says_where_to_read_more() -> None:
    long_fix = Reason(
        "python-value-changed",
        "learning_rate_schedule_value",
        "0.000390625",
        "0.0001953125",
        "m",
        "pass `learning_rate_schedule_value` as a tensor so one graph serves every value: " + "x" * 900,
    )
    qualname = "a_very_long_module_name.<locals>.SomeClass.method_with_a_long_name.<locals>.train_step"
    line = format_retrace(
        qualname,
        [long_fix] * 3,
        "some/deeply/nested/package/path/train.py:1234",
        1.5,
        "Thread-7",
        "get_concrete_function",
    )
    assert len(PREFIX + line) <= 200 and len(line) <= LINE_CHARS
    assert line.endswith("see the report") and "train_step" in line
    short = short_fix(long_fix, code_name(qualname))
    assert short.summary == "pass `learning_rate_schedule_value` as a tensor so one graph serves every value"


def test_a_notebooks_8th_report_shows_what_that_cell_did(shell: Any) -> None:
    ip = shell
    ip.run_cell("import tensorflow as tf\n@tf.function\ndef cellwise(x):\n    return x * 2\n")
    for n in range(1, 9):  # eight cells, each calling with a new size (and the first size again)
        assert ip.run_cell(
            f"%%tracewatch -q -v rep{n}\ncellwise(tf.ones([{n}]))\ncellwise(tf.ones([1]))\n"
        ).success
    rep = ip.user_ns["rep8"]
    fn = rep.function("cellwise")
    assert len(fn.graphs) == 8 and fn.traces == 1
    text = str(rep)
    cache = text.split("graph cache:", 1)[1].split("traces:", 1)[0]
    rows = [line for line in cache.splitlines() if line.startswith("    #")]
    assert [row.split()[0] for row in rows] == ["#0", "#7"]  # the size-1 graph it hit, the new one
    assert "6 graphs from earlier cells, not used here (--all lists them)" in cache
    html = rep._repr_html_()
    assert "<summary>6 graphs from earlier cells, not used here</summary>" in html
    every = str(rep.with_options(show_framework=True)).split("graph cache:", 1)[1]
    assert sum(line.startswith("    #") for line in every.splitlines()) == 8


def test_compare_eager_ratio_is_said_with_the_numbers_it_comes_from() -> None:
    from tfgraph_lab.render.compare import compare_verdict

    runs = {"graph_runs": [0.423, 0.0118, 0.0119], "eager_runs": [0.0036, 0.0037, 0.0035]}
    text = compare_verdict({"graph_seconds": 0.423, "eager_seconds": 0.0036, **runs}, 0.41, 3)
    ratio, basis = text.split(" (", 1)
    assert basis.startswith("median 11.9 ms vs 3.6 ms;")  # not the watched run's 423 ms
    assert ratio == f"graph mode {11.9 / 3.6:.1f}× slower" == "graph mode 3.3× slower"


def test_a_fix_for_one_argument_counts_what_it_saves_checked_under_tensorflow() -> None:
    def body(x, lr, training):  # type: ignore[no-untyped-def]
        return x * lr + (1.0 if training else 0.0)

    calls = [(0.1, True), (0.05, True), (0.025, True), (0.025, False)]
    watched = tf.function(body)
    with tfgraph_lab.watch() as w:
        for lr, training in calls:
            watched(tf.ones([2]), lr, training)
    (reason,) = [r for e in w.report.events for r in e.reasons if r.argument == "training"]
    plan = reason.plans[0]
    assert plan.call == (("training", "tf.constant(training)"),)
    assert plan.promise.startswith("1 fewer graph: 3 graphs instead of 4 for the calls seen")
    fixed = tf.function(body)
    for lr, training in calls:  # the fix applied, as printed
        fixed(tf.ones([2]), lr, tf.constant(training))
    assert watched.experimental_get_tracing_count() == 4  # "instead of 4"
    assert fixed.experimental_get_tracing_count() == plan.graphs == 3  # "3 graphs": 1 fewer


def test_a_long_summary_is_cut_between_its_two_ways_not_mid_sentence() -> None:
    from tfgraph_lab.explain.fix_text import _clip_summary

    demo = (  # two ways in one summary: once cut mid-sentence as "… with None where…"
        "pass tensors of one rank (reshape first, or pad the shorter ones to the longest), or "
        "accept any rank: declare an input_signature with None where dimensions vary"
    )
    assert _clip_summary(demo) == "pass tensors of one rank (reshape first, or pad the shorter ones to the longest), or:"
    assert _clip_summary("pass `lr` as a tensor") == "pass `lr` as a tensor"
    one_way = "declare " + "a very long clause " * 10
    assert _clip_summary(one_way).endswith("…") and len(_clip_summary(one_way)) <= SUMMARY_CHARS


def test_a_cache_of_many_graphs_shows_its_first_and_last_rows_and_folds_the_rest() -> None:
    """The demo's trap held 22 graphs (one per learning rate and batch size), 22 rows to scroll
    past before the first reason; a long cache shows 5 + 2 rows, and --all shows every one."""
    step = tf.function(lambda x, lr: x * lr)
    with tfgraph_lab.watch() as rec:
        for n in range(12):
            step(tf.ones([2]), 0.1 * (n + 1))
    assert step.experimental_get_tracing_count() == 12
    report = rec.report
    cache = str(report).split("graph cache:", 1)[1].split("traces:", 1)[0]
    rows = [line.split()[0] for line in cache.splitlines() if line.startswith("    #")]
    assert rows == ["#0", "#1", "#2", "#3", "#4", "#10", "#11"]
    assert "    … 5 more graphs (--all lists them)" in cache
    html = report._repr_html_()
    assert "<summary>5 more graphs</summary>" in html and html.count("<td class='tfgl-num'>#") == 12
    every = str(report.with_options(show_framework=True)).split("graph cache:", 1)[1].split("traces:", 1)[0]
    assert sum(line.startswith("    #") for line in every.splitlines()) == 12
