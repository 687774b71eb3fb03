"""The package's exceptions: one base class, each message says what came, what was expected, and
the fix. Imports nothing from TensorFlow or IPython."""

from __future__ import annotations

__all__ = [
    "TensorFlowMissingError",
    "TfgraphLabError",
    "TraceBudgetExceeded",
    "UsageProblem",
    "budget_message",
]


def budget_message(overruns: list[tuple[str, int, int]]) -> str:
    """``trace budget exceeded: train_step traced 3× (budget 1); …`` — said the same way by the
    exception, the magic and the command line."""
    parts = [f"{name} traced {traces}× (budget {budget})" for name, traces, budget in overruns]
    return "trace budget exceeded: " + "; ".join(parts)


class TfgraphLabError(Exception):
    """Base class of every error tfgraph_lab raises on purpose."""


class TensorFlowMissingError(TfgraphLabError, ImportError):
    """TensorFlow is not importable in this environment.

    The project installs no TensorFlow unless asked to (its ``tf`` extra), so that it never
    replaces a TensorFlow build already there: the message names the command that installs one.
    """

    def __init__(self, message: str | None = None) -> None:
        if message is None:
            import sys

            message = (
                "tfgraph_lab needs TensorFlow, which is not installed in this environment "
                f"({sys.executable}). Install the CPU build for this platform with that Python: "
                '`python -m pip install "tfgraph-lab[tf]"` (in a notebook: '
                '`%pip install "tfgraph-lab[tf]"`, then restart the kernel), or install the '
                "TensorFlow build you want (2.15 or newer), e.g. `pip install tensorflow`."
            )
        super().__init__(message)


class UsageProblem(TfgraphLabError, ValueError):
    """A flag, budget or argument given to tfgraph_lab is not valid."""


class TraceBudgetExceeded(TfgraphLabError):
    """A function traced more often than its ``--max-traces`` budget allows.

    ``report`` is the full :class:`~tfgraph_lab.report.TraceReport`; ``overruns`` lists
    ``(qualname, traces, budget)`` for every function over budget.
    """

    def __init__(self, overruns: list[tuple[str, int, int]], report: object = None) -> None:
        self.overruns = overruns
        self.report = report
        super().__init__(
            budget_message(overruns) + ". The report above says why each retrace happened and how to fix it."
        )

    def _render_traceback_(self) -> list[str]:
        """IPython shows just the message: the budget is the user's check, not a crash."""
        return [f"TraceBudgetExceeded: {self}"]
