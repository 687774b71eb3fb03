"""The layers of docs/ARCHITECTURE.md hold: `lint-imports` checks the contracts in pyproject.toml.

grimp (import-linter's graph) sees imports inside functions too, so a lazy import across the
layers breaks a contract just like a module-level one; the second test proves it on a copy.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import importlinter  # noqa: F401  (a test extra: the contracts are checked in CI)

ROOT = Path(__file__).resolve().parents[2]


def lint_imports(root: Path) -> subprocess.CompletedProcess[str]:
    script = Path(sys.executable).parent / "lint-imports"
    command = [str(script)] if script.exists() else [shutil.which("lint-imports") or "lint-imports"]
    env = {**os.environ, "PYTHONPATH": str(root)}
    return subprocess.run(
        [*command, "--no-cache", "--config", str(root / "pyproject.toml")],
        cwd=root,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )


def test_import_contracts_hold() -> None:
    proc = lint_imports(ROOT)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "0 broken" in proc.stdout, proc.stdout


def test_a_lazy_upward_import_breaks_the_layers(tmp_path: Path) -> None:
    shutil.copytree(
        ROOT / "tfgraph_lab", tmp_path / "tfgraph_lab", ignore=shutil.ignore_patterns("__pycache__")
    )
    shutil.copy(ROOT / "pyproject.toml", tmp_path / "pyproject.toml")
    explain = tmp_path / "tfgraph_lab" / "explain.py"
    explain.write_text(
        explain.read_text(encoding="utf-8")
        + "\n\ndef _late() -> None:\n    import tensorflow\n    from .report import TraceReport\n",
        encoding="utf-8",
    )
    proc = lint_imports(tmp_path)
    assert proc.returncode != 0, proc.stdout
    assert "tfgraph_lab.explain.trace -> tfgraph_lab.report" in proc.stdout, proc.stdout
    assert "tfgraph_lab.explain.trace -> tensorflow" in proc.stdout, proc.stdout


# One violation per contract (file, code added at its end, a chain lint-imports must print),
# each as a lazy import inside a function: grimp sees those too. Issue 19 found half of these
# accepted by the contracts of the time.
INJECTED = {
    "layers": ("exercises/__init__.py", "from ..cli import main", "tfgraph_lab.exercises -> tfgraph_lab.faces.cli"),
    "pure-core": ("report.py", "import IPython", "tfgraph_lab.report -> IPython"),
    "adapter": ("_hub.py", "import IPython", "tfgraph_lab.recording.hub -> IPython"),
    "hubcheck": ("hubcheck/__init__.py", "import tensorflow", "tfgraph_lab.hubcheck -> tensorflow"),
    "tensorflow": ("livelog.py", "import tensorflow", "tfgraph_lab.watching.livelog -> tensorflow"),
    "front-ends": ("keras.py", "from ._hub import HUB", "tfgraph_lab.keras -> tfgraph_lab.recording.hub"),
    "renderers": (
        "render/text.py",
        "from .. import _tf_warnings",
        "tfgraph_lab.render.text -> tfgraph_lab.recording.tf_warnings",
    ),
    "live-log": ("livelog.py", "from ._hub import HUB", "tfgraph_lab.watching.livelog -> tfgraph_lab.recording.hub"),
    "recorder": (
        "recorder.py",
        "from . import _tf_adapter",
        "tfgraph_lab.watching.recorder -> tfgraph_lab.adapter",
    ),
}
ALSO_INJECTED = [  # more of issue 19's list, each against a contract above
    ("monitor.py", "from ._hub import HUB", "tfgraph_lab.monitor -> tfgraph_lab.recording.hub"),
    ("_magic.py", "from . import _hooks", "tfgraph_lab.faces.magic -> tfgraph_lab.recording.hooks"),
    # the hub hands itself to the hooks and the XLA path as a _host.Host: no circle back
    ("_hooks.py", "from ._hub import Hub", "tfgraph_lab.recording.hooks -> tfgraph_lab.recording.hub"),
    ("_xla.py", "from ._hub import Hub", "tfgraph_lab.recording.xla -> tfgraph_lab.recording.hub"),
    ("_xla.py", "from ._hooks import make_call_hook", "tfgraph_lab.recording.xla -> tfgraph_lab.recording.hooks"),
]


def test_each_contract_breaks_on_an_injected_violation(tmp_path: Path) -> None:
    import tomllib

    config = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
    contracts = {c["id"]: c["name"] for c in config["tool"]["importlinter"]["contracts"]}
    assert set(contracts) == set(INJECTED), "give every contract a violation in INJECTED"
    shutil.copytree(
        ROOT / "tfgraph_lab", tmp_path / "tfgraph_lab", ignore=shutil.ignore_patterns("__pycache__")
    )
    shutil.copy(ROOT / "pyproject.toml", tmp_path / "pyproject.toml")
    for n, (file, code, _) in enumerate([*INJECTED.values(), *ALSO_INJECTED]):
        path = tmp_path / "tfgraph_lab" / file
        path.write_text(
            path.read_text(encoding="utf-8") + f"\n\ndef _injected_{n}() -> None:\n    {code}\n",
            encoding="utf-8",
        )
    proc = lint_imports(tmp_path)
    out = " ".join(proc.stdout.split())  # names and chains are wrapped at 80 columns
    assert proc.returncode != 0, proc.stdout
    assert f"Contracts: 0 kept, {len(contracts)} broken." in out, proc.stdout
    broken = out.split("Broken contracts", 1)[1]
    for cid, name in contracts.items():
        assert " ".join(name.split()) in broken, f"contract {cid} did not break"
    for _, _, chain in [*INJECTED.values(), *ALSO_INJECTED]:
        assert chain in out, f"{chain} not reported"


# Look-ups the import linter cannot see (sys.modules, importlib, __import__), each with why:
# a new one needs a reason here, or a plain import the contracts check.
HIDDEN_IMPORTS = {
    "tfgraph_lab/__init__.py": "lazy public names (__getattr__): import tfgraph_lab stays light",
    "tfgraph_lab/widgets/__init__.py": "lazy widget names: ipywidgets only when a lab opens",
    "tfgraph_lab/_pycode.py": "cell_label reads a running IPython; framework files by package",
    "tfgraph_lab/livelog.py": "asks a running IPython whether the report shows retraces anyway",
    "tfgraph_lab/monitor.py": "checks whether IPython runs before it starts a monitor",
    "tfgraph_lab/_xla_log.py": "reads TF's compile log only when TensorFlow is imported already",
    "tfgraph_lab/_tf_adapter/rewrap.py": "the adapter: TensorFlow's module, already imported",
    "tfgraph_lab/_tf_adapter/functions.py": "the adapter: the Keras version, when Keras is imported",
    "tfgraph_lab/keras.py": "Keras 3 or tf_keras, whichever TensorFlow uses",
    "tfgraph_lab/keras_guard.py": "the traceback_utils module of the Keras the callback imported",
    "tfgraph_lab/cli.py": "find_spec: is a -m module there, without importing it",
    "tfgraph_lab/workshop.py": "importlib.metadata: the installed version (no import)",
    "tfgraph_lab/hubcheck/learner.py": "code sent to a remote kernel as text",
}


def test_imports_the_linter_cannot_see_are_listed_with_their_reason() -> None:
    import re

    hidden = re.compile(r"sys\.modules|\bimportlib\b|__import__\(")
    found = sorted(
        str(p.relative_to(ROOT))
        for p in (ROOT / "tfgraph_lab").rglob("*.py")
        if hidden.search(p.read_text(encoding="utf-8"))
    )
    assert found == sorted(HIDDEN_IMPORTS), found


ARCHITECTURE = ROOT / "docs" / "ARCHITECTURE.md"


def test_the_architecture_page_places_every_module() -> None:
    """Each module has its row in the page's module table (what it holds, what it must not
    import), each row names a module that exists, and each is in a layer of the diagram."""
    import re

    page = ARCHITECTURE.read_text(encoding="utf-8")
    package = ROOT / "tfgraph_lab"
    modules = {f"{p.stem}.py" for p in package.glob("*.py") if p.stem not in ("__init__", "__main__")}
    modules |= {f"{p.name}/" for p in package.iterdir() if (p / "__init__.py").exists()}
    table = page.split("| module | holds | must not import |", 1)[1].split("\n\n", 1)[0]
    rows = set(re.findall(r"^\| `([\w/]+(?:\.py|/))` \|", table, flags=re.M))
    assert not modules - rows, f"docs/ARCHITECTURE.md has no row for {sorted(modules - rows)}"
    assert not rows - modules, f"docs/ARCHITECTURE.md has rows for no module: {sorted(rows - modules)}"
    diagram = page.split("```", 2)[1]
    unplaced = [
        m
        for m in sorted(modules)
        if not re.search(rf"\b{re.escape(m.rstrip('/').removesuffix('.py'))}\b", diagram)
    ]
    assert not unplaced, f"the layer diagram does not place {unplaced}"


def test_a_merged_report_keeps_its_processes_through_its_json() -> None:
    from tfgraph_lab.report import TraceReport
    from tfgraph_lab.report.merge import merge_reports

    merged = merge_reports([("a.json", TraceReport()), ("b.json", TraceReport())]).to_dict()
    back = TraceReport.from_dict(merged).to_dict()
    assert (
        back["processes"]
        == merged["processes"]
        == [
            {"name": "a.json", "functions": []},
            {"name": "b.json", "functions": []},
        ]
    )


def test_the_reason_code_table_lists_the_codes_explain_gives() -> None:
    from tfgraph_lab.explain.trace import CODES

    page = ARCHITECTURE.read_text(encoding="utf-8")
    table = page.split("### Reason codes", 1)[1]
    listed = [line.split("`")[1] for line in table.splitlines() if line.startswith("| `")]
    assert listed == list(CODES)


def test_design_documents_are_cited_by_their_place_in_the_repository() -> None:
    """Every design reference points to docs/ARCHITECTURE.md (no document outside the repo)."""
    word = "DESIGN"
    files = [ROOT / "README.md", *ROOT.glob("docs/*.md")]
    for folder in ("tfgraph_lab", "tests", "benchmarks", "tools", "lessons/_build"):
        files += [p for p in (ROOT / folder).rglob("*.py") if p != Path(__file__).resolve()]
    cited = [str(p.relative_to(ROOT)) for p in files if word in p.read_text(encoding="utf-8")]
    assert not cited, f"{cited} cite a {word} document; cite docs/ARCHITECTURE.md"


def test_the_codes_that_are_not_retraces_are_spelled_once() -> None:
    """counts.NOT_RETRACES is the one list; a copy elsewhere drifts when a code is added."""
    import re

    spelled = re.compile(
        r"""["']first-trace["'],\s*["']variable-creation["']"""
        r"|ReasonCode\.FIRST_TRACE,\s*ReasonCode\.VARIABLE_CREATION"
    )
    copies = [
        str(p.relative_to(ROOT))
        for p in (ROOT / "tfgraph_lab").rglob("*.py")
        if spelled.search(p.read_text(encoding="utf-8"))
    ]
    assert copies == ["tfgraph_lab/counts.py"], copies


MAX_MODULE_LINES = 400  # issue 11: one concept per module


def test_no_module_is_over_400_lines() -> None:
    package = ROOT / "tfgraph_lab"
    sizes = {
        str(path.relative_to(ROOT)): len(path.read_text(encoding="utf-8").splitlines())
        for path in package.rglob("*.py")
    }
    assert sizes, "no modules found"
    too_long = {name: lines for name, lines in sorted(sizes.items()) if lines > MAX_MODULE_LINES}
    assert not too_long, f"split these modules (over {MAX_MODULE_LINES} lines): {too_long}"


def test_the_readme_names_the_fast_tier_beside_the_full_command() -> None:
    import tomllib

    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    full = readme.index('python -m pip install -e ".[tf,test]" && python -m pytest\n')
    fast = readme.index('python -m pytest -m "not slow and not browser"')
    assert 0 < fast - full < 600, "the fast tier is named right after the full command"
    markers = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["tool"]["pytest"]
    declared = {m.split(":")[0] for m in markers["ini_options"]["markers"]}
    assert {"slow", "browser"} <= declared
