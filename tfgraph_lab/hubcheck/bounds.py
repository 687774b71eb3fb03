"""How many learners one workshop check makes: the bound its parser states and ``run_check`` keeps.

A module of its own so that the command's parser (loaded for ``tfgraph-lab --help``) and the
load it starts (``requests``, ``websocket``) read one figure without importing each other.
"""

from __future__ import annotations

__all__ = ["MAX_LEARNERS", "UNASKED_LEARNERS"]

#: More learners than this make that many users on the teacher's hub only with --yes.
UNASKED_LEARNERS = 100
#: The most learners one check makes (a user, a token, a server and a thread each; run_check
#: refuses more too): 10**12 ended in a MemoryError making their names.
MAX_LEARNERS = 2000
