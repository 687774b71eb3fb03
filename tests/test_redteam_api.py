"""Red team, the Python API and the renderings (issue 23): invisible characters in user names
(item 11). Each case failed before its fix."""

from __future__ import annotations

from typing import Any

import pytest

tf = pytest.importorskip("tensorflow")

import tfgraph_lab  # noqa: E402

INVISIBLE = {"\u202e": "\\u202e", "\u200b": "\\u200b", "\u2066": "\\u2066", "\ufeff": "\\ufeff"}
# A name that reads "step_cheap" in an editor that obeys the override, and hides a zero-width space.
SNEAKY = "step\u200b_\u202epaehc"


@pytest.fixture(scope="module")
def sneaky_report() -> Any:
    def step(x: Any) -> Any:
        return x * 2

    step.__name__ = step.__qualname__ = SNEAKY  # what a decorator or generated code can set
    fn = tf.function(step)
    with tfgraph_lab.watch() as w:
        fn(tf.ones([1]))
        fn(tf.ones([2]))
    return w.report


def _visible(shown: str) -> None:
    for char, written in INVISIBLE.items():
        assert char not in shown, f"{written} passed raw"
    assert "\\u202e" in shown and "\\u200b" in shown


def test_the_data_keeps_the_name_verbatim(sneaky_report: Any) -> None:
    assert sneaky_report.functions[0].qualname == SNEAKY  # JSON and data: the truth, unchanged


def test_text_and_html_show_invisible_characters(sneaky_report: Any) -> None:
    _visible(str(sneaky_report))
    _visible(sneaky_report._repr_html_())


def test_the_retrace_notice_shows_them_too(sneaky_report: Any) -> None:
    from tfgraph_lab.render.notice import RetraceNotice

    notice = RetraceNotice(sneaky_report)
    _visible(str(notice))
    _visible(notice._repr_mimebundle_()["text/html"])


def test_the_explorer_widget_shows_them(sneaky_report: Any) -> None:
    pytest.importorskip("ipywidgets")
    from tfgraph_lab.widgets.explorer import ReportExplorer

    explorer = ReportExplorer(sneaky_report)
    labels = [label if isinstance(label, str) else label[0] for label in explorer.function.options]
    _visible(" ".join(labels))
    _visible(" ".join(label for label, _ in explorer.calls.options))
    explorer.function.value = SNEAKY  # the filter still selects by the real name
    assert len(explorer.calls.options) == 2
