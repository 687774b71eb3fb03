"""The tool's own frames, kept out of the stacks TensorFlow records for the user's ops.

Under ``tfgraph-lab run`` the user's script runs below the console script, the CLI, the watch's
lifecycle and runpy; the call hook sits between the script and TensorFlow. TensorFlow records a
stack for every op it creates and prints it in its errors ("defined at (most recent call
last)"), so those frames would show there, where ``python SCRIPT`` shows the script's alone.
(The Python traceback the CLI prints is trimmed by ``_pycode.script_traceback``.) Reaches
TensorFlow only through :mod:`tfgraph_lab.adapter`; imports no IPython.
"""

from __future__ import annotations

import os
import runpy
import traceback
from typing import Any

from .. import adapter as tfa

__all__ = ["tool_frames_hidden"]


def tool_frames_hidden() -> Any:
    """A context manager entered where the script starts, on the thread that runs it: the
    stacks TensorFlow records for the script's ops leave out this package's files, runpy and
    the frames that called this (the console script, the CLI)."""
    package = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))  # tfgraph_lab/
    ours = {
        os.path.join(folder, name)
        for folder, _, names in os.walk(package)
        for name in names
        if name.endswith(".py")
    }
    launcher = {frame.filename for frame in traceback.extract_stack()}
    return tfa.frames_hidden(ours | launcher | {"<frozen runpy>", runpy.__file__})
