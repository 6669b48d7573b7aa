"""The model vocabulary: ``UNSET``, the date formats, ``InputModel`` and ``ResponseModel``.

* An **input model** checks itself when constructed: every field against its annotation
  (``_checks`` holds the rules; a cattrs converter of value checks dispatches them by
  type), so a bad value raises ``InvalidInputError`` naming the field and what is
  allowed, before any request exists. A plain ``int`` given for a code list becomes its
  member; a member of another code list (``industry=Rating.ACTIVE``) or a code the list
  does not know is refused.
* A **response model** keeps the keys it does not know in ``extra`` (the service may add
  fields). Reading one from JSON is the converter's job (``_serde.converter``).

Dates: each input model names how its dates go on the wire (``_date_format``):
``DATE_DMY`` (contact create), ``DATETIME_ISO`` (contact update), ``DATE_ISO`` (default,
invoices).
"""

from __future__ import annotations

import datetime as dt
import enum
import types
import typing
from collections.abc import Callable, Mapping
from collections.abc import Sequence as SequenceABC
from decimal import Decimal
from typing import TYPE_CHECKING, Any, ClassVar, Final, Union

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
from .codes import OpenIntEnum, is_known

if TYPE_CHECKING:
    import cattrs

__all__ = [
    "DATETIME_ISO",
    "DATE_DMY",
    "DATE_ISO",
    "UNSET",
    "InputModel",
    "ResponseModel",
    "UnsetType",
    "is_any",
    "split_optional",
]

DATE_DMY: Final = "%d-%m-%Y"
DATE_ISO: Final = "%Y-%m-%d"
DATETIME_ISO: Final = "%Y-%m-%dT%H:%M:%S"


class UnsetType(enum.Enum):
    """Type of ``UNSET``: the value of a field that is left out of the request body."""

    UNSET = "UNSET"

    def __repr__(self) -> str:
        return "UNSET"

    def __bool__(self) -> bool:
        return False


#: A field left out of the body entirely (``None`` is sent as JSON null).
UNSET: Final = UnsetType.UNSET


def split_optional(tp: Any) -> tuple[Any, bool, bool]:
    """(inner type, accepts None, accepts UNSET) of an annotation."""
    origin = typing.get_origin(tp)
    if origin is Union or origin is types.UnionType:
        args = typing.get_args(tp)
        rest = [a for a in args if a not in (type(None), UnsetType)]
        inner = rest[0] if len(rest) == 1 else Union[tuple(rest)]  # noqa: UP007
        return inner, type(None) in args, UnsetType in args
    return tp, False, False


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


def _list_check(converter: cattrs.Converter, item: Any) -> Callable[[Any, Any], Any]:
    def check(value: Any, _: Any) -> list[Any]:
        if not isinstance(value, (list, tuple)):
            raise Refused("a list", value)
        out = []
        for i, v in enumerate(value):
            try:
                out.append(converter.structure(v, item))
            except Refused as no:
                raise Refused(no.allowed, no.value, f"[{i}]{no.path}") from None
        return out

    return check


def _annotated_check(converter: cattrs.Converter, tp: Any) -> Callable[[Any, Any], Any]:
    base, *extras = typing.get_args(tp)
    markers = [m for m in extras if isinstance(m, Marker)]

    def check(value: Any, _: Any) -> Any:
        value = converter.structure(value, base)
        for marker in markers:
            value = marker.check(value)
        return value

    return check


def _instance_check(model: type) -> Callable[[Any, Any], Any]:
    def check(value: Any, _: Any) -> Any:
        if not isinstance(value, model):
            raise Refused(f"a {model.__name__}", value)
        return value

    return check


def is_any(tp: Any) -> bool:
    """True for ``Any`` and ``object``: annotations that take any value."""
    return tp is Any or tp is object


def _is_list(tp: Any) -> bool:
    return typing.get_origin(tp) in (list, tuple, typing.Sequence, SequenceABC)


def _is_dict(tp: Any) -> bool:
    return tp is dict or typing.get_origin(tp) in (dict, Mapping, typing.Mapping)


def _is_annotated(tp: Any) -> bool:
    origin: Any = typing.get_origin(tp)
    return origin is typing.Annotated


def _make_checker() -> cattrs.Converter:
    """A cattrs converter whose structure hooks are the value checks of ``_checks``:
    cattrs does the dispatch by annotation; each hook returns the (normalised) value or
    raises ``Refused``."""
    import cattrs

    checker = cattrs.Converter()

    def leaf(check: Callable[[Any], Any]) -> Callable[[Any, Any], Any]:
        return lambda value, _: check(value)

    for tp, check in ((str, text_value), (int, int_value), (bool, bool_value),
                      (Decimal, decimal_value), (dt.date, date_value),
                      (dt.datetime, date_value)):
        checker.register_structure_hook(tp, leaf(check))
    # Free-form fields (``tags``, ``attributes``) take any value JSON can carry.
    checker.register_structure_hook_func(is_any, leaf(json_value))
    checker.register_structure_hook_func(_is_dict, leaf(json_dict_value))
    # A class hook: more specific than int's, so code lists get theirs.
    checker.register_structure_hook(OpenIntEnum, _code_check)
    checker.register_structure_hook_factory(
        lambda tp: isinstance(tp, type) and attrs.has(tp), _instance_check)
    checker.register_structure_hook_factory(
        _is_list, lambda tp: _list_check(checker, typing.get_args(tp)[0]))
    checker.register_structure_hook_factory(
        _is_annotated, lambda tp: _annotated_check(checker, tp))
    return checker


_checker: cattrs.Converter | None = None
_PLANS: dict[type, list[tuple[str, Any, bool, bool]]] = {}


def _plan(cls: type) -> list[tuple[str, Any, bool, bool]]:
    hints = typing.get_type_hints(cls, include_extras=True)
    return [(a.name, *split_optional(hints[a.name])) for a in attrs.fields(cls)]


class InputModel:
    """Base of the models sent to the service: checks every field when constructed."""

    __slots__ = ()
    #: How dates of this model go on the wire.
    _date_format: ClassVar[str] = DATE_ISO

    def __attrs_post_init__(self) -> None:
        global _checker
        cls = type(self)
        plan = _PLANS.get(cls)
        if plan is None:
            plan = _PLANS[cls] = _plan(cls)
        checker = _checker
        if checker is None:
            checker = _checker = _make_checker()
        for name, inner, nullable, unsettable in plan:
            value = getattr(self, name)
            if value is UNSET:
                if unsettable:
                    continue
                raise InvalidInputError(f"{name}: a value is required", field=name)
            if value is None:
                if nullable:
                    continue
                raise InvalidInputError(f"{name}: must not be None", field=name)
            try:
                value_checked = checker.structure(value, inner)
            except Refused as no:
                raise refuse(name + no.path, no.allowed, no.value) from None
            if value_checked is not value:
                object.__setattr__(self, name, value_checked)  # normalised (int -> code)


@attrs.frozen(kw_only=True)
class ResponseModel:
    """Base of the models read from the service. ``extra`` keeps the keys the model does
    not know (the service may add fields)."""

    # Left out of the hash (a dict cannot be hashed), so a model is hashable; still
    # compared by ``==``.
    extra: Mapping[str, Any] = attrs.field(factory=dict, hash=False)

