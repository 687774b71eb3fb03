"""``tfgraph-lab`` (also ``python -m tfgraph_lab``): run a script under the recorder, run the demo,
render a saved JSON report, or print workshop launch links. Thin argparse glue over
:mod:`tfgraph_lab.recorder` and :mod:`tfgraph_lab.workshop`.

Exit status of ``run``: the script's own status; 3 when the script succeeded but a
``--max-traces`` budget was broken; 2 for bad command-line input.
"""

from __future__ import annotations

import argparse
import os
import runpy
import sys
import traceback
from collections.abc import Sequence
from pathlib import Path
from urllib.parse import urlsplit

from . import __version__
from .budget import TraceBudget
from .errors import TensorFlowMissingError, TfgraphLabError, UsageProblem, budget_message
from .workshop import BINDER_BASE, MOVING_REFS, format_links, list_lessons, workshop_links

__all__ = ["EXIT_BUDGET", "add_workshop_links_parser", "build_parser", "main"]

EXIT_BUDGET = 3


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
        help="run a Python script under the recorder; the report goes to stderr",
        description="Run SCRIPT with every tf.function watched. The script's stdout and exit "
        "status pass through; the text report is printed to stderr.",
    )
    run.add_argument("--json", metavar="PATH", help="also write the report as JSON (version 1)")
    run.add_argument(
        "--max-traces",
        action="append",
        metavar="N|FN=N",
        help="trace budget: N per user function, FN=N for one function (repeatable); "
        f"exit status {EXIT_BUDGET} when broken",
    )
    run.add_argument("--all", action="store_true", help="also list TensorFlow/Keras functions")
    run.add_argument("-q", "--quiet", action="store_true", help="do not print the report")
    run.add_argument("script", help="the Python script to run")
    run.add_argument("args", nargs=argparse.REMAINDER, help="arguments passed to the script")

    demo = sub.add_parser("demo", help="show the retracing trap and its cure on a tiny model")
    demo.add_argument("--json", metavar="PATH", help="write the trap's report as JSON")

    show = sub.add_parser("report", help="print a report saved with --json")
    show.add_argument("path", help="a JSON file written by --json")
    show.add_argument("--all", action="store_true", help="also list TensorFlow/Keras functions")

    add_workshop_links_parser(sub)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
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
    handler = getattr(args, "handler", None)
    if handler is not None:
        return int(handler(args) or 0)
    parser.error(f"unknown command {args.command!r}")
    return 2


def _run(parser: argparse.ArgumentParser, args: argparse.Namespace) -> int:
    try:
        budget = TraceBudget.parse(args.max_traces)
    except UsageProblem as exc:
        parser.error(str(exc))
    script = args.script
    if not os.path.isfile(script):
        parser.error(f"no such script: {script!r}")
    _quiet_tensorflow()
    from .output import write_json
    from .recorder import TraceRecorder

    recorder = TraceRecorder(budget)
    status = 0
    old_argv = sys.argv
    sys.argv = [script, *args.args]
    script_dir = os.path.dirname(os.path.abspath(script))
    sys.path.insert(0, script_dir)
    try:
        recorder.start()
        try:
            runpy.run_path(script, run_name="__main__")
        except SystemExit as exc:
            status = _exit_code(exc.code)
        except BaseException:
            traceback.print_exc()
            status = 1
        finally:
            recorder.stop()
    except TfgraphLabError as exc:
        print(f"tfgraph-lab: {exc}", file=sys.stderr)
        return 2
    finally:
        sys.argv = old_argv
        if sys.path and sys.path[0] == script_dir:
            sys.path.pop(0)
    sys.stdout.flush()
    report = recorder.report
    if args.all:
        report = report.with_options(show_framework=True)
    if not args.quiet:
        print(report, file=sys.stderr)
    if args.json:
        try:
            write_json(report, args.json)
        except TfgraphLabError as exc:
            print(f"tfgraph-lab: {exc}", file=sys.stderr)
            return status or 2
    if budget is not None and status == 0:
        overruns = budget.overruns(report.functions)
        if overruns:
            print(f"tfgraph-lab: {budget_message(overruns)}", file=sys.stderr)
            return EXIT_BUDGET
    return status


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

    slow, _ = run_demo()
    if args.json:
        from .output import write_json

        try:
            write_json(slow, args.json)
        except TfgraphLabError as exc:
            print(f"tfgraph-lab: {exc}", file=sys.stderr)
            return 2
    return 0


def _report(parser: argparse.ArgumentParser, args: argparse.Namespace) -> int:
    from .report import TraceReport

    try:
        with open(args.path, encoding="utf-8") as fh:
            report = TraceReport.from_json(fh.read())
    except (OSError, ValueError, KeyError, TypeError) as exc:
        parser.error(f"cannot read a tfgraph_lab report from {args.path!r}: {exc}")
    print(report.with_options(show_framework=args.all))
    return 0


def _quiet_tensorflow() -> None:
    """TF's C++ start-up lines are noise here (set before TensorFlow is imported)."""
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")


def add_workshop_links_parser(subparsers: argparse._SubParsersAction) -> argparse.ArgumentParser:  # type: ignore[type-arg]
    """Add ``workshop-links`` to a ``tfgraph-lab`` sub-command set; its handler is in
    ``handler`` of the parsed namespace."""
    parser: argparse.ArgumentParser = subparsers.add_parser(
        "workshop-links",
        help="print Binder and nbgitpuller launch links for every lesson",
        description="Print launch links for each lesson: Binder in JupyterLab, Binder as a Voila "
        "app, and (with --hub) nbgitpuller links for a JupyterHub. Pin a tag for a workshop and "
        "open one link beforehand so Binder builds the image (docs/WORKSHOP.md).",
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
