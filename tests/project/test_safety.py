"""Safety: HTML escapes every user-derived string, ``--json`` writes only where it is told (and
fails clearly after the report is shown), and nothing opens a network connection at run time.
"""

from __future__ import annotations

import json
import os
import stat
import subprocess
import sys
import textwrap
from collections.abc import Iterator
from html.parser import HTMLParser
from pathlib import Path
from typing import Any

import pytest

tf = pytest.importorskip("tensorflow")

import tfgraph_lab  # noqa: E402
from tfgraph_lab.explain.pages import DOCS_URL  # noqa: E402
from tfgraph_lab.watching.recorder import is_patched  # noqa: E402

REPO = Path(__file__).resolve().parents[2]
EVIL_NAME = "<script>alert('name')</script>"
EVIL_FILE = "<svg onload=alert('file')>"
EVIL_TAGS = ("<b>x</b>", "<img src=x onerror=alert('arg')>", "\"'><iframe src=javascript:alert(1)>")
ALLOWED_TAGS = {
    "div", "style", "span", "b", "code", "pre", "table", "thead", "tbody", "tr", "th", "td", "h4",
    "details", "summary", "p", "ul", "li", "svg", "rect", "line", "text", "title", "g", "small",
    "br", "em", "strong", "path", "circle", "polyline", "img", "a",
}  # fmt: skip


class TagCollector(HTMLParser):
    def __init__(self) -> None:
        super().__init__()
        self.tags: list[tuple[str, list[tuple[str, str | None]]]] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.tags.append((tag, attrs))


def markup_of(html: str) -> TagCollector:
    parser = TagCollector()
    parser.feed(html)
    parser.close()
    return parser


@pytest.fixture(scope="module")
def evil_report() -> Any:
    """A real watch of a tf.function whose name, file and arguments are markup."""
    source = textwrap.dedent(
        """
        def body(x, tag, cfg):
            return x * 2
        """
    )
    namespace: dict[str, Any] = {}
    exec(compile(source, EVIL_FILE, "exec"), namespace)
    body = namespace["body"]
    body.__name__ = body.__qualname__ = EVIL_NAME
    fn = tf.function(body)
    with tfgraph_lab.watch() as w:
        for tag in EVIL_TAGS:
            fn(tf.ones([1]), tag=tag, cfg={"<i>key</i>": 1})
        fn(tf.ones([2]), tag=EVIL_TAGS[0], cfg={"<i>key</i>": 1})
        fn(tf.ones([2]), tag=EVIL_TAGS[0], cfg={"<u>other</u>": 1})
    assert fn.experimental_get_tracing_count() == w.report.function(EVIL_NAME).traces == 5
    return w.report


def test_markup_reaches_the_report_data(evil_report: Any) -> None:
    """The test below is only meaningful if the raw markup is in the report's data."""
    assert evil_report.function(EVIL_NAME).filename == EVIL_FILE
    reasons = [r for e in evil_report.events for r in e.reasons]
    changed = [r for r in reasons if r.code == "python-value-changed"]
    assert any("<img src=x" in r.after for r in changed)
    assert any("<b>x</b>" in r.before for r in changed)
    assert any("<i>key</i>" in r.before + r.after + r.argument for r in reasons)


@pytest.mark.parametrize("show_framework", [False, True])
def test_html_escapes_every_user_string(evil_report: Any, show_framework: bool) -> None:
    html = evil_report.with_options(show_framework=show_framework)._repr_html_()
    for raw in (EVIL_NAME, EVIL_FILE, *EVIL_TAGS, "<i>key</i>", "<u>other</u>"):
        assert raw not in html
    assert "&lt;script&gt;" in html and "&lt;img src=x" in html
    parsed = markup_of(html)
    tags = {tag for tag, _ in parsed.tags}
    assert tags <= ALLOWED_TAGS, f"unexpected elements {tags - ALLOWED_TAGS}"
    for tag, attrs in parsed.tags:
        for name, value in attrs:
            assert not name.startswith("on"), (tag, name)
            assert "javascript:" not in (value or "").lower(), (tag, name, value)
            if tag == "img" and name == "src":  # the timeline: our own SVG, inline
                assert (value or "").startswith("data:image/svg+xml;base64,"), value
            if tag == "a" and name == "href":  # a reason code's own page, never a user string
                assert (value or "").startswith(DOCS_URL) and (value or "").endswith(".md"), value


def test_retrace_notice_html_escapes_too(evil_report: Any) -> None:
    from tfgraph_lab.render.notice import RetraceNotice

    bundle = RetraceNotice(evil_report)._repr_mimebundle_()
    html = bundle["text/html"]
    for raw in (EVIL_NAME, *EVIL_TAGS):
        assert raw not in html
    assert {tag for tag, _ in markup_of(html).tags} <= ALLOWED_TAGS


def test_json_keeps_user_strings_verbatim(evil_report: Any) -> None:
    data = json.loads(evil_report.to_json())
    assert EVIL_NAME in {f["qualname"] for f in data["functions"]}


# --------------------------------------------------------------------- --json paths


def listing(*roots: Path) -> dict[str, list[str]]:
    return {str(root): sorted(str(p.relative_to(root)) for p in root.rglob("*")) for root in roots}


def unwritable_paths(tmp_path: Path) -> Iterator[tuple[str, Path]]:
    yield "directory", tmp_path / "adir"
    yield "missing directory", tmp_path / "missing" / "r.json"
    yield "file as a directory", tmp_path / "afile" / "r.json"
    if os.geteuid() != 0:  # root writes read-only files
        yield "read-only file", tmp_path / "readonly.json"
    if os.path.exists("/dev/full"):
        yield "full device", Path("/dev/full")


@pytest.fixture
def json_targets(tmp_path: Path) -> list[tuple[str, Path]]:
    (tmp_path / "adir").mkdir()
    (tmp_path / "afile").write_text("not a folder\n")
    readonly = tmp_path / "readonly.json"
    readonly.write_text("{}\n")
    readonly.chmod(stat.S_IRUSR)
    return list(unwritable_paths(tmp_path))


SHELL_SETUP = "import tensorflow as tf\n@tf.function\ndef safe_fn(x):\n    return x + 1\n"  # run once in the shared `shell` (conftest.py)


def test_magic_json_to_unwritable_paths(
    shell: Any, json_targets: list[tuple[str, Path]], tmp_path: Path, capsys: Any, monkeypatch: Any
) -> None:
    monkeypatch.chdir(tmp_path)
    for label, target in json_targets:
        before = listing(tmp_path)
        readonly_before = (tmp_path / "readonly.json").read_text()
        result = shell.run_cell(f"%%tracewatch --json {target}\nsafe_fn(tf.ones([3]))\n")
        assert not is_patched()
        out = capsys.readouterr().out
        error = result.error_in_exec
        assert type(error).__name__ == "UsageError", (label, error)
        message = str(error)
        assert "--json" in message or "could not write" in message, (label, message)
        assert str(target) in message or repr(str(target)) in message, (label, message)
        if label == "full device":  # only writing can tell: the report is shown, then the error
            assert "tracewatch ·" in out, f"{label}: the report must be shown before the error"
        else:  # checked before the cell ran (issue 23, item 10)
            assert "The cell was not run" in message and "tracewatch ·" not in out, (label, message)
        assert listing(tmp_path) == before, f"{label}: something was written elsewhere"
        assert (tmp_path / "readonly.json").read_text() == readonly_before


def test_magic_json_writes_exactly_the_path(shell: Any, tmp_path: Path, monkeypatch: Any) -> None:
    monkeypatch.chdir(tmp_path)
    (tmp_path / "sub").mkdir()
    before = listing(tmp_path)
    assert shell.run_cell("%%tracewatch -q --json sub/r.json\nsafe_fn(tf.ones([3]))\n").success
    after = listing(tmp_path)
    assert set(after[str(tmp_path)]) - set(before[str(tmp_path)]) == {os.path.join("sub", "r.json")}
    assert json.loads((tmp_path / "sub" / "r.json").read_text())["version"] == 1


def test_magic_json_path_with_quotes_and_spaces(shell: Any, tmp_path: Path, monkeypatch: Any) -> None:
    monkeypatch.chdir(tmp_path)
    assert shell.run_cell('%%tracewatch -q --json "my report.json"\nsafe_fn(tf.ones([3]))\n').success
    assert sorted(p.name for p in tmp_path.iterdir()) == ["my report.json"]


SCRIPT = """
import tensorflow as tf

@tf.function
def step(x):
    return x * 2

for n in (1, 2):
    step(tf.ones([n]))
print("script ran")
"""


@pytest.mark.slow
def test_cli_json_to_unwritable_paths(json_targets: list[tuple[str, Path]], tmp_path: Path) -> None:
    script = tmp_path / "train.py"
    script.write_text(SCRIPT)
    env = dict(os.environ, TF_CPP_MIN_LOG_LEVEL="3", TF_ENABLE_ONEDNN_OPTS="0")
    for label, target in json_targets:
        before = listing(tmp_path)
        proc = subprocess.run(
            [sys.executable, "-m", "tfgraph_lab", "run", "--json", str(target), str(script)],
            capture_output=True,
            text=True,
            cwd=tmp_path,
            env=env,
            timeout=300,
        )
        assert proc.returncode == 2, (label, proc.stderr[-2000:])
        assert "Traceback" not in proc.stderr
        error_at = proc.stderr.find("tfgraph-lab: ")
        assert str(target) in proc.stderr[error_at:]
        if label != "full device":  # checked before the script ran (issue 23, item 10)
            assert "script ran" not in proc.stdout and "The script was not run" in proc.stderr
            continue
        assert "script ran" in proc.stdout  # only writing can tell: report first, then the error
        report_at = proc.stderr.find("tracewatch ·")
        assert 0 <= report_at < error_at, f"{label}: report first, then a clear error:\n{proc.stderr}"
        assert listing(tmp_path) == before, f"{label}: something was written elsewhere"


# --------------------------------------------------------------------------- network

SITECUSTOMIZE = '''
"""Test harness: refuse and record every network connection of this process."""
import os
import socket

_LOG = os.environ["TFGL_NETWORK_LOG"]


def _refuse(what, *args):
    with open(_LOG, "a", encoding="utf-8") as fh:
        fh.write(f"{what} {args[:2]!r}\\n")
    raise OSError(f"network access refused by the test harness: {what}")


_connect = socket.socket.connect
_connect_ex = socket.socket.connect_ex


def _guarded(original, what):
    def method(self, address, *rest):
        if self.family in (socket.AF_INET, socket.AF_INET6):
            _refuse(what, address)
        return original(self, address, *rest)
    return method


socket.socket.connect = _guarded(_connect, "connect")
socket.socket.connect_ex = _guarded(_connect_ex, "connect_ex")
socket.getaddrinfo = lambda *a, **k: _refuse("getaddrinfo", *a)
socket.gethostbyname = lambda *a, **k: _refuse("gethostbyname", *a)
socket.create_connection = lambda *a, **k: _refuse("create_connection", *a)
os.environ["TFGL_NETWORK_GUARD"] = "on"
'''

WATCHED_CELL = """
import json, os, socket
from IPython.core.interactiveshell import InteractiveShell

assert os.environ.get("TFGL_NETWORK_GUARD") == "on", "the network guard did not load"
try:
    socket.create_connection(("192.0.2.1", 80), timeout=1)
except OSError as exc:
    assert "refused by the test harness" in str(exc)
else:
    raise AssertionError("the network guard did not refuse a connection")

ip = InteractiveShell.instance()
ip.run_line_magic("load_ext", "tfgraph_lab")
ip.run_cell("import tensorflow as tf\\n@tf.function\\ndef f(x):\\n    return x * 2\\n")
result = ip.run_cell("%%tracewatch -q -v rep --json cell.json\\nfor n in (1, 2, 2):\\n    f(tf.ones([n]))\\n")
rep = ip.user_ns["rep"]
rep._repr_html_()
ip.run_line_magic("tracewatch", "on")
ip.run_cell("f(tf.ones([7]))")
ip.run_line_magic("tracewatch", "off")
print(json.dumps({"success": result.success, "traces": rep.function("f").traces}))
"""


@pytest.mark.slow
def test_no_network_access_at_run_time(tmp_path: Path) -> None:
    guard = tmp_path / "guard"
    guard.mkdir()
    (guard / "sitecustomize.py").write_text(SITECUSTOMIZE)
    log = tmp_path / "network.log"
    env = dict(
        os.environ,
        TF_CPP_MIN_LOG_LEVEL="3",
        TF_ENABLE_ONEDNN_OPTS="0",
        TFGL_NETWORK_LOG=str(log),
        PYTHONPATH=os.pathsep.join([str(guard), str(REPO)]),
    )
    (tmp_path / "cell.py").write_text(WATCHED_CELL)

    def run(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [sys.executable, *args], capture_output=True, text=True, cwd=tmp_path, env=env, timeout=540
        )

    cell = run("cell.py")
    assert cell.returncode == 0, cell.stderr[-3000:]
    assert json.loads(cell.stdout.strip().splitlines()[-1]) == {"success": True, "traces": 2}
    selfcheck = log.read_text()
    assert selfcheck.count("\n") == 1 and "create_connection" in selfcheck  # the guard works
    log.unlink()

    for argv in (
        ["-m", "tfgraph_lab", "demo", "--json", "demo.json"],
        ["-m", "tfgraph_lab", "report", "cell.json"],
        ["-m", "tfgraph_lab", "workshop-links", "--ref", "v1.0", "--hub", "https://hub.example.org"],
    ):
        proc = run(*argv)
        assert proc.returncode == 0, (argv, proc.stderr[-3000:])
    assert not log.exists(), f"network access attempted:\n{log.read_text()}"
