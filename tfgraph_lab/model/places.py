"""Where Python code lives: the user's function behind wrappers, code locations, and which files
are TensorFlow's, Keras's or ours rather than the user's.

Pure Python introspection (code objects, frames, file paths). Imports neither TensorFlow nor
IPython; knows TensorFlow only by the folders its packages live in. :func:`cell_label` reads
an IPython that is already running through ``sys.modules`` (a look-up the import linter cannot
see, listed in ``tests/project/test_architecture.py``), so the recorder can name notebook cells when it
records.
"""

from __future__ import annotations

import ast
import functools
import linecache
import os
import sys
import sysconfig
import types
from collections.abc import Mapping
from typing import Any

from .records import CallSource

__all__ = [
    "PACKAGE_DIR",
    "call_on_line",
    "call_source",
    "caller_at",
    "caller_location",
    "cell_label",
    "closure_functions",
    "code_location",
    "innermost_python_function",
    "is_framework_file",
    "reader_place",
    "script_traceback",
]


def innermost_python_function(obj: Any) -> Any:
    """Follow ``__wrapped__`` and bound methods' ``__func__`` to the user's own function."""
    seen = set()
    while id(obj) not in seen:
        seen.add(id(obj))
        if isinstance(obj, types.MethodType):
            obj = obj.__func__
            continue
        wrapped = getattr(obj, "__wrapped__", None)
        if wrapped is not None and wrapped is not obj:
            obj = wrapped
            continue
        break
    return obj


def closure_functions(fn: Any, depth: int = 2) -> str:
    """The functions ``fn``'s closure captures, by qualname (nested ``depth`` levels deep).

    Two closures of one piece of code that capture different functions are different
    functions, not a re-created one: Keras builds its train and test functions from one
    ``one_step_on_data`` closure over ``train_step`` or ``test_step`` (Keras 3.x). Captured
    values that are not functions (numbers, models, tensors) are left out.
    """
    closure = getattr(fn, "__closure__", None)
    if not closure or depth <= 0:
        return ""
    names = []
    for cell in closure:
        try:
            value = cell.cell_contents
        except ValueError:  # an empty cell
            continue
        python_function = getattr(value, "python_function", None)  # a tf.function
        target = innermost_python_function(python_function if python_function is not None else value)
        if not isinstance(target, types.FunctionType):
            continue
        inner = closure_functions(target, depth - 1)
        names.append(target.__qualname__ + (f"({inner})" if inner else ""))
    return ",".join(names)


def code_location(fn: Any) -> tuple[str, str, int]:
    qualname = getattr(fn, "__qualname__", None) or getattr(fn, "__name__", None)
    if qualname is None:
        qualname = type(fn).__qualname__
    code = getattr(fn, "__code__", None)
    if code is None and callable(fn):
        code = getattr(type(fn).__call__, "__code__", None)
    filename = code.co_filename if code is not None else "<unknown>"
    firstlineno = code.co_firstlineno if code is not None else 0
    return str(qualname), filename, int(firstlineno)


def _framework_roots() -> tuple[str, ...]:
    roots = []
    for package in ("tensorflow", "keras", "tf_keras", "absl", "tensorflow_datasets"):
        module = sys.modules.get(package)
        path = getattr(module, "__file__", None)
        if path:
            roots.append(os.path.dirname(os.path.abspath(path)) + os.sep)
    purelib = sysconfig.get_paths().get("purelib")
    if purelib:
        for package in ("tensorflow", "keras", "tf_keras"):
            roots.append(os.path.join(purelib, package) + os.sep)
    return tuple(dict.fromkeys(roots))


_ROOTS: tuple[str, ...] | None = None


def is_framework_file(filename: str) -> bool:
    """True for code of TensorFlow, Keras (or this package): not the user's."""
    global _ROOTS
    if _ROOTS is None:
        _ROOTS = _framework_roots()
    if filename.startswith("<frozen"):
        return True
    path = filename if filename.startswith("<") else os.path.abspath(filename)
    return path.startswith(_ROOTS)


# Per code file: is it the user's (caller_at's test)? A trace's caller walk meets the same
# dozen TF files each time, and os.path.abspath is most of the walk's cost (~8 µs per trace
# in a retracing loop, TF 2.21). Bounded: a notebook compiles a file per cell run.
_USERS_FILE: dict[str, bool] = {}
_USERS_FILE_MAX = 4096


def _is_users_file(filename: str, stdlib: str) -> bool:
    known = _USERS_FILE.get(filename)
    if known is None:
        known = (
            not is_framework_file(filename)
            and (not filename.startswith(PACKAGE_DIR) or filename == _DEMO)
            and not (stdlib != os.sep and filename.startswith(stdlib))
        )
        if len(_USERS_FILE) >= _USERS_FILE_MAX:
            _USERS_FILE.clear()
        _USERS_FILE[filename] = known
    return known


PACKAGE_DIR = os.path.dirname(os.path.dirname(os.path.abspath(__file__))) + os.sep  # tfgraph_lab/
# Our own machinery; the demo module is user-like code and stays visible.
_DEMO = PACKAGE_DIR + os.path.join(
    "faces", "demo.py"
)  # the built-in demo plays the user: its lines are shown


@functools.lru_cache(maxsize=1)
def _stdlib_dir() -> str:
    return sysconfig.get_paths().get("stdlib", "") + os.sep


def caller_location() -> str | None:
    """``file:line`` of the innermost frame outside TF, Keras, tfgraph_lab and the stdlib."""
    return caller_at()[0]


def caller_at(hooks: frozenset[str] = frozenset()) -> tuple[str | None, types.CodeType | None, int]:
    """:func:`caller_location`, and the code object and instruction (``f_lasti``) of that
    frame's call when the frame called a function of the files ``hooks`` directly (the watch's
    hook on ``Function.__call__``): then that instruction is the call of the tf.function, whose source
    :func:`call_source` finds when the report is built. ``(place, None, -1)`` when the call
    came through other code (Keras's ``fit``, AutoGraph's ``converted_call``). Costs a frame
    walk, as before, and keeps two references: for calls that traced only."""
    stdlib = _stdlib_dir()
    frame = sys._getframe(1)
    inner = None
    while frame is not None:
        filename = frame.f_code.co_filename
        if _is_users_file(filename, stdlib):
            place = f"{filename}:{frame.f_lineno}"
            direct = inner is not None and inner.f_code.co_filename in hooks
            return (place, frame.f_code, frame.f_lasti) if direct else (place, None, -1)
        inner = frame
        frame = frame.f_back  # type: ignore[assignment]
    return None, None, -1


def running_ipython() -> Any:
    """The running IPython shell, or None: what ``IPython.get_ipython()`` returns, read from
    ``InteractiveShell``'s singleton (``get_ipython()`` is ``InteractiveShell.instance()`` once
    one is initialized) in 0.2 µs instead of ~6. It runs on every trace, and TF 2.21 imports
    IPython in plain scripts too, so "IPython is imported" is no shortcut. Imports nothing."""
    shell_module = sys.modules.get("IPython.core.interactiveshell")
    if shell_module is None:
        return None
    return getattr(getattr(shell_module, "InteractiveShell", None), "_instance", None)


def cell_label(place: str | None) -> tuple[str, str] | None:
    """``(file, "In [3]")`` when the file of ``place`` (``file`` or ``file:line``) is a cell the
    running IPython compiled (ipykernel names cells ``<tmp>/ipykernel_<pid>/<hash>.py``,
    terminal IPython ``<ipython-input-3-…>``); None otherwise. Asks the running shell
    (:func:`running_ipython`), through its compiler's ``_filename_map`` (IPython 8 and 9:
    filename → execution count)."""
    if not place:
        return None
    shell = running_ipython()
    if shell is None:
        return None
    file, _, line = place.rpartition(":")
    if not file or not line.isdigit():
        file = place
    try:
        number = shell.compile._filename_map.get(file)
    except Exception:  # an IPython without that map: keep the path
        return None
    return None if number is None else (file, f"In [{number}]")


def _launcher(filename: str, keep_runpy: bool = False) -> bool:
    """A frame of what runs the user's script: this package (``tfgraph-lab run``) or runpy
    (unless ``keep_runpy``: ``python -m`` shows runpy's frames too)."""
    return filename.startswith(PACKAGE_DIR) or (not keep_runpy and filename in ("<frozen runpy>", _RUNPY))


_RUNPY = os.path.join(sysconfig.get_paths().get("stdlib", ""), "runpy.py")


def script_traceback(exc: BaseException, keep_runpy: bool = False) -> BaseException:
    """``exc`` (and the exceptions it chains) with the frames of the tool that ran the script
    left out, as ``python SCRIPT`` would show them: the leading frames of this package and
    runpy (``cli.py``, ``lifecycle.py``, ``<frozen runpy>``), and any frame marked
    ``__tracebackhide__`` (the call hook), the mark pytest and IPython honour too.
    ``keep_runpy``: runpy's frames stay (``python -m`` shows them)."""
    seen: set[int] = set()
    todo: list[BaseException | None] = [exc]
    while todo:
        e = todo.pop()
        if e is None or id(e) in seen:
            continue
        seen.add(id(e))
        frames = []
        tb = e.__traceback__
        while tb is not None:
            frames.append(tb)
            tb = tb.tb_next
        while frames and _launcher(frames[0].tb_frame.f_code.co_filename, keep_runpy):
            frames.pop(0)
        kept = [t for t in frames if not t.tb_frame.f_locals.get("__tracebackhide__")]
        if not frames and isinstance(e, SyntaxError) and e.__traceback__ is not None:
            e.__traceback__ = None  # the script did not compile: python shows no traceback
        if frames or e.__traceback__ is None:
            new: types.TracebackType | None = None
            for t in reversed(kept):
                new = types.TracebackType(new, t.tb_frame, t.tb_lasti, t.tb_lineno)
            e.__traceback__ = new
        todo += [e.__cause__, e.__context__]
    return exc


def reader_place(path: str, labels: Mapping[str, str] | None = None) -> str:
    """A file path (``file`` or ``file:line``) as a reader wants it: the notebook cell's label
    from ``labels`` (a report's ``labels``: ``In [3], line 7``), relative to the working
    directory when inside it, from the package on for installed code."""
    file, line = path.rsplit(":", 1) if ":" in path[2:] else (path, "")
    if not line.isdigit():
        file, line = path, ""
    cell = (labels or {}).get(file)
    if cell is not None:
        return f"{cell}, line {line}" if line else cell
    if not path or path.startswith("<"):
        return path
    try:
        rel = os.path.relpath(path)
    except ValueError:  # another drive on Windows
        return path
    if not rel.startswith(".."):
        return rel
    marker = f"site-packages{os.sep}"
    if marker in path:
        return path.split(marker, 1)[1]
    return path


# Why a call's source cannot be shown, in the words a fix prints after "shown as a template: ".
NOT_DIRECT = (
    "the call came through other code (Keras's own, or another tf.function's trace), not a line of yours"
)
NO_POSITIONS = "this Python (before 3.11) records no call positions"
NO_SOURCE = "the calling code has no source to read (built by exec() from a string, or its file is gone)"
NOT_A_CALL = "the source at the call's position is not a call Python can read"


def call_source(
    place: str, code: types.CodeType | None, lasti: int, labels: Mapping[str, str] | None = None
) -> CallSource:
    """The source of the call at instruction ``lasti`` of ``code`` (recorded by :func:`caller_at`
    at a call that traced): Python 3.11's ``co_positions()`` give the call expression's exact
    start and end, the text comes from ``linecache`` (a script's file, an IPython cell). ``why``
    says what is missing when it cannot be had. Run when the report is built, once per call
    site."""
    where = reader_place(place, labels)
    if code is None or lasti < 0:
        return CallSource(place, where, why=NOT_DIRECT)
    positions = getattr(code, "co_positions", None)
    if positions is None:
        return CallSource(place, where, why=NO_POSITIONS)
    try:
        line, end_line, col, end_col = list(positions())[lasti // 2]
    except (IndexError, ValueError):
        line = None
    if not line or not end_line or col is None or end_col is None:
        return CallSource(place, where, why=NO_POSITIONS)
    lines = linecache.getlines(code.co_filename)
    if len(lines) < end_line:
        return CallSource(place, where, why=NO_SOURCE)
    # positions count UTF-8 bytes; the edit counts characters
    first = lines[line - 1].encode("utf-8")
    last = lines[end_line - 1].encode("utf-8")
    try:
        c0 = len(first[:col].decode("utf-8"))
        c1 = len(last[:end_col].decode("utf-8"))
    except UnicodeDecodeError:
        return CallSource(place, where, why=NOT_A_CALL)
    if line == end_line:
        text = lines[line - 1][c0:c1]
    else:
        text = lines[line - 1][c0:] + "".join(lines[line : end_line - 1]) + lines[end_line - 1][:c1]
    try:
        node = ast.parse(text, mode="eval").body
    except SyntaxError:
        node = None
    if not isinstance(node, ast.Call):
        return CallSource(place, where, why=NOT_A_CALL)
    return CallSource(place, where, line, c0, end_line, c1, text)


def call_on_line(place: str, method: str, labels: Mapping[str, str] | None = None) -> CallSource:
    """The one call of ``.method(...)`` on the line ``place`` (``file:line``) names: a call the
    user made into Keras (``model.predict(x)``), whose own frame the watch never saw call a
    tf.function. ``why`` says why there is none (no source, no such call, several)."""
    where = reader_place(place, labels)
    file, _, number = place.rpartition(":")
    lines = linecache.getlines(file) if number.isdigit() else []
    if not number.isdigit() or len(lines) < int(number):
        return CallSource(place, where, why=NO_SOURCE)
    line = lines[int(number) - 1]
    body = line.lstrip()
    indent = len(line) - len(body)
    tree = None
    for tail in ("", " pass"):  # `for x in xs: y = model.predict(x)`, `with …:` parse with a body
        try:
            tree = ast.parse(body.rstrip() + tail)
            break
        except SyntaxError:
            continue
    calls = [
        node
        for node in (ast.walk(tree) if tree is not None else ())
        if isinstance(node, ast.Call)
        and isinstance(node.func, ast.Attribute)
        and node.func.attr == method
        and node.end_lineno == 1
    ]
    if len(calls) != 1:
        return CallSource(place, where, why=f"no single .{method}(...) call on that line")
    node = calls[0]
    encoded = body.encode("utf-8")
    start = indent + len(encoded[: node.col_offset].decode("utf-8"))
    end = indent + len(encoded[: node.end_col_offset].decode("utf-8"))
    return CallSource(place, where, int(number), start, int(number), end, line[start:end], line_text=line)


def function_source(filename: str, firstlineno: int) -> str:
    """The source of the ``def`` at ``firstlineno`` of ``filename`` (a script's file, an IPython
    cell, through ``linecache``), dedented; "" when it cannot be read. Run when the report is
    built, once per function that has a call-site fix."""
    lines = linecache.getlines(filename)
    if not (0 < firstlineno <= len(lines)):
        return ""
    import inspect
    import textwrap

    try:
        block = inspect.getblock(lines[firstlineno - 1 :])
    except (SyntaxError, IndentationError, IndexError):
        return ""
    return textwrap.dedent("".join(block))
