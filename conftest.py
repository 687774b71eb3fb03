"""pytest set-up for the whole checkout (tests/conftest.py holds the tests' fixtures).

The lesson notebooks, which nbval runs cell by cell in a kernel each, belong to the full run
(`python -m pytest`), not to the fast tier (`-m "not slow and not browser"`): ten kernels running
TensorFlow take minutes.
"""

from __future__ import annotations

import pytest

pytest_plugins = ["pytester"]  # tests/faces/test_pytest_plugin.py runs the plugin in a pytest of its own


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    for item in items:
        if item.path.suffix == ".ipynb":
            item.add_marker(pytest.mark.slow)
