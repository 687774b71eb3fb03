"""Run a cell under ``%%tracewatch --try-fix`` and take the one trial it showed (shared by the trial tests)."""

from __future__ import annotations

from typing import Any

import tensorflow as tf

from tfgraph_lab.report.fix_trial import FixTrial
from tfgraph_lab.watching.recorder import is_patched


def try_cell(shell: Any, trials: list[FixTrial], cell: str, flags: str = "-q --try-fix") -> FixTrial:
    """The trial the magic showed for ``cell``; TensorFlow is left as it was."""
    tf_function = tf.function
    result = shell.run_cell(f"%%tracewatch {flags}\n{cell}")
    assert result.success, result.error_in_exec
    assert not is_patched()
    assert tf.function is tf_function, "tf.function was left replaced"
    assert len(trials) == 1, "the magic showed no trial"
    return trials.pop()
