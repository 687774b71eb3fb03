"""TensorFlow's own retracing warnings: copied into the report, and not printed by TensorFlow's
default handler, while a watch is active.

TF logs "N out of the last M calls to <function> triggered tf.function retracing" through the
``tensorflow`` logger (at most twice per code object, TF 2.15-2.21). While a watch explains
those retraces:

* a filter on that logger copies each such message for the report and lets the record go on:
  every handler the user put on the logger (``tf.get_logger().addHandler``, ``assertLogs``,
  TensorFlow's own ``test_frequent_retracing_warning_on_reinstantiation``) still gets it, and it
  propagates to the root logger's handlers as it would unwatched;
* a filter on TensorFlow's *default* handler only (the ``StreamHandler`` with
  ``logging.BASIC_FORMAT`` that ``tf.get_logger()`` adds when the root logger has no handler,
  TF 2.15-2.21: it keeps no reference to it, so it is recognised by its class and format) keeps
  that handler from printing the vague warning above the report that explains it.

Both filters are added with the hooks and removed with them: after the watch TF warns as before.
A logger the user set above WARNING never reaches the filters (we never change its level), so its
warnings stay off and none are copied. A handler replaced while the watch runs (``assertLogs``
swaps the logger's handlers for its own and puts them back) is not quieted then. Imports nothing
from TensorFlow or IPython.
"""

from __future__ import annotations

import logging

__all__ = [
    "RetraceWarningHandler",
    "handler_installed",
    "install_handler",
    "remove_handler",
    "tf_default_handlers",
]

_TF_LOGGER = "tensorflow"


def _is_retrace_warning(record: logging.LogRecord) -> str | None:
    """The message of a TensorFlow retracing warning, or None."""
    if record.levelno != logging.WARNING:
        return None
    try:
        message = record.getMessage()
    except Exception:
        return None
    return message if "retracing" in message else None


class _QuietDefault(logging.Filter):
    """On TensorFlow's default handler: drops the retracing warnings (the report quotes them)."""

    def filter(self, record: logging.LogRecord) -> bool:
        return _is_retrace_warning(record) is None


class RetraceWarningHandler(logging.Filter):
    """A filter on TensorFlow's logger: appends the text of every retracing warning to ``sink``
    and passes every record on (to the user's handlers); ``quiet`` is on TF's default handler."""

    def __init__(self, sink: list[str]) -> None:
        super().__init__()
        self.sink = sink
        self.quiet = _QuietDefault()
        self.quieted: list[logging.Handler] = []

    def filter(self, record: logging.LogRecord) -> bool:
        message = _is_retrace_warning(record)
        if message is not None:
            self.sink.append(message)
        return True


def tf_default_handlers(logger: logging.Logger) -> list[logging.Handler]:
    """The handlers on ``logger`` that ``tf.get_logger()`` added itself (none when the root
    logger had a handler when TensorFlow first asked for its logger)."""
    return [
        h
        for h in logger.handlers
        if type(h) is logging.StreamHandler
        and h.formatter is not None
        and h.formatter._fmt == logging.BASIC_FORMAT
    ]


def install_handler(sink: list[str]) -> RetraceWarningHandler:
    logger = logging.getLogger(_TF_LOGGER)
    handler = RetraceWarningHandler(sink)
    logger.addFilter(handler)
    for default in tf_default_handlers(logger):
        default.addFilter(handler.quiet)
        handler.quieted.append(default)
    return handler


def remove_handler(handler: RetraceWarningHandler) -> None:
    logging.getLogger(_TF_LOGGER).removeFilter(handler)
    for default in handler.quieted:
        default.removeFilter(handler.quiet)
    handler.quieted = []


def handler_installed() -> bool:
    """True while any of our filters is on TensorFlow's logger."""
    return any(isinstance(f, RetraceWarningHandler) for f in logging.getLogger(_TF_LOGGER).filters)
