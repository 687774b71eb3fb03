"""XLA's compilation cache key of a call, read from the call's tensors (TensorFlow internals).

Used by :mod:`tfgraph_lab.recording.xla`, which models XLA's cache from these keys (TensorFlow offers no
Python reader of its ``/tensorflow/core/xla_compilations`` counter). Imports TensorFlow lazily.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

__all__ = ["xla_key_reader", "xla_site_leaves"]


def xla_key_reader() -> Callable[[tuple[Any, ...], dict[str, Any]], tuple[Any, ...] | None] | None:
    """A fast reader of what XLA's compilation cache keys a direct call on, besides the graph.

    TensorFlow keeps one XLA executable per ``DeviceCompilationClusterSignature``
    (tensorflow/compiler/jit/device_compilation_cluster_signature.cc, TF 2.15-2.21): the
    function's name and attributes, then per argument its dtype and *concrete* shape (or its
    value, for an argument XLA needs as a compile-time constant), in a cache per device. The
    reader returns ``(device, ((dtype, shape), ...), taping)`` over the call's tensors
    (composites expanded, as TF passes them) or None while a graph is being built (symbolic
    tensors: the nested function compiles when the outer graph runs). Python values are left
    out: they are baked into the graph, so a new one is a new graph. ``taping``: a GradientTape
    is recording, so TF runs the graph's ``__forward_…`` twin and compiles its ``__backward_…``
    function at ``tape.gradient`` (two more cache entries, seen in TF 2.21's compile log).
    ~3-5 us; None when TF moved these names.
    """
    try:
        from tensorflow.python import pywrap_tfe
        from tensorflow.python.eager import context
        from tensorflow.python.util import nest
    except ImportError:
        return None
    flatten = nest.flatten
    # what record.could_possibly_record() negates, without its Python frame
    tape_set_is_empty = getattr(pywrap_tfe, "TFE_Py_TapeSetIsEmpty", None)
    if tape_set_is_empty is None:
        return None
    ctx = context.context
    # Context.executing_eagerly() and Context.device_name read this per-thread object (TF
    # 2.15-2.21): read directly, two Python frames fewer per call (~0.8 us, TF 2.21).
    local = getattr(ctx(), "_thread_local_data", None)
    if local is None or not hasattr(local, "is_eager") or not hasattr(local, "device_name"):
        return None

    try:
        from tensorflow.python.framework.ops import EagerTensor
    except ImportError:
        return None

    def key(args: tuple[Any, ...], kwargs: dict[str, Any]) -> tuple[Any, ...] | None:
        local = ctx()._thread_local_data  # the context's own: a reset context has a new one
        if not local.is_eager:
            return None
        if not kwargs and len(args) == 1 and type(args[0]) is EagerTensor:
            # one positional tensor, the commonest call: no generator (~0.5 us less, TF 2.21)
            a = args[0]
            return (local.device_name, ((a._datatype_enum(), a._shape_tuple()),), not tape_set_is_empty())
        if not kwargs and all(type(a) is EagerTensor for a in args):
            # the common call: positional tensors (nest.flatten would cost ~3 us more)
            fast = tuple((a._datatype_enum(), a._shape_tuple()) for a in args)
            return (local.device_name, fast, not tape_set_is_empty())
        leaves = []
        for leaf in flatten((args, kwargs), expand_composites=True):
            shape_tuple = getattr(leaf, "_shape_tuple", None)
            if shape_tuple is not None:
                enum = getattr(leaf, "_datatype_enum", None)  # a tf.Variable has none
                leaves.append((enum() if enum is not None else leaf.dtype, shape_tuple()))
        return (local.device_name, tuple(leaves), not tape_set_is_empty())

    return key


def xla_site_leaves(
    args: tuple[Any, ...], kwargs: dict[str, Any]
) -> tuple[tuple[str, tuple[int | None, ...] | None], ...]:
    """The static dtype and shape of each tensor a nested call passes while a graph is built
    (``None`` dims: the size is only known when the outer graph runs)."""
    from tensorflow.python.util import nest

    out = []
    for leaf in nest.flatten((args, kwargs), expand_composites=True):
        shape = getattr(leaf, "shape", None)
        dtype = getattr(leaf, "dtype", None)
        if shape is None or dtype is None or not hasattr(leaf, "_shape_tuple"):
            continue
        try:
            dims = None if shape.rank is None else tuple(shape.as_list())
        except Exception:
            continue
        out.append((getattr(dtype, "name", str(dtype)), dims))
    return tuple(out)
