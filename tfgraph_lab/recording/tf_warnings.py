"""TensorFlow's own retracing warnings: copied into the report, and quiet, while a watch is active.

TF logs "N out of the last M calls to <function> triggered tf.function retracing" through the
``tensorflow`` logger (at most twice per code object, TF 2.15-2.21). While a watch explains
those retraces, a filter on that logger keeps each such message for the report and stops it
there, so TF's vague warning does not print above the report that explains it. Every other
TensorFlow message passes untouched. The filter is added with the hooks and removed with them:
after the watch TF warns as before. A logger the user set above WARNING never reaches the filter
(we never change its level), so its warnings stay off and none are copied. Imports nothing from
TensorFlow or IPython.
"""

from __future__ import annotations

import logging

__all__ = ["RetraceWarningHandler", "handler_installed", "install_handler", "remove_handler"]

_TF_LOGGER = "tensorflow"


def _is_retrace_warning(message: str) -> bool:
    return "retracing" in message


class RetraceWarningHandler(logging.Filter):
    """A filter on TensorFlow's logger: appends the text of every retracing warning to ``sink``
    and drops the record (no handler of TF's prints it); passes every other record."""

    def __init__(self, sink: list[str]) -> None:
        super().__init__()
        self.sink = sink

    def filter(self, record: logging.LogRecord) -> bool:
        try:
            message = record.getMessage()
        except Exception:
            return True
        if record.levelno == logging.WARNING and _is_retrace_warning(message):
            self.sink.append(message)
            return False
        return True


def install_handler(sink: list[str]) -> RetraceWarningHandler:
    handler = RetraceWarningHandler(sink)
    logging.getLogger(_TF_LOGGER).addFilter(handler)
    return handler


def remove_handler(handler: RetraceWarningHandler) -> None:
    logging.getLogger(_TF_LOGGER).removeFilter(handler)


def handler_installed() -> bool:
    """True while any of our filters is on TensorFlow's logger."""
    return any(isinstance(f, RetraceWarningHandler) for f in logging.getLogger(_TF_LOGGER).filters)
