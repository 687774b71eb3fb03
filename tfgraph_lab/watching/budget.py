"""Trace budgets (``--max-traces N`` / ``--max-traces FN=N``): parsing and checking.

Pure: no TensorFlow, no IPython. ``N`` applies to every user function (framework functions
only when named or when ``include_framework`` is set); ``FN=N`` applies to the function whose
label or Python qualname is ``FN`` or ends with ``.FN`` (a label also with ``· FN``: ``fit ·
train step`` for Keras's ``sequential · fit · train step``; see ``model.records.name_match``). The same budgets count XLA compilations
(``--max-xla-compiles``, ``measure="xla_compiles"``): there a plain ``N`` also covers
TensorFlow's and Keras's own functions, because Keras's XLA train step is one of them.
"""

from __future__ import annotations

import difflib
import unicodedata
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field

from ..model.errors import UsageProblem
from ..model.records import FunctionSummary, name_match

__all__ = ["TraceBudget"]


@dataclass(frozen=True)
class TraceBudget:
    """How many traces each function may make during a watch."""

    default: int | None = None
    per_function: Mapping[str, int] = field(default_factory=dict)
    include_framework: bool = False
    measure: str = "traces"  # the FunctionSummary count it limits: "traces" or "xla_compiles"

    @classmethod
    def parse(
        cls,
        value: TraceBudget | int | str | Sequence[str] | Mapping[str, int] | None,
        measure: str = "traces",
    ) -> TraceBudget | None:
        """Build a budget from ``3``, ``"3"``, ``"train_step=1"``, a list of those, or a dict."""
        if value is None or isinstance(value, TraceBudget):
            return value
        flag = _FLAGS[measure]
        name = flag.strip("-").replace("-", "_")
        if isinstance(value, bool):
            raise UsageProblem(f"{name} must be a number or FN=N, got {value!r}")
        if isinstance(value, int):
            return cls(
                default=_non_negative(value, name, flag),
                measure=measure,
                include_framework=measure == "xla_compiles",
            )
        if isinstance(value, str):
            return cls._from_items([value], measure)
        if isinstance(value, Mapping):
            limits = {str(k): _non_negative(v, str(k), flag) for k, v in value.items()}
            return cls(per_function=limits, measure=measure, include_framework=measure == "xla_compiles")
        if isinstance(value, Iterable):
            return cls._from_items(list(value), measure)
        raise UsageProblem(f"{name} must be a number or FN=N, got {value!r}")

    @classmethod
    def _from_items(cls, items: list[object], measure: str = "traces") -> TraceBudget:
        flag = _FLAGS[measure]
        default: int | None = None
        per_function: dict[str, int] = {}
        for item in items:
            text = str(item).strip()
            if "=" in text:
                name, _, number = text.partition("=")
                name = name.strip()
                if not name:
                    raise UsageProblem(
                        f"{flag} {text!r}: the function name before '=' is empty; "
                        f"write FN=N, e.g. {flag} train_step=1"
                    )
                per_function[name] = _parse_count(number, text, flag)
            else:
                if default is not None:
                    raise UsageProblem(
                        f"{flag} given two plain numbers ({default} and {text}); give one "
                        "number for every function and FN=N for single functions"
                    )
                default = _parse_count(text, text, flag)
        return cls(
            default=default,
            per_function=per_function,
            measure=measure,
            include_framework=measure == "xla_compiles",
        )

    def limit_for(self, qualname: str, framework: bool, label: str = "") -> int | None:
        """The budget of the function ``qualname``/``label`` (a name that matches exactly wins)."""
        named = [(name_match(name, qualname, label), limit) for name, limit in self.per_function.items()]
        best = max(named, default=(0, 0))
        if best[0]:
            return best[1]
        if framework and not self.include_framework:
            return None
        return self.default

    def overruns(self, functions: Iterable[FunctionSummary]) -> list[tuple[str, int, int]]:
        """``(label, count, budget)`` for every function over budget (count: its traces, or
        its XLA compilations for an XLA budget)."""
        out = []
        for fn in functions:
            if fn.wraps and self.measure == "traces":
                continue  # a graph TF built around fn.wraps: not a trace of the user's function
            limit = self.limit_for(fn.qualname, fn.framework, fn.label)
            count = fn.xla_compiles if self.measure == "xla_compiles" else fn.traces
            if limit is not None and count > limit:
                out.append((fn.label, count, limit))
        return out

    def unknown_names(self, functions: Iterable[FunctionSummary]) -> list[str]:
        """A warning for every ``FN=N`` that names no function of ``functions`` (a typo, a
        full-width or zero-width character): such a budget is never applied, so a CI gate built
        on it would pass silently. Each names the closest function seen (difflib), as pytest
        names the closest marker."""
        named = [(f.qualname, f.label) for f in functions]
        names = sorted({n for q, label in named for n in (label, q.rsplit(".", 1)[-1])})
        out = []
        for name, limit in self.per_function.items():
            if any(name_match(name, q, label) for q, label in named):
                continue
            plain = _plain(name)
            text = f"{_FLAGS[self.measure]} {name!r}={limit} names no function this watch saw, so it was never applied"
            if plain != name:
                text += " (the name holds full-width or invisible characters)"
            close = difflib.get_close_matches(plain, names, n=1, cutoff=0.6)
            if close:
                text += f"; did you mean {close[0]!r}?"
            elif names:
                text += f"; functions seen: {', '.join(names[:5])}{', …' if len(names) > 5 else ''}"
            out.append(text)
        return out

    def describe(self) -> str:
        parts = [] if self.default is None else [f"{self.default} per function"]
        parts += [f"{name}={n}" for name, n in self.per_function.items()]
        return ", ".join(parts) or "none"


_FLAGS = {"traces": "--max-traces", "xla_compiles": "--max-xla-compiles"}
_INVISIBLE = dict.fromkeys(map(ord, "\u200b\u200c\u200d\u2060\ufeff\u00ad"))


def _plain(name: str) -> str:
    """``name`` as it was meant: full-width letters folded (NFKC), zero-width characters gone."""
    return unicodedata.normalize("NFKC", name).translate(_INVISIBLE).strip()


def _parse_count(number: str, whole: str, flag: str = "--max-traces") -> int:
    try:
        value = int(number.strip())
    except ValueError:
        raise UsageProblem(
            f"{flag} {whole!r}: {number.strip()!r} is not a whole number; "
            f"write N or FN=N, e.g. {flag} 2 or {flag} train_step=1"
        ) from None
    return _non_negative(value, whole, flag)


def _non_negative(value: object, what: str, flag: str = "--max-traces") -> int:
    if not isinstance(value, int) or isinstance(value, bool) or value < 0:
        raise UsageProblem(f"{flag} {what}: expected a whole number >= 0, got {value!r}")
    return value
