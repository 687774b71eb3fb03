"""A long list of retraces is cut where it only repeats itself (issue 32.6): the demo's trap cut
after 8 traces with '… 13 more (see the JSON)' where no JSON was written, and its one `training`
change (True → False, after 12 learning rates) was among the 13."""

from __future__ import annotations

import pytest
import tensorflow as tf

import tfgraph_lab
from tfgraph_lab.model.view import ViewOptions


def step(x, lr, training):  # type: ignore[no-untyped-def]
    y = x * lr
    return tf.nn.dropout(y, 0.1) if training else y


@pytest.fixture
def report() -> tfgraph_lab.TraceReport:
    fn = tf.function(step)
    with tfgraph_lab.watch() as w:
        lr = 0.1
        for _ in range(12):
            fn(tf.ones([2]), lr, True)
            lr *= 0.5
        fn(tf.ones([2]), lr, False)
    assert fn.experimental_get_tracing_count() == 13 == w.report.function("step").traces
    return w.report


@pytest.mark.usefixtures("fresh_recording")
def test_every_reason_is_listed_and_the_cut_names_what_lists_the_rest(
    report: tfgraph_lab.TraceReport,
) -> None:
    text = str(report)
    traces = text.split("traces:", 1)[1]
    assert "training: True → False" in traces, text
    assert "see the JSON" not in text
    assert "… 3 more traces, each for a reason listed above (--all lists them)" in traces, text
    html = report._repr_html_()
    assert "see the JSON" not in html
    assert "training" in html.split("more traces, each for a reason listed above")[0]


@pytest.mark.usefixtures("fresh_recording")
def test_all_lists_every_trace(report: tfgraph_lab.TraceReport) -> None:
    text = str(report.with_view(ViewOptions.everything()))
    assert "more traces" not in text
    assert text.split("traces:", 1)[1].count("python-value-changed  lr:") == 12
