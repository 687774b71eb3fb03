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


def copy_of_the_package(tmp_path: Path) -> Path:
    shutil.copytree(
        ROOT / "tfgraph_lab", tmp_path / "tfgraph_lab", ignore=shutil.ignore_patterns("__pycache__")
    )
    shutil.copy(ROOT / "pyproject.toml", tmp_path / "pyproject.toml")
    return tmp_path / "tfgraph_lab"


def test_a_lazy_upward_import_breaks_the_layers(tmp_path: Path) -> None:
    explain = copy_of_the_package(tmp_path) / "explain" / "trace.py"
    explain.write_text(
        explain.read_text(encoding="utf-8")
        + "\n\ndef _late() -> None:\n    import tensorflow\n    from ..report.trace_report import TraceReport\n",
        encoding="utf-8",
    )
    proc = lint_imports(tmp_path)
    out = " ".join(proc.stdout.split())
    assert proc.returncode != 0, proc.stdout
    assert "tfgraph_lab.explain.trace -> tfgraph_lab.report.trace_report" in out, proc.stdout
    assert "tfgraph_lab.explain.trace -> tensorflow" in out, proc.stdout


# One violation per contract (file, code added at its end, a chain lint-imports must print),
# each as a lazy import inside a function: grimp sees those too.
INJECTED = {
    "layers": ("exercises/__init__.py", "from ..faces.cli import main", "tfgraph_lab.exercises -> tfgraph_lab.faces.cli"),
    "pure-core": ("report/trace_report.py", "import IPython", "tfgraph_lab.report.trace_report -> IPython"),
    "plain-data": (
        "report/schema.py",
        "from ..recording import calllog",
        "tfgraph_lab.report.schema -> tfgraph_lab.recording.calllog",
    ),
    "no-notebook-below": ("adapter/functions.py", "import IPython", "tfgraph_lab.adapter.functions -> IPython"),
    "adapter": ("watching/livelog.py", "import tensorflow", "tfgraph_lab.watching.livelog -> tensorflow"),
    "front-ends": (
        "keras/callback.py",
        "from ..recording.hub import HUB",
        "tfgraph_lab.keras.callback -> tfgraph_lab.recording.hub",
    ),
    "recorder": (
        "watching/lifecycle.py",
        "from ..recording import xla_log",
        "tfgraph_lab.watching.lifecycle -> tfgraph_lab.recording.xla_log",
    ),
    "recording-inside": (
        "recording/hooks.py",
        "from .hub import Hub",
        "tfgraph_lab.recording.hooks -> tfgraph_lab.recording.hub",
    ),
    "stderr-readers": (
        "recording/xla_log.py",
        "from ..model import vocab",
        "tfgraph_lab.recording.xla_log -> tfgraph_lab.model.vocab",
    ),
    "hubcheck": ("hubcheck/__init__.py", "import tensorflow", "tfgraph_lab.hubcheck -> tensorflow"),
}
# Issue 31's list of violations of docs/ARCHITECTURE.md's rules that the contracts of the time
# let pass, and issue 19's before it: each must break a contract above.
ALSO_INJECTED = [
    ("adapter/__init__.py", "import IPython", "tfgraph_lab.adapter -> IPython"),
    ("watching/livelog.py", "import IPython", "tfgraph_lab.watching.livelog -> IPython"),
    ("watching/tensorboard.py", "import IPython", "tfgraph_lab.watching.tensorboard -> IPython"),
    ("adapter/functions.py", "import ipywidgets", "tfgraph_lab.adapter.functions -> ipywidgets"),
    ("recording/hub.py", "import IPython", "tfgraph_lab.recording.hub -> IPython"),
    ("watching/recorder.py", "from .. import adapter", "tfgraph_lab.watching.recorder -> tfgraph_lab.adapter"),
    ("faces/monitor.py", "from ..recording.hub import HUB", "tfgraph_lab.faces.monitor -> tfgraph_lab.recording.hub"),
    ("faces/magic.py", "from ..recording import hooks", "tfgraph_lab.faces.magic -> tfgraph_lab.recording.hooks"),
    ("render/text.py", "from ..recording import tf_warnings", "tfgraph_lab.render.text -> tfgraph_lab.recording.tf_warnings"),
    ("recording/xla.py", "from .hub import Hub", "tfgraph_lab.recording.xla -> tfgraph_lab.recording.hub"),
    ("recording/xla.py", "from .hooks import make_call_hook", "tfgraph_lab.recording.xla -> tfgraph_lab.recording.hooks"),
    ("watching/livelog.py", "from ..recording.hub import HUB", "tfgraph_lab.watching.livelog -> tfgraph_lab.recording.hub"),
    ("widgets/explorer.py", "from ..adapter import tracing", "tfgraph_lab.widgets.explorer -> tfgraph_lab.adapter.tracing"),
    ("explain/fixes.py", "import ipywidgets", "tfgraph_lab.explain.fixes -> ipywidgets"),
]


def test_each_contract_breaks_on_an_injected_violation(tmp_path: Path) -> None:
    import tomllib

    config = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
    contracts = {c["id"]: c["name"] for c in config["tool"]["importlinter"]["contracts"]}
    assert set(contracts) == set(INJECTED), "give every contract a violation in INJECTED"
    package = copy_of_the_package(tmp_path)
    for n, (file, code, _) in enumerate([*INJECTED.values(), *ALSO_INJECTED]):
        path = package / file
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


# Modules that import each other in a loop at run time (imports inside functions count, those
# under `if TYPE_CHECKING:` never run): Tarjan's strongly connected components of grimp's graph.
_CIRCLES = """
import json, sys
import grimp

graph = grimp.build_graph("tfgraph_lab", exclude_type_checking_imports=True)
modules = sorted(graph.modules)
edges = {m: sorted(set(graph.find_modules_directly_imported_by(m)) & set(modules)) for m in modules}
index, low, stack, on, found = {}, {}, [], set(), []
sys.setrecursionlimit(10_000)

def visit(v):
    index[v] = low[v] = len(index)
    stack.append(v)
    on.add(v)
    for w in edges[v]:
        if w not in index:
            visit(w)
            low[v] = min(low[v], low[w])
        elif w in on:
            low[v] = min(low[v], index[w])
    if low[v] == index[v]:
        part = []
        while True:
            w = stack.pop()
            on.discard(w)
            part.append(w)
            if w == v:
                break
        if len(part) > 1:
            found.append(sorted(part))

for m in modules:
    if m not in index:
        visit(m)
print(json.dumps(found))
"""


def runtime_circles(root: Path) -> list[list[str]]:
    import json

    env = {**os.environ, "PYTHONPATH": str(root)}
    proc = subprocess.run(
        [sys.executable, "-c", _CIRCLES], cwd=root, env=env, capture_output=True, text=True, timeout=300
    )
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout)


def test_no_modules_import_each_other_at_run_time() -> None:
    """Issue 31: the report is data, the folders are layers, and no circle is left at run time —
    a package's face (``__init__.py``) included: a module never reaches back up through it."""
    assert runtime_circles(ROOT) == []


def test_a_circle_through_a_package_face_is_found(tmp_path: Path) -> None:
    reference = copy_of_the_package(tmp_path) / "exercises" / "reference.py"
    reference.write_text(
        reference.read_text(encoding="utf-8") + "\n\ndef _injected() -> None:\n    from .. import exercises\n",
        encoding="utf-8",
    )
    assert any("tfgraph_lab.exercises.reference" in part for part in runtime_circles(tmp_path))


def test_a_new_module_inherits_its_folders_rules(tmp_path: Path) -> None:
    """The contracts name folders: a module added to one is fenced like its neighbours, and a
    new top-level module must take a place in the layers."""
    package = copy_of_the_package(tmp_path)
    (package / "explain" / "brand_new.py").write_text("import tensorflow\n", encoding="utf-8")
    (package / "recording" / "brand_new.py").write_text("import IPython\n", encoding="utf-8")
    (package / "stray.py").write_text("X = 1\n", encoding="utf-8")
    proc = lint_imports(tmp_path)
    out = " ".join(proc.stdout.split())
    assert proc.returncode != 0, proc.stdout
    assert "tfgraph_lab.explain.brand_new -> tensorflow" in out, proc.stdout
    assert "tfgraph_lab.recording.brand_new -> IPython" in out, proc.stdout
    assert "stray" in proc.stdout + proc.stderr, proc.stdout + proc.stderr


# Look-ups the import linter cannot see (sys.modules, importlib, __import__), each with why:
# a new one needs a reason here, or a plain import the contracts check.
HIDDEN_IMPORTS = {
    "tfgraph_lab/explain/pages.py": "importlib.resources reads the shipped reason pages (data, no module)",
    "tfgraph_lab/__init__.py": "lazy public names (__getattr__): import tfgraph_lab stays light",
    "tfgraph_lab/widgets/__init__.py": "lazy widget names: ipywidgets only when a lab opens",
    "tfgraph_lab/model/places.py": "running_ipython reads IPython's shell, if imported; framework files by package",
    "tfgraph_lab/faces/monitor.py": "checks whether IPython runs before it starts a monitor",
    "tfgraph_lab/recording/xla_log.py": "reads TF's compile log only when TensorFlow is imported already",
    "tfgraph_lab/adapter/rewrap.py": "the adapter: TensorFlow's module, already imported",
    "tfgraph_lab/adapter/functions.py": "the adapter: the Keras version, when Keras is imported",
    "tfgraph_lab/adapter/trace_types.py": "the adapter: TF's NaN marker, from the module that made the Literal",
    "tfgraph_lab/keras/callback.py": "Keras 3 or tf_keras, whichever TensorFlow uses",
    "tfgraph_lab/keras/guard.py": "the traceback_utils module of the Keras the callback imported",
    "tfgraph_lab/faces/cli.py": "find_spec: is a -m module there, without importing it",
    "tfgraph_lab/faces/env_switch.py": "TFGRAPH_LAB=watch: an import hook that starts the watch as tensorflow loads",
    "tfgraph_lab/hubcheck/workshop.py": "importlib.metadata: the installed version (no import)",
    "tfgraph_lab/hubcheck/learner.py": "code sent to a remote kernel as text",
    "tfgraph_lab/trial/state.py": "sys.modules: the user's TensorFlow, Keras and numpy, only if imported",
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


def test_only_the_reports_shims_call_up_through_the_package_root() -> None:
    """The package root imports no folder by name (its public names are looked up when first
    used), so a call through it is invisible to the contracts: the one module allowed to make
    one is the report, whose try_fix and explore methods are shims for the public functions."""

    import grimp

    graph = grimp.build_graph("tfgraph_lab", exclude_type_checking_imports=True, cache_dir=None)
    ours = [m for m in graph.find_modules_directly_imported_by("tfgraph_lab") if m.startswith("tfgraph_lab")]
    assert not ours, f"the package root imports {ours} by name"
    import ast

    package = ROOT / "tfgraph_lab"
    folders = {p.name for p in package.iterdir() if p.is_dir()} | {p.stem for p in package.glob("*.py")}
    callers = []
    for path in sorted(package.rglob("*.py")):
        depth = len(path.relative_to(package).parts) - 1  # folders below the root
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            up = isinstance(node, ast.Import) and any(a.name == "tfgraph_lab" for a in node.names)
            if isinstance(node, ast.ImportFrom):
                to_root = (node.level == 0 and node.module == "tfgraph_lab") or (
                    node.level == depth + 1 and node.module is None
                )
                up = up or (to_root and any(a.name not in folders | {"__version__"} for a in node.names))
            if up:
                callers.append(str(path.relative_to(ROOT)))
                break
    assert callers == ["tfgraph_lab/report/trace_report.py"], callers


ARCHITECTURE = ROOT / "docs" / "ARCHITECTURE.md"


FOLDERS = ["model", "adapter", "explain", "recording", "render", "report", "watching", "trial", "keras",
           "widgets", "exercises", "hubcheck", "faces"]
OUTSIDE = {"tensorflow", "keras", "IPython", "ipywidgets", "traitlets", "anywidget", "numpy", "requests",
           "websocket", "psutil", "pytest"}


def folder_sections() -> dict[str, str]:
    import re

    page = ARCHITECTURE.read_text(encoding="utf-8")
    parts = re.split(r"^### `(\w+)/` — .*$", page, flags=re.M)
    return {name: body.split("\n## ", 1)[0].split("\n### ", 1)[0] for name, body in zip(parts[1::2], parts[2::2])}


def test_the_architecture_page_has_a_section_per_folder_listing_its_modules() -> None:
    """One section per folder of the package, in the order of the layers, each with a row per
    module (what it holds) and no row for a module that does not exist."""
    import re

    package = ROOT / "tfgraph_lab"
    folders = sorted(p.name for p in package.iterdir() if (p / "__init__.py").exists())
    sections = folder_sections()
    assert sorted(sections) == folders == sorted(FOLDERS)
    for name, body in sections.items():
        rows = set(re.findall(r"^\| `(\w+\.py)` \|", body, flags=re.M))
        modules = {p.name for p in (package / name).glob("*.py")}
        assert not (modules - {"__init__.py"}) - rows, f"{name}/: no row for {sorted(modules - rows)}"
        assert not rows - modules, f"{name}/: rows for no module: {sorted(rows - modules)}"


def test_each_folder_imports_what_its_section_says() -> None:
    """The two lines of each section ("Imports from the project:", "Imports from outside:") are
    the folders and outside packages its modules import, read from the code (grimp, lazy
    imports too, not those under TYPE_CHECKING): neither more nor fewer."""
    import re

    import grimp

    graph = grimp.build_graph(
        "tfgraph_lab", include_external_packages=True, exclude_type_checking_imports=True, cache_dir=None
    )
    for name, body in folder_sections().items():
        said = {}
        for label in ("project", "outside"):
            line = re.search(rf"^Imports from (?:the )?{label}: (.*?)(?:\.\n|\n\n)", body, flags=re.M | re.S)
            assert line, f"{name}/ has no 'Imports from {label}' line"
            said[label] = set(re.findall(r"`([\w]+)`", line.group(1).split(" (only")[0].replace("\n", " ")))
        project: set[str] = set()
        outside: set[str] = set()
        for module in graph.find_children(f"tfgraph_lab.{name}") | {f"tfgraph_lab.{name}"}:
            for target in graph.find_modules_directly_imported_by(module):
                parts = target.split(".")
                if parts[0] == "tfgraph_lab" and len(parts) > 1 and parts[1] != name:
                    project.add(parts[1])
                elif parts[0] in OUTSIDE:
                    outside.add(parts[0])
        assert said["project"] == project, f"{name}/ imports {sorted(project)}, its section says {sorted(said['project'])}"
        assert said["outside"] == outside, f"{name}/ imports {sorted(outside)}, its section says {sorted(said['outside'])}"


def test_every_name_the_architecture_page_gives_exists() -> None:
    """A module path (`recording/hub.py`) or a dotted name (`recording.tally.Tally`) on the page
    names a file, module or attribute that is there: a move or a rename cannot leave it stale."""
    import importlib
    import re

    page = ARCHITECTURE.read_text(encoding="utf-8")
    folders = "|".join(FOLDERS)
    missing = []
    for path in sorted(set(re.findall(rf"`((?:{folders})/\w+\.py)`", page))):
        if not (ROOT / "tfgraph_lab" / path).exists():
            missing.append(path)
    for module, attr in sorted(set(re.findall(rf"`((?:{folders})\.\w+)\.(\w+)", page))):
        try:
            found = hasattr(importlib.import_module(f"tfgraph_lab.{module}"), attr)
        except ImportError:
            found = False
        if not found:
            missing.append(f"{module}.{attr}")
    assert not missing, f"docs/ARCHITECTURE.md names what is not there: {missing}"


def test_a_long_module_says_why() -> None:
    """One concept per module, not a size cap: a module over 800 lines says why it is long in its
    docstring (a sentence starting "Long because")."""
    import ast

    long_ones = []
    for path in (ROOT / "tfgraph_lab").rglob("*.py"):
        text = path.read_text(encoding="utf-8")
        if len(text.splitlines()) > 800 and "Long because" not in (ast.get_docstring(ast.parse(text)) or ""):
            long_ones.append(str(path.relative_to(ROOT)))
    assert not long_ones, f"say why these are long in their docstrings: {long_ones}"


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
    assert copies == ["tfgraph_lab/model/counts.py"], copies


def test_the_readme_names_the_fast_tier_beside_the_full_command() -> None:
    import tomllib

    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    full = readme.index('python -m pip install -e ".[tf,test]" && python -m pytest\n')
    fast = readme.index('python -m pytest -m "not slow and not browser"')
    assert 0 < fast - full < 600, "the fast tier is named right after the full command"
    markers = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["tool"]["pytest"]
    declared = {m.split(":")[0] for m in markers["ini_options"]["markers"]}
    assert {"slow", "browser"} <= declared
