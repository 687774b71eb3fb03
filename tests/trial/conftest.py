"""The ``trials`` fixture shared by the ``--try-fix`` tests: the trials the magic shows, as objects."""

from __future__ import annotations

from typing import Any

import pytest

from tfgraph_lab.report.fix_trial import FixTrial
from tfgraph_lab.trial import tryfix


@pytest.fixture
def trials(monkeypatch: pytest.MonkeyPatch) -> list[FixTrial]:
    """The trials the magic shows, as objects (``try_fix`` wrapped to keep each it returns)."""
    seen: list[FixTrial] = []
    original = tryfix.try_fix

    def recording(*args: Any, **kwargs: Any) -> FixTrial:
        trial = original(*args, **kwargs)
        seen.append(trial)
        return trial

    monkeypatch.setattr(tryfix, "try_fix", recording)
    return seen
