"""Headless tests of the labs: drive controls through their traitlets, check against TF's counts."""

from __future__ import annotations

import pytest

pytest.importorskip("ipywidgets")
tf = pytest.importorskip("tensorflow")

from tfgraph_lab.widgets import LabSettings, PredictionGame, RetraceLab  # noqa: E402
from tfgraph_lab.widgets.scenario import LabScenario  # noqa: E402
from tfgraph_lab.widgets.session import LabSession  # noqa: E402


def _value(html: str) -> int:
    """The number in a stat box: ``<b class='tfgl-value'>3</b>``."""
    start = html.index("tfgl-value'>") + len("tfgl-value'>")
    return int(html[start : html.index("<", start)].replace(",", ""))


def _rows(lab: RetraceLab) -> int:
    return lab.cache_table.value.count("tfgl-graph-row")


def _check_with_tf(lab: RetraceLab) -> None:
    """The lab's trace count, TF's count and the cache table's rows all agree."""
    tf_count = lab.session.function.experimental_get_tracing_count()
    assert _value(lab.trace_count.value) == tf_count
    assert _rows(lab) == tf_count
    state = lab.session.state
    assert sum(row.hits for row in state.graphs) == state.calls - state.failed_calls


def test_batch_change_retraces_with_a_shape_reason() -> None:
    lab = RetraceLab()
    lab.call_button.click()
    assert _value(lab.trace_count.value) == 1
    lab.call_button.click()
    _check_with_tf(lab)
    assert _value(lab.calls.value) == 2
    assert _value(lab.trace_count.value) == 1
    lab.batch.value = 20
    lab.call_button.click()
    _check_with_tf(lab)
    assert _value(lab.trace_count.value) == 2
    assert "tfgl-reason-shape-changed" in lab.reason.value
    assert "(32, 16)" in lab.reason.value and "(20, 16)" in lab.reason.value
    assert "shape=(20, 16)" in lab.cache_table.value


@pytest.mark.parametrize(
    ("flag", "retraces_on_flip"),
    [("python-bool", True), ("python-int", True), ("tensor", False)],
)
def test_flipping_the_flag_value(flag: str, retraces_on_flip: bool) -> None:
    lab = RetraceLab()
    lab.flag.value = flag
    lab.call_button.click()
    lab.training.value = not lab.training.value
    lab.call_button.click()
    _check_with_tf(lab)
    assert (lab.session.tracing_count == 2) is retraces_on_flip
    if retraces_on_flip:
        assert "tfgl-reason-python-value-changed" in lab.reason.value


def test_loop_with_partial_last_batch_and_the_two_cures() -> None:
    lab = RetraceLab(settings=LabSettings(batch=32, loop_calls=6, partial_last=True))
    lab.loop_button.click()
    _check_with_tf(lab)
    assert lab.session.state.calls == 6
    assert lab.session.tracing_count == 2  # the full batches, then the partial one
    lab.input_signature.value = True  # a decorator change: a new, empty function
    assert _value(lab.trace_count.value) == 0 and _rows(lab) == 0
    assert "input_signature=[" in lab.code.value
    lab.loop_button.click()
    _check_with_tf(lab)
    assert lab.session.tracing_count == 1
    assert "None, None" in lab.cache_table.value
    lab.input_signature.value = False
    lab.reduce_retracing.value = True
    lab.loop_button.click()
    lab.loop_button.click()
    _check_with_tf(lab)
    assert lab.session.tracing_count == 2  # (32, 16), then generalised to (None, 16)
    assert "shape=(None, 16)" in lab.cache_table.value


def test_reset_makes_a_new_function_and_empties_the_cache() -> None:
    lab = RetraceLab()
    lab.call_button.click()
    first = lab.session.function
    lab.reset_button.click()
    assert lab.session.function is not first
    assert _value(lab.trace_count.value) == 0 and _value(lab.calls.value) == 0
    lab.call_button.click()
    _check_with_tf(lab)
    assert _value(lab.trace_count.value) == 1


def test_variable_inside_shows_tf_error_and_fix() -> None:
    lab = RetraceLab()
    lab.variable_inside.value = True
    lab.call_button.click()
    assert "singleton tf.Variables" in lab.status.value
    assert "tfgl-fix" in lab.status.value
    assert "tf.Variable(2.0)  # ✗" in lab.code.value
    lab.variable_inside.value = False
    lab.call_button.click()
    assert lab.session.state.last_error is None
    _check_with_tf(lab)


def test_dtype_and_rank_changes_are_named() -> None:
    lab = RetraceLab()
    lab.call_button.click()
    lab.dtype.value = "float64"
    lab.call_button.click()
    assert "tfgl-reason-dtype-changed" in lab.reason.value
    lab.rank.value = 3
    lab.call_button.click()
    assert "tfgl-reason-rank-changed" in lab.reason.value
    _check_with_tf(lab)
    assert lab.session.tracing_count == 3


def test_signature_mismatch_is_shown_not_raised() -> None:
    lab = RetraceLab(settings=LabSettings(input_signature=True))
    lab.call_button.click()
    lab.dtype.value = "int32"
    lab.call_button.click()
    assert "TypeError" in lab.status.value
    _check_with_tf(lab)


def test_predict_mode_scores_and_explains_misses() -> None:
    lab = RetraceLab()
    lab.predict_mode.value = True
    lab.call_button.click()  # no guess yet: nothing runs
    assert lab.session.state.calls == 0 and "choose" in lab.status.value
    lab.prediction.value = True
    lab.call_button.click()  # first call traces: right
    assert lab.prediction.value is None
    lab.prediction.value = True
    lab.call_button.click()  # same call again: cached, a miss
    assert "Miss" in lab.status.value and "reused" in lab.status.value
    lab.batch.value = 7
    lab.prediction.value = False
    lab.call_button.click()  # new shape: traced, a miss explained by the reason
    assert "shape-changed" in lab.status.value
    assert lab.game.correct == 1 and lab.game.scored == 3
    assert "1 / 3" in lab.score.value


def test_prediction_game_pure() -> None:
    session = LabSession()
    game = PredictionGame()
    first = game.record(True, session.call_once(), session.settings, session.state)
    again = game.record(False, session.call_once(), session.settings, session.state)
    assert first.correct and again.correct
    assert game.score_text().startswith("2 / 2")


def test_user_function_and_its_code() -> None:
    def my_step(x, training):  # type: ignore[no-untyped-def]
        return tf.reduce_max(x) if training else tf.reduce_min(x)

    lab = RetraceLab(my_step)
    assert lab.variable_inside.disabled
    lab.call_button.click()
    lab.features.value = 3
    lab.call_button.click()
    _check_with_tf(lab)
    assert lab.session.tracing_count == 2
    assert "my_step = tf.function(my_step)" in lab.code.value
    assert "RetraceLab(my_step)" in lab.text()


@pytest.mark.parametrize(
    ("changes", "expected"),
    [
        ({}, "model_step(x, training=True)"),
        ({"flag": "tensor", "training": False}, "model_step(x, training=tf.constant(False))"),
        ({"flag": "python-int"}, "model_step(x, training=1)"),
        ({"rank": 1, "batch": 5}, "x = tf.ones((5,), tf.float32)"),
        ({"rank": 3, "dtype": "int32"}, "x = tf.ones((32, 4, 16), tf.int32)"),
        ({"reduce_retracing": True}, "@tf.function(reduce_retracing=True)"),
        ({"loop_calls": 4, "batch": 10}, "rows = 10 if step < 3 else 5"),
    ],
)
def test_code_text(changes: dict[str, object], expected: str) -> None:
    settings = LabSettings().with_changes(**changes)
    assert expected in LabScenario().code(settings, settings)


def test_code_text_runs_and_traces_like_the_lab() -> None:
    """The code shown is real: exec it and compare TF's count with the lab's."""
    settings = LabSettings(batch=12, loop_calls=5, reduce_retracing=False)
    session = LabSession(settings=settings)
    session.run_loop()
    namespace: dict[str, object] = {}
    exec(session.code(), namespace)
    assert namespace["model_step"].experimental_get_tracing_count() == session.tracing_count  # type: ignore[attr-defined]


def test_bad_settings_say_what_was_expected() -> None:
    with pytest.raises(ValueError, match="flag must be one of"):
        LabSettings(flag="string")


def test_text_fallback_when_widgets_cannot_render() -> None:
    lab = RetraceLab()
    lab.call_button.click()
    bundle = lab._repr_mimebundle_()
    assert "1 trace, 1 call" in bundle["text/plain"]
    assert "application/vnd.jupyter.widget-view+json" in bundle


def test_control_change_redraws_once_and_is_timed() -> None:
    lab = RetraceLab()
    lab.call_button.click()
    before = len(lab.render_log)
    lab.batch.value = 40
    # One redraw per change, its time kept for the benchmarks (tests assert no wall-clock time).
    assert len(lab.render_log) == before + 1
    assert lab.render_log[-1][1] == lab.last_render_seconds >= 0
    assert "40" in lab.code.value


def _page_text(html: str) -> str:
    """What a sanitized page shows: no <style> (dropped with its text), tags gone, words kept."""
    import re
    from html import unescape

    html = re.sub(r"<style>.*?</style>", "", html, flags=re.S)
    html = re.sub(r"<(div|tr|summary|table)\b", "\n<", html)
    text = unescape(re.sub(r"<[^>]+>", "", html))
    return "\n".join(" ".join(line.split()) for line in text.splitlines() if line.strip())


def test_saved_lab_output_says_what_the_lab_showed() -> None:
    """Beside the widget view, the lab's output carries text and HTML that static pages show."""
    import re

    lab = RetraceLab()
    lab.call_button.click()
    bundle = lab._repr_mimebundle_()
    assert "application/vnd.jupyter.widget-view+json" in bundle
    assert bundle["text/plain"].startswith("RetraceLab(model_step): 1 trace, 1 call, 1 graph in the cache")
    text = _page_text(bundle["text/html"])
    assert "1 trace (TF's own count: 1) · 1 call · 1 graph in cache" in text
    assert "the live lab needs a running kernel" in text
    # first-trace, or new-function-object when an earlier test's lab traced model_step already
    assert re.search(r"why call 1 traced: (first-trace|new-function-object)", text), text
    snapshot = lab.snapshot()._repr_mimebundle_()
    assert set(snapshot) == {"text/plain", "text/html"}  # no widget: it stays in a saved notebook


def test_trace_count_is_announced_when_it_changes() -> None:
    """The ARIA live region's text follows the trace count (and only changes with it)."""
    lab = RetraceLab()
    assert lab.announcer.text == "0 traces (TensorFlow's own count: 0)"
    lab.call_button.click()
    assert lab.announcer.text == "1 trace (TensorFlow's own count: 1)"
    changes: list[str] = []
    lab.announcer.observe(lambda c: changes.append(c["new"]), names="text")
    lab.call_button.click()  # cached: the count does not change, nothing is announced
    assert changes == []
    lab.batch.value = 20
    lab.call_button.click()
    assert changes == ["2 traces (TensorFlow's own count: 2)"]


# ------------------------------------------------------------------ «Apply the fix»


def test_apply_the_fix_shrinks_the_cache_as_tensorflow_counts() -> None:
    lab = RetraceLab(settings=LabSettings(batch=32, loop_calls=6, partial_last=True))
    lab.fix_button.click()  # nothing retraced yet: says so, changes nothing
    assert "none yet" in lab.status.value and lab.session.tracing_count == 0
    lab.loop_button.click()
    lab.batch.value = 20
    lab.call_button.click()
    before = lab.session.tracing_count
    assert before == 3
    plan = lab.session.suggested_fix()
    assert plan is not None and plan.decorator.startswith("input_signature=[")
    assert "replays the 7 calls" in lab.fix_hint.value
    lab.fix_button.click()
    _check_with_tf(lab)
    assert lab.session.tracing_count == plan.graphs == 1
    assert lab.session.state.calls == 7  # the same calls, replayed on the fixed function
    assert "3 graphs → 1 graph for the same 7 calls" in lab.status.value
    assert "@tf.function(input_signature=[tf.TensorSpec([None, 16]" in lab.code.value
    assert "decorator fix: applied" in lab.fix_hint.value
    assert (
        "Applied @tf.function(input_signature=" in lab.text()
        and "3 → 1 graphs for the same 7 calls" in lab.text()
    )
    # by hand: the same decorator on the same calls
    hand = tf.function(
        lab.session.scenario.python_function(lab.session.built), **eval(f"dict({plan.decorator})")
    )
    for settings, batch in lab.session.history:
        hand(*lab.session.scenario.arguments(settings, batch))
    assert hand.experimental_get_tracing_count() == lab.session.tracing_count
    lab.reset_button.click()
    assert "fix is removed" in lab.status.value and "«Apply the fix»" not in lab.code.value


def test_predict_mode_asks_how_many_graphs_before_applying_the_fix() -> None:
    lab = RetraceLab()
    lab.predict_mode.value = True
    for batch in (32, 7):
        lab.batch.value = batch
        lab.prediction.value = True
        lab.call_button.click()
    assert lab.graph_guess_row.layout.display == "" and 1 in lab.graph_guess.options
    lab.fix_button.click()
    assert "how many graphs" in lab.status.value and lab.session.state.fixed is None
    lab.graph_guess.value = 1
    lab.fix_button.click()
    assert lab.session.tracing_count == 1
    assert "Right: 1 graph" in lab.status.value
    assert lab.game.correct == 3 and lab.game.scored == 3


def test_a_fix_that_raises_in_the_lab_says_so_with_tensorflows_error() -> None:
    """Finding (TF 2.21): the flag passed as a Python int: the input_signature makes `training`
    a tf.int32 tensor, and AutoGraph's `if training:` then needs a bool — the replay raises."""
    lab = RetraceLab(settings=LabSettings(flag="python-int"))
    lab.call_button.click()
    lab.batch.value = 7
    lab.call_button.click()
    plan = lab.session.suggested_fix()
    assert plan is not None and "tf.int32" in plan.decorator
    lab.fix_button.click()
    fixed = lab.session.state.fixed
    assert fixed is not None and fixed.error is not None
    assert fixed.error.startswith("ValueError: condition of if statement expected to be `tf.bool`")
    assert "The fix raised while replaying the 2 calls" in lab.status.value
    assert "raised: no graph was added" in lab.status.value and fixed.graphs_after == 0
