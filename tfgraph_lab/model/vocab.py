"""The words the report is written in, each vocabulary one ``str`` enum: how a graph came
(:class:`Via`), the scope it was traced in (:class:`Scope`), why it was traced
(:class:`ReasonCode`), why XLA compiled (:class:`XlaCode`) and which of a Keras model's compile()
settings a recompile changed (:class:`CompileSetting`).

A member *is* its string (``Via.CALL == "call"``, hashes alike, ``json.dumps`` writes
``"call"``), so the JSON (version 1) is the plain strings' byte for byte
(``tests/model/test_vocabulary.py``) and a report read back from JSON, whose fields are plain
strings, compares equal. Imports nothing.
"""

from __future__ import annotations

from enum import Enum

__all__ = ["CompileSetting", "ReasonCode", "Scope", "Via", "Vocabulary", "XlaCode"]


class Vocabulary(str, Enum):
    """A ``str`` enum that prints as its value (``str()`` and f-strings), on Python 3.10 too."""

    __str__ = str.__str__

    def __format__(self, spec: str) -> str:
        return format(str(self), spec)


class Via(Vocabulary):
    """How a graph came about (``events[].via``, ``graphs[].via``)."""

    CALL = "call"
    GET_CONCRETE_FUNCTION = "get_concrete_function"
    TF_DATA = "tf.data"  # a dataset transformation
    SAVED_MODEL = "saved_model"  # traced while saving
    TRACE = "trace"  # a trace no watched call or get_concrete_function made
    BEFORE = "before"  # a graph in the cache before the watch began (graphs[] only)


class Scope(Vocabulary):
    """The scope a graph was traced in (``graphs[].scope``)."""

    NONE = ""
    VARIABLE_CREATION = "variable-creation"  # a first call's, which may create variables


class ReasonCode(Vocabulary):
    """Why a graph was traced (``reasons[].code``; also CSS classes and test ids), in the
    order of docs/ARCHITECTURE.md's table."""

    FIRST_TRACE = "first-trace"
    NEW_FUNCTION_OBJECT = "new-function-object"
    VARIABLE_CREATION = "variable-creation"
    PYTHON_VALUE_CHANGED = "python-value-changed"
    TYPE_CHANGED = "type-changed"
    DTYPE_CHANGED = "dtype-changed"
    SHAPE_CHANGED = "shape-changed"
    RANK_CHANGED = "rank-changed"
    STRUCTURE_CHANGED = "structure-changed"
    OBJECT_CHANGED = "object-changed"
    VARIABLE_CHANGED = "variable-changed"
    CONTEXT_CHANGED = "context-changed"
    SAVED_SIGNATURE_MISMATCH = "saved-signature-mismatch"
    UNEXPLAINED = "unexplained"


class XlaCode(Vocabulary):
    """Why XLA compiled (``events[].xla_reasons[].code``)."""

    FIRST_COMPILE = "first-compile"  # the first XLA compilation of a graph (a new graph always compiles)
    SHAPE_CHANGED = "shape-changed"  # same graph, a tensor has a concrete shape XLA has not compiled for
    RANK_CHANGED = "rank-changed"  # same graph, a tensor has another number of dimensions
    DEVICE_CHANGED = "device-changed"  # same graph and shapes, another device: XLA's cache is per device
    HIDDEN_SHAPE = "hidden-shape"  # a nested XLA call whose input sizes only the running graph knows
    GRADIENT_TAPE = "gradient-tape"  # called under a GradientTape: a forward twin and a backward compile too
    CONSTANT_VALUE = "constant-value"  # same graph and shapes compiled again: a value XLA needs as a constant
    PER_DEVICE = "per-device"  # one compilation per device (a distribution strategy's replicas)


class CompileSetting(Vocabulary):
    """What a Keras model is compiled with, one text each (``adapter.keras_steps.compile_settings``
    reads them when a new step function first traces; a recompile's reason names those that
    changed in ``reasons[].argument``). Besides these, compile()'s own options by their keyword
    (``loss``, ``metrics``, ``jit_compile``, ...)."""

    TRAINABLE = "trainable weights"  # their paths, joined by ", "
    LEARNING_RATE = "learning rate"
    OPTIMIZER = "optimizer"  # its class
    OPTIMIZER_CONFIG = "optimizer settings"  # get_config() without name and learning rate
    OPTIMIZER_OBJECT = "optimizer object"  # which object: a new one starts with a fresh state
