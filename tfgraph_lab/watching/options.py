"""WatchOptions: what one watch records and writes, one frozen value every face builds.

The magic and the CLI build it from their flags through one argument spec
(:mod:`tfgraph_lab.faces.args`); ``watch()`` from its keyword arguments. What to *show* is
apart (:class:`~tfgraph_lab.model.view.ViewOptions`): a watch records the same whatever the view.

Budgets are parsed here, once (a typo is a :class:`~tfgraph_lab.model.errors.UsageProblem`
before anything runs); output paths are checked by :func:`tfgraph_lab.watching.outputs.check_outputs`
when the watch is about to start (the checks are about the file system of that moment).
No TensorFlow, no IPython.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from .budget import TraceBudget

__all__ = ["WatchOptions"]

BudgetSpec = TraceBudget | int | str | Sequence[str] | Mapping[str, int] | None


@dataclass(frozen=True)
class WatchOptions:
    """What a watch records and writes.

    ``max_traces`` / ``max_xla_compiles``: budgets (see :class:`TraceBudget`), parsed on
    :meth:`build`. ``json``, ``trace``, ``tensorboard``: outputs written when the watch ends
    (paths as given; see :data:`tfgraph_lab.watching.outputs.OUTPUTS`). ``live``: counters
    updated while the code runs (a notebook). ``try_fix``: run the code again with the best
    fix (None: not asked; ``""``: the first function that retraced; else a function's name).
    ``compare_eager``: time the code again with ``run_functions_eagerly(True)``.
    """

    max_traces: TraceBudget | None = None
    max_xla_compiles: TraceBudget | None = None
    json: str | None = None
    trace: str | None = None
    tensorboard: str | None = None
    live: bool = False
    try_fix: str | None = None
    compare_eager: bool = False

    @classmethod
    def build(
        cls, max_traces: BudgetSpec = None, max_xla_compiles: BudgetSpec = None, **others: Any
    ) -> WatchOptions:
        """From budgets as a user writes them (``3``, ``"train_step=1"``, a list or a dict)."""
        return cls(
            max_traces=TraceBudget.parse(max_traces),
            max_xla_compiles=TraceBudget.parse(max_xla_compiles, measure="xla_compiles"),
            **others,
        )

    @property
    def outputs(self) -> dict[str, str]:
        """``{name in OUTPUTS: path}`` of the outputs asked for (not yet checked)."""
        asked = {"json": self.json, "trace": self.trace, "tensorboard": self.tensorboard}
        return {name: path for name, path in asked.items() if path is not None}
