"""The shape of JSON version 1 (docs/ARCHITECTURE.md, "JSON"), as a JSON Schema, and its check.

``SCHEMA`` is a JSON Schema (draft 2020-12) of what :meth:`TraceReport.to_dict` writes, merged
reports' ``processes`` included. Only the fields a reader needs are required; every field that is
there must have its documented type, and fields a reader does not know are allowed (the JSON only
ever gains fields). :func:`first_problem` checks a parsed document against it without a
dependency (the schema uses ``type``, ``const``, ``minimum``, ``required``, ``properties``,
``additionalProperties`` (for maps), ``items`` and ``$ref`` only; a test checks it agrees with
the ``jsonschema`` package) and names the first bad place as a path such as
``$.functions[0].qualname``. JSON numbers must be finite (``1e400`` parses as infinity) and at
most :data:`LARGEST` in size (``10**400`` written out parses as an exact int that no float holds:
the report's sums raised OverflowError). Pure: no TensorFlow, IPython or ipywidgets.

The fields are listed by hand (their types, floors and which are required are the schema's, not
the records'), and checked against the writers: tests/report/test_schema.py fails when a
``to_dict`` of the records (:mod:`tfgraph_lab.model.records`), of the report or of a merged
report, or the magic's ``--compare-eager`` timings, write a field this schema does not list, when
the schema lists one nothing writes, when a written value is not of the listed type, or when the
schema allows a null nothing writes.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

__all__ = ["LARGEST", "SCHEMA", "first_problem"]

#: The largest number a report holds: 2**53, the largest whole number every JSON reader
#: (JavaScript's included) reads exactly; more calls or seconds than that never happened.
LARGEST = 2**53

_STR = {"type": "string"}
_OPT_STR = {"type": ["string", "null"]}
_BOOL = {"type": "boolean"}
_COUNT = {"type": "integer", "minimum": 0}
_SECONDS = {"type": "number", "minimum": 0}
_OPT_NUMBER = {"type": ["number", "null"]}
_STRINGS = {"type": "array", "items": _STR}
_SECONDS_LIST = {"type": "array", "items": _SECONDS}


def _object(required: list[str], **properties: Any) -> dict[str, Any]:
    return {"type": "object", "required": required, "properties": properties}


# one call of the user's code as a call-site fix rewrites it (model.records.CallEdit): ``was``
# is the source from line:col to end_line:end_col (lines from 1, columns from 0, in characters)
_CALL_EDIT = _object(
    ["place", "line", "col", "end_line", "end_col", "was", "code"],
    place=_STR,
    where=_STR,
    line=_COUNT,
    col=_COUNT,
    end_line=_COUNT,
    end_col=_COUNT,
    was=_STR,
    code=_STR,
)
_FIX_PLAN = _object(
    [],
    decorator=_STR,
    call={"type": "array", "items": {"type": "array", "items": _STR}},
    hoist=_BOOL,
    graphs=_COUNT,
    promise=_STR,
    trade=_STR,
    note=_STR,
    # the user's calls that traced, rewritten; and which calls could not be, and why
    call_edits={"type": "array", "items": {"$ref": "#/$defs/call_edit"}},
    call_edits_note=_STR,
)
_REASON = _object(
    ["code"],
    code=_STR,
    # strings, never null: Reason.from_dict would read a null as the text "None"
    argument=_STR,
    before=_STR,
    after=_STR,
    message=_STR,
    fix=_STR,
    fix_plans={"type": "array", "items": {"$ref": "#/$defs/fix_plan"}},
)
_REASONS = {"type": "array", "items": {"$ref": "#/$defs/reason"}}
_GRAPH = _object(
    ["signature", "hits"],
    signature=_STR,
    hits=_COUNT,
    traced_in_watch=_BOOL,
    via=_STR,
    scope=_STR,
    generalised=_BOOL,
    function_object=_COUNT,  # present when the row's graphs come from more than one object
)
_FUNCTION = _object(
    ["qualname", "calls", "traces"],
    qualname=_STR,
    label=_STR,  # the name people read (added; reports saved before lack it)
    filename=_STR,
    firstlineno=_COUNT,
    calls=_COUNT,
    traces=_COUNT,
    failed_traces=_COUNT,
    trace_seconds=_SECONDS,
    call_seconds=_SECONDS,
    framework=_BOOL,
    graphs={"type": "array", "items": {"$ref": "#/$defs/graph"}},
    function_objects=_COUNT,
    objects_traced=_COUNT,
    traced_calls=_COUNT,
    retraces=_COUNT,
    eager_calls=_COUNT,
    reduce_retracing=_BOOL,
    input_signature=_OPT_STR,
    wasted_retraces=_COUNT,
    hints=_STRINGS,
    suggestion=_OPT_STR,
    nested_trace_seconds=_SECONDS,
    nested_framework_seconds=_SECONDS,
    wraps=_STR,
    jit_compile=_BOOL,
    xla_compiles=_COUNT,
    xla_estimated=_COUNT,
    # how xla_compiles was obtained: "exact" (TF's compile log), "at-least" or "about" (modelled),
    # "" (saved before it was recorded); xla_compiles_exact is kind == "exact"
    xla_compiles_kind=_STR,
    xla_compiles_exact=_BOOL,
    xla_seconds=_SECONDS,
    xla_cost_calls=_OPT_NUMBER,
    xla_slow_calls=_COUNT,
    xla_slow_seconds=_SECONDS,
)
_EVENT = _object(
    ["qualname", "traced"],
    index=_COUNT,
    qualname=_STR,
    label=_STR,  # the name people read (added; reports saved before lack it)
    filename=_STR,
    function_object=_COUNT,
    traced=_BOOL,
    traces=_COUNT,
    retraces=_COUNT,  # written for events that traced: how many of their graphs were retraces
    via=_STR,
    seconds=_SECONDS,
    graph={"type": ["integer", "null"], "minimum": 0},
    reasons=_REASONS,
    eager=_BOOL,
    failed_trace=_BOOL,
    wasted=_BOOL,
    began_before_watch=_BOOL,
    error=_OPT_STR,
    caller=_OPT_STR,
    thread=_OPT_STR,
    signature=_OPT_STR,
    start=_OPT_NUMBER,
    xla_compiled=_BOOL,
    xla_estimated=_BOOL,
    xla_reasons=_REASONS,
    call_number={"type": ["integer", "null"], "minimum": 1},
    process=_OPT_STR,
    inside=_STR,  # written only for a call made inside another's trace
)
_RUN = _object(
    ["first", "calls", "seconds", "max_seconds"],
    first=_COUNT,
    calls=_COUNT,
    seconds=_SECONDS,
    max_seconds=_SECONDS,
    functions=_STRINGS,
    start=_OPT_NUMBER,
    thread=_OPT_STR,
    process=_OPT_STR,
)
# one function called from one line of the user's code, the traces it caused and their cost
# (model.records.CallSite); caller "" when the place is not known
_CALL_SITE = _object(
    ["qualname", "caller", "traces", "retraces", "retrace_seconds"],
    qualname=_STR,
    label=_STR,
    filename=_STR,
    caller=_STR,
    traces=_COUNT,
    retraces=_COUNT,
    trace_seconds=_SECONDS,
    retrace_seconds=_SECONDS,
    codes=_STRINGS,
)
# --compare-eager's timings (the magic writes them): the watched run first in graph_runs
_COMPARE_EAGER = {
    **_object(
        [],
        graph_seconds=_SECONDS,
        eager_seconds=_SECONDS,
        graph_runs=_SECONDS_LIST,
        eager_runs=_SECONDS_LIST,
        rerun_failed=_STR,  # "eager" or "graph": the re-run that raised
        rerun_error=_STR,
    ),
    "type": ["object", "null"],
}
_PROCESS = _object(
    ["name"],
    name=_STR,
    functions={
        "type": "array",
        "items": _object(
            ["qualname"],
            qualname=_STR,
            label=_STR,
            filename=_STR,
            calls=_COUNT,
            traces=_COUNT,
            retraces=_COUNT,
            trace_seconds=_SECONDS,
            call_seconds=_SECONDS,
        ),
    },
)

SCHEMA: dict[str, Any] = {
    "$schema": "https://json-schema.org/draft/2020-12/schema",
    "title": "tfgraph_lab report, JSON version 1",
    **_object(
        ["version"],
        version={"const": 1},
        tf_version=_STR,
        seconds=_SECONDS,
        eager_calls=_COUNT,
        degraded=_STRINGS,
        budget=_OPT_STR,
        budget_warnings=_STRINGS,
        functions={"type": "array", "items": {"$ref": "#/$defs/function"}},
        events={"type": "array", "items": {"$ref": "#/$defs/event"}},
        events_summarised=_COUNT,
        summarised_runs={"type": "array", "items": {"$ref": "#/$defs/run"}},
        # per function and calling line: its traces and their cost, costliest retraces first
        call_sites={"type": "array", "items": {"$ref": "#/$defs/call_site"}},
        warnings=_STRINGS,
        compare_eager={"$ref": "#/$defs/compare_eager"},
        labels={"type": "object", "additionalProperties": _STR},  # {filename: "In [3]"}
        processes={"type": "array", "items": {"$ref": "#/$defs/process"}},
        watch_seconds=_SECONDS,  # the watch's own work, kept out of every trace's cost
    ),
    "$defs": {
        "fix_plan": _FIX_PLAN,
        "call_edit": _CALL_EDIT,
        "reason": _REASON,
        "graph": _GRAPH,
        "function": _FUNCTION,
        "event": _EVENT,
        "run": _RUN,
        "call_site": _CALL_SITE,
        "compare_eager": _COMPARE_EAGER,
        "process": _PROCESS,
    },
}

_JSON_TYPES = {"object": "an object", "array": "a list", "string": "a string", "integer": "a whole number"}
_JSON_TYPES.update({"number": "a number", "boolean": "true or false", "null": "null"})


def first_problem(data: Any, schema: Mapping[str, Any] = SCHEMA) -> str | None:
    """``None`` when ``data`` (parsed JSON) fits the schema, else the first bad path and why:
    ``$.functions[0].calls: expected a whole number >= 0, got 1e+400``."""
    return _check(data, schema, "$")


def _check(value: Any, schema: Mapping[str, Any], path: str) -> str | None:
    if "$ref" in schema:
        schema = SCHEMA["$defs"][schema["$ref"].rsplit("/", 1)[1]]
    if "const" in schema and (value != schema["const"] or isinstance(value, bool)):
        return f"{path}: expected {schema['const']!r}, got {_shown(value)}"
    if "type" in schema:
        kinds = [schema["type"]] if isinstance(schema["type"], str) else schema["type"]
        if not any(_is(value, kind) for kind in kinds):
            wanted = " or ".join(_JSON_TYPES[k] for k in kinds)
            floor = " >= 0" if schema.get("minimum") == 0 else ""
            return f"{path}: expected {wanted}{floor}, got {_shown(value)}"
    if _is(value, "number") and abs(value) > LARGEST:
        return f"{path}: expected a number of at most 2**53, got {_shown(value)}"
    if "minimum" in schema and _is(value, "number") and value < schema["minimum"]:
        return f"{path}: expected a value >= {schema['minimum']}, got {_shown(value)}"
    if isinstance(value, dict):
        for key in schema.get("required", ()):
            if key not in value:
                return f"{path}: the field {key!r} is missing"
        for key, sub in schema.get("properties", {}).items():
            if key in value:
                problem = _check(value[key], sub, f"{path}.{key}")
                if problem:
                    return problem
        if "additionalProperties" in schema:  # a map: every value not named in properties
            for key, item in value.items():
                if key not in schema.get("properties", {}):
                    problem = _check(item, schema["additionalProperties"], f"{path}[{key!r}]")
                    if problem:
                        return problem
    if isinstance(value, list) and "items" in schema:
        for i, item in enumerate(value):
            problem = _check(item, schema["items"], f"{path}[{i}]")
            if problem:
                return problem
    return None


def _is(value: Any, kind: str) -> bool:
    if kind == "null":
        return value is None
    if kind == "boolean":
        return isinstance(value, bool)
    if kind == "string":
        return isinstance(value, str)
    if kind == "object":
        return isinstance(value, dict)
    if kind == "array":
        return isinstance(value, list)
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return False
    if isinstance(value, float) and not math.isfinite(value):
        return False  # 1e400 parses as inf: no JSON number
    return kind == "number" or isinstance(value, int) or value.is_integer()


def _shown(value: Any) -> str:
    if isinstance(value, float) and not math.isfinite(value):
        return f"a number out of JSON's range (read as {value})"
    if isinstance(value, int) and not isinstance(value, bool) and abs(value) > LARGEST:
        return f"a number of {len(str(abs(value)))} digits"
    text = "null" if value is None else repr(value)  # repr: control characters written out
    return text if len(text) <= 60 else text[:59] + "…"
