"""IPython glue: ``%%tracewatch`` (cell) and ``%tracewatch on|off|status`` (line).

Thin by design: parse flags, run the cell inside :func:`tfgraph_lab.watching.recorder.watch`, then
display / return / store / write the report. Formatting lives in ``render``, diffing in
``explain``, monitoring in ``monitor``. Imported only by ``load_ipython_extension``.
"""

from __future__ import annotations

import ast
import contextlib
import io
import keyword
import statistics
import sys
import time
from functools import partial
from types import CodeType
from typing import TYPE_CHECKING, Any, NamedTuple

from IPython.core.error import UsageError
from IPython.core.magic import Magics, line_cell_magic, magics_class, no_var_expand
from IPython.core.magic_arguments import argument, magic_arguments, parse_argstring
from IPython.display import display

from ..explain.failures import error_text
from ..model.errors import TensorFlowMissingError, TfgraphLabError, UsageProblem
from ..model.view import ViewOptions
from ..watching.options import WatchOptions
from ..watching.outputs import check_outputs
from .args import magic_flags, view_options, watch_options

if TYPE_CHECKING:
    from ..trial.state import UserState

__all__ = ["TraceWatchMagics", "load", "unload"]


class _Cell(NamedTuple):
    """A cell compiled once (the watched run and --compare-eager's re-runs share it)."""

    body: CodeType
    last: CodeType | None  # the last expression, whose value is the cell's
    hide: bool  # a trailing semicolon


# --compare-eager re-runs the cell for a spread of timings while the re-runs take under this,
# at most this many times (three eager runs, two graph runs between them).
_COMPARE_BUDGET = 2.0
_COMPARE_RUNS = 5


@magics_class
class TraceWatchMagics(Magics):
    """The ``tracewatch`` magics."""

    @magic_arguments()
    @magic_flags(argument)
    @argument("mode", nargs="?", help="Line magic only: on, off or status (always-on monitoring).")
    @no_var_expand
    @line_cell_magic
    def tracewatch(self, line: str = "", cell: str | None = None) -> Any:
        """Watch every tf.function call in this cell and show traces, graph caches, timings and
        why each retrace happened, with the fix.

        Usage, as a cell magic::

            %%tracewatch [-q] [-o] [-v NAME] [--max-traces N|FN=N ...] [--json PATH] [--trace PATH]
                         [--tensorboard DIR] [--all] [--compare-eager] [--live] [--try-fix [FN]]

        As a line magic, ``%tracewatch on`` watches every following cell and shows a compact
        notice under each cell that retraced; ``%tracewatch off`` stops; ``%tracewatch status``
        says whether it is on.

        An exception raised by the cell propagates unchanged after the report is shown.
        """
        __tracebackhide__ = True  # an error in the cell shows the cell, not this machinery
        try:
            args = parse_argstring(self.tracewatch, line)
        except UsageError:
            raise
        except SystemExit as exc:  # argparse exits on some errors
            raise UsageError(f"%%tracewatch: invalid flags {line!r}; see %%tracewatch?") from exc
        except ValueError as exc:  # shlex: "No closing quotation" (IPython's arg_split)
            raise UsageError(
                f"%%tracewatch: cannot split the flags {line!r}: {exc}; close the quotation "
                "or quote paths with spaces, e.g. --json 'my report.json'"
            ) from None
        if cell is None and any(w.startswith("-") for w in line.split()):  # line mode ignores them
            raise UsageError(f"%tracewatch {line.strip()}: flags work on %%tracewatch cells only")
        if cell is None:
            return self._line(args)
        if args.mode is not None:
            raise UsageError(
                f"%%tracewatch takes no positional argument (got {args.mode!r}); "
                "use %tracewatch on|off|status as a line magic"
            )
        try:
            options = watch_options(args)
        except UsageProblem as exc:
            raise UsageError(str(exc)) from None
        try:  # now, before the cell's side effects, and absolute (the cell may chdir)
            outputs = check_outputs(options.outputs, _unquote)
        except TfgraphLabError as exc:
            raise UsageError(f"{exc}. The cell was not run.") from None
        if args.variable is not None and (
            not args.variable.isidentifier() or keyword.iskeyword(args.variable)
        ):
            raise UsageError(f"-v expects a Python variable name, got {args.variable!r}")
        try:
            compiled = self._compile(cell)
        except SyntaxError as exc:
            return self._syntax_error(cell, exc)
        return self._run_watched(compiled, args, options, outputs, view_options(args))

    # ------------------------------------------------------------------ the cell
    def _run_watched(
        self, compiled: _Cell, args: Any, options: WatchOptions, outputs: dict[str, str], view: ViewOptions
    ) -> Any:
        __tracebackhide__ = True
        from ..trial.tryfix import CellTrial, snapshot
        from ..watching.lifecycle import Lifecycle
        from ..watching.recorder import TraceRecorder

        run_cell = partial(self._exec, compiled)  # no frame of ours in the cell's traceback
        trial = CellTrial.for_flag(options.try_fix, run_cell, self.shell.user_ns)  # type: ignore[union-attr]
        # --compare-eager's re-runs start from the state the watched run started from, and the
        # user keeps the watched run's state (issue 32.5): the start is kept now.
        start = snapshot(self.shell.user_ns) if options.compare_eager else None  # type: ignore[union-attr]
        try:
            recorder = TraceRecorder(options.max_traces, options.max_xla_compiles, view)
            life = Lifecycle(recorder, outputs, _live if options.live else None)
            ran = life.run(run_cell if trial is None else trial.first_run)
        except TfgraphLabError as exc:  # the recording could not start: nothing ran
            raise UsageError(str(exc)) from None
        timings = None
        if start is not None and ran.error is None:
            from .monitor import shell_monitor

            shell_monitor(self.shell).end_cell_watch()  # the re-runs are the tool's, not the cell's
            timings = self._compare_runs(compiled, ran.seconds, start)
        done = life.finish(compare_eager=timings)
        over = ran.error is None and done.over_budget
        # The cell's value is the magic's result (Out[n], _ and ExecutionResult.result, as %%time
        # gives it) unless -o makes the report the result, or the cell fails: then it is shown.
        if ran.value is not None and ran.error is None and (args.output or over):
            display(ran.value)
        # With -o the report is the cell's value and IPython shows it as Out[n]: displaying it
        # here too would show it twice. It is displayed here only when it will not be returned.
        returned = args.output and ran.error is None and not over
        if not view.quiet and not returned:
            display(done.report)
        if trial is not None and ran.error is None:
            from .monitor import shell_monitor

            shell_monitor(self.shell).end_cell_watch()  # the re-runs are the trial's, not the cell's
            trial.show(done.report, ran.seconds, display)
        if args.variable:
            shell: Any = self.shell
            shell.user_ns[args.variable] = done.report
        if done.problems and ran.error is None:
            raise UsageError("; ".join(map(str, done.problems))) from None
        for problem in done.problems:
            print(f"tracewatch: {problem}", file=sys.stderr)  # the cell's own error follows
        if ran.error is not None:
            raise ran.error
        done.check_budget()
        return done.report if args.output else ran.value

    def _compile(self, cell: str) -> _Cell:
        """Compile the cell as ``%%time`` does (transform, parse, AST transforms), under the
        cell's own name, so a SyntaxError reads ``Cell In[n], line k`` as in an unwatched cell."""
        shell: Any = self.shell
        transformed = shell.transform_cell(cell)
        # Line numbers as the cell shows them: blank lines stand for the %%tracewatch line and
        # for the body's leading blank lines, which IPython's transform drops.
        source = "\n" * _lines_before_body(cell, transformed) + transformed
        filename = shell.compile.cache(source, running_cell_number(shell), raw_code=cell)
        tree = shell.compile.ast_parse(source, filename=filename)
        tree = shell.transform_ast(tree)
        last = None
        if tree.body and isinstance(tree.body[-1], ast.Expr):
            last = shell.compile(ast.Expression(tree.body.pop().value), filename, "eval")
        # A trailing semicolon hides the value, as in any IPython cell.
        hide = transformed.rstrip().endswith(";")
        return _Cell(shell.compile(tree, filename, "exec"), last, hide)

    def _exec(self, compiled: _Cell) -> Any:
        """Run the compiled cell in ``user_ns``; the last expression's value, as a cell's."""
        __tracebackhide__ = True
        shell: Any = self.shell
        exec(compiled.body, shell.user_global_ns, shell.user_ns)
        if compiled.last is None:
            return None
        value = eval(compiled.last, shell.user_global_ns, shell.user_ns)
        return None if compiled.hide else value

    def _syntax_error(self, cell: str, exc: SyntaxError) -> None:
        """Show a SyntaxError as IPython shows one in an unwatched cell (no frames of ours, no
        report: nothing ran) and fail the cell with it."""
        shell: Any = self.shell
        result = getattr(getattr(shell, "displayhook", None), "exec_result", None)
        raw = getattr(getattr(result, "info", None), "raw_cell", None)
        # IPython hands a cell magic its body with a newline added when the cell has none (as a
        # notebook sends it; IPython 9.18): the raw cell then holds the body without it.
        body = cell[:-1] if cell.endswith("\n") else cell
        if result is None or not isinstance(raw, str) or body not in raw:
            raise exc  # not run as a cell of its own (run_cell_magic called from code)
        try:
            raise exc
        except SyntaxError:
            shell.showsyntaxerror()  # the exception being handled, without our frames
        result.error_in_exec = exc  # the cell failed: ExecutionResult.success, the kernel's reply
        return None

    def _compare_runs(self, compiled: _Cell, graph_seconds: float, start: UserState) -> dict[str, Any]:
        """Time the cell again, eagerly and as graphs in turn, for a spread to judge noise by.

        One eager run always; up to three eager and two more graph runs while the re-runs take
        under ``_COMPARE_BUDGET`` seconds. The re-runs' printed output is hidden (it was shown
        once). Each re-run starts from ``start`` (the state the watched run started from) and
        the watched run's state is put back afterwards, as far as :class:`UserState` can.
        """
        import tensorflow as tf

        from ..trial.tryfix import snapshot

        end = snapshot(start.namespace)
        print(
            f"--compare-eager: running the cell up to {_COMPARE_RUNS} more times, eagerly "
            "(run_functions_eagerly(True)) and as graphs in turn, to time both (their printed "
            "output is hidden). Each run starts from the state the watched run started from, and "
            f"afterwards the state it left is put back — {end.restored()}; not restored: "
            f"{end.limits()}…"
        )
        graph_runs: list[float] = [graph_seconds]
        eager_runs: list[float] = []
        failed: dict[str, str] = {}
        started = time.perf_counter()
        before = tf.config.functions_run_eagerly()
        mode = "eager"
        try:
            while True:
                mode = "eager"
                tf.config.run_functions_eagerly(True)
                eager_runs.append(self._timed(compiled, start))
                tf.config.run_functions_eagerly(before)
                if len(eager_runs) >= 3 or time.perf_counter() - started > _COMPARE_BUDGET:
                    break
                mode = "graph"
                graph_runs.append(self._timed(compiled, start))
        except Exception as exc:  # the watched run's outcome stands; the report says why
            failed = {"rerun_failed": mode, "rerun_error": error_text(exc)}
            print(f"--compare-eager: the {mode} re-run failed ({failed['rerun_error']}); timings stop there.")
        finally:
            tf.config.run_functions_eagerly(before)
            end.restore()  # what the user keeps: the watched run's state
        return {
            "graph_seconds": graph_seconds,
            **({"eager_seconds": statistics.median(eager_runs)} if eager_runs else {}),
            "graph_runs": graph_runs,
            "eager_runs": eager_runs,
            **failed,
        }

    def _timed(self, compiled: _Cell, start: UserState) -> float:
        start.restore()  # not timed
        with contextlib.redirect_stdout(io.StringIO()):
            t0 = time.perf_counter()
            self._exec(compiled)
            return time.perf_counter() - t0

    # ------------------------------------------------------------------ line mode
    def _line(self, args: Any) -> Any:
        from .monitor import shell_monitor

        mode = (args.mode or "status").lower()
        monitor = shell_monitor(self.shell)
        if mode == "on":
            _require_tensorflow()  # now, not as an error under every following cell
            monitor.start()
            print("tracewatch is on: every cell that retraces gets a notice below it.")
        elif mode == "off":
            monitor.stop()
            print("tracewatch is off.")
        elif mode == "status":
            print(monitor.status())
        else:
            raise UsageError(
                f"%tracewatch expects on, off or status, got {args.mode!r}; "
                "for a single cell use %%tracewatch"
            )
        return None


def running_cell_number(shell: Any) -> int:
    """The number of the cell being run, as its prompt shows it (``In [n]``).

    ``shell.execution_count`` is not it under IPython 9: IPython 8 increments it after a cell
    ran, IPython 9 (checked on 9.18) before it runs. Both put the running cell's number on the
    ``ExecutionResult`` that the display hook holds while the cell runs, and compile the cell
    under it. A cell run without history (``store_history=False``) has none there (IPython 8)
    or ``execution_count`` itself (IPython 9): IPython compiles it under ``execution_count``.
    """
    result = getattr(getattr(shell, "displayhook", None), "exec_result", None)
    number = getattr(result, "execution_count", None)
    return number if isinstance(number, int) else int(shell.execution_count)


def _require_tensorflow() -> None:
    """A UsageError naming the install command when TensorFlow is not installed."""
    try:
        import tensorflow  # noqa: F401
    except ModuleNotFoundError as exc:
        if exc.name != "tensorflow":
            raise
        raise UsageError(str(TensorFlowMissingError())) from None


def _lines_before_body(cell: str, transformed: str) -> int:
    """How many lines of the cell precede the first line of ``transformed``: the magic's line
    and the leading blank lines IPython's ``leading_empty_lines`` transform removed."""
    blank = next((i for i, line in enumerate(cell.splitlines()) if line.strip()), 0)
    kept = next((i for i, line in enumerate(transformed.splitlines()) if line.strip()), 0)
    return 1 + max(blank - kept, 0)


def _unquote(text: str) -> str:
    """IPython splits magic lines with ``posix=False``, which keeps quotes: strip one pair."""
    if len(text) >= 2 and text[0] == text[-1] and text[0] in "'\"":
        return text[1:-1]
    return text


def _live(recorder: Any) -> Any:
    from .live_view import show_live

    return show_live(recorder)


def load(ipython: Any) -> None:
    from ..watching.compile_log import give_back_xla_switches, hold_xla_log

    if hold_xla_log():  # before `import tensorflow` only: then cells count XLA from TF's own log
        ipython.events.register("post_run_cell", give_back_xla_switches)
    ipython.register_magics(TraceWatchMagics)
    from .monitor import resume_after_reload

    resume_after_reload(ipython)


def unload(ipython: Any) -> None:
    from ..watching.compile_log import give_back_xla_switches, release_xla_log
    from .monitor import stop_for_unload

    if give_back_xla_switches in ipython.events.callbacks["post_run_cell"]:
        ipython.events.unregister("post_run_cell", give_back_xla_switches)
    release_xla_log()
    stop_for_unload(ipython)
    magics = ipython.magics_manager.magics
    for kind in ("line", "cell"):
        magics[kind].pop("tracewatch", None)
    registry = ipython.magics_manager.registry
    registry.pop("TraceWatchMagics", None)
