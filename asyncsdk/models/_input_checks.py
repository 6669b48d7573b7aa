"""What an input model checks when it is built: every field against its annotation.

Each field's check is chosen from its annotation once per class (``field_checks``) among
the value checks of ``_checks`` (text, int, bool, Decimal, date, the ``Annotated``
markers), the code lists (a documented code of *that* list), the free-form JSON values,
lists of those, and nested models (an instance of the class). A check returns the value,
normalised (a plain int becomes its code), or raises ``Refused``; ``check_fields`` turns
that into ``InvalidInputError`` naming the field (``emaillist[2].mobile``) and what is
allowed. A required text field (one that cannot be left ``UNSET``) must not be blank:
``""`` or white space alone is that field left out. Plain functions picked by type:
reading and writing JSON is the one converter's job (``_convert``), checking a caller's
values is this module's.
"""

from __future__ import annotations

import datetime as dt
import enum
import typing
from collections.abc import Callable, Mapping
from collections.abc import Sequence as SequenceABC
from decimal import Decimal
from typing import Any

import attrs

from .._checks import (
    Marker,
    Refused,
    bool_value,
    date_value,
    decimal_value,
    int_value,
    refuse,
    text_value,
)
from .._errors import InvalidInputError
from ._json_values import json_dict_value, json_value
from ._vocabulary import DATE_ISO, DATETIME_ISO, UNSET, is_any, split_optional
from .codes import OpenIntEnum, is_known

__all__ = ["check_fields", "check_for", "field_checks"]

#: A value check: the value (normalised), or ``Refused``.
Check = Callable[[Any], Any]

#: The checks of plain types; a subclass gets its nearest base's (``bool`` before ``int``).
_LEAVES: dict[type, Check] = {
    str: text_value, int: int_value, bool: bool_value, Decimal: decimal_value,
    dt.date: date_value, dt.datetime: date_value,
}


def check_for(tp: Any) -> Check:
    """The check of a value annotated ``tp`` (without ``None``/``UNSET``).

    Raises:
        TypeError: no check is known for ``tp`` (a model annotated with a new kind of
            type: give it one here).
    """
    origin = typing.get_origin(tp)
    if origin is typing.Annotated:
        return _annotated_check(tp)
    if origin in (list, tuple, typing.Sequence, SequenceABC):
        return _list_check(check_for(typing.get_args(tp)[0]))
    if tp is dict or origin in (dict, Mapping, typing.Mapping):
        return json_dict_value
    if is_any(tp):  # free-form fields (``tags``, ``attributes``): any JSON value
        return json_value
    if isinstance(tp, type):
        return _class_check(tp)
    raise TypeError(f"no input check for the annotation {tp!r}")


def _class_check(cls: type) -> Check:
    if issubclass(cls, OpenIntEnum):
        return lambda value: _code_check(value, cls)
    if attrs.has(cls):
        return _instance_check(cls)
    for base in cls.__mro__:
        leaf = _LEAVES.get(base)
        if leaf is not None:
            return leaf
    raise TypeError(f"no input check for the class {cls.__name__}")


def _annotated_check(tp: Any) -> Check:
    base, *extras = typing.get_args(tp)
    first = check_for(base)
    markers = [m.check for m in extras if isinstance(m, Marker)]

    def check(value: Any) -> Any:
        value = first(value)
        for marker in markers:
            value = marker(value)
        return value

    return check


def _list_check(item: Check) -> Check:
    def check(value: Any) -> list[Any]:
        if not isinstance(value, (list, tuple)):
            raise Refused("a list", value)
        out = []
        for i, v in enumerate(value):
            try:
                out.append(item(v))
            except Refused as no:
                raise Refused(no.allowed, no.value, f"[{i}]{no.path}") from None
        return out

    return check


def _instance_check(model: type) -> Check:
    def check(value: Any) -> Any:
        if not isinstance(value, model):
            raise Refused(f"a {model.__name__}", value)
        return value

    return check


def _code_ranges(values: list[int]) -> str:
    """'2-60, 62-64' for a sorted list of codes."""
    runs: list[list[int]] = []
    for v in values:
        if runs and v == runs[-1][1] + 1:
            runs[-1][1] = v
        else:
            runs.append([v, v])
    return ", ".join(str(a) if a == b else f"{a}-{b}" for a, b in runs)


_CODE_TEXT: dict[type, tuple[str, dict[int, Any]]] = {}


def _code_check(value: Any, enum_cls: type[enum.IntEnum]) -> enum.IntEnum:
    """A documented code of ``enum_cls``: its member, or the plain int of one."""
    described = _CODE_TEXT.get(enum_cls)
    if described is None:
        members = sorted(enum_cls, key=int)
        if len(members) <= 8:
            allowed = ", ".join(f"{m.value} ({m.name})" for m in members)
        else:
            codes = _code_ranges([m.value for m in members])
            allowed = f"{codes} (see asyncsdk.{enum_cls.__name__})"
        described = _CODE_TEXT[enum_cls] = (f"{enum_cls.__name__} code {allowed}",
                                            {m.value: m for m in members})
    allowed, by_value = described
    if isinstance(value, enum.Enum):  # another list's member, or an unknown code
        if type(value) is enum_cls and is_known(value):
            return value
        raise Refused(allowed, value)
    member = by_value.get(value) if type(value) is int else None
    if member is None:
        raise Refused(allowed, value)
    return member  # type: ignore[no-any-return]


#: A field's check: (name, check of its value, accepts None, accepts UNSET).
FieldCheck = tuple[str, Check, bool, bool]
_PLANS: dict[type, list[FieldCheck]] = {}


def field_checks(cls: type) -> list[FieldCheck]:
    """The checks of every field of input model ``cls``, found once."""
    plan = _PLANS.get(cls)
    if plan is None:
        hints = typing.get_type_hints(cls, include_extras=True)
        plan = []
        date_check = _date_check(getattr(cls, "_date_format", DATE_ISO))
        for field in attrs.fields(cls):
            inner, nullable, unsettable = split_optional(hints[field.name])
            check = date_check if inner in (dt.date, dt.datetime) else check_for(inner)
            plan.append((field.name, check, nullable, unsettable))
        _PLANS[cls] = plan
    return plan


def _date_check(date_format: str) -> Check:
    """The check of a date field of a model whose dates go out in ``date_format``: a
    ``datetime.date`` (a ``datetime`` is one too), kept as it is sent, so that the model
    reads back equal from its ``to_dict()``: without the time where the format has
    none; where it has one (``DATETIME_ISO``), to the second and without a zone (the
    wall-clock time written), and a time of midnight as its date."""
    def as_sent(value: Any) -> dt.date:
        day = date_value(value)
        if not isinstance(day, dt.datetime):
            return day
        if date_format != DATETIME_ISO:
            return day.date()
        wall = day.replace(microsecond=0, tzinfo=None)
        return wall.date() if wall.time() == dt.time() else wall

    return as_sent


def check_fields(model: Any) -> None:
    """Check every field of ``model`` (an attrs instance, frozen: a normalised value is
    set back with ``object.__setattr__``).

    Raises:
        InvalidInputError: a value is refused; the error names the field (and the place
            inside it) and what is allowed.
    """
    for name, check, nullable, unsettable in field_checks(type(model)):
        value = getattr(model, name)
        if value is UNSET:
            if unsettable:
                continue
            raise InvalidInputError(f"{name}: a value is required", field=name)
        if value is None:
            if nullable:
                continue
            raise InvalidInputError(f"{name}: must not be None", field=name)
        try:
            value_checked = check(value)
        except Refused as no:
            raise refuse(name + no.path, no.allowed, no.value) from None
        if not unsettable and isinstance(value_checked, str) and not value_checked.strip():
            # A required text left blank is a required field left out: the service
            # would answer "Required parameter missing or invalid" after the request.
            raise refuse(name, "a non-blank text (the field is required)", value)
        if value_checked is not value:
            object.__setattr__(model, name, value_checked)  # normalised (int -> code)
