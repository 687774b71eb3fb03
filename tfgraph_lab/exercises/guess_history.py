"""Whether a guess was a prediction: read from the kernel's input history (IPython's ``In``,
the cells in the order they ran), the guess must be a value the learner wrote, in a cell run
before the last run of the cell that measured it.

A guess assigned after the measurement (the number read off the report and typed in), or
computed from something (``guess = report02.function("mean_of").traces``) is no prediction.
Only names are followed: a grade whose guess or measurement is not a plain name, or code run
outside IPython (no ``In``), is not judged here. Imports nothing outside the standard library.
"""

from __future__ import annotations

import ast
import builtins
import shlex
from collections.abc import Sequence

__all__: list[str] = []

_MAGIC_CALLS = frozenset({"run_cell_magic", "run_line_magic"})
_BUILTINS = frozenset(dir(builtins))


def why_not_a_prediction(history: Sequence[str], grading_cell: str, line: int) -> str:
    """Why the guess graded by the ``check_prediction(...)`` call on ``line`` of
    ``grading_cell`` is no prediction, given the cells run before it (``history``, oldest first,
    the grading cell last); an empty string when it is one, or when this cannot tell."""
    names = _graded_names(grading_cell, line)
    if names is None:
        return ""
    guess, measured = names
    cells = [cell for cell in history if isinstance(cell, str)]
    current = max((i for i, cell in enumerate(cells) if cell.strip() == grading_cell.strip()), default=None)
    if current is None:
        return ""
    guessed = measured_at = None
    value: ast.expr | None = None
    for i, cell in enumerate(cells[:current]):
        tree = _parse(cell)
        if tree is None:
            continue
        assigned = _assigned_value(tree, guess)
        if assigned is not None:
            guessed, value = i, assigned
        if any(_measures(tree, name) for name in measured):
            measured_at = i
    if guessed is None or measured_at is None or value is None:
        return ""
    if not _written_value(value):
        read = sorted({n.id for n in ast.walk(value) if isinstance(n, ast.Name)} - _CONVERSIONS)
        return (
            f"`{guess}` is computed{' from ' + ', '.join(read) if read else ''}, not written: a "
            f"prediction is a value you write before measuring (`{guess} = 2`, `{guess} = True`)"
        )
    if guessed > measured_at:
        return (
            f"`{guess}` was written after the cell that measured `{', '.join(measured)}` ran: a "
            f"prediction comes first — run that measuring cell again, then this grade"
        )
    return ""


def _parse(source: str) -> ast.Module | None:
    try:
        return ast.parse(source)
    except SyntaxError:
        return None


def _graded_names(cell: str, line: int) -> tuple[str, tuple[str, ...]] | None:
    """The name of the guess a ``check_prediction`` call on ``line`` passes and the names its
    measurement reads, or None when the guess is not a plain name."""
    tree = _parse(cell)
    if tree is None:
        return None
    for node in ast.walk(tree):
        if not (isinstance(node, ast.Call) and node.lineno <= line <= (node.end_lineno or node.lineno)):
            continue
        func = node.func
        name = func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", "")
        if name == "check_prediction" and len(node.args) >= 2:
            guess, measured = node.args[0], node.args[1]
            # the measurement: a name (`report02`), or the names an expression reads
            # (`w.report`, `float(second[0])`) but for builtins
            read = sorted(
                {n.id for n in ast.walk(measured) if isinstance(n, ast.Name)} - _CONVERSIONS - _BUILTINS
            )
            if isinstance(guess, ast.Name) and read:
                return guess.id, tuple(read)
    return None


def _assigned_value(tree: ast.Module, name: str) -> ast.expr | None:
    """The value the cell's last assignment to ``name`` assigns (None: the cell assigns none)."""
    found: ast.expr | None = None
    for node in ast.walk(tree):
        if isinstance(node, ast.Assign) and any(_binds(t, name) for t in node.targets):
            found = node.value
        elif isinstance(node, ast.withitem) and node.optional_vars is not None and _binds(node.optional_vars, name):
            found = node.context_expr  # `with tfgraph_lab.watch() as w:`
        elif isinstance(node, (ast.For, ast.comprehension)) and _binds(node.target, name):
            found = node.iter
        elif isinstance(node, (ast.AnnAssign, ast.AugAssign, ast.NamedExpr)) and _binds(node.target, name):
            found = node.value if node.value is not None else found
    return found


def _binds(target: ast.expr, name: str) -> bool:
    if isinstance(target, ast.Name):
        return target.id == name
    if isinstance(target, (ast.Tuple, ast.List)):
        return any(_binds(t, name) for t in target.elts)
    return False


def _measures(tree: ast.Module, name: str) -> bool:
    """Whether the cell sets ``name``: an assignment, or a magic's ``-v NAME`` (IPython turns
    ``%%tracewatch -v report02`` into ``get_ipython().run_cell_magic('tracewatch', '-v report02', …)``)."""
    if _assigned_value(tree, name) is not None:
        return True
    for node in ast.walk(tree):
        if isinstance(node, ast.Call) and getattr(node.func, "attr", "") in _MAGIC_CALLS and len(node.args) >= 2:
            options = node.args[1]
            if isinstance(options, ast.Constant) and isinstance(options.value, str):
                try:
                    words = shlex.split(options.value)
                except ValueError:
                    words = options.value.split()
                if name in words:
                    return True
    return False


#: Names a written value may go through: ``int(2)``, ``np.int64(2)``, ``np.False_``.
_CONVERSIONS = frozenset({"int", "float", "bool", "str", "np", "numpy"})


def _written_value(node: ast.expr) -> bool:
    """A value written out: a constant, a signed one, arithmetic on constants, or one passed
    through a plain conversion (``3``, ``-1``, ``2 + 1``, ``True``, ``"2"``, ``np.int64(2)``)."""
    if isinstance(node, ast.Constant):
        return True
    if isinstance(node, ast.UnaryOp):
        return _written_value(node.operand)
    if isinstance(node, ast.BinOp):
        return _written_value(node.left) and _written_value(node.right)
    if isinstance(node, ast.Attribute):  # np.False_
        return isinstance(node.value, ast.Name) and node.value.id in _CONVERSIONS
    if isinstance(node, ast.Call):
        func = node.func
        base = func.id if isinstance(func, ast.Name) else getattr(getattr(func, "value", None), "id", "")
        return base in _CONVERSIONS and not node.keywords and all(_written_value(a) for a in node.args)
    return False
