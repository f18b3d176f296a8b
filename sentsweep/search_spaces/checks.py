"""A space's entries checked against the method's typed config before Ray starts.

Each entry must name a field of the config; a sampled range must suit the field's type (``uniform`` on an integer
field is refused) and its ends must be values the field accepts (``lr: {uniform: [0, 1e-4]}`` is refused when lr
must be above 0); every choice, grid value, fixed value and condition value must be one the field accepts (a
pooling outside its allowed values is refused). A failure is a :class:`~.sampling.SpaceSyntaxError` naming the entry.
Numbers YAML reads as text (``1e-5``) become numbers here.
"""

from __future__ import annotations

import functools
import types
import typing
from dataclasses import replace
from typing import Annotated, Any, Literal

from pydantic import BaseModel, TypeAdapter, ValidationError
from pydantic.fields import FieldInfo

from sentsweep.errors import near_name
from sentsweep.search_spaces.sampling import RANGE_KINDS, Bound, Param, SpaceSyntaxError
from sentsweep.search_spaces.yaml_space import SpaceDefinition


def config_fields(config_cls: type[BaseModel]) -> dict[str, FieldInfo]:
    """The fields of ``config_cls`` by the names YAML uses (``lambda`` for ``lambda_``)."""
    return {info.alias or name: info for name, info in config_cls.model_fields.items()}


@functools.cache
def _adapter(config_cls: type[BaseModel], name: str) -> TypeAdapter[Any]:
    info = config_fields(config_cls)[name]
    return TypeAdapter(Annotated[info.annotation, *info.metadata]) if info.metadata else TypeAdapter(info.annotation)


def field_types(annotation: Any) -> set[type]:
    """The Python types a field's annotation admits (through Optional, unions, Annotated and Literal)."""
    origin = typing.get_origin(annotation)
    if origin is Annotated:
        return field_types(typing.get_args(annotation)[0])
    if origin is Literal:
        return {type(v) for v in typing.get_args(annotation)}
    if origin in (typing.Union, types.UnionType):
        return set().union(*(field_types(a) for a in typing.get_args(annotation)))
    return {annotation} if isinstance(annotation, type) else set()


def accepted(config_cls: type[BaseModel], name: str, value: Any, where: str, what: str) -> Any:
    """``value`` as field ``name`` of ``config_cls`` accepts it (text spelling a number becomes the number)."""
    try:
        checked = _adapter(config_cls, name).validate_python(value)
    except ValidationError as exc:
        reason = exc.errors()[0]["msg"]
        raise SpaceSyntaxError(where, f"{what} {value!r} is refused by {config_cls.__name__}.{name}: "
                               f"{reason}") from None
    return checked if isinstance(value, str) and isinstance(checked, int | float) else value


def check_definition(definition: SpaceDefinition, config_cls: type[BaseModel]) -> SpaceDefinition:
    """``definition`` with every entry, the first point's values and the presets checked against ``config_cls``
    (see the module docstring); numbers written as text made numbers."""
    fields = config_fields(config_cls)
    checked: list[Param] = []
    for param in definition.params:
        if param.name not in fields:
            near = near_name(param.name, fields)
            hint = f"; did you mean '{near}'?" if near else " (docs/configuration.md lists them)"
            raise SpaceSyntaxError(param.name, f"not a field of {config_cls.__name__}{hint}")
        later = {p.name for p in definition.params[len(checked):]}
        checked.append(_check_param(param, checked, later, config_cls))
    by_name = {p.name: p for p in checked}
    first = {name: _preset_value(by_name, config_cls, name, value, f"first_point.{name}")
             for name, value in definition.first_point.items()}
    extras = tuple({name: _preset_value(by_name, config_cls, name, value, f"extra_points[{i}].{name}")
                    for name, value in point.items()} for i, point in enumerate(definition.extra_points))
    return SpaceDefinition(tuple(checked), first, extras)


def _preset_value(params: dict[str, Param], config_cls: type[BaseModel], name: str, value: Any, where: str) -> Any:
    param = params.get(name)
    if param is None or param.fixed:
        raise SpaceSyntaxError(where, f"'{name}' is not sampled by this space; set it in the space as a fixed value")
    return accepted(config_cls, name, value, where, "value")


def _check_param(param: Param, before: list[Param], later: set[str], config_cls: type[BaseModel]) -> Param:
    name = param.name
    when = tuple((field, _condition_values(field, allowed, param, before, later, config_cls))
                 for field, allowed in param.when)
    if param.kind not in RANGE_KINDS:
        what = "value" if param.fixed else f"{param.kind} value"
        values = tuple(accepted(config_cls, name, v, name, what) for v in param.values)
        read = [_adapter(config_cls, name).validate_python(v) for v in values]
        for n, value in enumerate(values):  # two spellings of one value (a view pair) would double its chance
            if read[n] in read[:n]:
                raise SpaceSyntaxError(name, f"{values[read.index(read[n])]!r} and {value!r} are one value of "
                                       f"{config_cls.__name__}.{name}: list it once")
        return replace(param, values=values, when=when)
    kinds = field_types(config_fields(config_cls)[name].annotation)
    if param.kind != "randint" and float not in kinds:
        raise SpaceSyntaxError(name, f"{param.kind} samples floats, and {config_cls.__name__}.{name} is not a float "
                               "setting: use randint, choice or grid")
    if param.kind == "randint" and not kinds & {int, float}:
        raise SpaceSyntaxError(name, f"randint samples integers, and {config_cls.__name__}.{name} is not a number")
    low, high = (_check_bound(b, end, param, before, config_cls) for b, end in ((param.low, "lower"),
                                                                               (param.high, "upper")))
    return replace(param, low=low, high=high, when=when)


def _check_bound(bound: Bound | None, end: str, param: Param, before: list[Param],
                 config_cls: type[BaseModel]) -> Bound:
    """A range's end: a number the field accepts (randint's upper end is excluded: its last value is checked), or an
    earlier sampled number plus an offset, whose own range shifted by the offset the field accepts."""
    assert bound is not None
    what = f"{param.kind}'s {end} bound"
    if bound.param is None:
        value = bound.number - 1 if param.kind == "randint" and end == "upper" else bound.number
        accepted(config_cls, param.name, int(value) if param.kind == "randint" else value, param.name, what)
        return bound
    ref = next((p for p in before if p.name == bound.param), None)
    if ref is None or ref.kind not in RANGE_KINDS:
        raise SpaceSyntaxError(param.name, f"{what} names '{bound.param}', which is not a range sampled before it")
    for ref_end in (ref.low, ref.high):
        if ref_end is not None and ref_end.param is None:
            accepted(config_cls, param.name, ref_end.number + bound.offset, param.name, what)
    other = param.high if end == "lower" else param.low
    if ref.high is not None and ref.high.param is None and other is not None and other.param is None \
            and end == "lower" and not ref.high.number + bound.offset < other.number:
        raise SpaceSyntaxError(param.name, f"{what} {bound} can reach its upper bound {other}")
    return bound


def _condition_values(field: str, allowed: tuple[Any, ...], param: Param, before: list[Param], later: set[str],
                      config_cls: type[BaseModel]) -> tuple[Any, ...]:
    """A condition's values: those of an earlier entry, or values the (unsampled) field accepts."""
    where = f"{param.name}.when.{field}"
    if field not in config_fields(config_cls):
        raise SpaceSyntaxError(where, f"not a field of {config_cls.__name__}")
    ref = next((p for p in before if p.name == field), None)
    if ref is None and field in later:
        raise SpaceSyntaxError(where, f"'{field}' must come before {param.name} in the space")
    values = tuple(accepted(config_cls, field, v, where, "value") for v in allowed)
    if ref is not None and ref.kind not in RANGE_KINDS:
        outside = [v for v in values if not ref.holds(v, {})]
        if outside:
            raise SpaceSyntaxError(where, f"{outside[0]!r} is not among {field}'s values {list(ref.values)}")
    return values

