"""One entry of a search space: a field of the method's config and how it is sampled, in Ray Tune's names.

=============================  ========================================================  ======================
YAML                           meaning                                                   Optuna suggestion
=============================  ========================================================  ======================
``{uniform: [lo, hi]}``        a float in [lo, hi]                                       ``suggest_float``
``{loguniform: [lo, hi]}``     a float in [lo, hi], uniform in log space (lo > 0)        ``suggest_float(log)``
``{quniform: [lo, hi, q]}``    a float in [lo, hi] on the grid lo, lo + q, ...           ``suggest_float(step)``
``{randint: [lo, hi]}``        an integer in [lo, hi) (hi excluded, as in Ray Tune)      ``suggest_int``
``{choice: [a, b, ...]}``      one of the values                                         ``suggest_categorical``
``{grid: [a, b, ...]}``        every value evaluated first, then searched as a choice    ``suggest_categorical``
plain value                    the field is fixed to it in every trial                   (none)
=============================  ========================================================  ======================

A numeric bound may name a parameter sampled before it, plus an offset: ``{loguniform: [alpha + 0.01, 2.0]}``
keeps beta above alpha in every trial. ``when: {FIELD: VALUE}`` (or a list of values) makes a parameter exist
only when another field, searched before it or fixed by the sweep, has that value.
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import optuna

#: The sampling names a space entry may use (Ray Tune's).
RANGE_KINDS = ("uniform", "loguniform", "quniform", "randint")
VALUE_KINDS = ("choice", "grid")
KINDS = RANGE_KINDS + VALUE_KINDS
#: A bound that names an earlier parameter: ``alpha`` or ``alpha + 0.01``.
_RELATIVE = re.compile(r"^\s*([A-Za-z_]\w*)\s*(?:([+-])\s*([0-9.eE+-]+))?\s*$")


class SpaceSyntaxError(ValueError):
    """A space entry that cannot be read; ``field`` is the entry's place (``lr``, ``first_point.lr``)."""

    def __init__(self, field: str, message: str) -> None:
        super().__init__(message)
        self.field = field


@dataclass(frozen=True)
class Bound:
    """A range's end: a number, or an earlier parameter's value plus ``offset``."""

    number: float | None = None
    param: str | None = None
    offset: float = 0.0

    def at(self, values: Mapping[str, Any]) -> float:
        """The bound's value once the parameters before it hold ``values``."""
        return float(self.number) if self.param is None else float(values[self.param]) + self.offset

    def __str__(self) -> str:
        if self.param is None:
            return f"{self.number:g}"
        return self.param if not self.offset else f"{self.param} {'+' if self.offset > 0 else '-'} {abs(self.offset):g}"


@dataclass(frozen=True)
class Param:
    """One field of the method's config: sampled (``kind`` in :data:`KINDS`) or fixed (``kind`` ``"fixed"``, its
    value in ``values[0]``), only where ``when`` holds (field, allowed values)."""

    name: str
    kind: str
    low: Bound | None = None
    high: Bound | None = None
    step: float | None = None
    values: tuple[Any, ...] = ()
    when: tuple[tuple[str, tuple[Any, ...]], ...] = ()

    @property
    def fixed(self) -> bool:
        return self.kind == "fixed"

    def applies(self, values: Mapping[str, Any], missing: Any = None) -> bool:
        """Whether the condition holds when the fields have ``values`` (a field absent there: ``missing``)."""
        return all(values.get(field, missing) in allowed for field, allowed in self.when)

    def suggest(self, trial: optuna.Trial, values: Mapping[str, Any]) -> Any:
        """The value Optuna suggests on ``trial``, the parameters before it holding ``values``."""
        if self.kind in VALUE_KINDS:
            return trial.suggest_categorical(self.name, list(self.values))
        low, high = self.low.at(values), self.high.at(values)  # type: ignore[union-attr]
        if self.kind == "randint":
            return trial.suggest_int(self.name, int(low), int(high) - 1)
        return trial.suggest_float(self.name, low, high, log=self.kind == "loguniform", step=self.step)

    def holds(self, value: Any, values: Mapping[str, Any]) -> bool:
        """Whether ``value`` is one this entry can give, the parameters before it holding ``values``."""
        if self.kind in VALUE_KINDS or self.fixed:
            return any(type(value) is type(v) and value == v for v in self.values) or (
                not isinstance(value, bool) and any(_same_number(value, v) for v in self.values))
        if isinstance(value, bool) or not isinstance(value, int | float):
            return False
        try:
            low, high = self.low.at(values), self.high.at(values)  # type: ignore[union-attr]
        except (KeyError, TypeError, ValueError):
            return False
        if self.kind == "randint":
            return float(value).is_integer() and low <= value < high
        if not low <= value <= high:
            return False
        return self.step is None or math.isclose((value - low) / self.step, round((value - low) / self.step),
                                                 abs_tol=1e-9)

    def describe(self) -> str:
        """The entry as a user wrote it (``loguniform [5e-06, 0.0001]``, ``fixed mean``), with its condition."""
        if self.fixed:
            text = f"fixed {self.values[0]!r}"
        elif self.kind in VALUE_KINDS:
            text = f"{self.kind} {list(self.values)}"
        else:
            text = f"{self.kind} [{self.low}, {self.high}" + (f", {self.step:g}" if self.step else "") + "]"
        for field, allowed in self.when:
            text += f" when {field} in {list(allowed)}" if len(allowed) > 1 else f" when {field} = {allowed[0]!r}"
        return text


def _same_number(a: Any, b: Any) -> bool:
    numbers = (int, float)
    return isinstance(a, numbers) and isinstance(b, numbers) and not isinstance(b, bool) and float(a) == float(b)


def number(raw: Any, field: str, what: str) -> float:
    """``raw`` as a finite float: YAML reads ``1e-5`` (no dot) as text, which is taken as the number it spells;
    ``.inf`` and ``.nan`` are refused (Optuna would sample infinities or fail in every trial)."""
    if isinstance(raw, bool):
        raise SpaceSyntaxError(field, f"{what} must be a number, got {raw!r}")
    try:
        value = float(raw) if isinstance(raw, int | float) else float(str(raw))
    except ValueError:
        raise SpaceSyntaxError(field, f"{what} must be a number, got {raw!r}") from None
    if not math.isfinite(value):
        raise SpaceSyntaxError(field, f"{what} must be a finite number, got {raw!r}")
    return value


def _bound(raw: Any, field: str, what: str) -> Bound:
    if isinstance(raw, str) and _RELATIVE.match(raw) and not _is_number(raw):
        name, sign, offset = _RELATIVE.match(raw).groups()  # type: ignore[union-attr]
        delta = number(offset, field, f"the offset of {what}") if offset else 0.0
        return Bound(param=name, offset=-delta if sign == "-" else delta)
    return Bound(number=number(raw, field, what))


def _is_number(text: str) -> bool:
    try:
        float(text)
    except ValueError:
        return False
    return True


def parse_entry(name: str, raw: Any) -> Param:
    """One entry of a space as written in YAML (see the module docstring); a :class:`SpaceSyntaxError` otherwise."""
    if not isinstance(raw, Mapping):
        return Param(name, "fixed", values=(raw,))
    entry = dict(raw)
    when = _condition(name, entry.pop("when", None))
    kinds = [k for k in entry if k in KINDS]
    unknown = [k for k in entry if k not in KINDS]
    if unknown or len(kinds) != 1:
        found = ", ".join(map(str, unknown or kinds)) or "nothing"
        raise SpaceSyntaxError(name, f"expected one of {', '.join(KINDS)} (and optionally when), got {found}")
    kind = kinds[0]
    args = entry[kind]
    if not isinstance(args, Sequence) or isinstance(args, str):
        raise SpaceSyntaxError(name, f"{kind} takes a list, got {args!r}")
    if kind in VALUE_KINDS:
        if not args:
            raise SpaceSyntaxError(name, f"{kind} needs at least one value")
        if not all(v is None or isinstance(v, bool | int | float | str) for v in args):
            raise SpaceSyntaxError(name, f"{kind} takes plain values (text, numbers, true/false, null), "
                                   f"got {list(args)}")
        if len({repr(v) for v in args}) != len(args):
            raise SpaceSyntaxError(name, f"{kind} lists a value twice: {list(args)}")
        return Param(name, kind, values=tuple(args), when=when)
    wanted = 3 if kind == "quniform" else 2
    if len(args) != wanted:
        shape = "[lo, hi, q]" if kind == "quniform" else "[lo, hi]"
        raise SpaceSyntaxError(name, f"{kind} takes {shape}, got {list(args)}")
    low, high = _bound(args[0], name, f"{kind}'s lower bound"), _bound(args[1], name, f"{kind}'s upper bound")
    step = number(args[2], name, "quniform's q") if kind == "quniform" else None
    if step is not None and step <= 0:
        raise SpaceSyntaxError(name, f"quniform's q must be above 0, got {step:g}")
    if low.param is None and high.param is None and not low.number < high.number:  # type: ignore[operator]
        raise SpaceSyntaxError(name, f"{kind}'s lower bound {low} must be below its upper bound {high}")
    if kind == "loguniform" and low.param is None and low.number <= 0:  # type: ignore[operator]
        raise SpaceSyntaxError(name, f"loguniform needs a lower bound above 0, got {low}")
    if kind == "randint" and not all(b.param is None and float(b.number).is_integer() for b in (low, high)):
        raise SpaceSyntaxError(name, f"randint takes two integers, got {list(args)}")
    return Param(name, kind, low=low, high=high, step=step, when=when)


def _condition(name: str, raw: Any) -> tuple[tuple[str, tuple[Any, ...]], ...]:
    if raw is None:
        return ()
    if not isinstance(raw, Mapping) or not raw:
        raise SpaceSyntaxError(name, f"when takes a mapping of FIELD: VALUE (or a list of values), got {raw!r}")
    return tuple((str(field), tuple(value) if isinstance(value, list | tuple) else (value,))
                 for field, value in raw.items())
