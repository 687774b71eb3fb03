"""One watch lifecycle (lifecycle.Lifecycle) for the magic, `tfgraph-lab run` and watch():
the order of its steps and what finish() hands back, on a recorder that records nothing."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from tfgraph_lab.model.errors import TfgraphLabError, TraceBudgetExceeded
from tfgraph_lab.model.records import FunctionSummary
from tfgraph_lab.report import TraceReport
from tfgraph_lab.watching.lifecycle import Lifecycle
from tfgraph_lab.watching.outputs import check_outputs


class FakeRecorder:
    def __init__(self, log: list[str], over: bool = False) -> None:
        self.log = log
        self.over = over
        self.active = False

    def start(self) -> FakeRecorder:
        self.log.append("start")
        self.active = True
        return self

    def stop(self) -> None:
        self.log.append("stop")
        self.active = False

    @property
    def report(self) -> TraceReport:
        assert not self.active, "the report is built after the recording stopped"
        return TraceReport(functions=(FunctionSummary("f", "f.py", 1, 3, 3, 0, 0.1, 0.0, False),))

    def overruns(self) -> tuple[list[tuple[str, int, int]], list[tuple[str, int, int]]]:
        return ([("f", 3, 1)] if self.over else []), []


class FakeView:
    def __init__(self, log: list[str]) -> None:
        self.log = log

    def close(self, report: Any = None) -> None:
        self.log.append("view shows the report" if report is not None else "view closed")


def test_run_keeps_what_the_code_raised_and_stops_the_view_before_the_recording() -> None:
    log: list[str] = []

    def code() -> None:
        log.append("code")
        raise KeyboardInterrupt

    life = Lifecycle(FakeRecorder(log), live=lambda recorder: FakeView(log))
    ran = life.run(code)
    assert isinstance(ran.error, KeyboardInterrupt) and ran.value is None and ran.seconds >= 0
    done = life.finish(replace_view=True, compare_eager={"graph_seconds": 1.0})
    assert log == ["start", "code", "view closed", "stop", "view shows the report"]
    assert done.report.compare_eager == {"graph_seconds": 1.0}
    assert not done.problems and not done.over_budget


def test_finish_writes_every_output_and_reports_the_ones_it_could_not(tmp_path: Path) -> None:
    outputs = check_outputs({"json": tmp_path / "r.json", "trace": tmp_path / "t.json", "tensorboard": None})
    (tmp_path / "t.json").mkdir()  # became a folder after the check: its write fails, not the others
    life = Lifecycle(FakeRecorder([], over=True), outputs)
    assert life.run(lambda: 42).value == 42
    done = life.finish()
    assert json.loads((tmp_path / "r.json").read_text())["functions"][0]["traces"] == 3
    assert [type(p) for p in done.problems] == [TfgraphLabError] and "--trace" in str(done.problems[0])
    with pytest.raises(TraceBudgetExceeded) as caught:
        done.check_budget()
    assert caught.value.overruns == [("f", 3, 1)] and caught.value.report is done.report


def test_a_failing_start_runs_nothing() -> None:
    class Broken(FakeRecorder):
        def start(self) -> FakeRecorder:
            raise TfgraphLabError("cannot start")

    ran: list[bool] = []
    with pytest.raises(TfgraphLabError, match="cannot start"):
        Lifecycle(Broken([])).run(lambda: ran.append(True))
    assert not ran


def test_output_checks_name_the_front_ends_option(tmp_path: Path) -> None:
    (tmp_path / "afile").write_text("")
    with pytest.raises(TfgraphLabError, match="tensorboard_dir"):
        check_outputs({"tensorboard": tmp_path / "afile" / "logs"}, names={"tensorboard": "tensorboard_dir"})
    with pytest.raises(TfgraphLabError, match="--json"):
        check_outputs({"json": tmp_path})
    # TensorFlow's own file systems are left to TensorFlow, never made a local path
    assert check_outputs({"tensorboard": "gs://bucket/logs"}) == {"tensorboard": "gs://bucket/logs"}
