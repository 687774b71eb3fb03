"""When the front ends ask TensorFlow for its XLA compile log, read during watches for exact XLA
counts (the reader is :mod:`tfgraph_lab.recording.xla_log`). Light on purpose: ``%load_ext``
and ``tfgraph-lab run`` call these before anything else loads."""

from __future__ import annotations

from ..recording.xla_log import LOG as XLA_LOG

__all__ = ["abandon_xla_log", "give_back_xla_switches", "hold_xla_log", "prepare_xla_log", "release_xla_log"]


def prepare_xla_log() -> bool:
    """``tfgraph-lab run``, before the script imports TensorFlow: ask TF for its XLA compile log,
    and start the relay that will read it (the watch connects fd 2 to it when it starts)."""
    prepared = XLA_LOG.prepare()
    XLA_LOG.launch()
    return prepared


def abandon_xla_log() -> None:
    """``tfgraph-lab run`` ending before its watch began: the relay :func:`prepare_xla_log`
    started ends, and ``os.environ`` holds the user's ``TF_CPP_*`` values again."""
    XLA_LOG.abandon()


def hold_xla_log() -> bool:
    """``%load_ext tfgraph_lab``, when TensorFlow is not imported yet: the same for the cells."""
    return XLA_LOG.hold()


def give_back_xla_switches(*_: object) -> None:
    """After each cell (``post_run_cell``) once ``%load_ext`` lowered TF's log switches: the cell
    that imported TensorFlow is the last to see the lowered values in ``os.environ``."""
    XLA_LOG.give_back_environment()


def release_xla_log() -> None:
    """``%unload_ext tfgraph_lab``: give the XLA compile log back."""
    XLA_LOG.release()
