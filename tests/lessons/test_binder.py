"""The Binder configuration in binder/: the rules of repo2docker that bite, checked offline.

- only pinned third-party packages in requirements.txt (installed before the repository is
  copied, a cached image layer); the project is installed by postBuild;
- runtime.txt reads exactly ``python-3.11``; nothing in binder/ that silently overrides them;
- postBuild and start are executable, start ends with ``exec "$@"``;
- repo2docker's own detection (``--no-build``) yields a Dockerfile in that order;
- pip resolves the pins; and the pins are the versions CI tests with (``TFGL_CHECK_PINS=1`` or
  ``CI=true``).
"""

from __future__ import annotations

import importlib.util
import os
import re
import shutil
import subprocess
import sys
from importlib import metadata
from pathlib import Path

import pytest
from packaging.requirements import Requirement
from packaging.utils import canonicalize_name

ROOT = Path(__file__).resolve().parents[2]
BINDER = ROOT / "binder"
IN_CI = os.environ.get("CI", "").lower() == "true"
CHECK_PINS = IN_CI or os.environ.get("TFGL_CHECK_PINS") == "1"

# Files that make repo2docker ignore requirements.txt/runtime.txt (or all of binder/).
OVERRIDING_FILES = ["environment.yml", "Dockerfile", "default.nix", "Pipfile", "Pipfile.lock", "setup.py"]
PIN = re.compile(r"^(?P<name>[A-Za-z0-9][A-Za-z0-9._-]*)==(?P<version>[A-Za-z0-9.+!-]+)$")


def parse_pins(text: str) -> dict[str, str]:
    """``{canonical name: version}`` of a requirements text that must hold only ``NAME==VERSION``
    lines (and comments). Raises ValueError naming the first other line."""
    pins: dict[str, str] = {}
    for number, raw in enumerate(text.splitlines(), 1):
        line = raw.split("#", 1)[0].strip()
        if not line:
            continue
        match = PIN.match(line)
        if match is None:
            raise ValueError(f"line {number} {raw!r} is not a NAME==VERSION pin")
        name = canonicalize_name(match["name"])
        if name in pins:
            raise ValueError(f"line {number}: {name} pinned twice")
        pins[name] = match["version"]
    return pins


def binder_pins() -> dict[str, str]:
    return parse_pins((BINDER / "requirements.txt").read_text(encoding="utf-8"))


# --------------------------------------------------------------------------------------------
# Static rules


@pytest.mark.parametrize(
    "line",
    [
        ".",
        "-e .",
        "-e git+https://github.com/o/r#egg=r",
        "-r other.txt",
        "tensorflow-cpu>=2.15",
        "tensorflow-cpu",
        "https://files.example.org/x.whl",
        "ipywidgets==8.*",
        "--index-url https://x",
    ],
)
def test_parse_pins_rejects_unpinned_lines(line: str) -> None:
    with pytest.raises(ValueError, match="not a NAME==VERSION pin"):
        parse_pins(f"ipython==9.0.0\n{line}\n")


def test_parse_pins_reads_pins_and_comments() -> None:
    text = "# heavy deps\nTensorflow_CPU==2.21.0  # CPU wheel\n\nipywidgets==8.1.9\n"
    assert parse_pins(text) == {"tensorflow-cpu": "2.21.0", "ipywidgets": "8.1.9"}
    with pytest.raises(ValueError, match="twice"):
        parse_pins("a==1\nA==2\n")


def test_requirements_are_pins_of_the_heavy_dependencies() -> None:
    pins = binder_pins()  # raises on any '.', '-e', range or URL line
    for needed in ["tensorflow-cpu", "ipython", "ipywidgets", "jupyterlab", "voila", "nbgitpuller"]:
        assert needed in pins, f"binder/requirements.txt should pin {needed}"
    assert canonicalize_name("tfgraph-lab") not in pins, "the project is installed by postBuild"


def test_pins_satisfy_the_project_dependencies() -> None:
    """A pin outside pyproject's own ranges would make postBuild's --no-deps install broken.
    TensorFlow is the ``tf`` extra's (the project installs none by default): Binder pins it."""
    tomllib = pytest.importorskip("tomllib")
    project = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    pins = binder_pins()
    binder_env = {
        "platform_machine": "x86_64",
        "sys_platform": "linux",
        "python_version": "3.11",
        "extra": "tf",
    }
    checked = 0
    for spec in [*project["dependencies"], *project["optional-dependencies"]["tf"]]:
        req = Requirement(spec)
        if req.marker is not None and not req.marker.evaluate(binder_env):
            continue
        name = canonicalize_name(req.name)
        assert name in pins, f"{req.name} (a dependency on Binder's Linux x86-64) is not pinned in binder/"
        assert req.specifier.contains(pins[name], prereleases=True), f"{name}=={pins[name]} violates {spec}"
        checked += 1
    assert checked >= 3


def test_runtime_is_exactly_python_311() -> None:
    assert (BINDER / "runtime.txt").read_text(encoding="utf-8").strip() == "python-3.11"


@pytest.mark.parametrize("name", OVERRIDING_FILES)
def test_nothing_overrides_requirements(name: str) -> None:
    assert not (BINDER / name).exists(), f"binder/{name} makes repo2docker ignore requirements.txt"


def _git_mode(path: Path) -> str | None:
    git = shutil.which("git")
    if git is None or not (ROOT / ".git").exists():
        return None
    out = subprocess.run(
        [git, "ls-files", "-s", "--", str(path.relative_to(ROOT))],
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=False,
    ).stdout
    return out.split()[0] if out.strip() else None


@pytest.mark.parametrize("name", ["postBuild", "start"])
def test_scripts_executable_bash(name: str) -> None:
    script = BINDER / name
    assert os.access(script, os.X_OK), f"binder/{name} is not executable"
    mode = _git_mode(script)
    if mode is not None:
        assert mode == "100755", f"binder/{name} is not executable in git (git update-index --chmod=+x)"
    text = script.read_text(encoding="utf-8")
    assert text.startswith("#!/bin/bash\n")
    subprocess.run(["bash", "-n", str(script)], check=True)


def test_postbuild_installs_project_without_deps_and_smoke_tests() -> None:
    text = (BINDER / "postBuild").read_text(encoding="utf-8")
    assert "set -euo pipefail" in text
    assert re.search(r"^python -m pip install .*--no-deps \.$", text, re.MULTILINE)
    assert "import tfgraph_lab" in text and "import tensorflow" in text


def test_postbuild_lets_voila_show_expected_errors(tmp_path: Path) -> None:
    """The config postBuild writes is valid JSON that turns Voila's tracebacks on."""
    import json

    text = (BINDER / "postBuild").read_text(encoding="utf-8")
    match = re.search(r"<<'JSON'\n(.*?)\nJSON\n", text, re.DOTALL)
    assert match, "postBuild should write the server config with a quoted here-document"
    assert json.loads(match.group(1)) == {"VoilaConfiguration": {"show_tracebacks": True}}
    assert '"${HOME}/.jupyter/jupyter_server_config.json"' in text


def _last_command(text: str) -> str:
    lines = [ln.strip() for ln in text.splitlines() if ln.strip() and not ln.strip().startswith("#")]
    return lines[-1]


def test_start_ends_with_exec() -> None:
    assert _last_command((BINDER / "start").read_text(encoding="utf-8")) == 'exec "$@"'


def test_start_sets_quiet_small_tensorflow_and_passes_through() -> None:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("TF_", "OMP_"))}
    out = subprocess.run(
        [str(BINDER / "start"), "env"], env=env, capture_output=True, text=True, check=True
    ).stdout
    seen = dict(line.split("=", 1) for line in out.splitlines() if "=" in line)
    assert seen["TF_CPP_MIN_LOG_LEVEL"] == "2"
    assert seen["TF_ENABLE_ONEDNN_OPTS"] == "0"
    for name in ["TF_NUM_INTEROP_THREADS", "TF_NUM_INTRAOP_THREADS", "OMP_NUM_THREADS"]:
        assert 1 <= int(seen[name]) <= 4
    # A value the user (or the hub) already set wins; the command's status passes through.
    env["TF_CPP_MIN_LOG_LEVEL"] = "0"
    done = subprocess.run(
        [str(BINDER / "start"), "sh", "-c", 'echo "$TF_CPP_MIN_LOG_LEVEL"; exit 7'],
        env=env,
        capture_output=True,
        text=True,
        check=False,
    )
    assert (done.returncode, done.stdout.strip()) == (7, "0")


# --------------------------------------------------------------------------------------------
# The pins are what CI tests with


@pytest.mark.skipif(not CHECK_PINS, reason="pin-drift check runs in CI (CI=true) or with TFGL_CHECK_PINS=1")
@pytest.mark.parametrize("name", sorted(binder_pins()))
def test_installed_versions_equal_binder_pins(name: str) -> None:
    pinned = binder_pins()[name]
    try:
        installed = metadata.version(name)
    except metadata.PackageNotFoundError:
        pytest.fail(f"{name} is pinned in binder/requirements.txt but not installed where tests run")
    assert installed == pinned, (
        f"{name}: tests run with {installed}, Binder installs {pinned}; update binder/requirements.txt "
        "or the CI environment so they agree"
    )


# --------------------------------------------------------------------------------------------
# repo2docker's own view


def _repo2docker_cmd() -> list[str] | None:
    if importlib.util.find_spec("repo2docker") is not None:
        return [sys.executable, "-m", "repo2docker"]
    exe = shutil.which("repo2docker")
    return [exe] if exe else None


def repo2docker_dockerfile(repo: Path) -> tuple[str, str]:
    cmd = _repo2docker_cmd()
    if cmd is None:
        if IN_CI:
            pytest.fail("repo2docker is not installed (pip install jupyter-repo2docker)")
        pytest.skip("repo2docker is not installed (pip install jupyter-repo2docker)")
    done = subprocess.run(
        [*cmd, "--no-build", "--user-id", "1000", "--user-name", "jovyan", str(repo)],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    return done.stdout, done.stderr


def dockerfile_problems(dockerfile: str) -> list[str]:
    """What is wrong with the order of a repo2docker Dockerfile for this project (empty: fine)."""
    lines = dockerfile.splitlines()

    def first(pattern: str) -> int | None:
        rx = re.compile(pattern)
        return next((i for i, line in enumerate(lines) if rx.search(line)), None)

    problems = []
    install = first(r'^RUN .*pip install .*-r "?binder/requirements\.txt')
    copy_repo = first(r"^COPY .*\bsrc/ \$\{REPO_DIR\}/")
    post_build = first(r"^RUN \./binder/postBuild")
    if install is None:
        problems.append("binder/requirements.txt is never installed")
    if copy_repo is None:
        problems.append("the repository is never copied")
    if post_build is None:
        problems.append("binder/postBuild is never run")
    if install is not None and copy_repo is not None and install > copy_repo:
        problems.append("requirements are installed after the repository is copied (no cached layer)")
    if post_build is not None and copy_repo is not None and post_build < copy_repo:
        problems.append("postBuild runs before the repository is copied")
    if first(r'^ENV R2D_ENTRYPOINT="\$\{REPO_DIR\}/binder/start"') is None:
        problems.append("binder/start is not the entrypoint")
    return problems


@pytest.mark.slow
def test_repo2docker_detects_cached_requirements_then_postbuild() -> None:
    dockerfile, log = repo2docker_dockerfile(ROOT)
    assert "python=3.11" in log, log
    assert dockerfile_problems(dockerfile) == []


@pytest.mark.slow
def test_repo2docker_check_catches_an_unpinned_project_line(tmp_path: Path) -> None:
    """The order check above can fail: a '.' line in requirements.txt moves the install after COPY."""
    shutil.copytree(BINDER, tmp_path / "binder")
    with open(tmp_path / "binder" / "requirements.txt", "a", encoding="utf-8") as fh:
        fh.write(".\n")
    dockerfile, _ = repo2docker_dockerfile(tmp_path)
    assert "requirements are installed after the repository is copied (no cached layer)" in (
        dockerfile_problems(dockerfile)
    )


# --------------------------------------------------------------------------------------------
# pip resolves the pins


_NETWORK_ERRORS = (
    "NewConnectionError",
    "Max retries exceeded",
    "Temporary failure in name resolution",
    "Network is unreachable",
    "ConnectTimeoutError",
)


@pytest.mark.slow
@pytest.mark.skipif(
    sys.version_info[:2] != (3, 11) or sys.platform != "linux",
    reason="resolves for Binder's interpreter: needs Python 3.11 on Linux",
)
def test_pip_dry_run_resolves_binder_requirements(tmp_path: Path) -> None:
    import json

    report = tmp_path / "report.json"
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "pip",
            "install",
            "--dry-run",
            "--ignore-installed",
            "--quiet",
            "--report",
            str(report),
            "-r",
            str(BINDER / "requirements.txt"),
        ],
        capture_output=True,
        text=True,
        timeout=540,
        check=False,
    )
    if done.returncode != 0 and not IN_CI and any(err in done.stderr for err in _NETWORK_ERRORS):
        pytest.skip("no package index reachable")
    assert done.returncode == 0, done.stderr[-3000:]
    resolved = {
        canonicalize_name(item["metadata"]["name"]): item["metadata"]["version"]
        for item in json.loads(report.read_text(encoding="utf-8"))["install"]
    }
    for name, version in binder_pins().items():
        assert resolved.get(name) == version, f"{name}: pinned {version}, resolved {resolved.get(name)}"
    assert "tensorflow-cpu" in resolved and "jupyterlab-widgets" in resolved


# --------------------------------------------------------------------------------------------
# Every lesson renders in app mode


@pytest.mark.parametrize("notebook", sorted(p.name for p in (ROOT / "lessons").glob("*.ipynb")))
def test_lesson_is_valid_nbformat_for_voila(notebook: str) -> None:
    """Voila validates a notebook before rendering it: one invalid stored output (an
    execute_result without execution_count) makes ``voila/render/lessons/…`` fail outright."""
    nbformat = pytest.importorskip("nbformat")
    nb = nbformat.read(ROOT / "lessons" / notebook, as_version=4)
    nbformat.validate(nb)


def test_postbuild_keeps_the_answer_key_out_of_the_learners_tree(tmp_path: Path) -> None:
    """Issue 34.2: the answer key, and the build sources and tests that hold each prediction's answer, are
    one click away in Binder's file tree unless postBuild removes them; run the removal line on
    a copy of the tree (repo2docker runs postBuild from the repository's root) and look."""
    import subprocess

    text = (BINDER / "postBuild").read_text(encoding="utf-8")
    removal = [line for line in text.splitlines() if "answer_key" in line and not line.startswith("#")]
    assert removal == ["rm -rf docs/answer_key lessons/_build tests"]
    gone = (("docs/answer_key", "00_start_here.ipynb"), ("lessons/_build", "cells.py"), ("tests/lessons", "test_graders.py"))
    for folder, name in gone:
        (tmp_path / folder).mkdir(parents=True)
        (tmp_path / folder / name).write_text("{}", encoding="utf-8")
    (tmp_path / "lessons" / "00_start_here.ipynb").write_text("{}", encoding="utf-8")
    subprocess.run(["bash", "-c", removal[0]], cwd=tmp_path, check=True)
    for folder, _ in gone:
        assert not (tmp_path / folder).exists(), folder
    assert (tmp_path / "lessons" / "00_start_here.ipynb").exists()
    assert text.index("pip install") < text.index(removal[0]) < text.index("python - <<'PY'")
    # the build sources hold every answer (the metadata the answer key is built from)
    assert "'answer'" in (ROOT / "lessons" / "_build" / "cells.py").read_text(encoding="utf-8").replace('"', "'")
    # nothing a learner runs needs them
    for notebook in (ROOT / "lessons").glob("*.ipynb"):
        text = notebook.read_text(encoding="utf-8")
        assert "_build" not in text and "tests/" not in text, notebook.name
