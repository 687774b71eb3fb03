"""JSON version 1's schema (tfgraph_lab.report.schema) against what the records actually write.

The schema is written by hand (its types, floors and required fields say more than the records'
annotations), so it is checked here, field by field, against the writers: every record of
``tfgraph_lab.model.records`` and every ``to_dict`` of the report is built twice from its
dataclass fields alone (``_build``: once with every optional field set, so that every field a
``to_dict`` writes only sometimes is written; once bare), and the documents they write are walked
alongside the schema (``drift``). A field written that the schema does not list, a field listed
that nothing writes, a value of a type the schema does not allow and a ``null`` the schema allows
but nothing writes are each a failure, so a new field cannot be added to one side only. Then
real reports, made by TensorFlow in this process, by ``tfgraph-lab run`` and by the magic, must
pass ``first_problem`` and list no field the schema does not know.
"""

from __future__ import annotations

import dataclasses
import functools
import inspect
import json
import sys
import threading
import types
import typing
from collections.abc import Callable, Iterator, Mapping
from pathlib import Path
from typing import Any

import pytest

from tfgraph_lab.model import records
from tfgraph_lab.model.records import (
    CallEdit,
    CallRun,
    CallSite,
    Event,
    FixPlan,
    FunctionSummary,
    GraphSummary,
    Reason,
)
from tfgraph_lab.model.view import ViewOptions
from tfgraph_lab.report import TraceReport
from tfgraph_lab.report.merge import MergedReport, ProcessCounts, merge_reports
from tfgraph_lab.report.schema import SCHEMA, first_problem

KNOWN = Path(__file__).parents[1] / "data" / "known_report.json"

# Fields the schema lets be null though no writer writes null: their writers leave the field out
# instead, and from_dict reads a null as the field left out (None), so a null is harmless.
NULL_MEANS_ABSENT = {
    "event": {"error", "caller", "thread", "signature", "start", "call_number", "process"},
    "run": {"start", "thread", "process"},
    "report": {"compare_eager"},
}

# Where each writer's dict sits in the schema. Every class with a to_dict in the model's records
# and in the report's modules must be here (test_every_writer_is_checked) or in NOT_IN_THE_REPORT.
WRITERS: dict[type[Any], str] = {
    FixPlan: "fix_plan",
    CallEdit: "call_edit",
    Reason: "reason",
    GraphSummary: "graph",
    FunctionSummary: "function",
    Event: "event",
    CallRun: "run",
    CallSite: "call_site",
    ProcessCounts: "process.functions",
    TraceReport: "report",
    MergedReport: "report",
}
NOT_IN_THE_REPORT = {"FixTrial": "a fix trial's own data (try_fix), never part of a report's JSON"}


# ------------------------------------------------------------------------------------- building
def _value(hint: Any, full: bool, path: str) -> Any:
    """A value of type ``hint``: non-empty, non-null and true when ``full``, else the emptiest."""
    origin, args = typing.get_origin(hint), typing.get_args(hint)
    if origin in (typing.Union, types.UnionType):
        kinds = [a for a in args if a is not type(None)]
        if len(kinds) != 1:
            raise TypeError(f"{path}: no rule to build a {hint}")
        return _value(kinds[0], full, path) if full else None
    if hint is bool:
        return full
    if hint is int:
        return 2 if full else 0
    if hint is float:
        return 0.5 if full else 0.0
    if hint is str:
        return "x" if full else ""
    if origin is tuple and len(args) == 2 and args[1] is Ellipsis:
        item = args[0]
        if dataclasses.is_dataclass(item):  # a nested record: one, full or bare, so it is written
            return (_build(item, full),)  # type: ignore[arg-type]
        return (_value(item, full, path),) if full else ()
    if origin is tuple:
        return tuple(_value(a, full, path) for a in args)
    if dataclasses.is_dataclass(hint):
        return _build(hint, full)  # type: ignore[arg-type]
    raise TypeError(f"{path}: no rule to build a {hint}; teach tests/report/test_schema.py::_value")


BUILT: set[type] = set()


def _build(cls: type, full: bool, **overrides: Any) -> Any:
    """An instance of the dataclass ``cls`` made from its fields alone. ``full``: every field set
    (an optional one to a value, a flag true, a tuple to one item); bare: required fields empty,
    the others at their defaults, tuples of records with one bare record."""
    BUILT.add(cls)
    hints = typing.get_type_hints(cls, vars(sys.modules[cls.__module__]))
    values = {}
    for f in dataclasses.fields(cls):  # type: ignore[arg-type]
        if f.name in overrides:
            values[f.name] = overrides[f.name]
            continue
        hint = hints[f.name]
        has_default = f.default is not dataclasses.MISSING or f.default_factory is not dataclasses.MISSING
        nested = typing.get_origin(hint) is tuple and any(
            dataclasses.is_dataclass(a) for a in typing.get_args(hint)
        )
        if full or not has_default or nested:
            values[f.name] = _value(hint, full, f"{cls.__name__}.{f.name}")
    return cls(**values)


def _report(full: bool) -> TraceReport:
    # a merged report writes processes (below); the view is how it shows itself, never written
    extra: dict[str, Any] = {"processes": (), "view": ViewOptions.everything() if full else ViewOptions()}
    if full:
        extra |= {"compare_eager": _compare_eager()[0], "labels": {"cell.py": "In [3]"}}
    else:
        extra |= {"compare_eager": None, "labels": {}}
    return _build(TraceReport, full, **extra)  # type: ignore[no-any-return]


@functools.cache
def _compare_eager() -> list[dict[str, Any]]:
    """What ``%%tracewatch --compare-eager`` writes, made by the magic's own code (with a run
    that succeeds and one whose re-run fails); a stand-in of its documented keys without IPython."""
    try:
        pytest.importorskip("IPython")
        pytest.importorskip("tensorflow")
        from tfgraph_lab.faces.magic import TraceWatchMagics
    except pytest.skip.Exception:
        return [{"graph_seconds": 0.5, "eager_seconds": 0.5, "graph_runs": [0.5], "eager_runs": [0.5],
                 "rerun_failed": "eager", "rerun_error": "ValueError: boom"}]  # fmt: skip

    from tfgraph_lab.trial.state import UserState

    def fails(*_: object) -> float:
        raise ValueError("boom")

    start = UserState({})  # the state each re-run starts from: nothing here
    ok = TraceWatchMagics._compare_runs(types.SimpleNamespace(_timed=lambda *_: 0.01), None, 0.02, start)  # type: ignore[arg-type]
    failed = TraceWatchMagics._compare_runs(types.SimpleNamespace(_timed=fails), None, 0.02, start)  # type: ignore[arg-type]
    return [{**ok, **failed}, ok, failed]


def _documents() -> dict[str, dict[str, Any]]:
    """What the writers write, full and bare: the report, a merged report, each record alone."""
    docs: dict[str, dict[str, Any]] = {}
    for full in (True, False):
        label = "full" if full else "bare"
        report = _report(full)
        merged = MergedReport(report, ("a.json",), (_build(ProcessCounts, full, process="a.json"),))
        docs[f"report ({label})"] = report.to_dict()
        docs[f"merged report ({label})"] = merged.to_dict()
        # a report's call sites are read from its events; built alone too, full and bare
        docs[f"call site ({label})"] = {"version": 1, "call_sites": [_build(CallSite, full).to_dict()]}
    docs["empty report"] = TraceReport().to_dict()
    for i, timings in enumerate(_compare_eager()):
        docs[f"report with compare_eager #{i}"] = TraceReport(compare_eager=timings).to_dict()
    return docs


# ------------------------------------------------------------------------------------ the check
def _kind(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, int):
        return "integer"
    if isinstance(value, float):
        return "number"
    for kind, name in ((str, "string"), (list, "array"), (dict, "object")):
        if isinstance(value, kind):  # vocab members are str
            return name
    raise TypeError(f"not a JSON value: {value!r}")


def _resolve(schema: Mapping[str, Any]) -> tuple[str | None, Mapping[str, Any]]:
    if "$ref" in schema:
        name = schema["$ref"].rsplit("/", 1)[1]
        return name, SCHEMA["$defs"][name]
    return None, schema


def _walk(value: Any, schema: Mapping[str, Any], where: str, path: str, seen: dict[str, dict[str, set[str]]],
          unknown: list[str]) -> None:  # fmt: skip
    """Note, per object of the schema (``where``: its $defs name or a dotted place), the fields
    written and the kinds of their values; list the paths of fields the schema does not know."""
    name, schema = _resolve(schema)
    where = name or where
    if isinstance(value, dict) and "properties" in schema:
        fields = seen.setdefault(where, {})
        for key, item in value.items():
            fields.setdefault(key, set()).add(_kind(item))
            if key in schema["properties"]:
                _walk(item, schema["properties"][key], f"{where}.{key}", f"{path}.{key}", seen, unknown)
            elif "additionalProperties" not in schema:
                unknown.append(f"{path}.{key}")
    if isinstance(value, list) and "items" in schema:
        for i, item in enumerate(value):
            _walk(item, schema["items"], where, f"{path}[{i}]", seen, unknown)


def _objects(schema: Mapping[str, Any], where: str) -> Iterator[tuple[str, Mapping[str, Any]]]:
    """Every object of the schema that lists fields, by the name _walk gives it."""
    if "properties" in schema:
        yield where, schema
        for key, sub in schema["properties"].items():
            if "$ref" not in sub:
                yield from _objects(sub, f"{where}.{key}")
    if "items" in schema and "$ref" not in schema["items"]:
        yield from _objects(schema["items"], where)


def _kinds(schema: Mapping[str, Any]) -> set[str]:
    _, schema = _resolve(schema)
    if "const" in schema:
        return {_kind(schema["const"])}
    kinds = schema.get("type", ())
    return {kinds} if isinstance(kinds, str) else set(kinds)


def drift(documents: Mapping[str, Mapping[str, Any]], schema: Mapping[str, Any] = SCHEMA) -> list[str]:
    """Every disagreement between the documents (what the writers wrote) and the schema."""
    problems = [f"{label}: {p}" for label, doc in documents.items() if (p := first_problem(doc, schema))]
    seen: dict[str, dict[str, set[str]]] = {}
    unknown: list[str] = []
    for doc in documents.values():
        _walk(doc, schema, "report", "$", seen, unknown)
    problems += [f"{path}: written, but the schema does not list it" for path in dict.fromkeys(unknown)]
    places = [*_objects(schema, "report")]
    places += [p for name, sub in schema["$defs"].items() for p in _objects(sub, name)]
    for where, obj in places:
        written = seen.get(where, {})
        for key, sub in obj["properties"].items():
            if key not in written:
                problems.append(f"{where}.{key}: the schema lists it, but nothing writes it")
                continue
            kinds = written[key] | ({"number"} if "integer" in written[key] else set())
            for extra in sorted(_kinds(sub) - kinds):
                if extra == "null" and key in NULL_MEANS_ABSENT.get(where, ()):
                    continue
                problems.append(f"{where}.{key}: the schema allows {extra}, but it is only written as "
                                f"{' or '.join(sorted(written[key]))}")  # fmt: skip
    return problems


# ------------------------------------------------------------------------------------- the tests
def test_the_schema_lists_exactly_what_the_writers_write() -> None:
    assert drift(_documents()) == []


def test_every_writer_is_checked() -> None:
    """Each class with a to_dict in the records and the report's modules is built by _documents."""
    import tfgraph_lab.report.fix_trial
    import tfgraph_lab.report.merge
    import tfgraph_lab.report.trace_report

    BUILT.clear()
    _documents()
    modules = (
        records,
        tfgraph_lab.report.trace_report,
        tfgraph_lab.report.merge,
        tfgraph_lab.report.fix_trial,
    )
    writers = {
        cls
        for module in modules
        for _, cls in inspect.getmembers(module, inspect.isclass)
        if cls.__module__ == module.__name__ and "to_dict" in vars(cls)
    }
    unchecked = {cls.__name__ for cls in writers - set(WRITERS)} - set(NOT_IN_THE_REPORT)
    assert not unchecked, f"add them to WRITERS (and to the schema): {sorted(unchecked)}"
    assert set(WRITERS) - {MergedReport, TraceReport} <= BUILT  # each was built, so it wrote its fields


def test_a_field_added_to_a_to_dict_only_is_reported(monkeypatch: pytest.MonkeyPatch) -> None:
    for cls in WRITERS:
        if cls in (TraceReport, MergedReport):
            continue
        original = cls.to_dict

        def with_new_field(self: Any, original: Callable[[Any], dict[str, Any]] = original) -> dict[str, Any]:
            return {**original(self), "new_field": 1}

        monkeypatch.setattr(cls, "to_dict", with_new_field)
        problems = drift(_documents())
        assert any(p.endswith(".new_field: written, but the schema does not list it") for p in problems), (
            cls,
            problems,
        )
        monkeypatch.setattr(cls, "to_dict", original)
    original_report = TraceReport.to_dict
    monkeypatch.setattr(TraceReport, "to_dict", lambda self: {**original_report(self), "new_top": []})
    assert "$.new_top: written, but the schema does not list it" in drift(_documents())


def test_a_field_the_writers_dropped_or_retyped_is_reported(monkeypatch: pytest.MonkeyPatch) -> None:
    original = GraphSummary.to_dict
    monkeypatch.setattr(
        GraphSummary, "to_dict", lambda self: {k: v for k, v in original(self).items() if k != "scope"}
    )
    assert drift(_documents()) == ["graph.scope: the schema lists it, but nothing writes it"]
    monkeypatch.setattr(GraphSummary, "to_dict", lambda self: {**original(self), "hits": str(self.hits)})
    problems = drift(_documents())
    assert any("$.functions[0].graphs[0].hits: expected a whole number >= 0, got '2'" in p for p in problems)
    assert "graph.hits: the schema allows integer, but it is only written as string" in problems


def test_a_null_the_schema_allows_but_nobody_writes_is_reported() -> None:
    schema = json.loads(json.dumps(SCHEMA))
    schema["$defs"]["graph"]["properties"]["signature"] = {"type": ["string", "null"]}
    assert drift(_documents(), schema) == [
        "graph.signature: the schema allows null, but it is only written as string"
    ]


def test_a_field_of_the_schema_only_is_reported() -> None:
    schema = json.loads(json.dumps(SCHEMA))
    schema["$defs"]["event"]["properties"]["gone"] = {"type": "string"}
    schema["properties"]["gone_too"] = {"type": "string"}
    problems = drift(_documents(), schema)
    assert "event.gone: the schema lists it, but nothing writes it" in problems
    assert "report.gone_too: the schema lists it, but nothing writes it" in problems


def test_the_fields_found_missing_from_the_schema_are_there() -> None:
    """The drift issue 31 found: these were written but not in the schema."""
    defs = SCHEMA["$defs"]
    assert {"xla_compiles_kind", "xla_compiles_exact"} <= set(defs["function"]["properties"])
    assert "retraces" in defs["event"]["properties"]
    assert "labels" in SCHEMA["properties"]
    assert {"graph_runs", "eager_runs", "rerun_failed"} <= set(defs["compare_eager"]["properties"])


def test_the_schema_is_a_valid_json_schema_and_agrees_with_jsonschema() -> None:
    jsonschema = pytest.importorskip("jsonschema")
    jsonschema.Draft202012Validator.check_schema(SCHEMA)
    validator = jsonschema.Draft202012Validator(SCHEMA)
    for label, doc in _documents().items():
        assert validator.is_valid(doc), label
    bad_label = {"version": 1, "labels": {"cell.py": 3}}
    assert first_problem(bad_label) == "$.labels['cell.py']: expected a string, got 3"
    assert not validator.is_valid(bad_label)


def test_the_public_paths_and_version_stay() -> None:
    import tfgraph_lab.report_schema as public

    assert public.SCHEMA is SCHEMA and public.first_problem is first_problem
    assert SCHEMA["properties"]["version"] == {"const": 1}
    assert first_problem({"version": 2}) == "$.version: expected 1, got 2"


# ------------------------------------------------------------------------- real reports written
def _fits(data: dict[str, Any]) -> None:
    assert first_problem(data) is None, first_problem(data)
    unknown: list[str] = []
    _walk(data, SCHEMA, "report", "$", {}, unknown)
    assert unknown == [], unknown


def test_the_known_report_fits() -> None:
    data = json.loads(KNOWN.read_text())
    _fits(data)
    _fits(TraceReport.from_dict(data).to_dict())


@pytest.mark.slow
@pytest.mark.usefixtures("small_call_log")
def test_reports_tensorflow_made_fit_merged_too() -> None:
    tf = pytest.importorskip("tensorflow")
    import tfgraph_lab

    @tf.function
    def step(x: Any, scale: float) -> Any:
        return x * scale

    @tf.function
    def broken(x: Any) -> Any:
        raise ValueError("boom")

    @tf.function(jit_compile=True)
    def jitted(x: Any) -> Any:
        return tf.tanh(x) * 2.0

    with tfgraph_lab.watch() as w:
        for n in (2, 3, 2, 4):
            step(tf.ones([n]), 0.5)
        step(tf.ones([2]), 0.25)  # a Python float: a new graph, its fix plans
        for _ in range(200):  # cached calls, summarised into runs
            step(tf.ones([2]), 0.5)
        with pytest.raises(ValueError):
            broken(tf.ones([1]))
        for n in (3, 5, 3):
            jitted(tf.ones([n]))
        worker = threading.Thread(target=lambda: step(tf.ones([7]), 0.5), name="worker-1")
        worker.start()
        worker.join()
        tf.config.run_functions_eagerly(True)
        try:
            step(tf.ones([2]), 0.5)
        finally:
            tf.config.run_functions_eagerly(False)
    report = w.report
    data = report.to_dict()
    assert data["summarised_runs"] and any(e.get("xla_compiled") for e in data["events"])
    assert any(r.get("fix_plans") for e in data["events"] for r in e["reasons"])
    assert any("retraces" in e for e in data["events"])
    _fits(data)
    _fits(TraceReport.from_json(report.to_json()).to_dict())
    merged = merge_reports([("a.json", report), ("b.json", TraceReport.from_json(report.to_json()))])
    _fits(merged.to_dict())
    _fits(merged.report.to_dict())


@pytest.mark.slow
def test_a_report_tfgraph_lab_run_wrote_fits_with_exact_xla_counts(tmp_path: Path) -> None:
    pytest.importorskip("tensorflow")
    from _cli import run_cli

    script = tmp_path / "jit.py"
    script.write_text(
        "import tensorflow as tf\n"
        "step = tf.function(lambda x: x * 2.0, jit_compile=True)\n"
        "for n in (3, 4, 3):\n    step(tf.ones([n]))\n"
    )
    out = tmp_path / "r.json"
    done = run_cli("run", "-q", "--json", str(out), str(script), cwd=tmp_path)
    assert done.returncode == 0, done.stderr[-2000:]
    data = json.loads(out.read_text())
    kinds = {f["xla_compiles_kind"] for f in data["functions"] if f["xla_compiles"]}
    assert kinds == {"exact"}, data["functions"]  # tfgraph-lab run reads TF's compile log
    _fits(data)
    merged = tmp_path / "merged.json"
    done = run_cli("report", str(out), str(out), "--json", str(merged), cwd=tmp_path)
    assert done.returncode == 0, done.stderr[-2000:]
    _fits(json.loads(merged.read_text()))


SHELL_SETUP = (
    "import tensorflow as tf\n@tf.function\ndef f(x):\n    return x + 1\n"  # the `shell` fixture runs it
)


@pytest.mark.slow
def test_a_report_the_magic_wrote_fits_with_compare_eager_and_labels(shell: Any, tmp_path: Path) -> None:
    path = tmp_path / "r.json"
    result = shell.run_cell(
        f"%%tracewatch -q --compare-eager --json {path}\nf(tf.ones([3]))\nf(tf.ones([4]))\n"
    )
    assert result.success, result.error_in_exec
    data = json.loads(path.read_text())
    assert data["compare_eager"]["graph_runs"] and data["labels"], data
    _fits(data)
