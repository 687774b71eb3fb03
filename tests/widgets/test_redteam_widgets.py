"""Red team, the labs and the live display (issue 23, item 11's guarantees on these surfaces):
hostile inputs get a clear error, nothing of the user's is changed, TensorFlow is exactly as it
was after any failure, and a widget callback that raises shows its error instead of losing it.
Each case failed before its fix."""

from __future__ import annotations

import functools
import warnings
from typing import Any

import pytest

pytest.importorskip("ipywidgets")
tf = pytest.importorskip("tensorflow")

import tfgraph_lab  # noqa: E402
from tfgraph_lab.faces.live_view import LiveDisplay  # noqa: E402
from tfgraph_lab.watching.recorder import is_patched  # noqa: E402
from tfgraph_lab.widgets import LabSettings, RetraceLab  # noqa: E402


def _agrees_with_tf(lab: RetraceLab) -> None:
    state = lab.session.state
    assert state.traces == lab.session.function.experimental_get_tracing_count() == state.tf_traces
    assert len(state.graphs) == state.tf_traces


# ------------------------------------------------------------------ RetraceLab: inputs


def scaled(x: Any, training: Any, scale: float = 1.0) -> Any:
    return tf.reduce_sum(x) * scale


class Step:
    def __call__(self, x: Any, training: Any) -> Any:
        return tf.reduce_sum(x)


@pytest.mark.parametrize(
    "fn",
    [functools.partial(scaled, scale=2.0), Step(), lambda x, training: tf.reduce_sum(x)],
    ids=["partial", "callable object", "lambda"],
)
def test_any_callable_is_counted_as_tf_counts_it(fn: Any) -> None:
    lab = RetraceLab(fn)
    lab.call_button.click()
    lab.batch.value = 7
    lab.call_button.click()
    assert lab.session.state.calls == 2  # was 0 calls, 0 traces for a partial or an object
    _agrees_with_tf(lab)
    code = lab.session.code()
    assert "model_step" not in code and "<lambda> =" not in code  # it is not model_step
    compile(code, "<lab>", "exec")  # the code it shows is Python


@pytest.mark.parametrize(
    "settings, message",
    [
        (dict(batch=500), "batch"),  # the slider showed 128 while calls used 500
        (dict(loop_calls=10**6), "loop_calls"),  # «Run loop» made a million calls
        (dict(batch="3"), "batch"),  # TypeError: '<' not supported
        (dict(batch=2.5), "batch"),  # accepted; the slider showed 2
        (dict(features=True), "features"),
        (dict(training="yes"), "training"),
    ],
)
def test_settings_out_of_the_controls_range_are_refused_clearly(
    settings: dict[str, Any], message: str
) -> None:
    with pytest.raises(ValueError, match=message):
        LabSettings(**settings)


def test_a_failing_rebuild_leaves_the_lab_as_it_was_and_says_why() -> None:
    def needs_extra(x: Any, training: Any, *, extra: Any) -> Any:  # input_signature cannot bind it
        return tf.reduce_sum(x)

    lab = RetraceLab(needs_extra)
    before = lab.session.function
    lab.input_signature.value = True  # raised TypeError out of the control, settings half changed
    assert "keyword-only parameter" in lab.status.value
    assert lab.session.function is before
    assert not lab.session.settings.input_signature and not lab.session.built.input_signature
    assert lab.input_signature.value is False  # the control shows what the lab runs


# ---------------------------------------------------------------- RetraceLab: mid-run


def test_calls_not_made_are_not_replayed_by_apply_the_fix() -> None:
    def fails_on_five(x: Any, training: Any) -> Any:
        if x.shape[0] == 5:
            raise ValueError("no batches of 5")
        return tf.reduce_sum(x)

    lab = RetraceLab(fails_on_five)
    lab.batch.value = 5
    lab.loop_calls.value = 6
    lab.loop_button.click()  # the first call raises: the loop stops there
    assert lab.session.state.calls == 1
    assert len(lab.session.history) == 1  # was 6: «Apply the fix» replayed calls never made


def test_an_interrupt_mid_loop_leaves_tf_unpatched_and_the_lab_in_step() -> None:
    def interrupted(x: Any, training: Any) -> Any:
        if x.shape[0] == 3:  # at trace time: the loop's partial last batch
            raise KeyboardInterrupt
        return tf.reduce_sum(x)

    lab = RetraceLab(interrupted)
    lab.batch.value = 6
    lab.loop_calls.value = 4  # 6, 6, 6, 3
    with pytest.raises(KeyboardInterrupt):
        lab.loop_button.click()
    assert not is_patched()
    assert lab.session.state.calls == 4  # the calls that ran are shown (was: none of them)
    assert len(lab.session.history) == 4
    _agrees_with_tf(lab)


# ---------------------------------------------------------- RetraceLab: callbacks


@pytest.mark.parametrize("button", ["reset_button", "call_button", "fix_button"])
def test_a_widget_callback_that_raises_shows_its_error(button: str, monkeypatch: Any) -> None:
    lab = RetraceLab()
    lab.call_button.click()
    lab.batch.value = 9
    lab.call_button.click()  # a retrace: «Apply the fix» has a fix to apply

    def broken(*args: Any, **kwargs: Any) -> Any:
        raise RuntimeError("a lab bug")

    monkeypatch.setattr(lab, "refresh", broken)  # the redraw after the action fails
    getattr(lab, button).click()
    monkeypatch.undo()
    assert "RuntimeError: a lab bug" in lab.status.value  # shown, not lost in a log
    assert not is_patched()


def test_a_control_callback_that_raises_shows_its_error(monkeypatch: Any) -> None:
    lab = RetraceLab()

    def broken(**changes: Any) -> bool:
        raise RuntimeError("a lab bug in update")

    monkeypatch.setattr(lab.session, "update", broken)
    lab.dtype.value = "float64"  # raised out of the assignment
    assert "RuntimeError: a lab bug in update" in lab.status.value
    assert lab.dtype.value == "float32"  # the control shows what the lab runs


# -------------------------------------------------------------------- live display


@pytest.mark.parametrize(
    "kwargs", [dict(interval="fast"), dict(interval=float("nan")), dict(budget="2%"), dict(interval=None)]
)
def test_live_display_refuses_hostile_settings_clearly(kwargs: dict[str, Any]) -> None:
    with pytest.raises(ValueError, match=r"interval|budget"):
        LiveDisplay(object(), **kwargs)


class BrokenHandle:
    """A display handle whose front end went away: every update raises."""

    def update(self, obj: Any) -> None:
        raise OSError("the front end is gone")


@pytest.fixture
def broken_display(monkeypatch: Any) -> None:
    import IPython.display

    import tfgraph_lab.faces.live_view

    monkeypatch.setattr(tfgraph_lab.faces.live_view, "_in_ipython", lambda: True)  # as in a notebook
    monkeypatch.setattr(IPython.display, "display", lambda *a, **k: BrokenHandle())


@tf.function
def step(x: Any) -> Any:
    return x * 2


def test_a_failing_live_display_never_fails_the_block(broken_display: None) -> None:
    with warnings.catch_warnings(record=True) as said:
        warnings.simplefilter("always")
        with tfgraph_lab.watch(live=True) as w:  # raised OSError as the block ended
            step(tf.ones([2]))
            step(tf.ones([3]))
    assert not is_patched()
    assert w.report.traces == 2
    assert any("live display" in str(m.message) for m in said)  # said once, not lost


def test_a_failing_live_display_never_replaces_the_blocks_error(broken_display: None) -> None:
    warned = pytest.warns(RuntimeWarning, match="live display stopped")
    with warned, pytest.raises(ZeroDivisionError), tfgraph_lab.watch(live=True):  # was the display's OSError
        step(tf.ones([2]))
        raise ZeroDivisionError("the block's own error")
    assert not is_patched()


def test_a_failing_publisher_stops_the_updates_quietly() -> None:
    calls: list[int] = []

    def publish(bundle: dict[str, str]) -> None:
        calls.append(1)
        if len(calls) > 1:
            raise OSError("gone")

    with tfgraph_lab.watch() as recorder, pytest.warns(RuntimeWarning, match="live display stopped"):
        dash = LiveDisplay(recorder, publish=publish).start()
        step(tf.ones([4]))
        dash.update()  # raised OSError into the caller (the loop's thread died with it)
        dash.update()
        dash.close()
    assert dash.last_error is not None and "gone" in dash.last_error
    assert len(calls) == 2  # no more updates after the first failure
    assert not is_patched()


def test_live_outside_ipython_says_so_instead_of_printing_an_object(tmp_path: Any) -> None:
    import os
    import subprocess
    import sys

    script = tmp_path / "train.py"
    script.write_text(
        "import tensorflow as tf, tfgraph_lab\n"
        "f = tf.function(lambda x: x * 2)\n"
        "with tfgraph_lab.watch(live=True) as w:\n"
        "    f(tf.ones([2]))\n"
        "print('traces', w.report.traces)\n"
    )
    env = {**os.environ, "TF_CPP_MIN_LOG_LEVEL": "3", "TF_ENABLE_ONEDNN_OPTS": "0"}
    done = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, env=env, timeout=300)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "traces 1"  # was '<tfgraph_lab.faces.live_view._Bundle object at 0x…>'
    assert "live=True" in done.stderr and "IPython" in done.stderr


# ------------------------------------------------------------------ report explorer


@pytest.mark.parametrize("bad", [42, None, {"functions": []}])
def test_the_explorer_refuses_what_is_not_a_report_clearly(bad: Any) -> None:
    from tfgraph_lab.widgets import ReportExplorer

    with pytest.raises(TypeError, match="TraceReport"):  # was AttributeError: no 'functions'
        ReportExplorer(bad)


def test_the_explorer_opens_a_saved_report_and_names_a_bad_one(tmp_path: Any) -> None:
    from tfgraph_lab.widgets import ReportExplorer

    with tfgraph_lab.watch() as w:
        step(tf.ones([5]))
    good = tmp_path / "good.json"
    good.write_text(w.report.to_json())
    assert ReportExplorer(str(good)).report.traces == w.report.traces  # was AttributeError on a str
    bad = tmp_path / "bad.json"
    bad.write_text('{"version": 1, "functions": [{"qualname": null}]}')
    with pytest.raises(ValueError, match=r"\$\.functions\[0\]"):
        ReportExplorer(bad)


def test_an_explorer_callback_that_fails_shows_in_its_detail_pane(monkeypatch: Any) -> None:
    """Its callbacks run through ReportExplorer._safely, as the labs' do (issue 31: they raised
    into ipywidgets' log, where a notebook user never sees them)."""
    from tfgraph_lab.widgets import ReportExplorer

    with tfgraph_lab.watch() as w:
        step(tf.ones([5]))
        step(tf.ones([6]))
    explorer = ReportExplorer(w.report)

    def broken() -> None:
        raise RuntimeError("no such call")

    monkeypatch.setattr(explorer, "_show", broken)
    other = next(value for _, value in explorer.calls.options if value != explorer.calls.value)
    explorer.calls.value = other
    assert "RuntimeError: no such call" in explorer.detail.value


@pytest.mark.parametrize(
    "kwargs, error",
    [
        (dict(goal=42), TypeError),  # AttributeError: 'int' object has no attribute 'replace'
        (dict(settings=[("batch", 3)]), TypeError),  # AttributeError: no 'reduce_retracing'
        (dict(settings={"batch": 500}), ValueError),  # a dict of fields is checked as LabSettings
    ],
)
def test_lab_arguments_of_the_wrong_kind_are_refused_clearly(kwargs: dict[str, Any], error: type) -> None:
    with pytest.raises(error, match=r"goal|settings|batch"):
        RetraceLab(**kwargs)


def test_lab_settings_may_be_a_dict_of_fields() -> None:
    lab = RetraceLab(settings={"batch": 12, "flag": "tensor"})  # was AttributeError
    assert lab.batch.value == lab.session.settings.batch == 12


def test_a_tf_function_passed_in_is_said_to_be_rewrapped() -> None:
    """The lab traces the Python function with its own decorator: the user's options (here
    reduce_retracing) would silently not apply."""
    lab = RetraceLab(tf.function(scaled, reduce_retracing=True))
    assert "options of the tf.function you passed are not used" in lab.status.value
    assert "reduce_retracing" not in lab.session.code()  # the code shows what runs


# ------------------------------------------------------- invisible characters (item 11)

INVISIBLE = ("\u202e", "\u200b")


def _sneaky(x: Any, training: Any = True) -> Any:
    s = "a\u202eb"  # a bidi override in a string of the source (Trojan Source)
    return tf.reduce_sum(x) * len(s)


_sneaky.__name__ = _sneaky.__qualname__ = "step\u200b_\u202epaehc"


def test_the_live_display_shows_invisible_characters_in_names() -> None:
    published: list[dict[str, str]] = []
    fn = tf.function(_sneaky)
    with tfgraph_lab.watch() as recorder:
        dash = LiveDisplay(recorder, publish=published.append).start()
        fn(tf.ones([2]))
        fn(tf.ones([3]))  # a retrace: the live view names the function
        dash.update()
        dash.close()
    shown = " ".join(b["text/plain"] + b["text/html"] for b in published)
    assert "\\u202e" in shown  # was the raw override, reversing what follows it
    assert not any(char in shown for char in INVISIBLE)


def test_the_lab_shows_invisible_characters_in_its_code_and_name(tmp_path: Any, monkeypatch: Any) -> None:
    source = tmp_path / "trojan.py"  # a bidi override inside a string of the user's source
    source.write_text(
        'import tensorflow as tf\n\ndef step(x, training):\n    s = "a\u202eb"\n    return tf.reduce_sum(x)\n'
    )
    monkeypatch.syspath_prepend(str(tmp_path))
    import trojan

    from tfgraph_lab.widgets.fallback import lab_snapshot_html

    for fn in (trojan.step, _sneaky):
        lab = RetraceLab(fn, goal="one graph\u202e for all")
        lab.call_button.click()
        lab.batch.value = 5
        lab.call_button.click()
        shown = "".join(w.value for w in (lab.children[0], lab.status, lab.reason, lab.code))
        shown += lab.text() + lab_snapshot_html(lab)
        assert not any(char in shown for char in INVISIBLE)  # the source's override passed raw


def test_what_tensorflow_raised_is_shown_with_its_control_characters_written_out() -> None:
    """Issue 33.6: the lab's "TensorFlow raised" box showed an error's bidi override raw."""

    def step(x: Any, training: Any) -> Any:
        raise ValueError("bad \u202e name \x00 \u2028 here")

    lab = RetraceLab(step)
    lab.call_button.click()
    assert "TensorFlow raised" in lab.status.value
    assert not any(char in lab.status.value for char in ("\u202e", "\x00", "\u2028"))
    assert "\\u202e name \\x00" in lab.status.value
