"""What a fix trial puts back after running the user's code again: a snapshot of the user's state.

A trial runs the code two or three times; the user keeps the first (watched) run's state
wherever this module can restore it, and each re-run starts from the state the first run
started from (so the runs compare like with like). :class:`UserState` snapshots, and restores:

* the names of the namespace (rebound; names a run added are deleted);
* the contents of the lists, dicts, sets and bytearrays bound to names (restored in place, so
  every other reference sees them too; one level: a list inside a list is not copied);
* the values of the ``tf.Variable``\\ s reachable from the names: a variable itself, a
  ``tf.Module``'s or a Keras layer's, model's, optimizer's or metric's ``variables`` (a
  Keras model's optimizer too: its ``iterations`` are variables), a ``tf.random.Generator``'s
  state, inside a list, tuple or dict bound to a name, and those the caller adds
  (``tf.random``'s global generator);
* Python's ``random`` state, numpy's global RNG and numpy ``Generator``/``RandomState``
  objects bound to names.

What it cannot restore is said before the code runs again (:meth:`UserState.limits`): files and
anything outside the process, iterators and generators, TensorFlow's op-level random state
(``tf.random.uniform``, dropout), other objects' attributes.

Glue: reads TensorFlow, Keras and numpy (through ``sys.modules``) only when the user's process
imported them; imports nothing of the project.
"""

from __future__ import annotations

import random
import sys
from collections.abc import MutableMapping, Sequence
from typing import Any

__all__ = ["UserState"]

_CONTAINERS = (list, dict, set, bytearray)


def _hidden(name: str) -> bool:
    """IPython's own names (``In``, ``Out``, ``_``, ``_i3``…): their contents are not the user's."""
    return name.startswith("_") or name in ("In", "Out", "exit", "quit", "get_ipython")


def _variables(namespace: MutableMapping[str, Any], extra: Sequence[Any]) -> tuple[list[Any], bool]:
    """The variables reachable from the names (and ``extra``), and whether a Keras optimizer's
    are among them."""
    tf = sys.modules.get("tensorflow")
    if tf is None:
        return [], False
    keras = sys.modules.get("keras")
    keras_variable = getattr(keras, "Variable", None) if keras is not None else None
    keras_owners: tuple[type, ...] = ()
    if keras is not None:
        keras_owners = tuple(
            c
            for c in (
                getattr(getattr(keras, "layers", None), "Layer", None),
                getattr(getattr(keras, "optimizers", None), "Optimizer", None),
                getattr(getattr(keras, "metrics", None), "Metric", None),
            )
            if isinstance(c, type)
        )
    found: dict[int, Any] = {}
    optimizer_class = (
        getattr(getattr(keras, "optimizers", None), "Optimizer", None) if keras is not None else None
    )
    optimizers: list[Any] = []

    def visit(obj: Any, depth: int) -> None:
        if isinstance(obj, tf.Variable) or (keras_variable is not None and isinstance(obj, keras_variable)):
            found.setdefault(id(obj), obj)
        elif isinstance(obj, tf.random.Generator):
            found.setdefault(id(obj.state), obj.state)
        elif isinstance(obj, tf.Module) or (keras_owners and isinstance(obj, keras_owners)):
            try:
                owned = list(getattr(obj, "variables", ()))
            except Exception:  # an unbuilt object, a property that raises: nothing to keep
                owned = []
            for v in owned:
                found.setdefault(id(v), v)
            if owned and isinstance(optimizer_class, type) and isinstance(obj, optimizer_class):
                optimizers.append(obj)
            optimizer = getattr(obj, "optimizer", None) if keras_owners else None
            if optimizer is not None and optimizer is not obj and depth > 0:
                visit(optimizer, depth - 1)
        elif depth > 0 and type(obj) in (list, tuple, dict):
            for item in obj.values() if isinstance(obj, dict) else obj:
                visit(item, depth - 1)

    for name, value in list(namespace.items()):
        if not _hidden(name):
            visit(value, 2)
    for v in extra:
        found.setdefault(id(v), v)
    return list(found.values()), bool(optimizers)


class UserState:
    """One snapshot of the user's state (see the module docstring); :meth:`restore` puts it back.
    ``extra``: variables to keep besides those reachable from the names (the trial passes
    ``tf.random``'s global generator state, found through the adapter)."""

    def __init__(self, namespace: MutableMapping[str, Any], extra: Sequence[Any] = ()) -> None:
        self.namespace = namespace
        self.names = dict(namespace)
        self.contents: list[tuple[Any, Any]] = [
            (obj, obj.copy() if not isinstance(obj, bytearray) else bytes(obj))
            for name, obj in self.names.items()
            if type(obj) in _CONTAINERS and not _hidden(name)
        ]
        self.values: list[tuple[Any, Any]] = []
        variables, self.optimizers = _variables(namespace, extra)
        for v in variables:
            try:
                self.values.append((v, v.numpy()))
            except Exception:  # an uninitialised or symbolic variable: not kept
                continue
        self.random = random.getstate()
        self.rngs: list[tuple[Any, Any]] = []
        np = sys.modules.get("numpy")
        if np is not None:
            self.rngs.append((np.random, np.random.get_state()))
            for obj in self.names.values():
                if isinstance(obj, np.random.Generator):
                    self.rngs.append((obj.bit_generator, obj.bit_generator.state))
                elif isinstance(obj, np.random.RandomState):
                    self.rngs.append((obj, obj.get_state()))
        self.failed: list[str] = []  # what could not be put back, in words

    def restore(self) -> None:
        """Put the snapshot back: names, container contents, variable values, RNG states."""
        ns = self.namespace
        for name in [k for k in ns if k not in self.names]:
            del ns[name]
        for name, value in self.names.items():
            if ns.get(name, _MISSING) is not value:
                ns[name] = value
        for obj, saved in self.contents:
            if isinstance(obj, (list, bytearray)):
                obj[:] = saved
            else:
                obj.clear()
                obj.update(saved)
        for v, value in self.values:
            try:
                v.assign(value)
            except Exception as exc:  # a variable whose shape changed, a distributed one…
                self.failed.append(f"{getattr(v, 'name', 'a tf.Variable')} ({type(exc).__name__})")
        random.setstate(self.random)
        for owner, state in self.rngs:
            if hasattr(owner, "set_state"):
                owner.set_state(state)
            else:
                owner.state = state

    def restored(self) -> str:
        """What :meth:`restore` puts back, in words."""
        parts = ["the names in the namespace"]
        if self.contents:
            parts.append(
                f"the contents of {len(self.contents)} list/dict/set{'s' if len(self.contents) != 1 else ''}"
            )
        if self.values:
            n = len(self.values)
            steps = " (Keras optimizers' iterations included)" if self.optimizers else ""
            parts.append(f"the values of {n} tf.Variable{'s' if n != 1 else ''}{steps}")
        parts.append("numpy's and Python's random state" if self.rngs else "Python's random state")
        return ", ".join(parts)

    @staticmethod
    def limits() -> str:
        """What no snapshot restores, in words."""
        return (
            "files and anything outside Python, iterators and generators, TensorFlow's op-level "
            "random state (tf.random.uniform, dropout) and the attributes of other objects"
        )


_MISSING = object()
