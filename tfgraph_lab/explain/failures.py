"""TensorFlow's error text: the one parser of it, and the one matcher of errors to known fixes.

:func:`error_text` turns any exception into one ``Type: message`` line; :func:`failure_kind`
recognises the failures a learner can fix; :func:`explain_failure` turns a failed trace's error
into a reason with the fix. Pure: imports neither TensorFlow nor IPython.
"""

from __future__ import annotations

from ..model.records import Reason
from ..model.signatures import stable_text
from ..model.vocab import ReasonCode

__all__ = [
    "SAVED_SIGNATURE",
    "VARIABLE_PER_TRACE",
    "WRONG_INPUTS",
    "error_text",
    "explain_failure",
    "failure_kind",
]

#: A tf.Variable created in the traced body: the second trace fails.
VARIABLE_PER_TRACE = "variable-per-trace"
#: Arguments that do not bind to the function's parameters or its input_signature (before any trace).
WRONG_INPUTS = "wrong-inputs"

#: A function restored from a SavedModel called with arguments none of its saved graphs takes.
SAVED_SIGNATURE = ReasonCode.SAVED_SIGNATURE_MISMATCH

_BINDING = "Binding inputs to tf.function failed"
# TF 2.15-2.21's first line; its last ("Keyword arguments: {}") says nothing
_NO_SAVED_GRAPH = "Could not find matching concrete function to call loaded from the SavedModel"
_EVERY_TRACE = "creates a tf.Variable on every trace"


def error_text(exc: BaseException, limit: int = 300) -> str:
    """``Type: message`` on one line, at most ``limit`` characters.

    TF puts its own sentence last when it folds user-code frames into a message, so the last
    line (or the last one that starts with ``Type:``) is the message. Binding errors (TF 2.15-2.21:
    "Binding inputs to tf.function failed due to `…`. Received args: …") keep the cause and drop
    the repr of the arguments received.
    """
    name = type(exc).__name__
    try:
        said = str(exc)
    except Exception:  # a user exception whose __str__ raises: its type is all there is to say
        said = ""
    lines = [line.strip() for line in said.splitlines() if line.strip()]
    message = lines[-1] if lines else ""
    for line in reversed(lines):
        if line.startswith(name + ":"):
            message = line[len(name) + 1 :].strip()
            break
    if lines and lines[0].startswith(_BINDING):
        message = lines[0].split(". Received args")[0]
    if lines and lines[0].startswith(_NO_SAVED_GRAPH):
        got = [line[2:] for line in lines if line.startswith("* <")]
        saved = [line[2:] for line in lines if line.startswith("* ") and not line.startswith("* <")]
        message = f"{_NO_SAVED_GRAPH}: got {', '.join(got) or '?'}; saved for {'; '.join(saved) or '?'}"
    text = stable_text(f"{name}: {message}" if message else name)  # no 0x… addresses
    return text if len(text) <= limit else text[: limit - 1] + "…"


def failure_kind(error: str) -> str | None:
    """:data:`VARIABLE_PER_TRACE`, :data:`WRONG_INPUTS` or None, from an error's text."""
    if "singleton tf.Variables" in error or "Creating variables on a non-first call" in error:
        return VARIABLE_PER_TRACE
    if _BINDING in error:
        return WRONG_INPUTS
    if _NO_SAVED_GRAPH in error:
        return SAVED_SIGNATURE
    return None


def explain_failure(error: str, qualname: str = "") -> list[Reason]:
    """Reasons for a trace that failed, from TensorFlow's error text."""
    name = qualname or "the function"
    if failure_kind(error) == VARIABLE_PER_TRACE:
        return [
            Reason(
                ReasonCode.VARIABLE_CREATION,
                message=f"{name} {_EVERY_TRACE}; TensorFlow allows variables only on the first "
                "call, so the second trace failed",
                fix="create the variable once, outside the function — in __init__ of a tf.Module "
                "or Keras layer (or `if self.v is None:` lazy creation), and only read/assign it "
                "inside",
            )
        ]
    if failure_kind(error) == SAVED_SIGNATURE:
        return [
            Reason(
                SAVED_SIGNATURE,
                message=f"{name} was restored from a SavedModel, which keeps only the graphs traced "
                "before saving; none takes these arguments (a new shape or dtype), and a restored "
                "function cannot trace a new graph",
                fix="export it with an input_signature covering the calls, the varying dimensions "
                "as None: @tf.function(input_signature=[tf.TensorSpec([None], tf.float32)]) on the "
                "method before tf.saved_model.save, then one saved graph serves every size; or call "
                "it with the shapes it was saved with",
            )
        ]
    return []
