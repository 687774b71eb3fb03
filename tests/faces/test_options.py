"""The options of the magic and the CLI have one home (issue 31.4): one spec builds both
parsers, two frozen values carry what was asked (what to record and write; what to show), the
view reaches the renderers and the live log explicitly, and ``watch()`` writes every output the
CLI can."""

from __future__ import annotations

import argparse
import dataclasses
import json
import logging
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

from tfgraph_lab.faces.args import FLAGS, MAGIC, REPORT, RUN, view_options, watch_options
from tfgraph_lab.faces.cli import build_parser
from tfgraph_lab.model.view import ViewOptions
from tfgraph_lab.render.text import render_text
from tfgraph_lab.report.trace_report import TraceReport
from tfgraph_lab.watching.livelog import LOGGER, LiveLog
from tfgraph_lab.watching.options import WatchOptions

KNOWN = Path(__file__).resolve().parents[1] / "data" / "known_report.json"


def _subparser(name: str) -> argparse.ArgumentParser:
    parser = build_parser()
    sub = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    return sub.choices[name]  # type: ignore[no-any-return]


def _magic_parser() -> argparse.ArgumentParser:
    pytest.importorskip("IPython")
    from tfgraph_lab.faces.magic import TraceWatchMagics

    return TraceWatchMagics.tracewatch.parser  # type: ignore[attr-defined,no-any-return]


def _actions(parser: argparse.ArgumentParser) -> dict[str, argparse.Action]:
    return {flag: a for a in parser._actions for flag in a.option_strings}


def test_a_flag_of_both_faces_means_the_same_in_the_magic_and_on_the_command_line() -> None:
    magic, run = _actions(_magic_parser()), _actions(_subparser("run"))
    shared = [f for f in FLAGS if {MAGIC, RUN} <= f.faces]
    assert {"--json", "--trace", "--tensorboard", "--max-traces", "--max-xla-compiles", "--all", "-q"} <= {
        name for f in shared for name in f.flags
    }
    for flag in shared:
        for name in flag.flags:
            a, b = magic[name], run[name]
            assert (type(a), a.dest, a.metavar, a.nargs, a.const) == (
                type(b),
                b.dest,
                b.metavar,
                b.nargs,
                b.const,
            ), name
    for flag in FLAGS:  # and no face has a flag the spec does not list for it
        for face, parser in ((MAGIC, magic), (RUN, run), (REPORT, _actions(_subparser("report")))):
            for name in flag.flags:
                assert (name in parser) == (face in flag.faces), (face, name)


def test_the_parsed_flags_become_two_frozen_values() -> None:
    args = _subparser("run").parse_args(["--max-traces", "step=2", "--json", "r.json", "--all", "-q", "s.py"])
    options, view = watch_options(args), view_options(args)
    assert options.max_traces is not None and options.max_traces.per_function == {"step": 2}
    assert options.outputs == {"json": "r.json"} and options.try_fix is None and not options.live
    assert view == ViewOptions.everything(brevity="quiet") and view.quiet and view.framework
    for value in (options, view):
        with pytest.raises(dataclasses.FrozenInstanceError):
            value.live = True  # type: ignore[misc,union-attr]
    with pytest.raises(ValueError, match="brevity"):
        ViewOptions(brevity="loud")


def test_a_bad_budget_is_refused_once_for_every_face() -> None:
    from tfgraph_lab.model.errors import UsageProblem

    with pytest.raises(UsageProblem, match="max-traces step=-1"):
        WatchOptions.build(max_traces="step=-1")
    args = _subparser("run").parse_args(["--max-traces", "step=x", "s.py"])
    with pytest.raises(UsageProblem):
        watch_options(args)


def test_the_renderers_take_the_view_and_a_view_changes_no_number() -> None:
    report = TraceReport.from_json(KNOWN.read_text())
    everything = report.with_view(ViewOptions.everything())
    assert render_text(report, ViewOptions.everything()) == str(everything)
    assert render_text(report, ViewOptions()) == str(report)
    assert everything.to_dict() == report.to_dict() and everything.traces == report.traces
    assert report.with_view(framework=True).view == ViewOptions(framework=True)
    assert report.with_options(show_framework=True).view == ViewOptions.everything()  # the old spelling


def test_with_options_no_longer_rewrites_the_data() -> None:
    """``with_options(**changes)`` replaced any field: ``with_options(functions=())`` emptied a
    report. The view is the only thing a copy may change."""
    report = TraceReport.from_json(KNOWN.read_text())
    with pytest.raises(TypeError):
        report.with_options(functions=())  # type: ignore[call-arg]


def _framework_record() -> Any:
    info = SimpleNamespace(
        qualname="_PerDeviceGenerator._init_func",
        label="_PerDeviceGenerator._init_func",
        filename="tf/data.py",
        framework=True,
        origin=None,
    )
    graph = SimpleNamespace(retrace=True)
    return SimpleNamespace(
        state=SimpleNamespace(info=info),
        reasons=[],
        traces=[graph],
        caller=None,
        seconds=0.01,
        thread=None,
        via="call",
        began_before_watch=False,
    )


def test_the_live_log_lists_the_frameworks_retraces_while_a_watch_that_lists_them_runs(caplog: Any) -> None:
    live, watch = LiveLog(), object()
    with caplog.at_level(logging.WARNING, logger=LOGGER.name):
        live.record(_framework_record())
        assert live.folded == {"_PerDeviceGenerator._init_func": 1} and not caplog.records
        live.list_framework(watch)
        live.record(_framework_record())
        assert [r.tfgraph_lab["function"] for r in caplog.records] == ["_PerDeviceGenerator._init_func"]  # type: ignore[attr-defined]
        live.list_framework(watch, listed=False)
        live.record(_framework_record())
    assert live.folded == {"_PerDeviceGenerator._init_func": 2} and len(caplog.records) == 1


def test_tracewatch_all_lists_the_frameworks_retraces_in_the_live_log(shell: Any) -> None:
    """``--all`` used to change only the report: the live log's switch was set by the CLI
    alone (a module global), so ``%%tracewatch --all`` still folded TF's own retraces."""
    pytest.importorskip("tensorflow")
    cell = "from tfgraph_lab.watching.livelog import LIVE_LOG\nlisted_now = LIVE_LOG.framework_listed\n"
    assert shell.run_cell("%%tracewatch -q --all\n" + cell).success
    assert shell.user_ns["listed_now"] is True
    assert shell.run_cell("%%tracewatch -q\n" + cell).success
    assert shell.user_ns["listed_now"] is False
    from tfgraph_lab.watching.livelog import LIVE_LOG

    assert not LIVE_LOG.framework_listed  # the watch unsaid it when it stopped


def test_watch_writes_every_output_the_cli_writes(tmp_path: Path) -> None:
    tf = pytest.importorskip("tensorflow")
    from tfgraph_lab import watch

    @tf.function
    def step(x: Any) -> Any:
        return x * 2

    with watch(json=tmp_path / "r.json", trace=tmp_path / "t.json", view=ViewOptions.everything()) as w:
        step(tf.ones([2]))
        step(tf.ones([3]))
    assert (
        json.loads((tmp_path / "r.json").read_text())["functions"][0]["traces"]
        == step.experimental_get_tracing_count()
    )
    assert json.loads((tmp_path / "t.json").read_text())["traceEvents"]
    assert w.report.view == ViewOptions.everything()
    with pytest.raises(Exception, match="folder"), watch(json=tmp_path / "missing" / "r.json"):
        raise AssertionError("the path is checked before the block runs")
