"""``python -m tfgraph_lab`` is ``tfgraph-lab``."""

from __future__ import annotations

import sys

from .faces.cli import main

if __name__ == "__main__":
    sys.exit(main())
