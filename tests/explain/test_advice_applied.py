"""Every fix the report prints, applied as printed to the program it was printed for (issue 32).

Each program in ``programs/`` is a small notebook an ML engineer plausibly writes (Keras ``fit``
with a recompile, Keras's fine-tuning recipe, ``predict`` on several lengths, custom loops with a
Python learning rate, a ``training`` flag, a step counter, a tf.data pipeline's short last batch,
a ``jit_compile`` function, fresh models in a loop). The harness runs it under
``tfgraph_lab.watch()``, reads every fix the text report prints (and the JSON's), applies each
one to the program's source exactly as printed — a decorator replaces the decorator, a call-site
line replaces the user's call at its ``file:line``, "create it once" moves the definition out of
its loop, Keras advice replaces the line it names —, runs the fixed program and checks that it
parses, runs, that TensorFlow's own count of the function's graphs is the promised one, that the
outputs are the same and that training still does what it did. The first fix shown must be the
plan's best and save most when measured.

TensorFlow's count is read without the tool: ``CONCRETE_FUNCTION_CALLBACKS`` (TF's own hook,
which its debugger uses) fires once per new graph, named ``__inference_<function>_<uid>``; every
graph of every object of a function is counted, and the program's module-level tf.functions are
checked against ``experimental_get_tracing_count()`` too.
"""

from __future__ import annotations

import ast
import json
import re
import textwrap
import time
from collections import Counter
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pytest

tf = pytest.importorskip("tensorflow")
keras = pytest.importorskip("keras")

import tfgraph_lab  # noqa: E402
from tfgraph_lab.report.fix_trial import choose_fix  # noqa: E402

PROGRAMS = Path(__file__).parent / "programs"
pytestmark = pytest.mark.usefixtures("fresh_recording")


# --- TensorFlow's own count --------------------------------------------------------------------


@contextmanager
def tf_graphs() -> Iterator[Counter[str]]:
    """The graphs TensorFlow makes meanwhile, per function name (every object of it)."""
    from tensorflow.python.eager.polymorphic_function import transform

    made: Counter[str] = Counter()

    def seen(cf: Any, *_: Any) -> None:
        m = re.fullmatch(r"__inference_(.+)_\d+", cf.name.decode() if isinstance(cf.name, bytes) else cf.name)
        if m:
            made[m[1]] += 1

    transform.CONCRETE_FUNCTION_CALLBACKS.append(seen)
    try:
        yield made
    finally:
        transform.CONCRETE_FUNCTION_CALLBACKS.remove(seen)


@dataclass
class Run:
    namespace: dict[str, Any]
    graphs: Counter[str]
    seconds: float
    report: Any = None


def run(source: str, path: Path, watch: bool = False) -> Run:
    path.write_text(source)
    code = compile(source, str(path), "exec")  # parses, or the test fails here
    ns: dict[str, Any] = {"__name__": "__main__", "__file__": str(path)}
    with tf_graphs() as graphs:
        start = time.perf_counter()
        if watch:
            with tfgraph_lab.watch() as w:
                exec(code, ns)
        else:
            exec(code, ns)
        seconds = time.perf_counter() - start
    return Run(ns, graphs, seconds, w.report if watch else None)


def tf_name(qualname: str) -> str:
    return qualname.rsplit(".", 1)[-1]


# --- what the report prints ---------------------------------------------------------------------


@dataclass
class Shown:
    """One numbered fix of a function's section, as the text prints it."""

    function: Any  # FunctionSummary
    number: int
    code: str  # the text before " → "
    promise: str
    sites: list[tuple[int, str, str]] = field(default_factory=list)  # (line, new, old)


_HEAD = re.compile(r"^    (\d+)\. (.+?) → (.+)$")
_SITE = re.compile(r"^       \S+?:(\d+)(?:-\d+)?   (.+?)  # was: (.+)$")


def sections(report: Any, text: str) -> dict[str, list[str]]:
    """The text's section of each shown function, by label."""
    lines = text.splitlines()
    heads = {f"{f.label}  (": f.label for f in report.shown_functions}
    out: dict[str, list[str]] = {}
    current: list[str] | None = None
    for line in lines:
        label = next((heads[h] for h in heads if line.startswith(h)), None)
        if label is not None:
            current = out.setdefault(label, [])
        elif line and not line.startswith(" "):
            current = None
        elif current is not None:
            current.append(line)
    return out


def shown_fixes(report: Any, text: str) -> list[Shown]:
    out = []
    by_label = {f.label: f for f in report.shown_functions}
    for label, lines in sections(report, text).items():
        for line in lines:
            m = _HEAD.match(line)
            if m:
                out.append(Shown(by_label[label], int(m[1]), m[2], m[3]))
                continue
            s = _SITE.match(line)
            if s and out and out[-1].function is by_label[label]:
                out[-1].sites.append((int(s[1]), s[2], s[3]))
    return out


def suggestions(report: Any, text: str) -> dict[str, list[str]]:
    """Each section's "suggested fix:" block, its lines as printed (dedented)."""
    out = {}
    for label, lines in sections(report, text).items():
        if "  suggested fix:" in lines:
            block = []
            for line in lines[lines.index("  suggested fix:") + 1 :]:
                if not line.startswith("    "):
                    break
                block.append(line[4:])
            out[label] = block
    return out


def promised_graphs(promise: str) -> int:
    m = re.match(r"(\d+) fewer graphs?: (\d+) graphs? instead of (\d+)", promise)
    assert m is not None, f"a promise TensorFlow's count can check: {promise!r}"
    return int(m[2])


# --- applying a fix as printed ---------------------------------------------------------------------


def def_line(lines: list[str], name: str) -> int:
    (i,) = [i for i, line in enumerate(lines) if re.match(rf"\s*def {re.escape(name)}\(", line)]
    return i


def apply_decorator(source: str, name: str, printed: str) -> str:
    """The printed ``@tf.function(...)`` replaces the function's tf.function decorator."""
    lines = source.splitlines()
    d = def_line(lines, name)
    i = d - 1
    while not lines[i].lstrip().startswith("@tf.function"):
        assert lines[i].lstrip().startswith("@"), f"no @tf.function above def {name}"
        i -= 1
    indent = lines[i][: len(lines[i]) - len(lines[i].lstrip())]
    lines[i] = indent + printed
    return "\n".join(lines) + "\n"


def apply_hoist(source: str, name: str, printed: str) -> str:
    """``NAME = tf.function(NAME)  # once, outside the loop or cell; call that``: the decorated
    definition leaves its loop for the top level, before the loop (the fix's "or move the
    @tf.function definition out of the loop"); a plain def gets the printed line after it."""
    assert re.match(rf"{name} = tf\.function\({name}\)", printed), printed
    lines = source.splitlines()
    d = def_line(lines, name)
    start = d - 1 if lines[d - 1].lstrip().startswith("@tf.function") else d
    indent = len(lines[d]) - len(lines[d].lstrip())
    end = d + 1
    if indent == 0:  # a plain def: the printed line after it, and the loop calls that
        while end < len(lines) and (not lines[end].strip() or lines[end][0].isspace()):
            end += 1
        rest = [re.sub(rf"tf\.function\({name}\)", name, line) for line in lines[end:]]
        return "\n".join(lines[:end] + [printed, ""] + rest) + "\n"
    while end < len(lines) and (
        not lines[end].strip() or len(lines[end]) - len(lines[end].lstrip()) > indent
    ):
        end += 1
    block = textwrap.dedent("\n".join(lines[start:end])).splitlines()
    loop = max(i for i in range(start) if lines[i] and not lines[i][0].isspace())
    rest = lines[:start] + lines[end:]
    return "\n".join(rest[:loop] + block + [""] + rest[loop:]) + "\n"


def apply_sites(source: str, sites: list[tuple[int, str, str]]) -> str:
    """Each printed site line: in that line, the user's call (after ``# was:``) becomes the new one."""
    lines = source.splitlines()
    assert sites, "a call-site fix names the user's calls"
    for line, new, old in sites:
        assert lines[line - 1].count(old) == 1, (lines[line - 1], old)
        lines[line - 1] = lines[line - 1].replace(old, new)
    return "\n".join(lines) + "\n"


def apply_shown(source: str, fix: Shown) -> str:
    name = tf_name(fix.function.qualname)
    if fix.code.startswith("@tf.function("):
        assert "# and at every call" not in fix.code, fix.code
        return apply_decorator(source, name, fix.code)
    if re.match(rf"{name} = tf\.function\(", fix.code):
        return apply_hoist(source, name, fix.code)
    return apply_sites(source, fix.sites)


def replace_line(source: str, needle: str, code: list[str], nth: int = 0) -> str:
    """The ``nth`` line holding ``needle`` replaced by ``code`` at its indentation."""
    lines = source.splitlines()
    i = [i for i, line in enumerate(lines) if needle in line][nth]
    indent = lines[i][: len(lines[i]) - len(lines[i].lstrip())]
    return "\n".join(lines[:i] + [indent + c for c in code] + lines[i + 1 :]) + "\n"


def code_only(block: list[str]) -> list[str]:
    return [line for line in block if line.strip() and not line.lstrip().startswith("#")]


# --- the programs -------------------------------------------------------------------------------


def close(a: Any, b: Any, rtol: float = 1e-4) -> None:
    a, b = (np.asarray(v, dtype=np.float64) if not isinstance(v, list) else v for v in (a, b))
    if isinstance(a, list):
        assert len(a) == len(b)
        for x, y in zip(a, b):
            close(x, y, rtol)
        return
    np.testing.assert_allclose(a, b, rtol=rtol, atol=1e-6)


@dataclass
class Checked:
    """What one program's fixes were found to do."""

    written: Run
    fixed: dict[str, Run] = field(default_factory=dict)  # by the fix's printed code


def watch_program(name: str, tmp_path: Path) -> tuple[str, Run, str]:
    source = (PROGRAMS / f"{name}.py").read_text()
    written = run(source, tmp_path / f"{name}.py", watch=True)
    report = written.report
    text = str(report)
    # the watch counts what TensorFlow counts, for each function the program calls
    counted: Counter[str] = Counter()
    for f in report.counted_functions:
        counted[tf_name(f.qualname)] += f.traces
    for name, traces in counted.items():
        assert traces == written.graphs[name], (name, counted, written.graphs)
    # no tracing total above the program's wall time
    assert report.trace_seconds <= written.seconds, (report.trace_seconds, written.seconds)
    # every fix the JSON carries is one the text shows, as the text shows it
    data = json.loads(report.to_json())
    for event in data["events"]:
        name = tf_name(event["qualname"])
        for reason in event["reasons"]:
            for plan in reason.get("fix_plans") or ():
                if plan.get("decorator"):
                    assert f"@tf.function({plan['decorator']})" in text, plan
                if plan.get("hoist"):
                    assert f"{name} = tf.function({name})" in text, plan
    # and each suggestion's code lines parse, one by one (a decorator line with a def under it)
    for f in data["functions"]:
        for line in code_only((f.get("suggestion") or "").splitlines()):
            ast.parse(line + ("\ndef _(): pass" if line.startswith("@") else ""))
    return source, written, text


def check_plans(
    source: str, written: Run, text: str, tmp_path: Path, outputs: Callable[[Run, Run], None]
) -> Checked:
    """Every numbered fix applied as printed: TF's count is its promise, outputs kept; the first
    one shown is the plan's best and saves most when measured."""
    report = written.report
    checked = Checked(written)
    shown = shown_fixes(report, text)
    by_function: dict[str, list[Shown]] = {}
    for fix in shown:
        by_function.setdefault(fix.function.label, []).append(fix)
    for label, fixes in by_function.items():
        fn = report.function(label)
        plan = report.plan(fn)
        assert [f.number for f in fixes] == list(range(1, len(plan.fixes) + 1)), (label, text)
        measured = []
        for fix, planned in zip(fixes, plan.fixes):
            fixed_source = apply_shown(source, fix)
            after = run(fixed_source, tmp_path / f"fixed_{fix.number}.py")
            checked.fixed[fix.code] = after
            graphs = after.graphs[tf_name(fn.qualname)]
            assert graphs == promised_graphs(fix.promise) == planned.graphs, (fix, graphs)
            obj = after.namespace.get(tf_name(fn.qualname))
            if hasattr(obj, "experimental_get_tracing_count"):
                assert obj.experimental_get_tracing_count() == graphs
            outputs(written, after)
            measured.append(graphs)
        assert measured[0] == min(measured), (label, measured)  # the first shown saves most
        choice = choose_fix(report, label)
        assert choice is not None and choice.plan == plan.best.plan  # --try-fix tries it
    return checked


def loop_outputs(*names: str) -> Callable[[Run, Run], None]:
    def check(written: Run, fixed: Run) -> None:
        for name in names:
            close(fixed.namespace[name], written.namespace[name])

    return check


def test_jit_compile_function_on_several_shapes(tmp_path: Path) -> None:
    from tfgraph_lab.adapter.rewrap import function_options

    def kept(written: Run, fixed: Run) -> None:
        loop_outputs("outs")(written, fixed)
        # replacing the decorator as printed keeps what the user's decorator asked for
        assert function_options(fixed.namespace["norm"])["jit_compile"] is True

    source, written, text = watch_program("jit_shapes", tmp_path)
    checked = check_plans(source, written, text, tmp_path, kept)
    assert len(checked.fixed) == 2  # input_signature (1 graph), reduce_retracing (2)
    # the harness catches a broken promise, a broken order and a fix that drops what it kept
    for broken in (
        text.replace("1 graph instead of 4", "2 graphs instead of 4"),
        text.replace("    1. @tf.function(input", "    3. @tf.function(input"),
        text.replace(", jit_compile=True) →", ") →"),
    ):
        with pytest.raises(AssertionError):
            check_plans(source, written, broken, tmp_path, kept)


def test_tf_data_short_last_batch_into_a_custom_step(tmp_path: Path) -> None:
    source, written, text = watch_program("tfdata_loop", tmp_path)
    checked = check_plans(source, written, text, tmp_path, loop_outputs("losses"))
    assert len(checked.fixed) == 1


def test_fresh_models_in_a_loop_get_no_create_it_once_fix(tmp_path: Path) -> None:
    """``@tf.function def serve(batch): return model(batch)`` in a loop over fresh models: made
    once, it would keep computing with the first model (its graph holds the variables it was
    traced with): measured, "create it once" applied as printed returned model 0's outputs for
    all three models. Expected: one graph per model, and said so."""
    source, written, text = watch_program("fresh_models", tmp_path)
    checked = check_plans(source, written, text, tmp_path, loop_outputs("scores", "served"))
    assert not checked.fixed and "serve = tf.function(serve)" not in text
    assert written.report.function("serve").suggestion is None
    assert "nothing to fix: keep one tf.function per model" in text
    # what the old advice did, applied as it printed it: the served outputs go stale
    stale = run(apply_hoist(source, "serve", "serve = tf.function(serve)"), tmp_path / "hoisted.py")
    assert stale.graphs["serve"] == 1
    with pytest.raises(AssertionError):
        loop_outputs("served")(written, stale)


def test_a_function_wrapped_again_in_a_loop_over_one_model_is_created_once(tmp_path: Path) -> None:
    source, written, text = watch_program("rewrapped_step", tmp_path)
    checked = check_plans(source, written, text, tmp_path, loop_outputs("means"))
    assert list(checked.fixed) == [
        "evaluate = tf.function(evaluate)  # once, outside the loop or cell; call that"
    ]


def test_custom_loop_python_learning_rate_and_training_flag(tmp_path: Path) -> None:
    source, written, text = watch_program("custom_loop", tmp_path)
    assert "training=tf.constant" not in text  # Keras 3's Dropout/BatchNormalization refuse it
    checked = check_plans(source, written, text, tmp_path, loop_outputs("loss", "val"))
    assert len(checked.fixed) == 1  # tf.constant(lr): 3 graphs instead of 7
    (fix,) = shown_fixes(written.report, text)
    calls = [i + 1 for i, line in enumerate(source.splitlines()) if "= train_step(" in line]
    assert [line for line, _, _ in fix.sites] == calls and len(calls) == 2  # the evaluation call too
    # a site line that leaves a call as it was, or drops one, is caught
    for broken in (
        text.replace("tf.constant(lr), True)  # was", "lr, True)  # was"),
        "\n".join(line for line in text.splitlines() if "True)  # was" not in line),
    ):
        with pytest.raises(AssertionError):
            check_plans(source, written, broken, tmp_path, loop_outputs("loss", "val"))


@pytest.mark.slow
def test_gan_two_steps_with_a_python_step_counter(tmp_path: Path) -> None:
    def trained(written: Run, fixed: Run) -> None:
        # tf.random draws differ between one graph and eight: both losses finite and alike
        for name in ("d_loss", "g_loss"):
            value = float(fixed.namespace[name])
            assert np.isfinite(value) and abs(value - float(written.namespace[name])) < 1.0

    source, written, text = watch_program("gan_loop", tmp_path)
    check_plans(source, written, text, tmp_path, trained)


# --- Keras's own steps: advice at the user's level ------------------------------------------------


def keras_graphs(r: Run) -> int:
    return sum(n for name, n in r.graphs.items() if name in ("one_step_on_data", "multi_step_on_iterator"))


def test_a_recompile_that_changes_only_the_learning_rate(tmp_path: Path) -> None:
    source, written, text = watch_program("lr_recompile", tmp_path)
    assert not shown_fixes(written.report, text)  # no numbered fix: Keras's code is not the user's
    blocks = suggestions(written.report, text)
    (printed,) = {line for block in blocks.values() for line in code_only(block)}
    code, _, comment = printed.partition("  # ")
    assert (
        code == "model.optimizer.learning_rate.assign(0.01)"
        and "instead of the second model.compile" in comment
    )
    assert "no new functions, no new traces" in comment
    upto = source.splitlines()
    second = [i for i, line in enumerate(upto) if "model.compile(" in line][1]
    before = run("\n".join(upto[:second]) + "\n", tmp_path / "prefix.py")

    def holds(printed: str) -> None:
        fixed = run(replace_line(source, "model.compile(", [printed], nth=1), tmp_path / "fixed.py")
        # the promise: the second fit traces nothing (TF's count = the program's up to that line)
        assert keras_graphs(fixed) == keras_graphs(before) < keras_graphs(written)
        model = fixed.namespace["model"]
        assert type(model.optimizer).__name__ == "SGD" and "mae" in model.get_compile_config()["metrics"]
        # training does what it did: the final loss is no worse than with the recompile
        final = fixed.namespace["second"].history["loss"][-1]
        assert final <= written.namespace["second"].history["loss"][-1] * 1.1  # measured: 1.07
        assert final < fixed.namespace["first"].history["loss"][0] / 2

    holds(printed)
    with pytest.raises(AssertionError):  # a rate that stops training is caught
        holds(printed.replace("assign(0.01)", "assign(0.0)"))


def test_keras_fine_tuning_recipe_keeps_its_recompile(tmp_path: Path) -> None:
    source, written, text = watch_program("fine_tune", tmp_path)
    assert not shown_fixes(written.report, text)
    assert not any(code_only(b) for b in suggestions(written.report, text).values())
    assert "nothing to fix: keep the recompile, Keras needs it" in text
    assert written.namespace["moved"] > 0  # the unfrozen base trains
    # what removing it would do (the old advice): the base stays untrained
    without = run(
        replace_line(source, "model.compile(keras.optimizers.Adam(1e-5)", ["pass"]), tmp_path / "no.py"
    )
    assert without.namespace["moved"] == 0


def test_predict_on_several_lengths(tmp_path: Path) -> None:
    source, written, text = watch_program("predict_lengths", tmp_path)
    (block,) = suggestions(written.report, text).values()
    code = code_only(block)
    assert code and all(ast.parse(line) for line in code)
    assert any(line.startswith("# nothing to do: reduce_retracing made one graph") for line in block)
    fixed = run(replace_line(source, "y = model.predict(", code), tmp_path / "fixed.py")
    step = "one_step_on_data_distributed"  # Keras 3.15's predict step
    assert fixed.graphs[step] == 1 < written.graphs[step], fixed.graphs  # "one batch shape for every call"
    close(fixed.namespace["preds"], written.namespace["preds"])


# --- the same advice in a notebook, and under TraceCallback -----------------------------------------


def test_the_magic_prints_the_fixes_the_watch_prints(shell: Any, capsys: Any, tmp_path: Path) -> None:
    """``%%tracewatch`` over the jit program's cell: the printed fixes are the ones applied above,
    and each applied as printed to the cell's code keeps its promise."""
    source = (PROGRAMS / "jit_shapes.py").read_text()
    capsys.readouterr()
    shell.run_cell("%%tracewatch -v cell_report\n" + source)
    text = capsys.readouterr().out
    report = shell.user_ns["cell_report"]
    fixes = shown_fixes(report, text)
    assert [f.code for f in fixes] == [
        "@tf.function(input_signature=[tf.TensorSpec([None], tf.float32)], jit_compile=True)",
        "@tf.function(reduce_retracing=True, jit_compile=True)",
    ]
    for fix, graphs in zip(fixes, (1, 2)):
        fixed = run(apply_shown(source, fix), tmp_path / f"cell_{fix.number}.py")
        assert fixed.graphs["norm"] == promised_graphs(fix.promise) == graphs


def test_trace_callback_report_after_fit_evaluate_and_predict_with_a_short_last_batch() -> None:
    """What a Keras user reads after fit, evaluate and predict (40 rows in batches of 16: a last
    batch of 8), each figure against TensorFlow's own counts."""
    from tfgraph_lab.keras import TraceCallback
    from tfgraph_lab.keras.names import step_functions

    keras.utils.set_random_seed(0)
    x = np.random.default_rng(0).random((40, 4), dtype=np.float32)
    model = keras.Sequential([keras.Input((4,)), keras.layers.Dense(8), keras.layers.Dense(1)])
    model.compile("adam", "mse")
    cb = TraceCallback()
    start = time.perf_counter()
    model.fit(x, x.sum(1), batch_size=16, epochs=2, verbose=0, callbacks=[cb])
    model.evaluate(x, x.sum(1), batch_size=16, verbose=0, callbacks=[cb])
    model.predict(x, batch_size=16, verbose=0, callbacks=[cb])
    wall = time.perf_counter() - start
    report, text = cb.report, str(cb.report)
    tf_counts = {
        f"{phase} · {kind} {part}": fn.experimental_get_tracing_count()
        for kind, phase in (("train", "fit"), ("test", "evaluate"), ("predict", ""))
        for fn, part in step_functions(model, kind)
    }
    rows = {f.label: f for f in report.shown_functions}
    for label, count in tf_counts.items():
        assert rows[label.strip(" ·").replace("· predict", "predict")].traces == count, (label, tf_counts)
    assert rows["fit · train loop"].calls == 6 and rows["evaluate · test loop"].calls == 3  # batches run
    assert report.trace_seconds <= wall
    # the one retrace: predict's short last batch, generalised by Keras's reduce_retracing
    (retrace,) = report.retrace_events
    (reason,) = retrace.reasons
    assert (reason.code, reason.before, reason.after) == ("shape-changed", "(16, 4)", "(8, 4)")
    assert "smaller last batch" in reason.message and "generalised it to (None, 4)" in reason.message
    assert rows["predict step"].graphs[-1].signature.startswith("data: [TensorSpec(shape=(None, 4)")
    assert "traced inside fit · train loop's trace" in text and "counted once in the total" in text
    assert "1 of them retrace" in text.splitlines()[0]
    # its suggestion, run as printed on the same data, predicts with one graph, the same values
    code = code_only(suggestions(report, text)["predict step"])
    assert any("batch_size = 16" in line or "batch_size=16" in line for line in code), code  # the user's 16
    fresh = keras.models.clone_model(model)
    fresh.set_weights(model.get_weights())
    scope = {"np": np, "model": fresh, "x": x, "cb": TraceCallback()}
    *head, last = code
    exec("\n".join(head), scope)
    try:  # the user's own call rewritten is an expression; a template assigns y
        scope["y"] = eval(compile(ast.parse(last, mode="eval"), "<fix>", "eval"), scope)
    except SyntaxError:
        exec(last, scope)
    ((fn, _),) = step_functions(fresh, "predict")
    assert fn.experimental_get_tracing_count() == 1  # the promise: one batch shape
    close(scope["y"], model.predict(x, batch_size=16, verbose=0))


@pytest.mark.parametrize(
    ("program", "function", "after"),
    [("jit_shapes", "norm", 1), ("custom_loop", "train_step", 3)],
)
def test_try_fix_tries_the_first_fix_shown_and_leaves_one_run(
    shell: Any, capsys: Any, monkeypatch: pytest.MonkeyPatch, program: str, function: str, after: int
) -> None:
    """``%%tracewatch --try-fix`` on the program's cell tries the plan's best fix (the call-site
    one through its wrapper), TF's count after it is the promise, and the names the cell sets
    are those of one run."""
    from tfgraph_lab.trial import tryfix

    seen: list[Any] = []
    original = tryfix.try_fix

    def recording(*args: Any, **kwargs: Any) -> Any:
        seen.append(original(*args, **kwargs))
        return seen[-1]

    monkeypatch.setattr(tryfix, "try_fix", recording)
    source = (PROGRAMS / f"{program}.py").read_text()
    once: dict[str, Any] = {"__name__": "__main__"}
    exec(compile(source, f"{program}_once.py", "exec"), once)
    capsys.readouterr()
    shell.run_cell("runs = []")  # an earlier cell's list, which the cell appends to
    result = shell.run_cell("%%tracewatch --try-fix -v tried_report\n" + source + "runs.append(len(runs))\n")
    assert result.success, result.error_in_exec
    text = capsys.readouterr().out
    (trial,) = seen
    report = shell.user_ns["tried_report"]
    best = report.plan(function).best
    assert trial.plan == best.plan and trial.verdict == "works", text
    assert trial.after is not None and trial.after.traces == best.graphs == after
    assert trial.outputs == "equal", trial.outputs_detail
    assert shell.user_ns["runs"] == [0], "the cell ran again and its effect stayed"
    for name in ("lr", "outs", "loss"):  # what one run leaves
        if name in once:
            close(
                shell.user_ns[name] if name != "loss" else float(shell.user_ns[name]),
                once[name] if name != "loss" else float(once[name]),
            )
