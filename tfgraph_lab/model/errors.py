"""The package's exceptions: one base class, each message says what came, what was expected, and
the fix. Imports nothing from TensorFlow or IPython."""

from __future__ import annotations

__all__ = [
    "TensorFlowMissingError",
    "TfgraphLabError",
    "TraceAssertionError",
    "TraceBudgetExceeded",
    "UnknownBudgetName",
    "UsageProblem",
    "budget_message",
]


def budget_message(
    overruns: list[tuple[str, int, int]],
    xla_overruns: list[tuple[str, int, int]] | None = None,
    report: object = None,
) -> str:
    """``trace budget exceeded: train_step traced 3× (budget 1); …`` (and ``XLA compile budget
    exceeded: step compiled by XLA 4× (budget 1)``, ``≥ 4×`` where the report's count is
    modelled, as the report says it) — said the same way by the exception, the magic and the
    command line."""
    out = []
    if overruns:
        parts = [f"{name} traced {traces}× (budget {budget})" for name, traces, budget in overruns]
        out.append("trace budget exceeded: " + "; ".join(parts))
    if xla_overruns:
        kinds = {f.label: f.xla_compiles_kind for f in getattr(report, "functions", ())}
        prefix = {"at-least": "≥ ", "about": "about "}
        parts = [
            f"{name} compiled by XLA {prefix.get(kinds.get(name, ''), '')}{n}× (budget {budget})"
            for name, n, budget in xla_overruns
        ]
        out.append("XLA compile budget exceeded: " + "; ".join(parts))
    return " · ".join(out)


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


class UnknownBudgetName(UserWarning):
    """A ``--max-traces FN=N`` budget named no function the watch saw (never applied)."""


class TraceBudgetExceeded(TfgraphLabError):
    """A function traced more often than its ``--max-traces`` budget allows.

    ``report`` is the full :class:`~tfgraph_lab.report.TraceReport`; ``overruns`` lists
    ``(label, traces, budget)`` for every function over budget (the label is the name the report
    shows: the qualname but for names made for people, e.g. Keras's steps).
    """

    def __init__(
        self,
        overruns: list[tuple[str, int, int]],
        report: object = None,
        xla_overruns: list[tuple[str, int, int]] | None = None,
    ) -> None:
        self.overruns = overruns
        self.xla_overruns = xla_overruns or []  # (label, XLA compilations, budget)
        self.report = report
        what = "retrace" if overruns else "XLA compilation"
        super().__init__(
            budget_message(overruns, xla_overruns, report)
            + f". The report above says why each {what} happened and how to fix it."
        )

    def _render_traceback_(self) -> list[str]:
        """IPython shows just the message: the budget is the user's check, not a crash."""
        return [f"TraceBudgetExceeded: {self}"]


class TraceAssertionError(TraceBudgetExceeded, AssertionError):
    """``tfgraph_lab.assert_max_traces`` (or a pytest ``max_traces`` marker) saw a function trace
    more often than allowed. An ``AssertionError``, so test runners report it as a failed check;
    also a :class:`TraceBudgetExceeded` (``overruns``, ``xla_overruns``, ``report``).

    The message names each function, its count (TensorFlow's own), every retrace with the
    argument responsible (before → after, the values it took in turn) and the fix.
    """

    def __init__(
        self,
        overruns: list[tuple[str, int, int]],
        report: object = None,
        xla_overruns: list[tuple[str, int, int]] | None = None,
        details: str = "",
    ) -> None:
        super().__init__(overruns, report, xla_overruns)
        self.details = details
        Exception.__init__(self, details or budget_message(overruns, xla_overruns, report))

    def _render_traceback_(self) -> list[str]:
        return [f"TraceAssertionError: {self}"]
