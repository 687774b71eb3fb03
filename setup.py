"""Everything is in pyproject.toml but one file: ``tfgraph_lab.pth``, which must land in
site-packages itself (not inside the package) for Python's ``site`` to run its line at start-up:
the ``TFGRAPH_LAB=watch`` switch (``tfgraph_lab/faces/env_switch.py``). Unset, the line only
reads ``os.environ``. A wheel gets it at its root (beside the package); an editable install
(``pip install -e .``, PEP 660) gets it at the root of the editable wheel, where setuptools puts
what ``install_lib`` installs. ``tests/project/test_env_switch_install.py`` checks both."""

from __future__ import annotations

from pathlib import Path

from setuptools import setup
from setuptools.command.build_py import build_py

PTH = "tfgraph_lab.pth"


class build_py_with_pth(build_py):
    """``build_py``, plus ``tfgraph_lab.pth`` at the root of what gets installed."""

    def run(self) -> None:
        super().run()
        if getattr(self, "editable_mode", False):
            # setuptools >= 64 builds an editable wheel from install_lib's folder, while build_lib
            # is a scratch folder whose files outside the packages are dropped (setuptools 84.2.1).
            root = self.get_finalized_command("install").install_lib
        else:
            root = self.build_lib
        self.copy_file(str(Path(__file__).with_name(PTH)), str(Path(root, PTH)), preserve_mode=False)

    def get_outputs(self, include_bytecode: bool = True) -> list[str]:
        outputs = list(super().get_outputs(include_bytecode))
        if not getattr(self, "editable_mode", False):
            outputs.append(str(Path(self.build_lib, PTH)))
        return outputs


setup(cmdclass={"build_py": build_py_with_pth})
