"""tfgraph_lab: see, understand and cure TensorFlow's silent tf.function retracing.

``watch()`` records every tf.function call and trace in a block and hands back a
:class:`TraceReport`; ``%load_ext tfgraph_lab`` adds the ``%%tracewatch`` cell magic;
``assert_max_traces(fn, n)`` asserts a trace count (a context manager and a decorator);
``tfgraph-lab`` is the command line; ``try_fix(report, rerun=...)`` runs code again with the
report's best fix applied and ``explore(report)`` opens a report in a widget. Importing this package imports neither TensorFlow nor
IPython nor ipywidgets: they load when first needed.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

__version__ = "0.1.0"

__all__ = [
    "TfgraphLabError",
    "TraceAssertionError",
    "TraceBudgetExceeded",
    "TraceRecorder",
    "TraceReport",
    "ViewOptions",
    "__version__",
    "assert_max_traces",
    "explore",
    "load_ipython_extension",
    "monitor",
    "try_fix",
    "unload_ipython_extension",
    "watch",
]

if TYPE_CHECKING:
    from .faces.monitor import monitor
    from .model.errors import TfgraphLabError, TraceAssertionError, TraceBudgetExceeded
    from .model.view import ViewOptions
    from .report.trace_report import TraceReport
    from .trial.tryfix import try_fix
    from .watching.assertion import assert_max_traces
    from .watching.recorder import TraceRecorder, watch
    from .widgets.explorer import explore

# The package root is the public surface and sits above every folder: it imports none of them
# by name (each public name is looked up when first used), so reaching a public function
# through it (the report's try_fix and explore shims do) is never an import circle.
_LAZY = {
    "TraceBudgetExceeded": ("model.errors", "TraceBudgetExceeded"),
    "TfgraphLabError": ("model.errors", "TfgraphLabError"),
    "TraceAssertionError": ("model.errors", "TraceAssertionError"),
    "assert_max_traces": ("watching.assertion", "assert_max_traces"),
    "TraceRecorder": ("watching.recorder", "TraceRecorder"),
    "TraceReport": ("report.trace_report", "TraceReport"),
    "ViewOptions": ("model.view", "ViewOptions"),
    "monitor": ("faces.monitor", "monitor"),
    "explore": ("widgets.explorer", "explore"),
    "try_fix": ("trial.tryfix", "try_fix"),
    "watch": ("watching.recorder", "watch"),
}


def __getattr__(name: str) -> Any:
    target = _LAZY.get(name)
    if target is None:
        raise AttributeError(f"module 'tfgraph_lab' has no attribute {name!r}")
    from importlib import import_module

    value = getattr(import_module(f".{target[0]}", __name__), target[1])
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__))


def load_ipython_extension(ipython: Any) -> None:
    """``%load_ext tfgraph_lab``: register ``%%tracewatch`` (and ``%tracewatch on|off``)."""
    from importlib import import_module

    import_module(".faces.magic", __name__).load(ipython)


def unload_ipython_extension(ipython: Any) -> None:
    """``%unload_ext tfgraph_lab``: remove the magics and stop any monitoring."""
    from importlib import import_module

    import_module(".faces.magic", __name__).unload(ipython)
