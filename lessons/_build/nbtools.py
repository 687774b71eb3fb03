"""Helpers to write, execute and clean the lesson notebooks (not collected by pytest).

    python lessons/_build/build_lessons.py            # write + execute + clean every lesson
    python lessons/_build/build_lessons.py 03 04      # only some lessons
"""

from __future__ import annotations

import re
import time
from typing import Any

import nbformat
from nbformat.v4 import new_code_cell, new_markdown_cell, new_notebook

SETUP = """\
import os
os.environ["TF_CPP_MIN_LOG_LEVEL"] = "3"     # silence TensorFlow's C++ start-up lines
os.environ["TF_ENABLE_ONEDNN_OPTS"] = "0"    # (both must be set before `import tensorflow`)

import numpy as np
import tensorflow as tf
{extra}
from tfgraph_lab import exercises as ex

%load_ext tfgraph_lab
print("TensorFlow", tf.__version__)"""

_PATH_RES = [
    (re.compile(r"/tmp/ipykernel_\d+/\d+\.py"), "<cell>"),
    (re.compile(r"(/[\w.\-]+)+/site-packages/"), "…/site-packages/"),
    (re.compile(r"/(root|home|work|tmp)/[\w./\-]+"), "<path>"),
    (re.compile(r"0x[0-9a-f]{6,}"), "0x…"),
    (re.compile(r"TensorFlow \d+\.\d+\.\d+"), "TensorFlow 2.x"),
]


def md(text: str) -> Any:
    return new_markdown_cell(text.strip("\n"))


def code(text: str, *tags: str, hidden: bool = False) -> Any:
    source = text.strip("\n")
    cell = new_code_cell(source)
    if tags:
        cell.metadata["tags"] = list(tags)
    if hidden:
        cell.metadata["jupyter"] = {"source_hidden": True}
    return cell


def notebook(cells: list[Any]) -> Any:
    nb = new_notebook(cells=cells)
    nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3 (ipykernel)", "language": "python"}
    nb.metadata["language_info"] = {"name": "python"}
    return nb


def _clean_text(text: str) -> str:
    for pattern, repl in _PATH_RES:
        text = pattern.sub(repl, text)
    return text


def strip(nb: Any) -> Any:
    """The notebook as committed: no outputs, no execution counts, no widget state, stable ids.

    Learners must predict before they see: a stored output would show the answer on GitHub and
    on Binder before the cell runs. nbval still executes every cell (unrun reference cells are
    executed, their outputs not compared); ``tests/lessons/test_lessons_static.py`` holds this.
    """
    nb.metadata.pop("widgets", None)
    for n, cell in enumerate(nb.cells):
        cell.id = f"cell-{n:02d}"
        cell.metadata.pop("execution", None)
        # The answer stays in the build sources and the key: JupyterLab shows cell metadata.
        cell.metadata.get("tfgraph_lab", {}).pop("answer", None)
        if cell.cell_type == "code":
            cell.outputs = []
            cell.execution_count = None
    return nb


def clean_outputs(nb: Any) -> Any:
    """Keep outputs (for the facilitators' answer key) but drop machine paths, addresses,
    widget views, long tracebacks and HTML twins of text outputs."""
    nb.metadata.pop("widgets", None)
    count = 0
    for n, cell in enumerate(nb.cells):
        cell.id = f"cell-{n:02d}"
        cell.metadata.pop("execution", None)
        if cell.cell_type != "code":
            continue
        count += 1
        cell.execution_count = count
        outputs = []
        for out in cell.get("outputs", []):
            if out.output_type == "execute_result":
                out.execution_count = count
            if out.output_type == "error":
                evalue = _clean_text(out.evalue)
                out.evalue = evalue if len(evalue) < 400 else evalue[:400] + " …"
                out.traceback = [f"{out.ename}: {out.evalue}"]
            elif out.output_type == "stream":
                out.text = _clean_text(out.text)
                if out.name == "stderr" and not out.text.strip():
                    continue
            else:
                data = out.get("data", {})
                if "application/vnd.jupyter.widget-view+json" in data:
                    data.pop("application/vnd.jupyter.widget-view+json")
                    data["text/plain"] = "(interactive lab: run the cell to use it)"
                if "text/plain" in data:  # the text twin reads well on GitHub and in diffs
                    for key in [k for k in data if k != "text/plain"]:
                        data.pop(key)
                for key in list(data):
                    if isinstance(data[key], str):
                        data[key] = _clean_text(data[key])
                out.metadata = {}
            outputs.append(out)
        cell.outputs = outputs
    return nb


RSS_PROBE = """\
def _rss():
    fields = dict(line.split(":", 1) for line in open("/proc/self/status"))
    return fields["VmRSS"].strip(), fields["VmHWM"].strip()
print("RSS", *_rss())"""


def execute(nb: Any, cwd: str, timeout: int = 600) -> tuple[Any, float, str]:
    """Execute a copy of ``nb`` (plus an RSS probe cell, removed again); return it, seconds, RSS."""
    from nbclient import NotebookClient

    run = nbformat.from_dict(nb)
    run.cells.append(new_code_cell(RSS_PROBE))
    client = NotebookClient(run, timeout=timeout, kernel_name="python3", resources={"metadata": {"path": cwd}})
    t0 = time.perf_counter()
    client.execute()
    seconds = time.perf_counter() - t0
    probe = run.cells.pop()
    rss = "".join(o.get("text", "") for o in probe.outputs).strip()
    return run, seconds, rss
