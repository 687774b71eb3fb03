"""TensorFlow's own retracing warnings, copied into the report while a watch is active.

TF logs "N out of the last M calls to <function> triggered tf.function retracing" through the
``tensorflow`` logger (at most twice per code object, TF 2.15-2.21). A handler on that logger
keeps those messages; it is added with the hooks and removed with them. Imports nothing from
TensorFlow or IPython.
"""

from __future__ import annotations

import logging

__all__ = ["RetraceWarningHandler", "handler_installed", "install_handler", "remove_handler"]

_TF_LOGGER = "tensorflow"


class RetraceWarningHandler(logging.Handler):
    """Appends the text of every retracing warning to ``sink``."""

    def __init__(self, sink: list[str]) -> None:
        super().__init__(level=logging.WARNING)
        self.sink = sink

    def emit(self, record: logging.LogRecord) -> None:
        try:
            message = record.getMessage()
        except Exception:
            return
        if "retracing" in message:
            self.sink.append(message)


def install_handler(sink: list[str]) -> RetraceWarningHandler:
    handler = RetraceWarningHandler(sink)
    logging.getLogger(_TF_LOGGER).addHandler(handler)
    return handler


def remove_handler(handler: RetraceWarningHandler) -> None:
    logging.getLogger(_TF_LOGGER).removeHandler(handler)


def handler_installed() -> bool:
    """True while any of our handlers is on TensorFlow's logger."""
    return any(isinstance(h, RetraceWarningHandler) for h in logging.getLogger(_TF_LOGGER).handlers)
