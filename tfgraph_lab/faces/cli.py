"""``tfgraph-lab`` (also ``python -m tfgraph_lab``): run a script under the recorder, run the demo,
render a saved JSON report, print workshop launch links, or check a JupyterHub for a workshop.
Thin argparse glue over :mod:`tfgraph_lab.watching.recorder`, :mod:`tfgraph_lab.hubcheck.workshop` and
:mod:`tfgraph_lab.hubcheck`.

Exit status of ``run``: the script's own status; 3 when the script succeeded but a
``--max-traces`` or ``--max-xla-compiles`` budget was broken; 2 for bad command-line input.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import runpy
import signal
import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any, TextIO
from urllib.parse import urlsplit

from .. import __version__
from ..explain import pages
from ..hubcheck.command import add_workshop_parser
from ..hubcheck.workshop import BINDER_BASE, MOVING_REFS, format_links, list_lessons, workshop_links
from ..model.errors import TensorFlowMissingError, TfgraphLabError, UsageProblem, budget_message
from ..model.places import script_traceback
from .args import DEMO, EXIT_BUDGET, REPORT, RUN, add_flags, view_options, watch_options
from .env_switch import stand_down

__all__ = ["EXIT_BUDGET", "add_workshop_links_parser", "build_parser", "main"]


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="tfgraph-lab",
        description="See why your tf.functions retrace, and how to stop it.",
    )
    parser.add_argument("--version", action="version", version=f"tfgraph-lab {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    sub.required = True

    run = sub.add_parser(
        "run",
        help="run a Python script (or -m MODULE) under the recorder; the report goes to stderr",
        description="Run SCRIPT (or -m MODULE, like python -m) with every tf.function watched. "
        "Each retrace is logged to stderr the moment it happens; the script's stdout and exit "
        "status pass through; the text report is printed to stderr at the end.",
    )
    add_flags(run, RUN)
    run.add_argument(
        "-m",
        dest="module",
        nargs=argparse.REMAINDER,
        metavar="MODULE [ARGS]",
        help="run a library module as a script, like python -m (the rest of the line is its arguments)",
    )
    run.add_argument("script", nargs="?", help="the Python script to run")
    run.add_argument("args", nargs=argparse.REMAINDER, help="arguments passed to the script")

    demo = sub.add_parser("demo", help="show the retracing trap and its cure on a tiny model")
    add_flags(demo, DEMO)

    show = sub.add_parser(
        "report",
        help="print a report saved with --json, or merge several (one per process)",
        description="Print a report saved with --json. Given several, merge them: each "
        "function's counts summed over the processes, with a per-process breakdown.",
    )
    show.add_argument("paths", nargs="+", metavar="PATH", help="JSON files written by --json")
    show.add_argument(
        "--format",
        dest="fmt",
        choices=("text", "github", "junit"),
        default="text",
        help="text: the report (default); github: GitHub Actions annotations, one ::warning per line "
        "of your code whose calls retraced (costliest first), one ::error per function over a "
        "--max-traces/--max-xla-compiles budget, paths relative to $GITHUB_WORKSPACE (else the "
        "working directory); junit: JUnit XML, a testcase per function, failed when over budget",
    )
    add_flags(show, REPORT)

    explain = sub.add_parser(
        "explain",
        help="print the page of a reason code (shape-changed, xla-constant-value, ...); no code: list them",
        description="Print what a reason code means: what TensorFlow compares, an example that "
        "retraces, every fix with its trade-off, what the tool cannot see.",
    )
    explain.add_argument("code", nargs="?", help="a reason code from a report (XLA codes: xla-CODE)")

    add_workshop_links_parser(sub)
    add_workshop_parser(sub)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    stand_down()  # TFGRAPH_LAB=watch: this tool's own watch is the one (env_switch.py)
    parser = build_parser()
    args = parser.parse_args(argv)
    try:
        if args.command == "run":
            return _run(parser, args)
        if args.command == "demo":
            return _demo(args)
    except TensorFlowMissingError as exc:  # says which command installs TensorFlow
        print(f"tfgraph-lab: {exc}", file=sys.stderr)
        return 2
    if args.command == "report":
        return _report(parser, args)
    if args.command == "explain":
        return _explain(args.code)
    handler = getattr(args, "handler", None)
    if handler is not None:
        return int(handler(args) or 0)
    parser.error(f"unknown command {args.command!r}")
    return 2


def _run(parser: argparse.ArgumentParser, args: argparse.Namespace) -> int:
    try:
        options = watch_options(args)
    except UsageProblem as exc:
        parser.error(str(exc))
    view = view_options(args)
    module: str | None = None
    if args.module is not None:
        if not args.module:
            parser.error("-m needs a module name, e.g. tfgraph-lab run -m mypackage.train")
        module, *script_args = args.module
        if args.script is not None:  # "run SCRIPT -m X": -m belongs to the script
            parser.error("give either SCRIPT or -m MODULE, not both")
    else:
        script = args.script
        if script is None:
            parser.error("give a script to run (or -m MODULE)")
        if not os.path.isfile(script):
            parser.error(f"no such script: {script!r}")
        script_args = args.args
    from ..watching.outputs import check_outputs, report_stream

    try:  # before the script runs, and absolute: the script may os.chdir
        outputs = check_outputs(options.outputs)
    except TfgraphLabError as exc:
        print(f"tfgraph-lab: {exc}. The script was not run.", file=sys.stderr)
        return 2
    # TF's own start-up lines stay as under python (the user's TF_CPP_MIN_LOG_LEVEL decides)
    from ..watching.compile_log import abandon_xla_log, prepare_xla_log

    # TensorFlow's own XLA compile log, read during the watch (exact counts), asked for before
    # anything can import TensorFlow (finding -m's module imports its package); the relay that
    # reads it starts now, and the recorder's import below overlaps its start-up.
    prepare_xla_log()
    from ..watching.lifecycle import Lifecycle
    from ..watching.livelog import stream_to_stderr
    from ..watching.recorder import TraceRecorder

    life = Lifecycle(TraceRecorder(options.max_traces, options.max_xla_compiles, view), outputs)
    parent = os.getpid()
    old_argv = sys.argv
    if module is not None:
        sys.argv = [module, *script_args]  # runpy puts the module's path in argv[0]
        path0 = os.getcwd()  # python -m puts the working directory first
    else:
        sys.argv = [script, *script_args]
        path0 = os.path.dirname(os.path.realpath(script))  # as python: the real file's folder
    sys.path.insert(0, path0)
    if module is not None and not _module_exists(module):
        sys.path.remove(path0)
        sys.argv = old_argv
        print(f"tfgraph-lab: no module named {module!r} (as python -m would find it)", file=sys.stderr)
        abandon_xla_log()
        return 1
    try:
        with stream_to_stderr(quiet=view.quiet):
            if module is not None:
                ran = life.run(lambda: _as_main(_run_module, module))
            else:
                ran = life.run(lambda: _as_main(_run_script, script))
    except TfgraphLabError as exc:  # the recording could not start
        print(f"tfgraph-lab: {exc}", file=sys.stderr)
        return 2
    finally:
        sys.argv = old_argv
        if sys.path and sys.path[0] == path0:
            sys.path.pop(0)
    status = _status(ran.error, keep_runpy=module is not None)
    if os.getpid() != parent:
        return status  # a forked child that returned: only the parent reports
    with contextlib.suppress(ValueError, OSError):  # the script may have closed sys.stdout
        sys.stdout.flush()
    done = life.finish()
    err = report_stream()
    if not view.quiet:
        print(done.report, file=err)
    for problem in done.problems:
        print(f"tfgraph-lab: {problem}", file=err)
    if done.problems:
        return status or 2
    if isinstance(ran.error, KeyboardInterrupt):
        _die_by_sigint(err)
    err.writelines(f"tfgraph-lab: warning: {w}\n" for w in done.report.budget_warnings)
    if status == 0 and done.over_budget:
        print(f"tfgraph-lab: {budget_message(list(done.overruns), list(done.xla_overruns), done.report)}", file=err)
        return EXIT_BUDGET
    return status


def _as_main(run: Callable[..., Any], target: str, **options: Any) -> Any:
    """Run the script as ``__main__``; TensorFlow's errors then show its frames, not ours."""
    from ..watching.recorder import tool_frames_hidden

    __tracebackhide__ = True
    with tool_frames_hidden():
        return run(target, run_name="__main__", **options)


def _run_script(path: str, run_name: str) -> dict[str, Any]:
    """Run the script file at ``path`` as ``python PATH`` does (CPython 3.9+), which runpy's
    ``run_path`` does not quite: the code and ``__file__`` are named by the absolute path (the
    working directory joined to the path as typed, not normalised: every traceback and warning
    line reads as under python, and ``__file__`` still holds after an ``os.chdir``),
    ``__builtins__`` is the builtins module and ``__package__`` None. ``sys.argv[0]`` stays as
    typed (set by the caller). A zip application goes through runpy, as before."""
    import builtins
    import io
    import pkgutil
    import types
    from importlib.machinery import SourceFileLoader

    if pkgutil.get_importer(path) is not None:  # what runpy.run_path asks first
        return runpy.run_path(path, run_name=run_name)
    fname = path if os.path.isabs(path) else os.path.join(os.getcwd(), path)
    with io.open_code(fname) as f:
        source = f.read()
    code = compile(source, fname, "exec", dont_inherit=True)  # no __future__ flags of ours
    main = types.ModuleType(run_name)
    main.__dict__.update(
        __file__=fname, __cached__=None, __builtins__=builtins, __loader__=SourceFileLoader(run_name, fname)
    )
    saved = sys.modules.get(run_name)
    sys.modules[run_name] = main
    try:
        exec(code, main.__dict__)
    finally:
        if saved is not None:
            sys.modules[run_name] = saved
    return main.__dict__


def _run_module(module: str, run_name: str) -> Any:
    """Run ``module`` as ``python -m MODULE`` does: through runpy's own entry for ``-m`` (python
    calls it too, so its two frames head a traceback as under python), in a fresh ``__main__``
    module (the tool's own is left alone); ``sys.argv[0]`` becomes the module's file."""
    import builtins
    import types

    main = types.ModuleType(run_name)
    main.__dict__["__builtins__"] = builtins
    saved = sys.modules.get(run_name)
    sys.modules[run_name] = main
    try:
        return runpy._run_module_as_main(module, alter_argv=True)  # type: ignore[attr-defined]
    finally:
        if saved is not None:
            sys.modules[run_name] = saved


def _status(error: BaseException | None, keep_runpy: bool = False) -> int:
    """The exit status ``python SCRIPT`` would end with; shows the error as python would: the
    script's frames, not ours (and runpy's under ``-m``, as python shows them), through the
    script's own ``sys.excepthook`` if it set one."""
    if error is None:
        return 0
    if isinstance(error, SystemExit):
        return _exit_code(error.code)
    error = script_traceback(error, keep_runpy=keep_runpy)
    hook = sys.excepthook
    try:
        hook(type(error), error, error.__traceback__)
    except Exception as failed:  # python says so and shows the error with its own hook
        with contextlib.suppress(Exception):
            print("Error in sys.excepthook:", file=sys.stderr)
            tb = failed.__traceback__
            failed = failed.with_traceback(tb.tb_next if tb is not None else None)  # not our frame
            sys.__excepthook__(type(failed), failed, failed.__traceback__)
            print("\nOriginal exception was:", file=sys.stderr)
            sys.__excepthook__(type(error), error, error.__traceback__)
    return 130 if isinstance(error, KeyboardInterrupt) else 1


def _die_by_sigint(err: TextIO) -> None:
    """End as ``python`` ends on an uncaught KeyboardInterrupt: killed by SIGINT (status -2 to
    a parent, 130 in a shell), so a caller's own Ctrl-C handling sees what it expects."""
    err.flush()
    if hasattr(signal, "SIGINT") and hasattr(os, "kill"):
        signal.signal(signal.SIGINT, signal.SIG_DFL)
        os.kill(os.getpid(), signal.SIGINT)


def _module_exists(name: str) -> bool:
    import importlib.util

    try:
        return importlib.util.find_spec(name) is not None
    except (ImportError, ValueError):  # a parent package missing, or an empty name part
        return False


def _exit_code(code: object) -> int:
    if code is None:
        return 0
    if isinstance(code, int):
        return code
    print(code, file=sys.stderr)
    return 1


def _demo(args: argparse.Namespace) -> int:
    _quiet_tensorflow()
    try:
        import tensorflow  # noqa: F401  (the demo needs it: fail here, clearly, if it is missing)
    except ModuleNotFoundError as exc:
        if exc.name != "tensorflow":
            raise
        raise TensorFlowMissingError() from exc
    from .demo import run_demo

    slow, _ = run_demo(show_all=args.all)
    if args.json:
        from ..watching.outputs import write_json

        try:
            write_json(slow, args.json)
        except TfgraphLabError as exc:
            print(f"tfgraph-lab: {exc}", file=sys.stderr)
            return 2
    return 0


def _report(parser: argparse.ArgumentParser, args: argparse.Namespace) -> int:
    from ..render.merged import render_breakdown_text, render_page
    from ..report.merge import merge_reports, process_names
    from ..watching.outputs import read_report, write_chrome_trace, write_html, write_text

    reports = []
    for path in args.paths:
        try:
            reports.append(read_report(path))
        except ValueError as exc:
            print(
                f"tfgraph-lab report: cannot read a tfgraph_lab report from {path!r}: {exc}", file=sys.stderr
            )
            return 2
    merged = None
    if len(reports) == 1:
        report = reports[0]
        title = f"tfgraph_lab report: {os.path.basename(args.paths[0])}"
    else:
        merged = merge_reports(list(zip(process_names(args.paths), reports)))
        report = merged.report
        title = f"tfgraph_lab report: {len(reports)} processes merged"
    view = view_options(args)
    report = report.with_view(view)
    try:
        budgets = watch_options(args)
    except UsageProblem as exc:
        parser.error(str(exc))
    traces = budgets.max_traces.overruns(report.functions) if budgets.max_traces else []
    xla = budgets.max_xla_compiles.overruns(report.functions) if budgets.max_xla_compiles else []
    unknown = [w for b in (budgets.max_traces, budgets.max_xla_compiles) if b for w in b.unknown_names(report.functions)]
    if args.fmt == "github":
        from ..render.ci import github_annotations

        root = os.environ.get("GITHUB_WORKSPACE") or None
        text = github_annotations(report, view, traces, xla, root=root, notes=unknown)
        if text:
            print(text)
        print(f"tfgraph-lab report: {report.headline()}", file=sys.stderr)
    elif args.fmt == "junit":
        from ..render.ci import junit_xml

        print(junit_xml(report, view, traces, xla, root=os.environ.get("GITHUB_WORKSPACE") or None))
    else:
        print(report)
        if merged is not None:
            print()
            print(render_breakdown_text(merged, view))
    if args.fmt != "github":
        sys.stderr.writelines(f"tfgraph-lab: warning: {w}\n" for w in unknown)
    try:
        if args.json:
            data = merged.to_dict() if merged is not None else report.to_dict()
            write_text(
                json.dumps(data, indent=1, ensure_ascii=False) + "\n",
                args.json,
                "--json",
                "the JSON report",
                "merged.json",
            )
        if args.html:
            write_html(render_page(report, view, title, merged), args.html)
        if args.trace:
            write_chrome_trace(report, args.trace)
    except TfgraphLabError as exc:
        print(f"tfgraph-lab: {exc}", file=sys.stderr)
        return 2
    if traces or xla:
        print(f"tfgraph-lab: {budget_message(traces, xla, report)}", file=sys.stderr)
        return EXIT_BUDGET
    return 0


def _explain(code: str | None) -> int:
    """``tfgraph-lab explain [CODE]``: a reason's page, or every code with its summary."""
    if code is None:
        for name in pages.page_names():
            print(f"{name:26} {pages.summary_line(name)}")
        print("\ntfgraph-lab explain CODE prints its page; online: " + pages.DOCS_URL)
        return 0
    try:
        text = pages.page_text(code)
    except KeyError:
        close = pages.close_matches(code)
        hint = f"; did you mean {' or '.join(close)}?" if close else ""
        print(f"tfgraph-lab explain: no reason code {code!r}{hint} (tfgraph-lab explain lists them)", file=sys.stderr)
        return 2
    print(text.rstrip("\n"))
    print(f"\n{pages.page_url(code)}")
    return 0


def _quiet_tensorflow() -> None:
    """TF's C++ start-up lines are noise in the demo, our own program (set before TensorFlow is
    imported; `run` leaves them to the user's TF_CPP_MIN_LOG_LEVEL, as python would)."""
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")


def add_workshop_links_parser(subparsers: argparse._SubParsersAction) -> argparse.ArgumentParser:  # type: ignore[type-arg]
    """Add ``workshop-links`` to a ``tfgraph-lab`` sub-command set; its handler is in
    ``handler`` of the parsed namespace."""
    parser: argparse.ArgumentParser = subparsers.add_parser(
        "workshop-links",
        help="print a workshop's launch links: one per learner for the lessons, Voila for the labs app",
        description="Print the launch links of a workshop: one link per learner for the lessons "
        "(Binder in JupyterLab, opened at the first lesson; the next ones open from its file "
        "browser, in the same session), with --hub the same through nbgitpuller, and a Binder "
        "Voila link for the labs app. Pin a tag for a workshop and open one link beforehand so "
        "Binder builds the image (docs/WORKSHOP.md).",
    )
    parser.add_argument("--ref", required=True, help="git tag (recommended), branch or commit")
    parser.add_argument("--hub", metavar="URL", help="JupyterHub URL for nbgitpuller links")
    parser.add_argument(
        "--binder-url",
        metavar="URL",
        default=BINDER_BASE,
        help=f"BinderHub to launch on (default: {BINDER_BASE})",
    )
    parser.add_argument(
        "--format", dest="fmt", choices=("text", "markdown"), default="text", help="output format"
    )
    parser.add_argument("--lessons-dir", metavar="DIR", help="lessons folder (default: the checkout's)")
    parser.add_argument("--repository", metavar="URL", help="repository URL (default: [project.urls])")
    parser.set_defaults(handler=_workshop_links)
    return parser


def _workshop_links(args: argparse.Namespace) -> int:
    """Handler of ``tfgraph-lab workshop-links``: print the links; 2 on bad input."""
    try:
        lessons = None
        if args.lessons_dir:
            folder = Path(args.lessons_dir)
            if not folder.is_dir():
                raise UsageProblem(f"--lessons-dir {args.lessons_dir!r} is not a folder")
            lessons = list_lessons(folder)
        binder = urlsplit(args.binder_url.strip())
        if binder.scheme not in ("https", "http") or not binder.netloc:
            raise UsageProblem(f"--binder-url {args.binder_url!r} is not a BinderHub URL like {BINDER_BASE}")
        links = workshop_links(
            args.ref,
            args.hub,
            lessons=lessons,
            repository=args.repository,
            binder_base=args.binder_url.strip(),
        )
        text = format_links(links, args.fmt)
    except UsageProblem as exc:
        print(f"tfgraph-lab workshop-links: {exc}", file=sys.stderr)
        return 2
    if args.ref.strip() in MOVING_REFS:
        print(
            f"tfgraph-lab workshop-links: note: {args.ref!r} moves; Binder rebuilds the image "
            "after every push to it. Pin a tag for a workshop.",
            file=sys.stderr,
        )
    sys.stdout.write(text)
    return 0
