"""The sample project is a test suite of its own, run by tests/faces/test_pytest_plugin.py through
pytester: never collected as part of this one."""

collect_ignore = ["pytest_sample_project"]
