"""Installing the project keeps the TensorFlow that is there, and the README's command brings one.

Every TensorFlow wheel (``tensorflow``, ``tensorflow-cpu``, ``tf-nightly``, ...) ships the same
``tensorflow`` import package, so installing a second one over Colab's, Kaggle's or a GPU
machine's build overwrites it. Rules checked here:

- only the ``tf`` extra names a TensorFlow distribution (static, from pyproject.toml);
- the README's set-up command names that extra (a fresh machine ends with TensorFlow) and CI
  installs with the same extras;
- ``pip install --dry-run --report`` of the project over an environment that already holds a
  TensorFlow distribution installs none and leaves the one there alone.

The fast tests are offline: the environment is a stand-in holding only metadata (the
``.dist-info`` of every distribution of this test environment, TensorFlow's swapped for a
stand-in), the project is a metadata-only wheel made from pyproject.toml, and a local folder of
metadata-only TensorFlow wheels plays the package index, so pip *could* pick one. The slow tests
(``CI=true`` or ``TFGL_INSTALL_TEST=1``) let pip build the real project and resolve from the
package index, over the real TensorFlow of this environment and over a stand-in ``tensorflow``.
"""

from __future__ import annotations

import base64
import hashlib
import json
import os
import re
import subprocess
import sys
import sysconfig
import zipfile
from importlib import metadata
from pathlib import Path

import pytest
from packaging.requirements import Requirement
from packaging.utils import canonicalize_name

tomllib = pytest.importorskip("tomllib")  # Python 3.11+

ROOT = Path(__file__).resolve().parents[2]
IN_CI = os.environ.get("CI", "").lower() == "true"
SLOW_WANTED = IN_CI or os.environ.get("TFGL_INSTALL_TEST") == "1"
PROJECT = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]
TF_EXTRA = "tf"
_TF_NAMES = {
    "tensorflow",
    "tensorflow-cpu",
    "tensorflow-gpu",
    "tensorflow-macos",
    "tensorflow-intel",
    "tensorflow-aarch64",
    "tensorflow-cpu-aws",
    "tensorflow-rocm",
    "intel-tensorflow",
}


def is_tensorflow(name: str) -> bool:
    """A distribution that ships the ``tensorflow`` import package (not tensorflow-io & co)."""
    name = canonicalize_name(name)
    return name in _TF_NAMES or name.startswith("tf-nightly")


def test_tensorflow_names() -> None:
    for name in ["tensorflow", "TensorFlow_CPU", "tf-nightly", "tf_nightly_cpu", "tensorflow-macos"]:
        assert is_tensorflow(name), name
    for name in ["tensorflow-io-gcs-filesystem", "tensorboard", "keras", "tf-keras", "tfgraph-lab"]:
        assert not is_tensorflow(name), name


# --------------------------------------------------------------------------------------------
# Static: what pyproject.toml, the README and CI say


def _extras_named(requirement: Requirement) -> set[str]:
    """Extras of this project that a self-reference (``tfgraph-lab[tf]``) pulls in."""
    if canonicalize_name(requirement.name) == canonicalize_name(PROJECT["name"]):
        return {canonicalize_name(e) for e in requirement.extras}
    return set()


def test_only_the_tf_extra_names_a_tensorflow_distribution() -> None:
    groups = {"(dependencies)": PROJECT["dependencies"], **PROJECT["optional-dependencies"]}
    for group, specs in groups.items():
        for spec in specs:
            req = Requirement(spec)
            if group == TF_EXTRA:
                assert is_tensorflow(req.name), f"the {TF_EXTRA} extra holds only TensorFlow: {spec}"
                continue
            assert not is_tensorflow(req.name), f"{group} installs TensorFlow: {spec}"
            assert TF_EXTRA not in _extras_named(req), f"{group} pulls in the {TF_EXTRA} extra: {spec}"
    tf_specs = [Requirement(s) for s in PROJECT["optional-dependencies"][TF_EXTRA]]
    for env in (
        {"platform_machine": "x86_64", "sys_platform": "linux"},
        {"platform_machine": "AMD64", "sys_platform": "win32"},
        {"platform_machine": "arm64", "sys_platform": "darwin"},
        {"platform_machine": "aarch64", "sys_platform": "linux"},
    ):
        chosen = [r for r in tf_specs if r.marker is None or r.marker.evaluate({**env, "extra": TF_EXTRA})]
        assert len(chosen) == 1, f"{env}: the tf extra should pick exactly one TensorFlow, got {chosen}"
        assert chosen[0].specifier.contains("2.15.0") and not chosen[0].specifier.contains("2.14.0")


def _readme_command(then: str) -> re.Match[str]:
    """The README's ``python -m pip install -e ".[…]" && THEN`` command."""
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    match = re.search(r'python -m pip install -e "\.\[([a-z0-9,_-]+)\]" && ' + re.escape(then), readme)
    assert match, f'the README should hold the command python -m pip install -e ".[…]" && {then}'
    return match


def readme_install_extras() -> set[str]:
    """The extras of the README's first command, the one that runs the demo."""
    return {canonicalize_name(e) for e in _readme_command("tfgraph-lab demo").group(1).split(",")}


def test_readme_commands_bring_tensorflow_and_ci_runs_the_test_command() -> None:
    """Command 1 installs only what the demo needs; command 2 adds the test extras and CI runs it."""
    assert readme_install_extras() == {TF_EXTRA}, "the demo needs TensorFlow, not the test extras"
    test_command = _readme_command("python -m pytest")
    assert {canonicalize_name(e) for e in test_command.group(1).split(",")} == {TF_EXTRA, "test"}
    ci = (ROOT / ".ci" / "run").read_text(encoding="utf-8")
    assert test_command.group(0) in ci.splitlines(), f".ci/run should run {test_command.group(0)!r}"
    match = re.search(r'pip install -q -e "\.\[([a-z0-9,_-]+)\]"', ci)
    assert match and {canonicalize_name(e) for e in match.group(1).split(",")} == {TF_EXTRA, "test"}


# --------------------------------------------------------------------------------------------
# Offline dry runs over a metadata-only stand-in environment


def _record_line(name: str, data: bytes) -> str:
    digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
    return f"{name},sha256={digest},{len(data)}"


def metadata_wheel(folder: Path, name: str, version: str, metadata_text: str) -> Path:
    """A wheel holding only its .dist-info: enough for pip to resolve (and install) it."""
    dist = canonicalize_name(name).replace("-", "_")
    info = f"{dist}-{version}.dist-info"
    files = {
        f"{info}/METADATA": metadata_text.encode(),
        f"{info}/WHEEL": b"Wheel-Version: 1.0\nGenerator: tfgraph-lab-tests\nRoot-Is-Purelib: true\nTag: py3-none-any\n",
    }
    record = "\n".join(_record_line(n, d) for n, d in files.items()) + f"\n{info}/RECORD,,\n"
    path = folder / f"{dist}-{version}-py3-none-any.whl"
    with zipfile.ZipFile(path, "w") as zf:
        for n, d in files.items():
            zf.writestr(n, d)
        zf.writestr(f"{info}/RECORD", record)
    return path


def project_metadata() -> str:
    """Core metadata of this project as a build backend writes it from pyproject.toml."""
    lines = [
        "Metadata-Version: 2.1",
        f"Name: {PROJECT['name']}",
        f"Version: {PROJECT['version']}",
        f"Requires-Python: {PROJECT['requires-python']}",
    ]
    lines += [f"Requires-Dist: {spec}" for spec in PROJECT["dependencies"]]
    for extra, specs in PROJECT["optional-dependencies"].items():
        lines.append(f"Provides-Extra: {extra}")
        for spec in specs:
            req = Requirement(spec)
            marker = f'({req.marker}) and extra == "{extra}"' if req.marker else f'extra == "{extra}"'
            req.marker = None
            lines.append(f"Requires-Dist: {req}; {marker}")
    return "\n".join(lines) + "\n"


def bare_venv(root: Path) -> tuple[Path, str]:
    """A new virtual environment without pip at ``root``: its Python and its site-packages."""
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(root)], check=True)
    python = root / ("Scripts/python.exe" if os.name == "nt" else "bin/python")
    purelib = subprocess.run(
        [str(python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout.strip()
    return python, purelib


def stand_in_environment(root: Path, held: dict[str, str]) -> Path:
    """A virtual environment that pip sees holding every distribution of this test environment
    except TensorFlow's and this project (metadata only, no code), plus the ``held`` TensorFlow
    distributions (metadata only). Returns its Python."""
    python, purelib = bare_venv(root)
    site = Path(purelib)
    seen: set[str] = set()
    for dist in metadata.distributions():
        name = canonicalize_name(dist.metadata["Name"])
        if name in seen or is_tensorflow(name) or name == canonicalize_name(PROJECT["name"]):
            continue
        seen.add(name)
        text = dist.read_text("METADATA") or f"Metadata-Version: 2.1\nName: {name}\nVersion: {dist.version}\n"
        _write_dist_info(site, dist.metadata["Name"], dist.version, text)
    for name, version in held.items():
        _write_dist_info(site, name, version, f"Metadata-Version: 2.1\nName: {name}\nVersion: {version}\n")
    return python


def _write_dist_info(site: Path, name: str, version: str, text: str) -> None:
    info = site / f"{canonicalize_name(name).replace('-', '_')}-{version}.dist-info"
    info.mkdir(parents=True, exist_ok=True)
    (info / "METADATA").write_text(text, encoding="utf-8")
    (info / "INSTALLER").write_text("pip\n", encoding="utf-8")


# One resolution's limit, below pytest's 600 s; the tests that resolve from the index several
# times raise their own pytest limit above their calls' sum (timeout marks below).
PIP_SECONDS = 500


def pip_dry_run(python: Path, targets: list[str], report: Path, *options: str) -> dict[str, str]:
    """``{name: version}`` that ``pip install`` would install into ``python``'s environment."""
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "pip",
            "--python",
            str(python),
            "--disable-pip-version-check",
            "install",
            "--dry-run",
            "--quiet",
            "--report",
            str(report),
            *options,
            *targets,
        ],
        capture_output=True,
        text=True,
        timeout=PIP_SECONDS,
        check=False,
        cwd=report.parent,
        env=_pip_env(),
    )
    assert done.returncode == 0, done.stderr[-4000:]
    return {
        canonicalize_name(item["metadata"]["name"]): item["metadata"]["version"]
        for item in json.loads(report.read_text(encoding="utf-8"))["install"]
    }


def _pip_env() -> dict[str, str]:
    """No PYTHONPATH: the environment pip looks at is the target's alone."""
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "PIP_CONSTRAINT")}
    return {**env, "PIP_NO_INPUT": "1"}


def installed_tensorflow(python: Path) -> dict[str, str]:
    out = subprocess.run(
        [sys.executable, "-m", "pip", "--python", str(python), "list", "--format=json"],
        capture_output=True,
        text=True,
        check=True,
        env=_pip_env(),
    ).stdout
    return {canonicalize_name(d["name"]): d["version"] for d in json.loads(out) if is_tensorflow(d["name"])}


@pytest.fixture(scope="module")
def offline_index(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    """A folder of wheels pip may choose from: the project (metadata made from pyproject.toml)
    and metadata-only ``tensorflow-cpu`` and ``tensorflow`` wheels, as on the package index."""
    wheels = tmp_path_factory.mktemp("wheels")
    project = metadata_wheel(wheels, PROJECT["name"], PROJECT["version"], project_metadata())
    for name in ("tensorflow-cpu", "tensorflow"):
        metadata_wheel(wheels, name, "2.21.0", f"Metadata-Version: 2.1\nName: {name}\nVersion: 2.21.0\n")
    return wheels, project


def _extras(extras: set[str]) -> str:
    return "[" + ",".join(sorted(extras)) + "]"


@pytest.mark.slow
@pytest.mark.skipif(sys.platform != "linux", reason="stand-in paths are those of a Linux venv")
@pytest.mark.parametrize(
    ("held", "extras"),
    [
        ({"tensorflow": "2.21.0"}, set()),  # Colab, a GPU box: `pip install tfgraph-lab`
        ({"tensorflow": "2.21.0"}, {"test"}),
        ({"tensorflow-cpu": "2.15.1"}, {"test"}),  # the oldest supported, must not be upgraded
        ({"tf-nightly": "2.22.0.dev20260101"}, set()),
    ],
)
def test_install_over_a_tensorflow_adds_none(
    tmp_path: Path, offline_index: tuple[Path, Path], held: dict[str, str], extras: set[str]
) -> None:
    wheels, project = offline_index
    python = stand_in_environment(tmp_path / "env", held)
    assert installed_tensorflow(python) == held
    target = str(project) + (_extras(extras) if extras else "")
    installs = pip_dry_run(python, [target], tmp_path / "r.json", "--no-index", "--find-links", str(wheels))
    assert canonicalize_name(PROJECT["name"]) in installs
    assert not [n for n in installs if is_tensorflow(n)], f"pip would install {installs} over {held}"


@pytest.mark.slow
@pytest.mark.skipif(
    not (sys.platform == "linux" and os.uname().machine == "x86_64"), reason="expects Linux x86-64's wheel"
)
def test_readme_command_on_a_machine_without_tensorflow_installs_one(
    tmp_path: Path, offline_index: tuple[Path, Path]
) -> None:
    """The check above can fail: with the README's extras, pip picks the CPU wheel."""
    wheels, project = offline_index
    python = stand_in_environment(tmp_path / "env", {})
    assert installed_tensorflow(python) == {}
    target = str(project) + _extras(readme_install_extras())
    installs = pip_dry_run(python, [target], tmp_path / "r.json", "--no-index", "--find-links", str(wheels))
    assert [n for n in installs if is_tensorflow(n)] == ["tensorflow-cpu"]


# --------------------------------------------------------------------------------------------
# Real builds and the real package index (slow: CI)

_NETWORK_ERRORS = ("NewConnectionError", "Max retries exceeded", "Temporary failure in name resolution")


def _wanted() -> None:
    if not SLOW_WANTED:
        pytest.skip("builds the project and resolves from the package index: CI=true or TFGL_INSTALL_TEST=1")


@pytest.mark.slow
@pytest.mark.timeout(PIP_SECONDS + 300)
def test_real_project_over_this_environments_real_tensorflow_adds_none(tmp_path: Path) -> None:
    """This environment holds a real TensorFlow distribution with its real requirements."""
    _wanted()
    here = Path(sys.executable)
    held = installed_tensorflow(here)
    if not held:
        pytest.skip("no TensorFlow distribution installed here")
    installs = pip_dry_run(here, ["-e", f"{ROOT}[test]"], tmp_path / "r.json")
    assert not [n for n in installs if is_tensorflow(n)], f"pip would install {installs} over {held}"
    assert installed_tensorflow(here) == held


@pytest.mark.slow
@pytest.mark.timeout(4 * PIP_SECONDS)  # up to three resolutions from the index
@pytest.mark.skipif(sys.platform != "linux", reason="stand-in paths are those of a Linux venv")
def test_real_project_from_the_index_over_a_stand_in_tensorflow_adds_none(tmp_path: Path) -> None:
    """The Colab case, resolved for real: a fresh environment holding only ``tensorflow``."""
    _wanted()
    python, purelib = bare_venv(tmp_path / "env")
    _write_dist_info(
        Path(purelib), "tensorflow", "2.21.0", "Metadata-Version: 2.1\nName: tensorflow\nVersion: 2.21.0\n"
    )
    for extras in ("", "[test]"):
        installs = pip_dry_run(python, ["-e", f"{ROOT}{extras}"], tmp_path / "r.json")
        assert "ipython" in installs and "ipywidgets" in installs
        assert not [n for n in installs if is_tensorflow(n)], f"{extras}: pip would install {installs}"
    # and the README's command on a machine without TensorFlow brings one
    if sysconfig.get_platform() == "linux-x86_64":
        subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(tmp_path / "fresh")], check=True)
        fresh = tmp_path / "fresh" / "bin" / "python"
        installs = pip_dry_run(
            fresh, ["-e", f"{ROOT}{_extras(readme_install_extras())}"], tmp_path / "f.json"
        )
        assert [n for n in installs if is_tensorflow(n)] == ["tensorflow-cpu"], installs
