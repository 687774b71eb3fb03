"""Bad input, generated: ``%%tracewatch`` flag lines and ``tfgraph-lab`` argument lists.

Thousands of generated lines (valid flags, junk tokens, quotes, ``=``, unicode) must end in one of
two ways: the magic/CLI works, or it refuses with a clear ``UsageError`` / argparse message (exit
status 2). Never another exception, never an internal traceback, never a hook left in TensorFlow.
Everything runs in a temporary working directory, and generated paths contain no separator, so a
``--json PATH`` can only ever land there.
"""

from __future__ import annotations

import contextlib
import importlib.util
import io
import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("tensorflow")
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st
from IPython.core.error import UsageError

from tfgraph_lab.faces import cli
from tfgraph_lab.watching.recorder import is_patched

FUZZ = settings(
    max_examples=1000,
    deadline=None,
    derandomize=True,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture],
)

# Words without a path separator or a home/drive prefix: a generated --json PATH stays in the cwd.
SAFE_CHARS = st.characters(
    blacklist_categories=("Cs",),
    blacklist_characters="/\\~:\"'\x00",
)
WORD = st.text(SAFE_CHARS, min_size=0, max_size=8)
NUMBER = st.one_of(st.integers(-3, 12).map(str), st.sampled_from(["0x1", "1.5", "٣", "1e3", "", " 2"]))
NAME = st.sampled_from(["f", "train_step", "Model.call", "é", "1abc", "def", "_", "a-b", ""])


def quoted(word: st.SearchStrategy[str]) -> st.SearchStrategy[str]:
    """A word, sometimes wrapped in a matched pair of quotes (IPython's arg_split keeps them)."""
    return st.one_of(word, word.map(lambda w: f'"{w}"'), word.map(lambda w: f"'{w}'"))


JUNK_TOKENS = st.one_of(
    st.sampled_from(["--", "-", "---", "-x", "--max-traces=", "--json=", "-v", "--json", "--max-traces"]),
    st.builds(lambda f, n: f"{f}={n}", NAME, NUMBER),
    st.builds(lambda w: f"--{w}", WORD),
    quoted(NAME),
    quoted(NUMBER),
    quoted(WORD),
    st.sampled_from(["on", "off", "status", "=", "==", "=1", "\t", "$x", "{x}", "\u200b", "🙂"]),
)
# Well-formed flags (with a generated value) are drawn more often than junk, so that a good share
# of the lines parse and run the watch, and the rest probe the parser's edges.
MAGIC_FLAGS = st.one_of(
    st.sampled_from(["-q", "-o", "-qo", "--quiet", "--output", "--all", "--compare-eager"]),
    st.builds(lambda n: f"-v {n}", st.sampled_from(["rep", "r2", "_x", "é", "ab_1"])),
    st.builds(lambda n: f"--max-traces {n}", st.one_of(st.integers(0, 5).map(str), NUMBER)),
    st.builds(lambda f, n: f"--max-traces {f}={n}", NAME, st.integers(0, 5)),
    st.builds(lambda w: f"--json {w}.json", st.text("abcxyz_-.é", min_size=1, max_size=6)),
)
MAGIC_LINE = st.builds(
    lambda flags, junk, at: " ".join(flags[:at] + junk + flags[at:]),
    st.lists(MAGIC_FLAGS, max_size=5),
    st.one_of(st.just([]), st.lists(JUNK_TOKENS, min_size=1, max_size=3)),
    st.integers(0, 5),
)


@pytest.fixture
def in_tmp(tmp_path: Path) -> Iterator[Path]:
    old = os.getcwd()
    os.chdir(tmp_path)
    try:
        yield tmp_path
    finally:
        os.chdir(old)


def check_usage_error(exc: UsageError, line: str) -> None:
    message = str(exc)
    assert message.strip(), f"empty UsageError for {line!r}"
    assert "Traceback" not in message
    assert len(message) < 2000


def run_magic(shell: Any, kind: str, line: str, cell: str | None) -> Any:
    quiet = io.StringIO()
    with contextlib.redirect_stdout(quiet), contextlib.redirect_stderr(quiet):
        if kind == "cell":
            return shell.run_cell_magic("tracewatch", line, cell)
        return shell.run_line_magic("tracewatch", line)


@pytest.mark.slow
@FUZZ
@given(line=MAGIC_LINE)
def test_cell_magic_flags(shell: Any, in_tmp: Path, line: str) -> None:
    try:
        value = run_magic(shell, "cell", line, "fuzz_value = 1 + 1\n")
    except UsageError as exc:
        event("usage error")
        check_usage_error(exc, line)
    else:
        event("watched")
        assert value is None or type(value).__name__ == "TraceReport"
        assert shell.user_ns["fuzz_value"] == 2
    finally:
        assert not is_patched(), f"hook left in TensorFlow after %%tracewatch {line!r}"


@pytest.mark.slow
@FUZZ
@given(line=MAGIC_LINE)
def test_line_magic_flags(shell: Any, line: str) -> None:
    try:
        run_magic(shell, "line", line, None)
    except UsageError as exc:
        check_usage_error(exc, line)
    finally:
        run_magic(shell, "line", "off", None)
        assert not is_patched(), f"hook left in TensorFlow after %tracewatch {line!r}"


@pytest.mark.parametrize("line", ['-v "abc', "--json '", '--max-traces "f=1'])
def test_unbalanced_quote_is_a_usage_error(shell: Any, in_tmp: Path, line: str) -> None:
    with pytest.raises(UsageError, match="quot"):
        run_magic(shell, "cell", line, "1\n")
    assert not is_patched()


# ------------------------------------------------------------------------------ the CLI

CLI_JUNK = st.one_of(
    st.sampled_from(["--json", "--max-traces", "--ref", "--hub", "--format", "--binder-url", "--", "-"]),
    st.sampled_from(["run", "demo", "report", "frobnicate", "-h", "--version", "--json=", "text"]),
    st.builds(lambda f, n: f"{f}={n}", NAME, NUMBER),
    st.builds(lambda w: f"--{w}", WORD),
    st.builds(lambda w: f"-{w}", WORD),
    NUMBER,
    WORD,
)
CLI_OPTIONS = {
    "run": st.one_of(
        st.sampled_from(
            [
                ["--all"],
                ["-q"],
                ["--quiet"],
                ["--json", "out.json"],
                ["--json=r.json"],
                ["-m", "tfgl_no_such_module"],
                ["-m"],
            ]
        ),
        st.builds(lambda n: ["--max-traces", n], NUMBER),
        st.builds(lambda f, n: ["--max-traces", f"{f}={n}"], NAME, NUMBER),
    ),
    "demo": st.sampled_from([["--json", "d.json"], ["--json"]]),
    "report": st.sampled_from([["--all"], ["missing.json"], ["."], ["bad.json"]]),
    "workshop-links": st.one_of(
        st.builds(lambda w: ["--ref", w], WORD),
        st.builds(lambda w: ["--hub", w], st.sampled_from(["https://hub.example", "x", ""])),
        st.builds(lambda w: ["--binder-url", w], st.sampled_from(["https://mybinder.org", "ftp://x", ""])),
        st.sampled_from([["--format", "markdown"], ["--format", "html"], ["--lessons-dir", "nowhere"]]),
        st.sampled_from([["--repository", "https://github.com/a/b"], ["--repository", "nope"]]),
    ),
}


@st.composite
def cli_argv(draw: Any) -> list[str]:
    command = draw(st.sampled_from([*CLI_OPTIONS, "frobnicate", ""]))
    argv = [command] if command else []
    options = CLI_OPTIONS.get(command)
    for _ in range(draw(st.integers(0, 4))):
        if options is not None and draw(st.integers(0, 3)):
            argv += draw(options)
        else:
            argv.append(draw(CLI_JUNK))
    if command == "run" and draw(st.integers(0, 3)):
        argv += ["missing.py", *draw(st.lists(WORD, max_size=2))]
    return argv


CLI_ARGV = cli_argv()


def parse(argv: list[str]) -> tuple[Any, int | None, str]:
    err = io.StringIO()
    with contextlib.redirect_stderr(err), contextlib.redirect_stdout(io.StringIO()):
        try:
            return cli.build_parser().parse_args(argv), None, err.getvalue()
        except SystemExit as exc:
            return None, int(exc.code or 0), err.getvalue()


def check_argparse_exit(code: int | None, stderr: str, argv: list[str]) -> None:
    assert code in (0, 2), f"exit {code} for {argv!r}"
    if code == 2:
        assert "usage: tfgraph-lab" in stderr and "error:" in stderr, (argv, stderr)
        assert "Traceback" not in stderr


@pytest.mark.slow
@FUZZ
@given(argv=CLI_ARGV)
def test_cli_parse_args(argv: list[str]) -> None:
    namespace, code, stderr = parse(argv)
    event(f"exit {code}" if namespace is None else f"parsed {namespace.command}")
    if namespace is None:
        check_argparse_exit(code, stderr, argv)
    else:
        assert namespace.command in ("run", "demo", "report", "workshop-links")


def runs_something(namespace: Any) -> bool:
    """True when ``tfgraph-lab run`` would execute real code: an existing file, or ``-m`` naming a
    module that exists (``-mcode`` would wait on stdin)."""
    if namespace.module:
        try:
            return importlib.util.find_spec(namespace.module[0]) is not None
        except (ImportError, ValueError):
            return False
    return namespace.script is not None and os.path.isfile(namespace.script)


@pytest.mark.slow
@FUZZ
@given(argv=CLI_ARGV)
def test_cli_main(in_tmp: Path, argv: list[str]) -> None:
    namespace, _, _ = parse(argv)
    if namespace is not None and namespace.command == "demo":
        return  # runs a real training loop: covered by test_cli.py, too slow here
    if namespace is not None and namespace.command == "run" and runs_something(namespace):
        return  # never run a generated file or an existing module
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        try:
            status = cli.main(argv)
        except SystemExit as exc:
            status = None
            check_argparse_exit(int(exc.code or 0), err.getvalue(), argv)
    event(f"main returned {status}")
    if status is not None:
        # 1 is python -m's own status for a module that is not there
        missing_module = status == 1 and "no module named" in err.getvalue()
        assert status in (0, 2) or missing_module, (argv, status, err.getvalue())
        assert "Traceback" not in err.getvalue()
    assert not is_patched(), f"hook left in TensorFlow after tfgraph-lab {argv!r}"
