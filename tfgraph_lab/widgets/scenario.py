"""The lab's pure logic: settings → the tf.function, its arguments, and the code they amount to.

``LabSettings`` is what the controls of :class:`~tfgraph_lab.widgets.RetraceLab` say;
``LabScenario`` turns them into a tf.function (``build``), call arguments (``arguments``) and
the Python a learner would write for the same thing (``code``). TensorFlow is imported only
when a function or tensor is built; this module never imports ipywidgets or IPython.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import Any

__all__ = [
    "BOUNDS",
    "DTYPES",
    "FLAG_MODES",
    "RANKS",
    "LabScenario",
    "LabSettings",
    "model_step",
]

#: How the ``training`` flag is passed: a Python bool, a Python int, or a tf.Tensor.
FLAG_MODES: dict[str, str] = {
    "python-bool": "Python bool",
    "python-int": "Python int",
    "tensor": "tf.Tensor",
}
DTYPES = ("float32", "float64", "int32")
RANKS = (1, 2, 3)
_TIME_STEPS = 4  # the middle dimension of a rank-3 batch: (batch, 4, features)
#: The whole numbers a learner can set, as the lab's sliders allow them (a value outside would
#: show as the slider's end while the calls used it).
BOUNDS: dict[str, tuple[int, int]] = {"batch": (1, 128), "features": (1, 64), "loop_calls": (2, 50)}
_FLAGS = ("training", "input_signature", "reduce_retracing", "variable_inside", "jit_compile", "partial_last")


@dataclass(frozen=True)
class LabSettings:
    """Everything a learner can set in the lab. Decorator settings rebuild the function."""

    flag: str = "python-bool"
    training: bool = True
    batch: int = 32
    features: int = 16
    dtype: str = "float32"
    rank: int = 2
    input_signature: bool = False
    reduce_retracing: bool = False
    variable_inside: bool = False
    jit_compile: bool = False  # XLA: compiles every new concrete shape, even without a retrace
    loop_calls: int = 8
    partial_last: bool = True

    def __post_init__(self) -> None:
        if self.flag not in FLAG_MODES:
            raise ValueError(f"flag must be one of {sorted(FLAG_MODES)}, got {self.flag!r}")
        if self.dtype not in DTYPES:
            raise ValueError(f"dtype must be one of {DTYPES}, got {self.dtype!r}")
        if self.rank not in RANKS:
            raise ValueError(f"rank must be one of {RANKS}, got {self.rank!r}")
        for name, (low, high) in BOUNDS.items():
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int) or not low <= value <= high:
                raise ValueError(f"{name} must be a whole number from {low} to {high}, got {value!r}")
        for name in _FLAGS:
            if not isinstance(getattr(self, name), bool):
                raise ValueError(f"{name} must be True or False, got {getattr(self, name)!r}")

    def decorator(self) -> tuple[bool, bool, bool, bool]:
        """The settings that change the ``@tf.function`` line: changing one makes a new function."""
        return (self.input_signature, self.reduce_retracing, self.variable_inside, self.jit_compile)

    def shape(self, batch: int | None = None) -> tuple[int, ...]:
        rows = self.batch if batch is None else batch
        if self.rank == 1:
            return (rows,)
        if self.rank == 2:
            return (rows, self.features)
        return (rows, _TIME_STEPS, self.features)

    def loop_batches(self) -> list[int]:
        """Batch sizes of the loop: all full, except a partial last one when asked (and possible)."""
        sizes = [self.batch] * self.loop_calls
        if self.partial_last and self.batch > 1:
            sizes[-1] = self.batch - self.batch // 2 if self.batch > 2 else 1
        return sizes

    def with_changes(self, **changes: Any) -> LabSettings:
        return replace(self, **changes)


# The built-in function the lab traces. ``scale`` is created once, outside, as it should be.
_SCALE: Any = None


def _scale() -> Any:
    global _SCALE
    if _SCALE is None:
        import tensorflow as tf

        _SCALE = tf.Variable(2.0, name="scale")
    return _SCALE


def model_step(x: Any, training: Any) -> Any:
    """A tiny model step: scale, sum the features, double it in training, average over the batch."""
    import tensorflow as tf

    y = tf.reduce_sum(x * tf.cast(_scale(), x.dtype), axis=-1)
    if training:
        y = 2 * y
    return tf.reduce_mean(y)


def model_step_variable_inside(x: Any, training: Any) -> Any:
    """The anti-pattern: a new tf.Variable at every trace (TensorFlow raises ValueError)."""
    import tensorflow as tf

    scale = tf.Variable(2.0)
    y = tf.reduce_sum(x * tf.cast(scale, x.dtype), axis=-1)
    if training:
        y = 2 * y
    return tf.reduce_mean(y)


# The source learners see for the built-in functions (what the code above does, minus lab glue).
_BODY = """\
    y = tf.reduce_sum(x * tf.cast(scale, x.dtype), axis=-1)
    if training:
        y = 2 * y
    return tf.reduce_mean(y)
"""


class LabScenario:
    """Builds the lab's tf.function and arguments from :class:`LabSettings`, and says it as code.

    ``fn`` is the Python function to trace: the built-in :func:`model_step` by default, or any
    function called as ``fn(x, training=...)``.
    """

    def __init__(self, fn: Callable[..., Any] | None = None) -> None:
        self.user_fn = fn
        target = fn
        # Accept a tf.function too: trace its Python function with the lab's own decorator.
        python_function = getattr(fn, "python_function", None)
        if python_function is not None:
            target = python_function
        self.python_fn: Callable[..., Any] | None = target
        if target is not None and not callable(target):
            raise TypeError(
                f"RetraceLab traces a function called as fn(x, training=...); got {type(target).__name__} {target!r}"
            )
        name = getattr(target, "__name__", None) if target is not None else "model_step"
        # a partial, a callable object or a lambda has no name to write code with: "fn"
        self.name = name if isinstance(name, str) and name.isidentifier() else "fn"

    @property
    def builtin(self) -> bool:
        return self.user_fn is None

    def python_function(self, settings: LabSettings) -> Callable[..., Any]:
        if self.python_fn is not None:
            return self.python_fn
        return model_step_variable_inside if settings.variable_inside else model_step

    def build(self, settings: LabSettings, fix: str = "") -> Any:
        """A new tf.function (an empty graph cache) as the decorator settings say; ``fix`` is a
        report's decorator change (``reduce_retracing=True``), applied over them."""
        import tensorflow as tf

        from ..report.fix_trial import decorator_kwargs

        kwargs: dict[str, Any] = {}
        if settings.reduce_retracing:
            kwargs["reduce_retracing"] = True
        if settings.jit_compile:
            kwargs["jit_compile"] = True
        if settings.input_signature:
            kwargs["input_signature"] = [
                tf.TensorSpec(shape=(None,) * settings.rank, dtype=getattr(tf, settings.dtype)),
                tf.TensorSpec(shape=(), dtype=tf.bool),
            ]
        if fix:
            kwargs.update(decorator_kwargs(fix, tf))  # a FixPlan's decorator, parsed, never evaluated
        if self.builtin:
            _scale()  # outside any trace: the correct pattern creates its variable once
        return tf.function(self.python_function(settings), **kwargs)

    def arguments(self, settings: LabSettings, batch: int | None = None) -> tuple[Any, Any]:
        """``(x, training)`` for one call; ``batch`` overrides the batch size (the loop's last)."""
        import tensorflow as tf

        x = tf.ones(settings.shape(batch), dtype=getattr(tf, settings.dtype))
        return x, self.flag_value(settings)

    @staticmethod
    def flag_value(settings: LabSettings) -> Any:
        if settings.flag == "python-bool":
            return settings.training
        if settings.flag == "python-int":
            return int(settings.training)
        import tensorflow as tf

        return tf.constant(settings.training)

    # ------------------------------------------------------------------------ code
    def decorator_code(self, built: LabSettings, fix: str = "") -> str:
        """The definition of the function as built (``fix``: the decorator change applied over
        the settings): decorator, signature and body."""
        options = []
        fixed = {part.split("=", 1)[0] for part in (fix,) if part}
        if built.input_signature and "input_signature" not in fixed:
            dims = ", ".join(["None"] * built.rank)
            dims += "," if built.rank == 1 else ""
            options.append(
                "input_signature=[\n"
                f"    tf.TensorSpec(shape=({dims}), dtype=tf.{built.dtype}),\n"
                "    tf.TensorSpec(shape=(), dtype=tf.bool),\n]"
            )
        if built.reduce_retracing and "reduce_retracing" not in fixed:
            options.append("reduce_retracing=True")
        if built.jit_compile and "jit_compile" not in fixed:
            options.append("jit_compile=True")
        if fix:
            options.append(fix)  # «Apply the fix» (see code())
        args = ", ".join(options)
        if not self.builtin:
            named = self.name == getattr(self.python_fn, "__name__", None)
            source = _source_of(self.python_fn) if named else "# fn: the callable passed to RetraceLab\n"
            wrap = f"{self.name} = tf.function({self.name}{', ' + args if args else ''})"
            return f"{source}\n{wrap}\n" if source else f"{wrap}\n"
        decorator = f"@tf.function({args})" if args else "@tf.function"
        if built.variable_inside:
            head = ""
            body = (
                "    scale = tf.Variable(2.0)  # ✗ a new Variable at every trace: TF raises ValueError\n"
                + _BODY
            )
            fix = (
                "\n# The fix: create the Variable once, outside (e.g. in __init__ of a tf.Module):\n"
                "# scale = tf.Variable(2.0)\n# @tf.function\n# def model_step(x, training):\n"
                "#     y = tf.reduce_sum(x * tf.cast(scale, x.dtype), axis=-1) ...\n"
            )
            return f"{head}{decorator}\ndef model_step(x, training):\n{body}{fix}"
        head = "scale = tf.Variable(2.0)  # created once, outside the function\n\n"
        return f"{head}{decorator}\ndef model_step(x, training):\n" + _BODY

    def call_code(self, settings: LabSettings) -> str:
        """The call the current settings make."""
        return f"x = {self._tensor_code(settings, settings.batch)}\n{self._call(settings)}\n"

    def loop_code(self, settings: LabSettings) -> str:
        sizes = settings.loop_batches()
        n = len(sizes)
        if sizes[-1] != sizes[0]:
            rows = f"    rows = {sizes[0]} if step < {n - 1} else {sizes[-1]}  # the last batch is partial\n"
        else:
            rows = f"    rows = {sizes[0]}\n"
        return (
            f"for step in range({n}):\n{rows}"
            f"    x = {self._tensor_code(settings, None)}\n    {self._call(settings)}\n"
        )

    def code(self, built: LabSettings, settings: LabSettings, fix: str = "") -> str:
        """Decorator (as built) + one call (as set now) + the loop: what the buttons run."""
        applied = f"# «Apply the fix» added {fix.split('=', 1)[0]}= to the decorator\n" if fix else ""
        return (
            "import tensorflow as tf\n\n"
            + applied
            + self.decorator_code(built, fix)
            + "\n# «Call once»\n"
            + self.call_code(settings)
            + "\n# «Run loop»\n"
            + self.loop_code(settings)
        )

    def _tensor_code(self, settings: LabSettings, batch: int | None) -> str:
        shape = settings.shape(0)
        dims = ["rows" if batch is None else str(batch), *(str(d) for d in shape[1:])]
        text = ", ".join(dims) + ("," if len(dims) == 1 else "")
        return f"tf.ones(({text}), tf.{settings.dtype})"

    def _call(self, settings: LabSettings) -> str:
        flag = {
            "python-bool": str(settings.training),
            "python-int": str(int(settings.training)),
            "tensor": f"tf.constant({settings.training})",
        }[settings.flag]
        return f"{self.name}(x, training={flag})"


def _source_of(fn: Any) -> str:
    try:
        source = inspect.getsource(fn)
    except (OSError, TypeError):
        return ""
    lines = [line for line in inspect.cleandoc("\n" + source).splitlines() if not line.startswith("@")]
    return "\n".join(lines) + "\n"
