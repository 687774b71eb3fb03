"""Fixes a Keras user can apply, for Keras's own step functions (named by ``TraceCallback``).

Never ``@tf.function(...)`` on Keras's code: the user cannot edit it. The change goes where their
code meets Keras — what they pass to ``fit``/``evaluate``/``predict``, ``compile``'s options, or
calling the model directly. ``role`` is the part the function plays: ``"train"``, ``"test"``
(``fit``'s validation and ``evaluate``) or ``"predict"``.

What each text claims was measured with ``experimental_get_tracing_count()`` on Keras 3.15 /
TF 2.21 (tests/keras/test_keras_fixes.py applies the suggestions):

* Keras's step functions are ``tf.function(reduce_retracing=True)``: a second batch size makes
  one more graph with the batch dimension ``None``, which every later size reuses.
* ``fit``/``evaluate`` on NumPy arrays or ``ds.batch(n)`` see a batch dimension of ``None``
  already: one graph whatever the sizes. ``ds.batch(n, drop_remainder=True)`` makes it static,
  so two datasets with different ``n`` retrace.
* ``predict`` calls its function once per batch with the batch itself: the last, shorter batch
  of one call, or another length on the next call, is another shape. Padding ``x`` to a multiple
  of ``batch_size`` gives one shape (one graph); ``model(x)`` runs eagerly (no graph at all).
* The train step's first call traces twice because Keras creates the optimizer's variables
  in it; ``model.optimizer.build(model.trainable_variables)`` before ``fit`` makes it once.
* ``predict`` with ``steps_per_execution=N`` passes a list of up to N batches: a shorter last
  group is another structure, another graph, until ``x`` is padded to a multiple of
  ``batch_size × N``.
* ``compile()`` drops the model's train, test and predict functions: the next ``fit`` makes new
  ones, which trace again. Keras 3.15 builds the train step from the trainable weights, loss,
  metrics and optimizer it has when the step traces, so a recompile that changed one of them is
  needed (its fine-tuning guide: set ``trainable = True``, compile, fit; without the recompile
  the unfrozen layers are not trained). A recompile with a new optimizer also starts that
  optimizer's state afresh (its step count, Adam's moments). Only a recompile that changed the
  learning rate alone can be replaced: ``model.optimizer.learning_rate.assign(new)`` makes no new
  function and no trace (:func:`recompile_reason`).
"""

from __future__ import annotations

import ast
import io
import re
import tokenize
from collections.abc import Mapping, Sequence
from dataclasses import replace

from ..model.records import CallSource, Reason
from ..model.vocab import CompileSetting, ReasonCode, XlaCode
from .arguments import LAST_BATCH_FIX

__all__ = [
    "flag_suggestion",
    "keras_flag_reason",
    "keras_reason",
    "keras_suggestion",
    "keras_xla_reason",
    "recompile_reason",
]

_SHAPE = (ReasonCode.SHAPE_CHANGED, ReasonCode.RANK_CHANGED)
_STEP = {"train": "train function", "test": "test function", "predict": "predict function"}
_PAD_PREDICT = (
    "give predict batches of one size: pad x to a multiple of batch_size and drop the extra "
    "rows (model.predict(x_padded, batch_size=32)[:len(x)]), or call model(x) for an x that fits "
    "in one batch (it runs eagerly: no graph, no trace)"
)
_ONE_SHAPE_FIT = (
    "give every fit/evaluate call batches of one shape: the same batch_size in every dataset, or "
    "batches without drop_remainder=True (their batch dimension is then None: one graph for "
    "every size); train_on_batch/test_on_batch with one batch size"
)


def keras_reason(reason: Reason, role: str, generalised: bool) -> Reason:
    """``reason`` for a trace of Keras's ``role`` function, with a fix at the user's level.

    ``generalised``: reduce_retracing relaxed this graph's shapes (later sizes reuse it).
    """
    code = reason.code
    if code in (ReasonCode.FIRST_TRACE, ReasonCode.NEW_FUNCTION_OBJECT) or role not in _STEP:
        return reason  # Keras's own new-function-object text comes from _history
    if code == ReasonCode.VARIABLE_CREATION:
        fix = (
            "nothing to fix: a one-off per model and compile() (Keras creates the optimizer's "
            "variables in the first train step); to avoid it, build them before fit: "
            "model.optimizer.build(model.trainable_variables)"
            if role == "train"
            else "nothing to fix: a one-off per function object"
        )
    elif code in _SHAPE:
        todo = _PAD_PREDICT if role == "predict" else _ONE_SHAPE_FIT
        fix = (
            f"nothing to do: reduce_retracing made one graph for every batch size; Keras's "
            f"{_STEP[role]} has it, and later calls reuse that graph. To avoid even this retrace, {todo}"
            if generalised
            else todo
        )
    elif code == ReasonCode.STRUCTURE_CHANGED and role == "predict":
        fix = (
            "pad x to a multiple of batch_size × steps_per_execution and drop the extra rows, or "
            "predict with a model compiled with steps_per_execution=1; with steps_per_execution=N "
            "Keras's predict passes N batches per call and fewer for the last group: another "
            "structure, another graph"
        )
    elif code == ReasonCode.DTYPE_CHANGED:
        fix = 'give every call data of one dtype (e.g. x.astype("float32") before fit/predict)'
    else:
        fix = (
            "give every call data of one kind and structure: the same tuple or dict of arrays "
            "or tensors (Keras's function cannot be changed; what you pass can)"
        )
    return replace(reason, fix=fix, plans=())


def keras_xla_reason(reason: Reason) -> Reason:
    """An XLA compilation of Keras's step (``compile(jit_compile=True)``): XLA compiles once per
    concrete batch size, which reduce_retracing's ``None`` does not stop. Measured on Keras 3.15
    with TF's compile log (``TF_CPP_VMODULE=device_compiler=2``): predict on lengths 10, 37 and
    64 compiles its XLA step 3×, padded to multiples of 32 once, with ``jit_compile=False``
    never. fit on 100 NumPy rows compiles its train step 2× at batch_size=32 (32, then the
    short 4), once at batch_size=25 (Keras 3.15, TF 2.21), and evaluate alike: arrays have no
    drop_remainder."""
    if reason.code not in (XlaCode.SHAPE_CHANGED, XlaCode.RANK_CHANGED, XlaCode.HIDDEN_SHAPE):
        return reason
    return replace(
        reason,
        fix="give Keras batches of one size (predict: pad x to a multiple of batch_size and drop "
        "the extra rows; fit, evaluate: a batch_size that divides the number of samples, or a tf.data "
        "dataset batched with drop_remainder=True), or, where sizes must vary, compile without "
        "XLA: model.compile(..., jit_compile=False)",
        plans=(),
    )


def _batch_seen(reasons: Sequence[Reason]) -> int:
    """The largest leading dimension the predict step's batches had (its shape reasons'
    before/after, ``(16, 4)``): the batch size predict ran with, when a batch was full; 32 (Keras's
    default) when no shape is read. Padding to any multiple keeps one shape; this one keeps the
    user's own batch size (the callback's 40 rows in batches of 16 printed 32)."""
    sizes = [
        int(m[1])
        for r in reasons
        if r.code in _SHAPE
        for text in (r.before, r.after)
        for m in [re.match(r"\((\d+),", text)]
        if m
    ]
    return max(sizes, default=32)


def keras_suggestion(
    role: str, reasons: Sequence[Reason], generalised: bool, calls: Sequence[CallSource] = ()
) -> str | None:
    """Code to paste for the most frequent of ``reasons`` (retraces only) of Keras's ``role``
    function (None: none, or nothing at the user's level beyond the reason's text). ``calls``:
    the user's lines whose calls into Keras traced it (``model.predict(x)``), as written: the
    code is written on them (their model, input and batch size), else it names what to replace."""
    codes = [r.code for r in reasons]
    if not codes:
        return None
    code = max(dict.fromkeys(codes), key=codes.count)
    if code == ReasonCode.NEW_FUNCTION_OBJECT:
        return _recompile_suggestion([r for r in reasons if r.code == code])
    if role == "predict" and (code in _SHAPE or code == ReasonCode.STRUCTURE_CHANGED):
        lines = (
            [_NOTHING_TO_DO] if generalised else []
        )
        return "\n".join(
            [*lines, *_padded_predict(calls, code == ReasonCode.STRUCTURE_CHANGED, _batch_seen(reasons))]
        )
    if code in _SHAPE:
        lines = (
            [_NOTHING_TO_DO] if generalised else []
        )
        if any(re.search(r"\.(?:train|test)_on_batch\(", c.text) for c in calls):
            # case 33: train_on_batch with 4, 4, 2, 3 rows; the dataset code below has no place
            # in that code, and padding a batch that trains would train on the padding
            return "\n".join(
                [
                    *lines,
                    "# one batch size for every train_on_batch/test_on_batch call: the same number of "
                    "rows each time (a shorter batch is a graph of its own), or fit/evaluate on a "
                    "tf.data dataset batched without drop_remainder=True (batch dimension None)",
                ]
            )
        sized = _fit_batch_sizes(calls)
        if sized:  # NumPy arrays, batched by Keras: no dataset of the user's to batch
            return "\n".join([*lines, _SAME_BATCH_SIZE, "# here: " + ", ".join(sized)])
        return "\n".join(
            [
                *lines,
                "# one batch shape for every fit/evaluate: one batch_size, or keep the batch dimension None",
                "ds = ds.batch(batch_size)  # without drop_remainder=True",
            ]
        )
    if code == ReasonCode.DTYPE_CHANGED:
        return 'x = x.astype("float32")  # one dtype for every call'
    return None


# Keras 3.15 batches NumPy arrays with a fixed batch dimension when batch_size divides the rows,
# else None (measured: fit on 100 rows by 10, validation 20 rows by 10, then evaluate on 100
# rows by 10 traces the test step once; on 95 rows by 10, or 100 rows by 7, twice). A None graph
# traced first serves fixed-size batches after it (validation 20 rows by 32, then evaluate by
# 10: once), so only "one size that divides" is said to keep one graph, not that any mix retraces.
_SAME_BATCH_SIZE = (
    "# one batch shape for every fit/evaluate call: the same batch_size, dividing the rows of each (validation too)\n"
    "# (Keras 3 batches NumPy arrays at that fixed size when it divides the rows, else with a None batch dimension)"
)


def _fit_batch_sizes(calls: Sequence[CallSource]) -> list[str]:
    """``batch_size=10 at train.py:6`` for each ``fit``/``evaluate`` call of ``calls`` that
    passes one (arrays: a dataset takes none); [] when none does."""
    sized = []
    for call in calls:
        try:
            node = ast.parse(call.text, mode="eval").body if call.text else None
        except SyntaxError:
            continue
        if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)):
            continue
        if node.func.attr not in ("fit", "evaluate"):
            continue
        given = next((k.value for k in node.keywords if k.arg == "batch_size"), None)
        size = ast.get_source_segment(call.text, given) if given is not None else None
        if size:  # a call without one batches by 32 on arrays, by its dataset's own on a dataset
            sized.append(f"batch_size={size} at {call.where}")
    return sized


# A suggestion's first line when reduce_retracing already made one graph for every batch size:
# the code after it is optional (it read as "nothing to do", then code to paste, before)
_NOTHING_TO_DO = (
    "# nothing to do: reduce_retracing made one graph for every batch size; to avoid even this one retrace:"
)
# Keras 3's predict batches by 32 when given no batch_size (Model.predict's default)
_PREDICT_BATCH = "32"
_PAD_HEAD = (
    "# one batch shape for every call: pad the input to a multiple of the batch size, drop the extra rows"
)
_PAD_GROUPS = (
    "# one structure for every call: pad the input to whole groups of batch_size × steps_per_execution"
    " (Keras passes that many batches per call, fewer for the last group), drop the extra rows"
)
_SIMPLE = (
    ast.Name,
    ast.Attribute,
    ast.Subscript,
    ast.Slice,
    ast.Constant,
    ast.UnaryOp,
    ast.BinOp,
    ast.Tuple,
    ast.Load,
    ast.operator,
    ast.unaryop,
)


def _pad(x: str, batch: str) -> str:
    return f"np.pad({x}, [(0, -len({x}) % {batch})] + [(0, 0)] * (np.ndim({x}) - 1))"


def _padded_call(source: CallSource, groups: bool) -> str | None:
    """``model.predict(xs[:n], verbose=0)`` as the padded call that replaces it (``groups``:
    padded to whole groups of ``steps_per_execution`` batches, the model's own setting), or None
    when its input is not an expression to repeat safely (a call: it would run three times)."""
    try:
        call = ast.parse(source.text, mode="eval").body
    except SyntaxError:
        return None
    if not isinstance(call, ast.Call) or any(isinstance(a, ast.Starred) for a in call.args):
        return None
    assert isinstance(call.func, ast.Attribute)  # model.places.call_on_line found `.predict(`
    x_node = call.args[0] if call.args else next((k.value for k in call.keywords if k.arg == "x"), None)
    if x_node is None or not all(isinstance(n, _SIMPLE) for n in ast.walk(x_node)):
        return None
    batch_node = (
        call.args[1]
        if len(call.args) > 1
        else next((k.value for k in call.keywords if k.arg == "batch_size"), None)
    )
    x = ast.get_source_segment(source.text, x_node)
    model = ast.get_source_segment(source.text, call.func.value)
    batch = ast.get_source_segment(source.text, batch_node) if batch_node is not None else _PREDICT_BATCH
    if x is None or model is None or batch is None or x_node.lineno != 1 or x_node.end_lineno != 1:
        return None
    text = source.text
    head = len(text.encode("utf-8")[: x_node.col_offset].decode("utf-8"))
    tail = len(text.encode("utf-8")[: x_node.end_col_offset].decode("utf-8"))
    group = f"{batch} * {model}.steps_per_execution" if groups else batch
    new = text[:head] + _pad(x, f"({group})" if groups else group) + text[tail:]
    if batch_node is None:  # the batch size Keras used, said
        close = new.rstrip().rstrip(")").rstrip()
        new = close.rstrip(",") + f", batch_size={batch})"
    new = f"{new}[: len({x})]"
    try:
        ast.parse(new, mode="eval")
    except SyntaxError:
        return None
    return new


def _padded_predict(calls: Sequence[CallSource], groups: bool = False, seen: int = 32) -> list[str]:
    """The padded predict, written on the user's own lines where their source was read (the
    line as a whole: ``preds = model.predict(…)`` keeps ``preds = ``), else with the names to
    replace said (``seen``: the batch size predict ran with, read from the step's shapes)."""
    done = []
    for source in calls:
        new = _padded_call(source, groups) if source.text else None
        if new is not None and source.line_text:
            start = len(source.line_text) - len(source.line_text.lstrip())
            # the line's own comment is left out of both: the predict of case 33 printed its
            # "# batches 4,4,2" twice, each after 20 spaces, around the place
            was = _without_comment(source.line_text).strip()
            line = source.line_text[start : source.col] + new + _without_comment(source.line_text[source.end_col :])
            done.append(f"{line}  # {source.where}, was: {was}")
    head = _PAD_GROUPS if groups else _PAD_HEAD
    if done:
        return [head, "import numpy as np", *done[:5]]
    group = "(32 * model.steps_per_execution)" if groups else _PREDICT_BATCH
    return [
        head,
        "# replace `model` by your model and `x` by what you pass to predict (and 32 by your batch_size, if you pass one)",
        "import numpy as np",
        f"y = model.predict({_pad('x', group)}, batch_size={_PREDICT_BATCH})[: len(x)]",
        "# or, for an x that fits in one batch: y = model(x)  (eager: no trace)",
    ]


def _without_comment(code: str) -> str:
    """``code`` without its trailing ``# comment`` (a ``#`` inside a string stays) and the blanks
    before it; ``code`` as it is when it does not tokenize."""
    try:  # read up to the comment: a piece of a line (``)  # …``) may not tokenize to its end
        for token in tokenize.generate_tokens(io.StringIO(code).readline):
            if token.type == tokenize.COMMENT and token.start[0] == 1:
                return code[: token.start[1]].rstrip()
    except (tokenize.TokenError, SyntaxError):
        pass
    return code.rstrip()


def _keep_python(flags: Sequence[str]) -> str:
    return (
        f"keep `{flags[0]}` a Python bool: it reaches Keras layers, and Keras 3's Dropout and "
        "BatchNormalization raise OperatorNotAllowedInGraphError on a tensor training flag"
    )


def keras_flag_reason(reason: Reason, flags: Sequence[str], name: str) -> Reason:
    """``reason`` for a function whose Python bool ``flags`` reach Keras 3 layers: no fix may
    make them tensors (``tf.constant(training)``, an input_signature's ``tf.TensorSpec([],
    tf.bool)``: measured, Keras 3.15 raises in Dropout.call and BatchNormalization.call)."""
    if reason.code == ReasonCode.PYTHON_VALUE_CHANGED and reason.argument in flags:
        flag = reason.argument
        return replace(
            reason,
            fix=f"expected: one graph per value of `{flag}` (two, True and False, each traced "
            f"once); {_keep_python([flag])}. Or write separate train and eval tf.functions. A "
            f"tensor flag (tf.constant({flag})) shares one graph only when your own code alone "
            f"reads it (if {flag}: becomes tf.cond), not when it is passed on to Keras layers",
            plans=(),
        )
    plans = tuple(
        p
        for p in reason.plans
        if not p.decorator.startswith("input_signature=") and not any(arg in flags for arg, _ in p.call)
    )
    if plans == reason.plans:
        return reason
    last_batch = LAST_BATCH_FIX in reason.fix  # tensor_changed's other way for a last batch
    fix = _keep_python(flags)
    if plans:
        fix = (
            f"{plans[0].text(name)} (no input_signature: it would make `{flags[0]}` a tensor, and "
            "Keras 3's Dropout and BatchNormalization raise OperatorNotAllowedInGraphError on one)"
        )
    if last_batch:
        fix = f"{fix}; or {LAST_BATCH_FIX}" if plans else f"{LAST_BATCH_FIX}; {fix}"
    return replace(reason, fix=fix, plans=plans)


def flag_suggestion(flags: Sequence[str], short: str) -> str:
    """The suggestion for a function whose retraces are its Keras-bound Python flags' values."""
    return (
        f"# expected: one graph per value of `{flags[0]}` ({_keep_python(flags)})\n"
        f"# or two functions: train_{short} = tf.function(...); eval_{short} = tf.function(...)"
    )


_OBJECT = CompileSetting.OPTIMIZER_OBJECT.value
_RATE = CompileSetting.LEARNING_RATE.value
_REBUILT = (
    "Keras built this function anew: model.compile() ran again on this model (each compile() "
    "drops the model's train, test and predict functions); the new function object starts with "
    "an empty cache"
)
_RESET = (
    "a recompile also resets the optimizer's state when it gets a new optimizer (its step "
    "count and, for Adam, its moment estimates start from zero)"
)


def _is_rate(text: str) -> bool:
    try:
        float(text)
    except ValueError:
        return False  # a schedule: no Variable to assign
    return True


def _changed(before: Mapping[str, str], after: Mapping[str, str]) -> list[str]:
    return [k for k in dict.fromkeys([*before, *after]) if before.get(k) != after.get(k)]


def _short(text: str) -> str:
    return text if len(text) <= 60 else text[:57] + "..."


def _trainable_change(before: str, after: str) -> str:
    old = [w for w in before.split(", ") if w]
    new = [w for w in after.split(", ") if w]
    gained = [w for w in new if w not in old]
    lost = [w for w in old if w not in new]
    parts = [f"{len(old)} → {len(new)} trainable weights"]
    if gained:
        parts.append(f"now trained: {', '.join(gained[:3])}{' …' if len(gained) > 3 else ''}")
    if lost:
        parts.append(f"no longer trained: {', '.join(lost[:3])}{' …' if len(lost) > 3 else ''}")
    return "; ".join(parts)


def _value(key: str, settings: Mapping[str, str]) -> str:
    text = settings.get(key, "(none)")
    if key == CompileSetting.TRAINABLE:
        return f"{len([w for w in text.split(', ') if w])} trainable weights"
    return _short(text)


def _change_text(key: str, before: Mapping[str, str], after: Mapping[str, str]) -> str:
    if key == CompileSetting.TRAINABLE:
        return _trainable_change(before.get(key, ""), after.get(key, ""))
    return f"{key} {_short(before.get(key, '(none)'))} → {_short(after.get(key, '(none)'))}"


def recompile_reason(
    reason: Reason, before: Mapping[str, str] | None, after: Mapping[str, str] | None, role: str
) -> Reason:
    """The new-function-object ``reason`` of a Keras step made by compiling its model again,
    explained by what the compile changed: ``before``/``after`` are the model's compile
    settings (``adapter.keras_steps.compile_settings``) when the earlier and this function
    object first traced (None: not known). ``argument`` names the settings that changed.

    A change to training (trainable weights, loss, metrics, the optimizer's class or settings,
    compile()'s options) is expected and gets no fix; a change of the learning rate alone gets
    ``model.optimizer.learning_rate.assign(NEW)`` instead of the recompile; no change at all,
    removing the recompile."""
    if before is None or after is None:
        return replace(
            reason,
            message=_REBUILT,
            fix="expected if the recompile changed what Keras trains with (trainable weights, "
            "loss, metrics, the optimizer): keep it, Keras needs it (and " + _RESET + "); if it "
            "changed only the learning rate, assign it instead of recompiling: "
            "model.optimizer.learning_rate.assign(new_lr)",
            plans=(),
        )
    changed = _changed(before, after)
    training = [k for k in changed if k not in (_OBJECT, _RATE)]
    new_optimizer = _OBJECT in changed
    rate_only = not training and _RATE in changed and _is_rate(after.get(_RATE, ""))
    reset = "; it also resets the optimizer's state (its step count, Adam's moments)" if new_optimizer else ""
    if training or (_RATE in changed and not rate_only):
        said = "; ".join(_change_text(k, before, after) for k in changed if k != _OBJECT)
        needed = (
            "Keras builds the train step from the trainable weights, loss, metrics and optimizer "
            "it has when it traces, so the change takes effect only through this recompile"
            if role == "train"
            else "each compile() drops the model's functions, so this one traces once again"
        )
        without = (
            "the weights made trainable stay untrained"
            if CompileSetting.TRAINABLE in training
            else "Keras goes on training with the earlier settings"
        )
        return replace(
            reason,
            argument=", ".join(training + [_RATE] * (_RATE in changed)),
            before="; ".join(_value(k, before) for k in changed if k != _OBJECT),
            after="; ".join(_value(k, after) for k in changed if k != _OBJECT),
            message=f"Keras built this function anew: model.compile() ran again on this model and "
            f"changed what it trains with ({said}); expected: {needed}",
            fix=f"nothing to fix: keep the recompile, Keras needs it (without it {without}){reset}",
            plans=(),
        )
    if rate_only:
        new = after[_RATE]
        return replace(
            reason,
            argument=_RATE,
            before=before[_RATE],
            after=new,
            message=f"Keras built this function anew: model.compile() ran again on this model and "
            f"changed nothing but the learning rate ({before[_RATE]} → {new}); the new function "
            "object starts with an empty cache"
            + ("; the recompile's new optimizer also started its state afresh" if new_optimizer else ""),
            fix=f"assign the rate instead of compiling again: "
            f"model.optimizer.learning_rate.assign({new}) (no new functions, no new traces"
            + ("; the optimizer keeps its state)" if new_optimizer else ")"),
            plans=(),
        )
    return replace(
        reason,
        argument=_OBJECT if new_optimizer else "",
        before="an optimizer" if new_optimizer else "",
        after="a new optimizer, all else the same" if new_optimizer else "",
        message="Keras built this function anew: model.compile() ran again on this model and "
        "changed nothing it trains with (the same trainable weights, loss, metrics, optimizer "
        "and learning rate); the new function object starts with an empty cache"
        + ("; its new optimizer also started the optimizer's state afresh" if new_optimizer else ""),
        fix="remove the repeated model.compile(...): it only made Keras build and trace the "
        "model's functions again"
        + ("; without it the optimizer also keeps its state" if new_optimizer else ""),
        plans=(),
    )


def _recompile_suggestion(reasons: Sequence[Reason]) -> str | None:
    """Code for a recompile, from the settings its reasons name as changed (``argument``)."""
    for reason in reasons:
        if reason.argument == _RATE and _is_rate(reason.after):
            return (
                f"model.optimizer.learning_rate.assign({reason.after})  # instead of the second "
                "model.compile(...): no new functions, no new traces"
            )
    if any(r.argument == _OBJECT for r in reasons):
        return "# remove the repeated model.compile(...): it changed nothing Keras trains with"
    return None  # a recompile that changed training is expected; or not known
