"""%%tracewatch in a real Jupyter kernel (ipykernel via nbclient), as JupyterLab runs it.

What only a kernel shows: the prompt number the front end displays (``execution_count`` of the
cell, which the kernel sends) and the outputs the front end receives. Checked here: the report
names the cell whose prompt shows that number (IPython 9 increments the counter before a cell
runs, IPython 8 after), with the line numbers the cell shows; and ``-o`` puts the report in the
cell's outputs once.
"""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("tensorflow")
nbformat = pytest.importorskip("nbformat")
nbclient = pytest.importorskip("nbclient")
pytest.importorskip("ipykernel")
pytestmark = pytest.mark.slow  # a real kernel (nbclient) runs the notebook: about 10 s to start

RERUN = "@tf.function\ndef loss_at(x):\n    return tf.reduce_sum(x * x)\n"
SETUP = "%load_ext tfgraph_lab\nimport tensorflow as tf\n\n@tf.function\ndef f(x):\n    return x + 1\n"
CELLS = [
    SETUP,
    # [1]: two shapes, the retrace on the cell's line 3 (line 1 is the magic's)
    "%%tracewatch -q -v rep --json rep.json\nf(tf.ones([1]))\nf(tf.ones([2]))\n",
    # the report's text, and the cell number of each caller in the JSON as the kernel names it
    "import json\nprint(str(rep))\n_map = get_ipython().compile._filename_map\n"
    "for e in json.load(open('rep.json'))['events']:\n"
    "    file, line = e['caller'].rsplit(':', 1)\n"
    "    print(f'JSON caller: cell {_map.get(file)}, line {line}')\n",
    # [3]: -o shows the report once, as the cell's value
    "%%tracewatch -o\nf(tf.ones([3]))\nf(tf.ones([4]))\n",
    # [4]: -o with a broken budget: no value, so the report is displayed before the error
    "%%tracewatch -o --max-traces f=0\nf(tf.ones([5]))\n",
    # [5]: the cell's value is its result, as unwatched (issue 23, item 1)
    "%%tracewatch -q\nf(tf.ones([6]))\n6 * 7\n",
    # [6]: a SyntaxError reads as in an unwatched cell, and fails the cell (issue 23, item 2)
    "%%tracewatch\nx = 1\ny = (\n",
    # [7]-[11]: a definition cell run again (ipykernel names a cell by its source's hash: the
    # same file), then the same call: its new tf.function is the re-run's, said to be expected
    RERUN,
    "%%tracewatch -q\nloss_at(tf.ones([2]))\n",
    RERUN,
    "%%tracewatch -q -v again\nloss_at(tf.ones([2]))\n",
    "print(again)\n",
]


def _kernel_spec(root: Path) -> None:
    """A kernelspec running this interpreter (the environment under test)."""
    spec = root / "kernels" / "tfgl-test"
    spec.mkdir(parents=True)
    argv = [sys.executable, "-m", "ipykernel_launcher", "-f", "{connection_file}"]
    spec.joinpath("kernel.json").write_text(
        json.dumps({"argv": argv, "display_name": "tfgl test", "language": "python"}), encoding="utf-8"
    )


@pytest.fixture(scope="module")
def executed(tmp_path_factory: pytest.TempPathFactory) -> Any:
    root = tmp_path_factory.mktemp("kernel")
    _kernel_spec(root)
    mp = pytest.MonkeyPatch()
    mp.setenv("JUPYTER_PATH", str(root))
    try:
        nb = nbformat.v4.new_notebook()
        nb.cells = [nbformat.v4.new_code_cell(src) for src in CELLS]
        client = nbclient.NotebookClient(
            nb,
            kernel_name="tfgl-test",
            timeout=300,
            allow_errors=True,
            resources={"metadata": {"path": str(root)}},
        )
        client.execute()
    finally:
        mp.undo()
    nb.metadata["tfgl_root"] = str(root)
    return nb


def _texts(cell: Any) -> list[str]:
    out = []
    for output in cell.outputs:
        if output.output_type == "stream":
            out.append(output.text)
        elif "data" in output:
            out.append(output.data.get("text/plain", ""))
    return out


def test_the_report_names_the_cell_whose_prompt_shows_the_number(executed: Any) -> None:
    watched, printed = executed.cells[1], executed.cells[2]
    number = watched.execution_count
    assert isinstance(number, int) and number >= 1
    text = "".join(_texts(printed))
    assert f"at In [{number}], line 3" in text, text
    assert f"In [{number + 1}]" not in text, text
    assert f"JSON caller: cell {number}, line 3" in text, text
    # the function's own place is the set-up cell's prompt, said as the caller lines say it
    assert f"f  (In [{executed.cells[0].execution_count}], line 4)" in text, text


def test_the_json_read_in_another_process_names_the_cells_as_the_notebook_did(executed: Any) -> None:
    from tfgraph_lab.report import TraceReport

    path = Path(executed.metadata["tfgl_root"]) / "rep.json"
    text = str(TraceReport.from_json(path.read_text(encoding="utf-8")))  # no kernel here
    assert f"at In [{executed.cells[1].execution_count}], line 3" in text, text
    assert f"f  (In [{executed.cells[0].execution_count}], line 4)" in text, text


def test_output_flag_shows_the_report_once_as_the_cell_value(executed: Any) -> None:
    cell = executed.cells[3]
    reports = [o for o in cell.outputs if "tracewatch ·" in o.get("data", {}).get("text/plain", "")]
    assert [o.output_type for o in reports] == ["execute_result"], cell.outputs
    assert reports[0].execution_count == cell.execution_count
    assert "text/html" in reports[0].data
    html = reports[0].data["text/html"]
    assert re.search(rf"In \[{cell.execution_count}\]", html), "the HTML names the cell too"


def test_output_flag_with_a_broken_budget_displays_then_fails(executed: Any) -> None:
    cell = executed.cells[4]
    kinds = [o.output_type for o in cell.outputs]
    reports = [o for o in cell.outputs if "tracewatch ·" in o.get("data", {}).get("text/plain", "")]
    assert [o.output_type for o in reports] == ["display_data"], kinds
    assert kinds[-1] == "error" and cell.outputs[-1].ename == "TraceBudgetExceeded", kinds


def test_the_cells_value_is_its_execute_result(executed: Any) -> None:
    cell = executed.cells[5]
    results = [o for o in cell.outputs if o.output_type == "execute_result"]
    assert [o.data["text/plain"] for o in results] == ["42"], cell.outputs
    assert results[0].execution_count == cell.execution_count


def test_a_syntax_error_fails_the_cell_as_unwatched(executed: Any) -> None:
    cell = executed.cells[6]
    assert [o.output_type for o in cell.outputs] == ["error"], cell.outputs
    error = cell.outputs[0]
    shown = re.sub(r"\x1b\[[0-9;]*m", "", "\n".join(error.traceback))
    assert error.ename == "SyntaxError"
    assert f"Cell In[{cell.execution_count}], line 3" in shown, shown
    assert "_magic.py" not in shown and "Traceback" not in shown, shown


def test_a_rerun_definition_cell_is_said_to_be_one(executed: Any) -> None:
    text = "".join(_texts(executed.cells[11]))
    assert "new-function-object" in text, text
    assert "re-running the cell that defines loss_at made a new tf.function" in text, text
    assert "loss_at = tf.function(loss_at)" not in text and "suggested fix" not in text, text
