"""The options of ``%%tracewatch`` and ``tfgraph-lab``, spelled once.

Each :class:`Flag` is one option: its flags, its argparse settings, its help (``{code}`` reads
"the cell" in the magic, "the script" on the command line) and the faces that have it. The magic
builds its parser from :data:`FLAGS` (:func:`magic_flags`), the CLI's ``run``, ``report`` and
``demo`` from the same list (:func:`add_flags`), so a flag means the same wherever it exists and
a new one is added in one place. :func:`watch_options` and :func:`view_options` turn the parsed
flags into the two frozen values the core takes: what to record and write
(:class:`~tfgraph_lab.watching.options.WatchOptions`) and what to show
(:class:`~tfgraph_lab.model.view.ViewOptions`).

Imports neither TensorFlow nor IPython (the magic hands in IPython's ``argument`` decorator).
"""

from __future__ import annotations

import argparse
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any, TypeVar

from ..model.view import SORTS, ViewOptions
from ..watching.options import WatchOptions

__all__ = ["EXIT_BUDGET", "FLAGS", "Flag", "add_flags", "magic_flags", "view_options", "watch_options"]

EXIT_BUDGET = 3  # `tfgraph-lab run`'s exit status when the script succeeded but a budget broke

MAGIC, RUN, REPORT, DEMO = "magic", "run", "report", "demo"
_WHAT = {MAGIC: "the cell", RUN: "the script", REPORT: "the report", DEMO: "the demo"}

_F = TypeVar("_F", bound=Callable[..., Any])


@dataclass(frozen=True)
class Flag:
    """One option: ``flags`` and argparse ``settings``; ``help`` (``{code}``: what runs,
    ``{exit}``: the CLI's budget exit status); the ``faces`` that have it; ``helps`` overrides
    the help for one face."""

    flags: tuple[str, ...]
    help: str
    faces: frozenset[str]
    settings: Mapping[str, Any] = field(default_factory=dict)
    helps: Mapping[str, str] = field(default_factory=dict)

    def options(self, face: str) -> dict[str, Any]:
        """The keyword arguments of ``add_argument`` for ``face``."""
        text = self.helps.get(face, self.help).format(code=_WHAT[face], exit=EXIT_BUDGET)
        return {**self.settings, "help": text}


def _flag(
    *flags: str, help: str, faces: Iterable[str], helps: Mapping[str, str] | None = None, **settings: Any
) -> Flag:
    return Flag(tuple(flags), help, frozenset(faces), settings, helps or {})


_BUDGET_EXIT = {
    RUN: " exit status {exit} when broken.",
    MAGIC: " {code} fails with TraceBudgetExceeded after the report is shown.",
    REPORT: " checked against the saved report (merged: the sums); exit status {exit} when broken "
    "(--format github: one ::error per function over budget).",
}

FLAGS: tuple[Flag, ...] = (
    _flag(
        "-q",
        "--quiet",
        action="store_true",
        faces=(MAGIC, RUN),
        help="Show nothing: no report (it is still written where --json/--trace/--tensorboard ask).",
        helps={RUN: "Print neither the live retrace lines nor the report (outputs are still written)."},
    ),
    _flag(
        "--summary",
        action="store_true",
        faces=(MAGIC, RUN),
        help="Show a summary: the headline and one line per function (traces, graphs, its best fix "
        "and what it saves).",
    ),
    _flag(
        "-o",
        "--output",
        action="store_true",
        faces=(MAGIC,),
        help="Return the TraceReport (as the cell's value).",
    ),
    _flag(
        "-v", "--variable", metavar="NAME", faces=(MAGIC,), help="Store the TraceReport in the variable NAME."
    ),
    _flag(
        "--max-traces",
        action="append",
        metavar="N|FN=N",
        faces=(MAGIC, RUN, REPORT),
        help="Trace budget: N for every user function, FN=N for one function (repeatable);",
        helps={
            f: "Trace budget: N for every user function, FN=N for one function (repeatable);" + t
            for f, t in _BUDGET_EXIT.items()
        },
    ),
    _flag(
        "--max-xla-compiles",
        action="append",
        metavar="N|FN=N",
        faces=(MAGIC, RUN, REPORT),
        help="XLA compile budget (jit_compile=True): N for every function (Keras's XLA step included), "
        "FN=N for one function (repeatable);",
        helps={
            f: "XLA compile budget (jit_compile=True): N for every function (Keras's XLA step included), "
            "FN=N for one function (repeatable);" + t
            for f, t in _BUDGET_EXIT.items()
        },
    ),
    _flag(
        "--json",
        metavar="PATH",
        faces=(MAGIC, RUN, REPORT, DEMO),
        help="Also write the report as JSON (version 1) to PATH.",
        helps={
            REPORT: "Write the (merged) report as JSON to PATH.",
            DEMO: "Write the trap's report as JSON to PATH.",
        },
    ),
    _flag(
        "--trace",
        metavar="PATH",
        faces=(MAGIC, RUN, REPORT),
        help="Also write the calls as a timeline (Chrome Trace Event Format) to PATH: open it in Perfetto "
        "(ui.perfetto.dev) or chrome://tracing.",
    ),
    _flag(
        "--html",
        metavar="PATH",
        faces=(REPORT,),
        help="Write the (merged) report as one standalone HTML page to PATH.",
    ),
    _flag(
        "--tensorboard",
        metavar="DIR",
        faces=(MAGIC, RUN),
        help="Also write TensorBoard scalars to DIR (as watch(tensorboard_dir=)).",
    ),
    _flag(
        "--all",
        action="store_true",
        faces=(MAGIC, RUN, REPORT, DEMO),
        help="Show everything: TensorFlow's and Keras's own functions (listed, and their retraces logged "
        "one by one), graphs traced before the watch, every row of a long graph cache.",
        helps={DEMO: "List every graph of the cache (and TensorFlow's own functions)."},
    ),
    _flag(
        "--sort",
        choices=SORTS,
        default="seen",
        faces=(MAGIC, RUN, REPORT),
        help="Order of the functions: as first seen (default), or 'cost': the functions whose retraces "
        "cost most first, and a list of the lines that called them, costliest first.",
    ),
    _flag(
        "--compare-eager",
        action="store_true",
        faces=(MAGIC,),
        help="Run {code} again with tf.config.run_functions_eagerly(True) and as graphs in turn and show "
        "graph vs eager time side by side. {code} runs up to 5 more times; names, list/dict/set contents, "
        "tf.Variables and RNG states are restored afterwards, files and other outside state are not.",
    ),
    _flag(
        "--live",
        action="store_true",
        faces=(MAGIC,),
        help="Show live counters while {code} runs (updated in place; no widgets needed).",
    ),
    _flag(
        "--try-fix",
        nargs="?",
        const="",
        metavar="FN",
        faces=(MAGIC,),
        help="When FN (default: the first function) retraced, run {code} again with the report's fix that "
        "saves most graphs (a decorator change, or a call-site change through a thin wrapper); show traces, "
        "times and outputs before -> after. {code} runs up to 3 times; names, list/dict/set contents, "
        "tf.Variables and RNG states are restored afterwards.",
    ),
)


def add_flags(parser: argparse.ArgumentParser, face: str) -> None:
    """Add every flag ``face`` (``"run"``, ``"report"``, ``"demo"``) has to ``parser``."""
    for flag in FLAGS:
        if face in flag.faces:
            parser.add_argument(*flag.flags, **flag.options(face))


def magic_flags(argument: Callable[..., Callable[[_F], _F]]) -> Callable[[_F], _F]:
    """A decorator adding the magic's flags with IPython's ``argument`` (under
    ``@magic_arguments()``), in :data:`FLAGS` order."""

    def decorate(func: _F) -> _F:
        for flag in reversed(FLAGS):  # IPython adds the decorators' arguments bottom-up
            if MAGIC in flag.faces:
                func = argument(*flag.flags, **flag.options(MAGIC))(func)
        return func

    return decorate


def watch_options(args: argparse.Namespace) -> WatchOptions:
    """What the parsed flags ask the watch to record and write (budgets parsed:
    :class:`~tfgraph_lab.model.errors.UsageProblem` on a bad one)."""
    given = vars(args)
    return WatchOptions.build(
        max_traces=given.get("max_traces"),
        max_xla_compiles=given.get("max_xla_compiles"),
        json=given.get("json"),
        trace=given.get("trace"),
        tensorboard=given.get("tensorboard"),
        live=bool(given.get("live")),
        try_fix=given.get("try_fix"),
        compare_eager=bool(given.get("compare_eager")),
    )


def view_options(args: argparse.Namespace) -> ViewOptions:
    """What the parsed flags ask to be shown."""
    given = vars(args)
    brevity = "quiet" if given.get("quiet") else "summary" if given.get("summary") else "full"
    return ViewOptions.of_all(bool(given.get("all")), brevity=brevity, sort=given.get("sort") or "seen")
