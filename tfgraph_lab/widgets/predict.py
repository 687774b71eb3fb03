"""Predict mode: the learner says "will this retrace?" before each action; score it, explain misses.

Pure logic over :class:`~tfgraph_lab.widgets.session.ActionResult` and the lab settings; imports
neither TensorFlow nor ipywidgets.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from ..model.vocab import ReasonCode
from ..render.format import plural
from ..watching.recorder import NOT_RETRACES
from .scenario import LabSettings
from .session import ActionResult, FixApplied, LabState

__all__ = ["Prediction", "PredictionGame", "explain_outcome"]


@dataclass(frozen=True)
class Prediction:
    """One scored guess: what the learner said, what TensorFlow did, and why."""

    predicted: bool
    traced: bool
    explanation: str
    scored: bool = True

    @property
    def correct(self) -> bool:
        return self.scored and self.predicted == self.traced


@dataclass
class PredictionGame:
    """Keeps the learner's predictions and their score."""

    history: list[Prediction] = field(default_factory=list)

    def record(
        self, predicted: bool, result: ActionResult, settings: LabSettings, state: LabState
    ) -> Prediction:
        scored = result.error is None or result.traced
        prediction = Prediction(
            predicted, result.traced, explain_outcome(predicted, result, settings, state), scored
        )
        self.history.append(prediction)
        return prediction

    def record_count(self, guess: int, fixed: FixApplied) -> Prediction:
        """A guess of how many graphs the cache holds once a fix is applied (predict mode asks
        before «Apply the fix»): right when it equals TensorFlow's own count."""
        after = fixed.graphs_after
        said = f"you said {guess}"
        head = (
            f"Right: {plural(after, 'graph')}" if guess == after else f"Miss: {said}, TensorFlow kept {after}"
        )
        text = (
            f"{head} for the {plural(fixed.calls, 'call')} so far ({fixed.graphs_before} before the fix)."
            f" The fix's own promise: {fixed.plan.promise}."
        )
        prediction = Prediction(True, guess == after, text)  # correct: predicted == traced
        self.history.append(prediction)
        return prediction

    @property
    def scored(self) -> int:
        return sum(1 for p in self.history if p.scored)

    @property
    def correct(self) -> int:
        return sum(1 for p in self.history if p.correct)

    @property
    def misses(self) -> list[Prediction]:
        return [p for p in self.history if p.scored and not p.correct]

    def score_text(self) -> str:
        if not self.scored:
            return "no predictions scored yet"
        streak = 0
        for p in reversed(self.history):
            if not p.scored:
                continue
            if not p.correct:
                break
            streak += 1
        return f"{self.correct} / {self.scored} right" + (f" · streak {streak}" if streak > 1 else "")

    def reset(self) -> None:
        self.history.clear()


def explain_outcome(predicted: bool, result: ActionResult, settings: LabSettings, state: LabState) -> str:
    """Say what happened and, for a miss, which rule of tracing decided it."""
    said = "a retrace" if predicted else "no retrace"
    if result.error is not None and not result.traced:
        return f"The call failed before any graph ran, so it is not scored: {result.error}"
    if result.traced:
        head = (
            "Right: TensorFlow traced."
            if predicted
            else f"Miss: you predicted {said}, but TensorFlow traced."
        )
        reasons = [r for r in result.reasons if r.code not in (ReasonCode.VARIABLE_CREATION,)]
        lines = [head]
        for r in reasons[:3]:
            why = r.message or r.code
            fix = f" Fix: {r.fix}" if r.fix and r.code not in NOT_RETRACES else ""
            lines.append(f"[{r.code}] {why}.{fix}".replace("..", "."))
        if result.error:
            lines.append(f"And then it failed: {result.error}")
        return " ".join(lines)
    rows = [state.graphs[i] for i in result.graphs_hit if i < len(state.graphs)]
    where = (
        f"graph #{state.graphs.index(rows[0])} ({rows[0].signature})"
        if rows
        else "a graph already in the cache"
    )
    head = "Right: no retrace." if not predicted else f"Miss: you predicted {said}, but no call traced."
    text = f"{head} Every call matched {where}, so TensorFlow reused it."
    if predicted:
        text += " " + _why_it_matched(settings, rows[0].signature if rows else "")
    return text


def _why_it_matched(settings: LabSettings, signature: str) -> str:
    hints = []
    if settings.input_signature:
        hints.append("An input_signature with None dimensions accepts any size of those dimensions.")
    elif "None" in signature:
        hints.append(
            "reduce_retracing had already generalised the graph to None dimensions, so new sizes fit it."
        )
    if settings.flag == "tensor":
        hints.append(
            "A tf.Tensor argument enters the cache key by dtype and shape only, not by value: "
            "flipping the flag's value needs no new graph."
        )
    if settings.flag == "python-int":
        hints.append("Python values are keyed by value, and 1 == True, 0 == False: they share graphs.")
    if not hints:
        hints.append(
            "Tensors with the same dtype and shape, and Python values equal to the ones seen before, "
            "match the cached graph."
        )
    return " ".join(hints)
