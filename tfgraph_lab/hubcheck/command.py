"""``tfgraph-lab workshop check``: the load test of a teacher's JupyterHub, as a command.

Thin argparse glue over :func:`~tfgraph_lab.hubcheck.load.run_check` and
:func:`~tfgraph_lab.hubcheck.table.format_result`. Exit status: 0 when the learners fit, 1 when
they do not, 2 for bad input (a URL that is not a hub, a token without admin rights, a missing
notebook). ``requests`` and ``websocket-client`` (both installed with JupyterLab) are imported
only when the command runs. Imports nothing of TensorFlow or IPython.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path
from typing import Any

from ..model.errors import TfgraphLabError, UsageProblem
from .bounds import MAX_LEARNERS, UNASKED_LEARNERS

__all__ = ["DEFAULT_NOTEBOOKS", "add_workshop_parser"]

#: What each simulated learner runs, at the same time: the first lesson and the labs app.
DEFAULT_NOTEBOOKS = ("00_start_here.ipynb", "labs_app.ipynb")
TOKEN_ENV = "JUPYTERHUB_API_TOKEN"


def _learners(text: str) -> int:
    """``--learners``: a whole number from 1 to :data:`MAX_LEARNERS` (argparse says so, exit 2)."""
    try:
        n = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a whole number") from None
    if not 1 <= n <= MAX_LEARNERS:
        raise argparse.ArgumentTypeError(
            f"{text if len(text) <= 20 else text[:20] + '…'}: give 1 to {MAX_LEARNERS} learners"
        )
    return n


def add_workshop_parser(subparsers: argparse._SubParsersAction) -> argparse.ArgumentParser:  # type: ignore[type-arg]
    """Add ``workshop`` (with its ``check`` sub-command) to a ``tfgraph-lab`` command set."""
    workshop: argparse.ArgumentParser = subparsers.add_parser(
        "workshop",
        help="check a JupyterHub before a workshop (workshop check)",
        description="Workshop tools for a JupyterHub. Launch links: tfgraph-lab workshop-links.",
    )
    sub = workshop.add_subparsers(dest="workshop_command", metavar="COMMAND")
    sub.required = True
    check = sub.add_parser(
        "check",
        help="run N simulated learners on a JupyterHub and say whether they fit",
        description="Log N simulated learners in to the hub at once (users made with the admin "
        "token), start their servers, run lesson 00 and the labs app in each (kernels over the "
        "servers' REST API and websockets), save every notebook back, and print per-learner "
        "times, cell results and memory, z2jh sizing figures and a verdict. The users and servers "
        "it made are removed at the end. Exit status 0: they fit; 1: they do not; 2: bad input.",
    )
    check.add_argument("--hub", required=True, metavar="URL", help="the hub's public URL")
    check.add_argument(
        "--token",
        metavar="TOKEN",
        help=f"an admin's API token (default: ${TOKEN_ENV}; make one at HUB/hub/token as an admin)",
    )
    check.add_argument(
        "--learners",
        type=_learners,
        default=8,
        metavar="N",
        help=f"simulated learners, one user each on the hub (default 8; more than {UNASKED_LEARNERS} "
        f"needs --yes; at most {MAX_LEARNERS})",
    )
    check.add_argument(
        "--yes", action="store_true", help=f"make more than {UNASKED_LEARNERS} users on the hub without asking"
    )
    check.add_argument(
        "--notebook",
        action="append",
        metavar="PATH",
        help="a notebook each learner runs (repeatable; default: lessons 00_start_here and labs_app)",
    )
    check.add_argument(
        "--start-timeout", type=float, default=300.0, metavar="S", help="seconds for a server to start (300)"
    )
    check.add_argument(
        "--cell-timeout", type=float, default=300.0, metavar="S", help="seconds for one cell (300)"
    )
    check.add_argument(
        "--max-wait",
        type=float,
        default=180.0,
        metavar="S",
        help="seconds from login to the first report a learner may wait; longer: they do not fit (180)",
    )
    check.add_argument("--json", metavar="PATH", help="also write the figures as JSON")
    check.set_defaults(handler=_check)
    return workshop


def _notebooks(paths: list[str] | None) -> dict[str, dict[str, Any]]:
    if paths:
        files = [Path(p) for p in paths]
    else:
        from .workshop import find_lessons_dir

        files = [find_lessons_dir() / name for name in DEFAULT_NOTEBOOKS]
    out: dict[str, dict[str, Any]] = {}
    for path in files:
        try:
            notebook = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, ValueError) as exc:
            raise UsageProblem(f"--notebook {str(path)!r} is not a readable notebook: {exc}") from exc
        if not isinstance(notebook, dict) or not isinstance(notebook.get("cells"), list):
            raise UsageProblem(f"--notebook {str(path)!r} is not a Jupyter notebook (no cells)")
        if path.name in out:
            raise UsageProblem(f"two notebooks named {path.name!r}: each learner saves them in one folder")
        out[path.name] = notebook
    return out


def _check(args: argparse.Namespace) -> int:
    prog = "tfgraph-lab workshop check"
    try:
        import requests  # noqa: F401
        import websocket  # noqa: F401
    except ModuleNotFoundError as exc:
        print(
            f"{prog}: needs {exc.name} (pip install requests websocket-client; JupyterLab installs both)",
            file=sys.stderr,
        )
        return 2
    from .load import CheckInterrupted, run_check
    from .table import figures, format_result, summary, verdict

    if args.learners > UNASKED_LEARNERS and not args.yes:
        print(
            f"{prog}: --learners {args.learners} would make {args.learners} users and servers on "
            f"{args.hub}; give --yes to check with more than {UNASKED_LEARNERS}",
            file=sys.stderr,
        )
        return 2

    token = args.token or os.environ.get(TOKEN_ENV, "")
    try:
        if not token:
            raise UsageProblem(f"give an admin's API token with --token or ${TOKEN_ENV}")
        notebooks = _notebooks(args.notebook)
        print(
            f"{prog}: {args.learners} learners × {len(notebooks)} notebooks on {args.hub} …",
            file=sys.stderr,
            flush=True,
        )
        result = run_check(
            args.hub,
            token,
            notebooks,
            learners=args.learners,
            start_timeout=args.start_timeout,
            cell_timeout=args.cell_timeout,
        )
    except UsageProblem as exc:
        print(f"{prog}: {exc}", file=sys.stderr)
        return 2
    except CheckInterrupted as exc:  # run_check cleaned up, or says what a second Ctrl-C left
        print(f"{prog}: interrupted; {exc.said()}", file=sys.stderr)
        return 130
    except KeyboardInterrupt:  # before any user was made
        print(f"{prog}: interrupted before it made any user", file=sys.stderr)
        return 130
    except TfgraphLabError as exc:  # the hub failed in a way no learner result can hold
        print(f"{prog}: {exc}", file=sys.stderr)
        return 1
    sys.stdout.write(format_result(result, args.max_wait))
    ok, _ = verdict(result, args.max_wait)
    if args.json:
        data = {
            "summary": summary(result),
            "learners": [vars(row) for row in figures(result)],
            "problems": {
                one.name: one.problems + [f for nb in one.notebooks for f in nb.failures]
                for one in result.learners
            },
            "fits": ok,
        }
        try:
            Path(args.json).write_text(json.dumps(data, indent=1, default=str) + "\n", encoding="utf-8")
        except OSError as exc:
            print(f"{prog}: cannot write --json {args.json!r}: {exc}", file=sys.stderr)
            return 2
    return 0 if ok else 1
