"""Trace budgets (``--max-traces N`` / ``--max-traces FN=N``): parsing and checking.

Pure: no TensorFlow, no IPython. ``N`` applies to every user function (framework functions
only when named or when ``include_framework`` is set); ``FN=N`` applies to the function whose
qualname is ``FN`` or ends with ``.FN``.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field

from .datatypes import FunctionSummary
from .errors import UsageProblem

__all__ = ["TraceBudget"]


@dataclass(frozen=True)
class TraceBudget:
    """How many traces each function may make during a watch."""

    default: int | None = None
    per_function: Mapping[str, int] = field(default_factory=dict)
    include_framework: bool = False

    @classmethod
    def parse(
        cls, value: TraceBudget | int | str | Sequence[str] | Mapping[str, int] | None
    ) -> TraceBudget | None:
        """Build a budget from ``3``, ``"3"``, ``"train_step=1"``, a list of those, or a dict."""
        if value is None or isinstance(value, TraceBudget):
            return value
        if isinstance(value, bool):
            raise UsageProblem(f"max_traces must be a number or FN=N, got {value!r}")
        if isinstance(value, int):
            return cls(default=_non_negative(value, "max_traces"))
        if isinstance(value, str):
            return cls._from_items([value])
        if isinstance(value, Mapping):
            return cls(per_function={str(k): _non_negative(v, str(k)) for k, v in value.items()})
        if isinstance(value, Iterable):
            return cls._from_items(list(value))
        raise UsageProblem(f"max_traces must be a number or FN=N, got {value!r}")

    @classmethod
    def _from_items(cls, items: list[object]) -> TraceBudget:
        default: int | None = None
        per_function: dict[str, int] = {}
        for item in items:
            text = str(item).strip()
            if "=" in text:
                name, _, number = text.partition("=")
                name = name.strip()
                if not name:
                    raise UsageProblem(
                        f"--max-traces {text!r}: the function name before '=' is empty; "
                        "write FN=N, e.g. --max-traces train_step=1"
                    )
                per_function[name] = _parse_count(number, text)
            else:
                if default is not None:
                    raise UsageProblem(
                        f"--max-traces given two plain numbers ({default} and {text}); give one "
                        "number for every function and FN=N for single functions"
                    )
                default = _parse_count(text, text)
        return cls(default=default, per_function=per_function)

    def limit_for(self, qualname: str, framework: bool) -> int | None:
        for name, limit in self.per_function.items():
            if qualname == name or qualname.endswith("." + name):
                return limit
        if framework and not self.include_framework:
            return None
        return self.default

    def overruns(self, functions: Iterable[FunctionSummary]) -> list[tuple[str, int, int]]:
        """``(qualname, traces, budget)`` for every function that traced more than allowed."""
        out = []
        for fn in functions:
            limit = self.limit_for(fn.qualname, fn.framework)
            if limit is not None and fn.traces > limit:
                out.append((fn.qualname, fn.traces, limit))
        return out

    def describe(self) -> str:
        parts = [] if self.default is None else [f"{self.default} per function"]
        parts += [f"{name}={n}" for name, n in self.per_function.items()]
        return ", ".join(parts) or "none"


def _parse_count(number: str, whole: str) -> int:
    try:
        value = int(number.strip())
    except ValueError:
        raise UsageProblem(
            f"--max-traces {whole!r}: {number.strip()!r} is not a whole number; "
            "write N or FN=N, e.g. --max-traces 2 or --max-traces train_step=1"
        ) from None
    return _non_negative(value, whole)


def _non_negative(value: object, what: str) -> int:
    if not isinstance(value, int) or isinstance(value, bool) or value < 0:
        raise UsageProblem(f"--max-traces {what}: expected a whole number >= 0, got {value!r}")
    return value
