"""TensorFlow's error text: the one parser of it, and the one matcher of errors to known fixes.

TF folds the traceback of user code into an exception's message ("in user code: … File …") and
puts its own sentence last. :func:`error_text` turns any exception into one ``Type: message``
line; :func:`explain_failure` recognises the failures a learner can fix and says how. Pure:
imports neither TensorFlow nor IPython.
"""

from __future__ import annotations

__all__ = ["error_text"]


def error_text(exc: BaseException, limit: int = 300) -> str:
    """``Type: message`` on one line. TF's "in user code:" errors put the real message last."""
    lines = [line.strip() for line in str(exc).splitlines() if line.strip()]
    message = lines[-1] if lines else ""
    name = type(exc).__name__
    if message.startswith(name + ":"):
        message = message[len(name) + 1 :].strip()
    text = f"{name}: {message}" if message else name
    return text if len(text) <= limit else text[: limit - 1] + "…"
