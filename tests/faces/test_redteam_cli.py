"""Red team, the command line (issue 23): ``tfgraph-lab report`` on JSON of the wrong shape, and
``tfgraph-lab run`` on scripts that chdir, close stdout, are interrupted or fork. Every case
failed before its fix; each runs ``python -m tfgraph_lab`` in a subprocess."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from _cli import run_cli as cli

from tfgraph_lab.report_schema import SCHEMA, first_problem

GOOD = {"version": 1, "functions": [{"qualname": "f", "calls": 1, "traces": 1}], "events": []}

HOSTILE: list[tuple[str, Any, str]] = [
    ("list", [], "$: expected an object"),
    ("null", None, "$: expected an object"),
    ("no version", {"functions": []}, "'version' is missing"),
    ("qualname null", {"version": 1, "functions": [{"qualname": None, "calls": 1, "traces": 1}]},
     "$.functions[0].qualname: expected a string, got null"),
    ("signature 7", {"version": 1, "events": [{"qualname": "f", "traced": True, "signature": 7}]},
     "$.events[0].signature: expected a string or null, got 7"),
    ("reasons text", {"version": 1, "events": [{"qualname": "f", "traced": True, "reasons": "x"}]},
     "$.events[0].reasons: expected a list, got 'x'"),
    ("reason not an object", {"version": 1, "events": [{"qualname": "f", "traced": True, "reasons": ["x"]}]},
     "$.events[0].reasons[0]: expected an object"),
    ("calls 1e400", {"version": 1, "functions": [{"qualname": "f", "calls": 1e400, "traces": 1}]},
     "$.functions[0].calls: expected a whole number >= 0, got"),
    ("calls -1", {"version": 1, "functions": [{"qualname": "f", "calls": -1, "traces": 1}]},
     "$.functions[0].calls: expected a value >= 0"),
    ("graphs of text", {"version": 1, "functions": [{"qualname": "f", "calls": 1, "traces": 1, "graphs": "g"}]},
     "$.functions[0].graphs: expected a list"),
    ("runs bad", {"version": 1, "summarised_runs": [{"first": 0, "calls": "9", "seconds": 0, "max_seconds": 0}]},
     "$.summarised_runs[0].calls: expected a whole number"),
    ("version true", {"version": True}, "$.version: expected 1, got True"),
]  # fmt: skip


@pytest.mark.parametrize(("label", "data", "message"), HOSTILE, ids=[h[0] for h in HOSTILE])
def test_the_schema_names_the_first_bad_path(label: str, data: Any, message: str) -> None:
    problem = first_problem(data)
    assert problem is not None and message in problem, problem
    assert first_problem(GOOD) is None


def test_the_schema_agrees_with_jsonschema_on_the_hostile_cases() -> None:
    jsonschema = pytest.importorskip("jsonschema")
    jsonschema.Draft202012Validator.check_schema(SCHEMA)
    validator = jsonschema.Draft202012Validator(SCHEMA)
    assert validator.is_valid(GOOD)
    for label, data, _ in HOSTILE:
        if label == "calls 1e400":  # jsonschema takes inf for a number; JSON has no such number
            continue
        assert not validator.is_valid(data), label


@pytest.mark.parametrize(
    ("label", "text", "message"),
    [(label, json.dumps(data), message) for label, data, message in HOSTILE[:4]]
    + [
        ("deep nesting", "[" * 100_000 + "]" * 100_000, "nested too deeply"),
        ("calls 1e400 as written", '{"version": 1, "functions": [{"qualname": "f", "calls": 1e400, "traces": 1}]}',
         "$.functions[0].calls"),
        ("not JSON", "{", "not JSON"),
        # issue 33.6: an exact int no float holds (OverflowError), a timing of text (TypeError)
        ("calls 10**400", '{"version": 1, "functions": [{"qualname": "f", "calls": 1%s, "traces": 1}]}'
         % ("0" * 400), "$.functions[0].calls: expected a number of at most 2**53, got a number of 401 digits"),
        ("compare_eager text", json.dumps({**GOOD, "compare_eager": {"graph_seconds": "x"}}),
         "$.compare_eager.graph_seconds: expected a number >= 0, got 'x'"),
    ],
)  # fmt: skip
def test_report_on_hostile_json_exits_2_naming_the_path(
    tmp_path: Path, label: str, text: str, message: str
) -> None:
    path = tmp_path / "r.json"
    path.write_text(text)
    proc = cli("report", str(path), cwd=tmp_path)
    assert proc.returncode == 2, (label, proc.stderr[-1500:])
    assert "Traceback" not in proc.stderr, proc.stderr[-1500:]
    assert message in proc.stderr and str(path) in proc.stderr, proc.stderr


# Characters a name can hold that a terminal or reader acts on (issue 33.6): NUL, the line
# separator, a bidi override (Trojan Source) and a lone surrogate (no UTF-8 encodes it).
HOSTILE_NAME = "a\x00b\u2028c\u202ed\ud800e"
RAW = ("\x00", "\u2028", "\u202e", "\ud800")
WRITTEN_OUT = ("\\x00", "\\u2028", "\\u202e", "\\ud800")


def test_report_shows_hostile_names_written_out_everywhere(tmp_path: Path) -> None:
    data = {**GOOD, "functions": [{"qualname": HOSTILE_NAME, "calls": 1, "traces": 1}]}
    for name in ("w0.json", "w\u202e1.json"):  # a process (file) name is shown too
        (tmp_path / name).write_text(json.dumps(data))  # JSON's escapes: "\ud800"
    proc = subprocess.run(
        [sys.executable, "-m", "tfgraph_lab", "report", "w0.json", "w\u202e1.json",
         "--json", "m.json", "--html", "m.html", "--trace", "t.json"],
        capture_output=True, cwd=tmp_path, env=dict(os.environ, TF_CPP_MIN_LOG_LEVEL="3"), timeout=300,
    )  # fmt: skip
    out, err = proc.stdout.decode("utf-8"), proc.stderr.decode("utf-8")  # was UnicodeEncodeError
    assert proc.returncode == 0 and "Traceback" not in err, err[-1500:]
    page = (tmp_path / "m.html").read_text(encoding="utf-8")
    for shown in (out, page):
        assert "per process" in shown.lower() and "w\\u202e1" in shown  # the merged table
        assert not any(char in shown for char in RAW), shown[-800:]
        assert all(text in shown for text in WRITTEN_OUT)
    merged = json.loads((tmp_path / "m.json").read_text(encoding="utf-8"))
    assert merged["functions"][0]["qualname"] == HOSTILE_NAME  # the data keeps the name verbatim
    assert json.loads((tmp_path / "t.json").read_text(encoding="utf-8"))


# ----------------------------------------------------------------------------- run

STEP = "import tensorflow as tf\n\n@tf.function\ndef step(x):\n    return x * 2\n\n"


def _script(tmp_path: Path, body: str) -> Path:
    script = tmp_path / "work" / "train.py"
    script.parent.mkdir(exist_ok=True)
    script.write_text(STEP + body)
    return script


@pytest.mark.slow
def test_output_paths_resolve_where_the_command_was_given(tmp_path: Path) -> None:
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    script = _script(tmp_path, f"import os\nos.chdir({str(elsewhere)!r})\nstep(tf.ones([2]))\n")
    proc = cli("run", "--json", "rel.json", "--trace", "rel.trace.json", str(script), cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr[-1500:]
    assert json.loads((tmp_path / "rel.json").read_text())["functions"][0]["calls"] == 1
    assert (tmp_path / "rel.trace.json").exists()
    assert sorted(p.name for p in elsewhere.iterdir()) == []


@pytest.mark.parametrize("target", ["adir", "missing/r.json", "afile/r.json"])
def test_output_paths_are_checked_before_the_script_runs(tmp_path: Path, target: str) -> None:
    (tmp_path / "adir").mkdir()
    (tmp_path / "afile").write_text("x\n")
    script = _script(tmp_path, "print('script ran')\n")
    proc = cli("run", "--json", target, str(script), cwd=tmp_path)
    assert proc.returncode == 2, proc.stderr[-1500:]
    assert "script ran" not in proc.stdout
    assert "--json" in proc.stderr and target in proc.stderr and "not run" in proc.stderr, proc.stderr


@pytest.mark.slow
def test_a_script_that_closes_stdout_still_gets_its_report(tmp_path: Path) -> None:
    script = _script(tmp_path, "step(tf.ones([2]))\nprint('bye')\nimport sys\nsys.stdout.close()\n")
    proc = cli("run", "--json", "r.json", str(script), cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr[-1500:]
    assert "bye" in proc.stdout
    assert "Traceback" not in proc.stderr and "tracewatch ·" in proc.stderr, proc.stderr[-1500:]
    assert json.loads((tmp_path / "r.json").read_text())["functions"][0]["calls"] == 1


@pytest.fixture
def sigint_as_a_terminal_gives_it() -> Iterator[None]:
    """Children of the test get SIGINT's default action. A runner started as a background job of
    a non-interactive shell (``cmd &``) ignores SIGINT, and an ignored signal stays ignored
    across exec: the plain ``python`` below then ran to the end and exited 0 (seen in a CI run
    started that way)."""
    before = signal.getsignal(signal.SIGINT)
    if before == signal.SIG_IGN:
        signal.signal(signal.SIGINT, signal.default_int_handler)  # a caught signal resets on exec
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, before)


@pytest.mark.slow
@pytest.mark.skipif(not hasattr(signal, "SIGINT") or os.name != "posix", reason="POSIX signals")
def test_sigint_ends_as_python_ends(tmp_path: Path, sigint_as_a_terminal_gives_it: None) -> None:
    """``python script.py`` interrupted exits by SIGINT (-2 to a parent, 130 in a shell): so
    must ``tfgraph-lab run``, after its report and JSON."""
    script = _script(tmp_path, "step(tf.ones([2]))\nimport os, signal\nos.kill(os.getpid(), signal.SIGINT)\n")
    env = dict(os.environ, TF_CPP_MIN_LOG_LEVEL="3")
    plain = subprocess.run(
        [sys.executable, str(script)], capture_output=True, text=True, env=env, timeout=300
    )
    assert plain.returncode == -signal.SIGINT
    proc = cli("run", "--json", "r.json", str(script), cwd=tmp_path)
    assert proc.returncode == plain.returncode, proc.stderr[-1500:]
    assert "KeyboardInterrupt" in proc.stderr and "tracewatch ·" in proc.stderr
    assert json.loads((tmp_path / "r.json").read_text())["functions"][0]["calls"] == 1


@pytest.mark.slow
@pytest.mark.skipif(not hasattr(os, "fork"), reason="os.fork")
def test_a_forked_child_writes_no_report(tmp_path: Path) -> None:
    script = _script(
        tmp_path,
        "import os\nstep(tf.ones([2]))\npid = os.fork()\n"
        "if pid:\n    os.waitpid(pid, 0)\n    step(tf.ones([3]))\n    print('parent done')\n"
        "else:\n    print('child done', flush=True)\n",
    )
    proc = cli("run", "--json", "r.json", str(script), cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr[-1500:]
    assert "child done" in proc.stdout and "parent done" in proc.stdout
    assert proc.stderr.count("tracewatch ·") == 1, proc.stderr
    assert json.loads((tmp_path / "r.json").read_text())["functions"][0]["calls"] == 2


# Issue 33.2: TensorFlow's own warning test, run as a script under `tfgraph-lab run`.
TF_WARNING_TEST = '''
import logging, unittest
import tensorflow as tf

class RetracingWarning(unittest.TestCase):
    def test_frequent_retracing_warning_on_reinstantiation(self):
        with self.assertLogs(level="WARN", logger=logging.getLogger("tensorflow")) as logs:
            for i in range(5):
                @tf.function
                def f(x):
                    return x
                f(tf.constant([i]))
                if i < 4:
                    self.assertEqual(logs.output, [])
        self.assertEqual(len(logs.output), 1)
        self.assertIn("Tracing is expensive", logs.output[0])

unittest.main()
'''


@pytest.mark.slow
def test_tfs_own_retracing_warning_test_passes_under_run(tmp_path: Path) -> None:
    script = tmp_path / "warning_test.py"
    script.write_text(TF_WARNING_TEST)
    plain = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, cwd=tmp_path)
    assert plain.returncode == 0, plain.stderr[-1500:]
    proc = cli("run", str(script), cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert "OK" in proc.stderr and "tracewatch ·" in proc.stderr, proc.stderr[-1500:]


@pytest.mark.slow
def test_a_script_that_closes_stderr_exits_as_python_does(tmp_path: Path) -> None:  # issue 33.4
    script = _script(tmp_path, "step(tf.ones([2]))\nprint('bye')\nimport sys\nsys.stderr.close()\n")
    plain = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, cwd=tmp_path)
    proc = cli("run", str(script), cwd=tmp_path)
    assert proc.returncode == plain.returncode == 0, proc.stderr[-1500:]
    assert proc.stdout == plain.stdout == "bye\n"
    assert "Traceback" not in proc.stderr and "lost sys.stderr" not in proc.stderr, proc.stderr[-1500:]
    assert "tracewatch ·" in proc.stderr, proc.stderr[-1500:]
