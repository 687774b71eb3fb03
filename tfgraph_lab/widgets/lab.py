"""``RetraceLab``: an ipywidgets lab around a small tf.function, with live trace counts.

A view over :class:`~tfgraph_lab.widgets.session.LabSession` (settings, actions, state) and
:class:`~tfgraph_lab.widgets.predict.PredictionGame`: controls write settings, buttons run
actions, ``refresh`` redraws the displays from the session's state. Rendering is plain HTML
from :mod:`tfgraph_lab.render` (the stylesheet, chart and reason boxes the report uses too) and
:mod:`~tfgraph_lab.widgets.lab_panels` (status, reasons and graph cache from the state).
Imports ipywidgets; TensorFlow only through the session.
"""

from __future__ import annotations

import sys
import time
from collections import deque
from collections.abc import Callable, Mapping
from html import escape
from typing import Any

import ipywidgets as W

from ..render.blocks import count_html, stat_html
from ..render.chart import chart_html
from ..render.format import fmt_seconds, plural, visible
from ..render.style import ROOT, style_tag
from ..render.timeline import TimelinePoint
from .fallback import lab_snapshot_html, lab_text, live_region, set_live_text, snapshot_bundle
from .lab_panels import cache_html, fix_hint_html, reason_html, status_html, xla_count_html
from .parts import LABEL_WIDTH, add_classes, labelled, section
from .predict import PredictionGame
from .scenario import BOUNDS, DTYPES, FLAG_MODES, RANKS, LabSettings
from .session import ActionResult, LabSession

__all__ = ["RetraceLab"]

_LABEL = {"description_width": LABEL_WIDTH}
_WIDE = W.Layout(width="390px")


class RetraceLab(W.VBox):  # type: ignore[misc]
    """Toggle argument kinds, shapes and decorator options; watch traces and the graph cache.

    ``RetraceLab()`` traces the built-in ``model_step(x, training)``; ``RetraceLab(fn)`` traces
    any ``fn(x, training=...)``. ``settings`` presets the controls; ``goal`` is a task shown
    under the title (lessons open each lab with one). Controls are attributes (``lab.batch.value = 20``), buttons
    too (``lab.call_button.click()``), so lessons and tests can drive the lab in code.
    """

    def __init__(
        self,
        fn: Callable[..., Any] | None = None,
        settings: LabSettings | Mapping[str, Any] | None = None,
        goal: str = "",
        **kwargs: Any,
    ) -> None:
        if not isinstance(goal, (str, type(None))):
            raise TypeError(f"goal is the task shown under the title, a str; got {type(goal).__name__}")
        goal = goal or ""
        self.session = LabSession(fn, settings)
        self.game = PredictionGame()
        self.last_render_seconds = 0.0
        #: ``(what, seconds)`` of recent redraws: the server-side cost of a control change or an
        #: action's display update, TensorFlow's own work excluded.
        self.render_log: deque[tuple[str, float]] = deque(maxlen=100)
        s = self.session.settings
        self.flag = W.ToggleButtons(
            options=[(label, key) for key, label in FLAG_MODES.items()],
            value=s.flag,
            style={"button_width": "104px"},
        )
        self.training = W.Checkbox(value=s.training, description="training (the flag's value)", indent=False)
        self.batch = W.IntSlider(
            value=s.batch,
            min=BOUNDS["batch"][0],
            max=BOUNDS["batch"][1],
            description="batch size",
            style=_LABEL,
            layout=_WIDE,
        )
        self.features = W.IntSlider(
            value=s.features,
            min=BOUNDS["features"][0],
            max=BOUNDS["features"][1],
            description="feature size",
            style=_LABEL,
            layout=_WIDE,
        )
        self.dtype = W.Dropdown(
            options=list(DTYPES),
            value=s.dtype,
            description="dtype",
            style=_LABEL,
            layout=W.Layout(width="260px"),
        )
        self.rank = W.ToggleButtons(options=list(RANKS), value=s.rank, style={"button_width": "40px"})
        self.input_signature = W.Checkbox(
            value=s.input_signature, indent=False, description="input_signature with None dims"
        )
        self.reduce_retracing = W.Checkbox(
            value=s.reduce_retracing, description="reduce_retracing=True", indent=False
        )
        self.jit_compile = W.Checkbox(value=s.jit_compile, description="jit_compile=True (XLA)", indent=False)
        self.variable_inside = W.Checkbox(
            value=s.variable_inside,
            indent=False,
            description="create a tf.Variable inside (anti-pattern)",
            disabled=not self.session.scenario.builtin,
        )
        self.loop_calls = W.IntSlider(
            value=s.loop_calls,
            min=BOUNDS["loop_calls"][0],
            max=BOUNDS["loop_calls"][1],
            description="loop: calls",
            style=_LABEL,
            layout=_WIDE,
        )
        self.partial_last = W.Checkbox(
            value=s.partial_last, description="loop: last batch is partial", indent=False
        )
        button = W.Layout(width="124px")
        # No button_style: ipywidgets' white-on-colour styles miss 4.5:1 (warning 2.7:1 in
        # JupyterLab Light, primary 3.1:1 in Dark); the theme's own button colours pass.
        self.call_button = W.Button(description="Call once", icon="play", layout=button)
        self.loop_button = W.Button(description="Run loop", icon="forward", layout=button)
        self.reset_button = W.Button(description="Reset cache", icon="refresh", layout=button)
        # its label is longer than the others': as wide as it needs (124px cut it to "Apply ...")
        self.fix_button = W.Button(
            description="Apply the fix", icon="wrench", layout=W.Layout(min_width="140px", flex="0 0 auto")
        )
        self.fix_hint = W.HTML()
        # Predict mode asks before «Apply the fix»: how many graphs will the cache hold?
        self.graph_guess = W.ToggleButtons(options=[], value=None, style={"button_width": "40px"})
        self.graph_guess_row = labelled("graphs after the fix", self.graph_guess)
        self.predict_mode = W.Checkbox(
            value=False, description="Predict mode: guess before each call", indent=False
        )
        self.prediction = W.ToggleButtons(
            options=[("will trace", True), ("won't trace", False)],
            value=None,
            style={"button_width": "96px"},
        )
        self.score = W.HTML()
        self.guess_row = labelled("your guess", self.prediction)
        self.controls: dict[str, W.Widget] = {
            "flag": self.flag,
            "training": self.training,
            "batch": self.batch,
            "features": self.features,
            "dtype": self.dtype,
            "rank": self.rank,
            "input_signature": self.input_signature,
            "reduce_retracing": self.reduce_retracing,
            "variable_inside": self.variable_inside,
            "jit_compile": self.jit_compile,
            "loop_calls": self.loop_calls,
            "partial_last": self.partial_last,
        }
        for control in self.controls.values():
            control.add_class("tfgl-control")
            control.observe(self._on_control, names="value")
        add_classes(self, [*self.controls, "call_button", "loop_button", "reset_button"])
        add_classes(self, ["predict_mode", "prediction", "score", "fix_button", "fix_hint", "graph_guess"])
        # Every callback through _safely: an error shows in the lab (ipywidgets would only log it)
        self.call_button.on_click(lambda _: self._safely(lambda: self._act(self.session.call_once)))
        self.loop_button.on_click(lambda _: self._safely(lambda: self._act(self.session.run_loop)))
        self.reset_button.on_click(lambda _: self._safely(self._reset))
        self.fix_button.on_click(lambda _: self._safely(self._apply_fix))
        self.predict_mode.observe(lambda _: self._safely(self.refresh), names="value")
        self.prediction.observe(lambda _: self._safely(self._refresh_buttons), names="value")
        self._reverting = False

        self.trace_count = W.HTML().add_class("tfgl-trace-count")
        self.calls = W.HTML().add_class("tfgl-calls")
        self.graph_count = W.HTML().add_class("tfgl-graph-count")
        self.xla_count = W.HTML().add_class("tfgl-xla-count")
        self.last_time = W.HTML().add_class("tfgl-last-time")
        self.status = W.HTML().add_class("tfgl-status")
        self.reason = W.HTML().add_class("tfgl-reason")
        self.cache_table = W.HTML().add_class("tfgl-cache-table")
        self.timing = W.HTML().add_class("tfgl-timing")
        self.code = W.HTML().add_class("tfgl-code-block")
        #: Screen readers hear the trace count when it changes (a persistent ARIA live region).
        self.announcer = live_region()

        name = escape(self.session.scenario.name)
        header = W.HTML(
            style_tag() + f"<div class='tfgl-lab-title'>RetraceLab · <code>{name}</code></div>"
            "<div class='tfgl-lab-sub'>Change how the function is called, then call it: watch when "
            "TensorFlow traces a new graph, and why.</div>"
            + (f"<div class='tfgl-lab-goal'><b>Goal:</b> {escape(visible(goal))}</div>" if goal else "")
        )
        self.goal = goal
        controls = W.VBox(
            [
                section("Arguments"),
                labelled("flag passed as", self.flag),
                self.training,
                self.batch,
                self.features,
                self.dtype,
                labelled("rank", self.rank),
                section("Decorator (a change makes a new tf.function)"),
                self.input_signature,
                self.reduce_retracing,
                self.jit_compile,
                self.variable_inside,
                section("Run"),
                self.loop_calls,
                self.partial_last,
                W.HBox([self.call_button, self.loop_button, self.reset_button]),
                W.HBox([self.fix_button, self.fix_hint]),
                section("Game"),
                self.predict_mode,
                self.guess_row,
                self.graph_guess_row,
                self.score,
            ],
            layout=W.Layout(width="480px", padding="0 16px 0 0"),
        ).add_class("tfgl-controls")
        display = W.VBox(
            [
                W.HBox(
                    [self.trace_count, self.xla_count, self.calls, self.graph_count, self.last_time],
                    layout=W.Layout(flex_flow="row wrap"),
                ),
                self.announcer,
                self.status,
                self.reason,
                section("Graph cache (one row per graph)"),
                self.cache_table,
                section("Recent calls"),
                self.timing,
            ],
            layout=W.Layout(flex="1 1 0", min_width="380px"),
        ).add_class("tfgl-display")
        super().__init__(
            [
                header,
                W.HBox([controls, display], layout=W.Layout(flex_flow="row wrap")),
                section("The code these settings amount to"),
                self.code,
            ],
            **kwargs,
        )
        self.add_class(ROOT)
        self.add_class("tfgl-lab")
        self.add_class("tfgl-retrace-lab")
        self.refresh()

    # ---------------------------------------------------------------------- events
    def _on_control(self, change: dict[str, Any]) -> None:
        if self._reverting:
            return
        name = next(k for k, w in self.controls.items() if w is change["owner"])
        try:
            self.session.update(**{name: change["new"]})
        except (ValueError, TypeError) as exc:  # bad settings, or a decorator TF refuses
            self._revert(name)
            self.status.value = (
                f"<div class='tfgl-reason-box tfgl-error'>{escape(f'{type(exc).__name__}: {exc}')}</div>"
            )
            return
        except Exception:
            self._revert(name)
            self._show_traceback()
            return
        self._safely(lambda: self.refresh(what=f"control {name}"))

    def _revert(self, name: str) -> None:
        """Put a control back to the session's setting: it shows what the lab runs."""
        self._reverting = True
        try:
            self.controls[name].value = getattr(self.session.settings, name)
        finally:
            self._reverting = False

    def _safely(self, callback: Callable[[], Any]) -> None:
        """Run a widget callback; an error shows in the lab's status (a lab bug must show, not
        vanish in a callback). KeyboardInterrupt goes on: the learner stopped it."""
        try:
            callback()
        except Exception:
            self._show_traceback()

    def _act(self, action: Callable[[], ActionResult]) -> None:
        predicted = self.prediction.value
        if self.predict_mode.value and predicted is None:
            self.status.value = (
                "<div class='tfgl-reason-box tfgl-retrace'>Predict mode: choose <b>will trace</b> or "
                "<b>won't trace</b> first.</div>"
            )
            return
        # The buttons stay enabled while the action runs: disabling the button that was just
        # pressed takes the keyboard focus away from it (a keyboard user lands nowhere), and the
        # kernel runs clicks one after the other anyway.
        try:
            result = action()
        except Exception:  # a lab bug must show, not vanish in a callback
            self._show_traceback()
            return
        verdict = None
        if self.predict_mode.value and predicted is not None:
            verdict = self.game.record(bool(predicted), result, self.session.settings, self.session.state)
            self.prediction.value = None
        self.refresh(verdict, what=result.kind)

    def _apply_fix(self) -> None:
        """Apply the last retrace's decorator fix and replay the calls (predict mode: guess first)."""
        if self.session.suggested_fix() is None:
            self.status.value = f"<div class='tfgl-reason-box'>{fix_hint_html(self.session, False)}</div>"
            return
        guess = self.graph_guess.value
        if self.predict_mode.value and guess is None:
            self.status.value = (
                "<div class='tfgl-reason-box tfgl-retrace'>Predict mode: how many graphs will the cache "
                "hold once the fix is applied to the calls so far? Choose first.</div>"
            )
            return
        try:
            fixed = self.session.apply_fix()
        except Exception:  # a lab bug must show, not vanish in a callback
            self._show_traceback()
            return
        verdict = self.game.record_count(int(guess), fixed) if self.predict_mode.value else None
        self.graph_guess.value = None
        self.refresh(verdict, what="fix")

    def _reset(self) -> None:
        self.session.reset()
        self.refresh()

    def _show_traceback(self) -> None:
        import traceback

        text = "".join(traceback.format_exception(*sys.exc_info()))
        self.status.value = f"<div class='tfgl-reason-box tfgl-error'><pre>{escape(visible(text))}</pre></div>"

    # --------------------------------------------------------------------- drawing
    def refresh(self, verdict: Any = None, what: str = "refresh") -> None:
        """Redraw every display from the session state (no TensorFlow work here)."""
        t0 = time.perf_counter()
        session, state = self.session, self.session.state
        self.trace_count.value = count_html(
            state.traces, "trace", "traces", f"TF's own count: {state.tf_traces}", big=True
        )
        set_live_text(
            self.announcer, f"{plural(state.traces, 'trace')} (TensorFlow's own count: {state.tf_traces})"
        )
        self.calls.value = count_html(state.calls, "call", "calls")
        self.graph_count.value = count_html(len(state.graphs), "graph in cache", "graphs in cache")
        self.xla_count.value = xla_count_html(state) if session.built.jit_compile else ""
        self.xla_count.layout.display = "" if session.built.jit_compile else "none"
        last = state.points[-1].seconds if state.points else None
        self.last_time.value = stat_html("last call", fmt_seconds(last) if last is not None else "–")
        # what TensorFlow raised and the graphs' signatures hold the user's text: written visible
        self.status.value = visible(status_html(state, verdict, session.built.jit_compile))
        self.reason.value = visible(reason_html(state))
        self.cache_table.value = visible(cache_html(state))
        self.timing.value = chart_html(
            [TimelinePoint(p.number, p.number, p.seconds, p.traced, "", p.failed) for p in state.points],
            f"time of the last {plural(len(state.points), 'call')}",
            embed="svg",
            width=460,
            height=110,
        )
        self.code.value = f"<pre>{escape(session.code())}</pre>"
        self.score.value = f"<span class='tfgl-muted'>score: {escape(self.game.score_text())}</span>"
        self._refresh_buttons()
        self.last_render_seconds = time.perf_counter() - t0
        self.render_log.append((what, self.last_render_seconds))

    def _refresh_buttons(self) -> None:
        predicting = self.predict_mode.value
        self.fix_hint.value = fix_hint_html(self.session, predicting)
        offer = predicting and self.session.suggested_fix() is not None
        options = list(range(1, max(self.session.tracing_count, 1) + 2)) if offer else []
        if list(self.graph_guess.options) != options:
            self.graph_guess.options = options
            self.graph_guess.value = None
        self.graph_guess_row.layout.display = "" if offer else "none"
        self.guess_row.layout.display = "" if self.predict_mode.value else "none"
        self.score.layout.display = "" if self.predict_mode.value else "none"

    # -------------------------------------------------------------------- fallback
    def _repr_mimebundle_(self, **kwargs: Any) -> dict[str, Any]:
        """Beside the widget view, text and HTML that say what the lab showed (static pages)."""
        data: dict[str, Any] = super()._repr_mimebundle_(**kwargs)
        data["text/plain"] = lab_text(self)
        data["text/html"] = lab_snapshot_html(self)
        return data

    def text(self) -> str:
        """The lab's state as text: what a front-end without widgets shows."""
        return lab_text(self)

    def snapshot(self) -> Any:
        """A displayable copy of the lab as it is now (``display(lab.snapshot())`` keeps it in a
        saved notebook, where the live lab needs a kernel)."""
        return snapshot_bundle(self)
