"""``TFGRAPH_LAB=watch``: watching switched on in any Python process that imports TensorFlow.

No code change and no wrapper (a launcher, a multi-worker start, a Kubernetes job): the package
installs ``tfgraph_lab.pth`` into site-packages (``setup.py`` puts it there, from a wheel and from
``pip install -e .``), whose one line Python's ``site`` runs at every start-up. Unset, that line
only reads ``os.environ`` (``benchmarks/env_switch_cost.py`` measures it). Set, it calls
:func:`install`, which puts a finder at the head of ``sys.meta_path``; when ``tensorflow`` is
first imported, the watch starts as its import ends (a
:class:`~tfgraph_lab.watching.recorder.TraceRecorder`, the one watch of the process), and at exit:

- ``TFGRAPH_LAB=watch``: each retrace's line on stderr as it happens (the live log), the report
  on stderr at exit;
- ``TFGRAPH_LAB=log``: the retrace lines only;
- ``TFGRAPH_LAB_JSON=PATH`` (either mode): the report as JSON at exit; ``{pid}`` in PATH is the
  process id, so many workers write one file each (``tfgraph-lab report w-*.json`` merges them).

Imports only the standard library until TensorFlow is imported. Keras 3 imports TensorFlow while
Keras itself is being imported: the watch then starts inside Keras's import, and Keras's step
functions are still named and watched (Keras 3.15 on TF 2.21, ``tests/faces/test_env_switch.py``).
A process started with ``python -S`` (no ``site``) runs no ``.pth`` file, so it is not watched.
"""

from __future__ import annotations

import atexit
import os
import sys
from collections.abc import Sequence
from importlib.abc import Loader, MetaPathFinder
from importlib.machinery import ModuleSpec
from types import ModuleType
from typing import Any

__all__ = ["MODES", "install", "json_path", "stand_down"]

VARIABLE = "TFGRAPH_LAB"
JSON_VARIABLE = "TFGRAPH_LAB_JSON"
MODES = ("watch", "log")
_OFF = ("", "0", "off", "no", "false")
_started: list[Any] = []  # the one watch of this process, once started


def json_path(template: str, pid: int | None = None) -> str:
    """``TFGRAPH_LAB_JSON``'s path for this process: ``{pid}`` replaced by the process id."""
    return template.replace("{pid}", str(os.getpid() if pid is None else pid))


def install(mode: str | None = None) -> bool:
    """Watch from TensorFlow's import on (now, when it is already imported). ``mode`` defaults to
    ``$TFGRAPH_LAB``. False when the switch is off or not understood (said once on stderr)."""
    mode = (os.environ.get(VARIABLE, "") if mode is None else mode).strip().lower()
    if mode in _OFF:
        return False
    if mode not in MODES:
        print(f"tfgraph_lab: {VARIABLE}={mode!r} is not one of {', '.join(MODES)}; not watching", file=sys.stderr)
        return False
    if _started or any(isinstance(f, _WhenTensorFlowLoads) for f in sys.meta_path):
        return True
    if "tensorflow" in sys.modules:
        _start(mode)
    else:
        sys.meta_path.insert(0, _WhenTensorFlowLoads(mode))
    return True


def stand_down() -> None:
    """No watch from the switch in this process: the front end about to start (``tfgraph-lab``)
    watches on its own. Two watches in one process — the switch's, started by TensorFlow's import
    inside ``tfgraph-lab run``, and run's — hung ``TFGRAPH_LAB=watch tfgraph-lab run script.py``.
    The environment is left as it is: processes the script starts still see the switch."""
    for finder in [f for f in sys.meta_path if isinstance(f, _WhenTensorFlowLoads)]:
        sys.meta_path.remove(finder)
    while _started:
        recorder = _started.pop()
        atexit.unregister(_finish)
        try:
            recorder.stop()
        except Exception:
            pass


class _WhenTensorFlowLoads(MetaPathFinder):
    """Finds nothing itself: hands back the real ``tensorflow`` spec with a loader that starts the
    watch once the module has run, then steps out of ``sys.meta_path``."""

    def __init__(self, mode: str) -> None:
        self.mode = mode

    def find_spec(
        self, fullname: str, path: Sequence[str] | None, target: ModuleType | None = None
    ) -> ModuleSpec | None:
        if fullname != "tensorflow":
            return None
        if self in sys.meta_path:
            sys.meta_path.remove(self)
        from importlib.util import find_spec

        spec = find_spec(fullname)
        if spec is None or spec.loader is None:
            return None
        spec.loader = _StartAfter(spec.loader, self.mode)
        return spec


class _StartAfter(Loader):
    """TensorFlow's own loader, then the watch."""

    def __init__(self, loader: Loader, mode: str) -> None:
        self._loader = loader
        self._mode = mode

    def create_module(self, spec: ModuleSpec) -> ModuleType | None:
        return self._loader.create_module(spec)

    def exec_module(self, module: ModuleType) -> None:
        self._loader.exec_module(module)
        module.__loader__ = self._loader  # TensorFlow's resources are read through its own
        if module.__spec__ is not None:
            module.__spec__.loader = self._loader
        _start(self._mode)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._loader, name)


def _start(mode: str) -> None:
    try:
        from ..watching.livelog import stream_to_stderr
        from ..watching.recorder import TraceRecorder

        recorder = TraceRecorder().start()
        lines = stream_to_stderr(only_if_unconfigured=True)  # the live log's lines, as `run` shows them
        lines.__enter__()
    except Exception as exc:  # never break the user's import of TensorFlow
        print(f"tfgraph_lab: {VARIABLE}={mode}: could not start watching: {exc}", file=sys.stderr)
        return
    _started.append(recorder)
    atexit.register(_finish, recorder, mode, lines)


def _finish(recorder: Any, mode: str, lines: Any) -> None:
    """At exit: stop, then the report on stderr (``watch``) and the JSON (``TFGRAPH_LAB_JSON``)."""
    from ..watching.outputs import report_stream, write_json

    try:
        recorder.stop()
        report = recorder.report
        err = report_stream()
        if mode == "watch":
            print(report, file=err)
        template = os.environ.get(JSON_VARIABLE)
        if template:
            written = write_json(report, json_path(template))
            print(f"tfgraph_lab: report written to {written}", file=err)
    except Exception as exc:
        print(f"tfgraph_lab: {VARIABLE}={mode}: could not write the report: {exc}", file=sys.stderr)
    finally:
        lines.__exit__(None, None, None)
