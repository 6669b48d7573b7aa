"""The one converter of the package: a cattrs ``Converter`` with hooks for dates,
decimals, open code lists, ``UNSET``, ``extra`` and errors, made by ``make_converter``.

The model layer owns it: ``models._base`` makes the one instance at first use
(``get_converter``), given the two model bases it tells apart, and every model's
``to_dict()`` / ``from_dict()`` goes through it; ``_serde.converter`` reads the
service's answers with the same instance. This module knows no model class (the bases
are arguments), so the bases can import it without a circle.

Rules (DESIGN §2), each in exactly one place here:

* **Leaf hooks** (registered on the converter): text, ints, bools, ``Decimal`` and dates
  are read leniently (numbers sent as text, ``"yes"``/``1`` for true, dates in any of
  ``DATE_ISO``, ``DATE_DMY``, ``DATETIME_ISO``, and null/``''``); a code list decodes an
  unknown code to its *unknown value* (``asyncsdk.models.codes``). A value that cannot
  be read raises ``DecodeFailure`` (the transport turns it into ``ResponseDecodeError``
  holding the body; ``from_dict`` into ``InvalidInputError``).
* **Nullable fields** (``X | None``) get one hook of their own (a hook factory): null is
  None, a value of the JSON type the leaf hook returns unchanged is kept as it is, and
  anything else goes to the leaf hook: what cattrs' own optional handling reads (None,
  else the inner type's hook), in a single call per field.
* **Response models** get a structure function from ``cattrs.gen.make_dict_structure_fn``
  (``detailed_validation`` off, extra keys allowed; a field's metadata ``wire`` renames
  its key via ``override(rename=...)``), so every model is built by its own constructor.
  Unknown keys go through that constructor too: ``extra`` is renamed to a private key
  (``_EXTRA_KEY``) that a small wrapper adds, holding the unknown keys, to a copy of the
  answer only when it has some. On a failure the wrapper names the key that failed, so
  an error reads ``ContactList at $[0].emaillist[0].data[3].mobile: expected an
  integer, got str``.
* **Other models** (input models, outcomes, rows) are read back (``from_dict``) by a
  generated function too, strictly: a key that is no field of the model is refused, and
  the model's own checks (``InvalidInputError``) are named by the field they refused.
* **Input models** get an unstructure function from ``make_dict_unstructure_fn`` with an
  override per field: ``omit_if_default`` leaves ``UNSET`` fields out (every optional
  input field defaults to ``UNSET``); ``None`` is sent as null; ``Decimal`` as text with
  two places; dates in the model's ``_date_format``; the body key per ``wire``.
* **Out** (every model's ``to_dict()``): an input model as its body (above); a response
  model with its fields under their wire names (``make_dict_unstructure_fn``, ``extra``
  omitted) and the unknown keys of ``extra`` beside them, nested models alike, so that
  the dict reads back as an equal model; any other model by its field names. Any value:
  dates ISO, decimals as exact text, codes as their value, errors as
  ``"ClassName: text"`` (read back as that class of ``asyncsdk``'s errors).

cattrs is imported when the converter is made, not at ``import asyncsdk``.
"""

from __future__ import annotations

import datetime as dt
import enum
import re
import types
import typing
from collections.abc import Callable, Mapping
from decimal import Decimal, InvalidOperation
from typing import TYPE_CHECKING, Any, TypeVar

import attrs

from .._checks import in_cents
from .._errors import InvalidInputError, SDKError
from ._vocabulary import DATE_DMY, DATE_ISO, DATETIME_ISO, is_any, split_optional
from .codes import OpenIntEnum, OpenStrEnum

if TYPE_CHECKING:
    import cattrs

__all__ = [
    "READ_ERRORS",
    "DecodeFailure",
    "failing_index",
    "hook_of",
    "make_converter",
    "named_failure",
    "parse_bool",
    "parse_date",
    "parse_datetime",
    "parse_decimal",
    "parse_int",
    "parse_int_or_str",
    "parse_str",
    "read_back",
    "unreadable",
    "wire_key",
]

M = TypeVar("M")


class DecodeFailure(ValueError):
    """A value of an answer (or of a ``to_dict()`` form) could not be read as its
    field's type (internal): ``why``, and ``path`` to the value
    (``$[0].emaillist[0].data[3].mobile``), built from the inside out with ``within``."""

    def __init__(self, why: str, path: str = "") -> None:
        super().__init__(f"{path}: {why}" if path else why)
        self.why = why
        self.path = path

    def within(self, prefix: str) -> DecodeFailure:
        """The same failure, seen from ``prefix`` outwards (``.key`` or ``[index]``)."""
        return DecodeFailure(self.why, prefix + self.path)


#: What a failure to read an answer may raise besides ``DecodeFailure`` (a bug of a hook,
#: a nesting too deep): still reported as a ``DecodeFailure``, never a bare error.
READ_ERRORS = (TypeError, ValueError, KeyError, AttributeError, RecursionError)


def failing_index(read: Callable[[Any], Any], items: Any) -> str:
    """``[i]`` for the first of ``items`` that ``read`` refuses (called on a failure
    only, to name the place), else ``""``."""
    if isinstance(items, list):
        for i, item in enumerate(items):
            try:
                read(item)
            except READ_ERRORS:  # DecodeFailure is a ValueError
                return f"[{i}]"
    return ""


# --- Leaf decode hooks: (value, type) -> value, or DecodeFailure --------------------------
#: The largest integer every float below it holds exactly (2**53).
_EXACT_FLOAT_INT = float(2**53)
#: Integral text: one sign at most, ASCII digits (no "_" as ``int()`` takes), at most as
#: many as ``int()`` reads from text.
_INT_TEXT = re.compile(r"[+-]?[0-9]{1,4000}", re.ASCII)


def parse_int(value: Any, _: Any = int) -> int:
    """An int, or integral text or float ("12", 12.0)."""
    if isinstance(value, int) and not isinstance(value, bool):
        return value
    if isinstance(value, str):
        text = value.strip()
        if _INT_TEXT.fullmatch(text):
            return int(text)
    # An integral float only where floats hold every integer exactly: orjson reads an
    # integer beyond 64 bits as a float, which would give a rounded id, not an error.
    if isinstance(value, float) and value.is_integer() and abs(value) <= _EXACT_FLOAT_INT:
        return int(value)
    raise DecodeFailure(f"expected an integer, got {_not_an_int(value)}")


def _not_an_int(value: Any) -> str:
    """What ``parse_int`` was given instead: a fraction (``1.5``) is named as such, an
    integral float says why it is not taken (too large to be exact)."""
    if isinstance(value, float):
        if value.is_integer():
            return "a float too large to be exact"
        return f"{value!r:.40}, not a whole number"
    return type(value).__name__


def parse_str(value: Any, _: Any = str) -> str:
    """Text; a number becomes its text (zip codes arrive as numbers in some answers)."""
    if isinstance(value, str):
        return value
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return str(value)
    raise DecodeFailure(f"expected text, got {type(value).__name__}")


def parse_int_or_str(value: Any, _: Any = None) -> int | str | None:
    """For ``int | str`` fields: a number stays a number, text stays text (and null is
    None when the field is ``int | str | None``)."""
    if value is None or isinstance(value, str):
        return value
    return parse_int(value)


_TRUE = frozenset({"true", "1", "yes", "y"})
_FALSE = frozenset({"false", "0", "no", "n", ""})


def parse_bool(value: Any, _: Any = bool) -> bool:
    """A bool: true/false, 1/0, yes/no, y/n (text in any case), else ``DecodeFailure``."""
    if isinstance(value, bool):
        return value
    if isinstance(value, int) and value in (0, 1):
        return bool(value)
    if isinstance(value, str):
        low = value.strip().lower()
        if low in _TRUE:
            return True
        if low in _FALSE:
            return False
    raise DecodeFailure(f"expected true/false, got {value!r:.40}")


#: Decimal text as JSON writes numbers (and ``str()`` of a float): ASCII digits, one
#: sign, a point, an exponent. ``Decimal()`` takes more ("1_000", other scripts' digits).
_DECIMAL_TEXT = re.compile(r"[+-]?(?:[0-9]+\.?[0-9]*|\.[0-9]+)(?:[eE][+-]?[0-9]+)?", re.ASCII)


def parse_decimal(value: Any, _: Any = Decimal) -> Decimal:
    """A finite Decimal from a number or numeric text (lenient in: any places)."""
    if isinstance(value, (str, int, float)) and not isinstance(value, bool):
        try:
            text = value.strip() if isinstance(value, str) else str(value)
            number = Decimal(text) if _DECIMAL_TEXT.fullmatch(text) else None
        except (InvalidOperation, ValueError):  # an exponent beyond Decimal's, 10**5000
            number = None
        if number is not None and number.is_finite():
            return number
    raise DecodeFailure(f"expected a decimal number, got {value!r:.40}")


#: The wire formats, read by ``strptime`` where ``_ISO_DATE`` does not match them
#: (``DD-MM-YYYY``, and digits not zero-padded: ``2020-1-2``).
_DATE_FORMATS = (DATE_ISO, DATE_DMY, DATETIME_ISO)
#: An ISO 8601 date, or date-time (fractions of a second, a zone), as the service sends
#: them: the date, then the time's fields checked (not merely cut off) by ``_iso_date``.
_ISO_DATE = re.compile(
    r"([0-9]{4})-([0-9]{2})-([0-9]{2})"
    r"(?:[T ]([0-9]{2})(?::([0-9]{2})(?::([0-9]{2})(?:[.,][0-9]+)?)?)?"
    r"(?:Z|[+-]([0-9]{2})(?::?([0-9]{2}))?)?)?", re.ASCII)


def parse_date(value: Any, _: Any = dt.date) -> dt.date | None:
    """A date sent in any of the service's formats (a time part checked, then dropped);
    '' is None. Text that only begins like a date ("2020-01-02xyz", "2020-W01-1", a
    25th hour) is refused, not cut to the date it begins with."""
    if not isinstance(value, str):
        raise DecodeFailure(f"expected a date, got {type(value).__name__}")
    text = value.strip()
    if not text:
        return None
    iso = _ISO_DATE.fullmatch(text)
    day = _iso_date(iso) if iso is not None else _other_date(text)
    if day is None:
        raise DecodeFailure(
            f"expected a date (YYYY-MM-DD or DD-MM-YYYY), got {value!r:.40}")
    return day


def _iso_date(iso: re.Match[str]) -> dt.date | None:
    """The date of a match of ``_ISO_DATE``; None where a field is out of range."""
    year, month, day, hour, minute, second, zone_h, zone_m = (
        int(part or 0) for part in iso.groups())
    if hour > 23 or minute > 59 or second > 59 or zone_h > 23 or zone_m > 59:
        return None
    try:
        return dt.date(year, month, day)
    except ValueError:  # 2024-02-30
        return None


def _other_date(text: str) -> dt.date | None:
    if not text.isascii():  # strptime's digits are any script's
        return None
    for fmt in _DATE_FORMATS:
        try:
            return dt.datetime.strptime(text, fmt).date()
        except ValueError:
            continue
    return None


def parse_datetime(value: Any, _: Any = dt.datetime) -> dt.datetime | None:
    """A date-time in ISO form (``Z`` for UTC), or a date of ``parse_date`` at midnight."""
    if not isinstance(value, str):
        raise DecodeFailure(f"expected a date-time, got {type(value).__name__}")
    try:
        return dt.datetime.fromisoformat(value.strip().replace("Z", "+00:00"))
    except ValueError:
        day = parse_date(value)
        return None if day is None else dt.datetime.combine(day, dt.time())


#: Each open code list's members by (type, value) of their exact value, found once.
_MEMBERS: dict[type[enum.Enum], dict[tuple[type, Any], enum.Enum]] = {}


def _code_hook(value: Any, enum_cls: type[enum.Enum]) -> Any:
    """Open code lists: a known value becomes its member, an unknown one the enum's
    unknown value (``_missing_`` of the open enums in ``models.codes``). A member's
    exact value (of the member's own type) is looked up without calling the enum."""
    members = _MEMBERS.get(enum_cls)
    if members is None:
        members = _MEMBERS[enum_cls] = {(type(m.value), m.value): m for m in enum_cls}
    kind = value.__class__
    if kind is int or kind is str:  # a member's exact value (a list is not hashable)
        member = members.get((kind, value))
        if member is not None:
            return member
    if issubclass(enum_cls, int):
        return enum_cls(parse_int(value))
    # A text code list (a verdict, a state): a number is none of its codes, known or not
    # ("result": 5 is a success answer without a verdict). Blank text stays an unknown
    # value: a row of a result file may hold one, and its to_dict() must read back.
    if not isinstance(value, str):
        raise DecodeFailure(f"expected a {enum_cls.__name__} (text), got {value!r}")
    return enum_cls(value)


# --- Field hooks: made once per field type by the converter's hook factories ------------
def _nullable_hook(converter: cattrs.Converter, tp: Any) -> Callable[[Any, Any], Any]:
    """The hook of ``X | None``: None for null, else ``X``'s hook, which a value of
    exactly the JSON type it returns unchanged (``_AS_IS``) skips."""
    inner = split_optional(tp)[0]
    read = hook_of(converter, inner)
    kind = _AS_IS.get(inner)
    if kind is None:
        def read_nullable(value: Any, _: Any) -> Any:
            return None if value is None else read(value, inner)

        return read_nullable

    def read_nullable_as_is(value: Any, _: Any) -> Any:
        if value is None or value.__class__ is kind:
            return value
        return read(value, inner)

    return read_nullable_as_is


def _list_hook(converter: cattrs.Converter, tp: Any) -> Callable[[Any, Any], Any]:
    """The hook of ``list[X]``: a copy of a list of ``X``, its items each read by
    ``X``'s hook (a failure names the item)."""
    (item_type,) = typing.get_args(tp) or (Any,)
    if is_any(item_type):
        return _copied_list
    read = hook_of(converter, item_type)

    def read_list(value: Any, _: Any) -> list[Any]:
        if not isinstance(value, list):
            raise DecodeFailure(f"expected a list, got {type(value).__name__}")
        try:
            return [read(item, item_type) for item in value]
        except READ_ERRORS as exc:
            where = failing_index(lambda item: read(item, item_type), value)
            raise unreadable(exc).within(where) from None

    return read_list


def _copied_list(value: Any, _: Any) -> list[Any]:
    if not isinstance(value, list):
        raise DecodeFailure(f"expected a list, got {type(value).__name__}")
    return value[:]


def _dict_hook(value: Any, _: Any) -> dict[str, Any]:
    if not isinstance(value, dict):
        raise DecodeFailure(f"expected an object, got {type(value).__name__}")
    return value


def _any_hook(value: Any, _: Any) -> Any:
    return value


#: The leaf types whose hook returns a value of exactly that type unchanged, with it.
_AS_IS: dict[Any, type] = {str: str, int: int, bool: bool, dict[str, Any]: dict}


# --- Response models ---------------------------------------------------------------------
#: The key under which the wrapper hands the unknown keys of an answer to the generated
#: function (``extra`` renamed to it). An answer that sends this key itself has it kept
#: in ``extra`` like any other unknown key: the wrapper's value replaces it.
_EXTRA_KEY = "__asyncsdk_extra__"


def wire_key(field: attrs.Attribute[Any]) -> str:
    """The body key of a model field (its metadata ``wire``, else its name)."""
    key: str = field.metadata.get("wire", field.name)
    return key


def _response_hook(converter: cattrs.Converter, cls: type) -> Callable[[Any, Any], Any]:
    """cattrs' generated structure function of response model ``cls`` (``extra`` read
    from ``_EXTRA_KEY``; ``_model_reader.generated_reader``'s where it reads the model,
    else cattrs'), wrapped by ``_model_reader``."""
    from cattrs.gen import make_dict_structure_fn, override

    from ._model_reader import generated_reader

    fields = [a for a in attrs.fields(cls) if a.name != "extra"]
    generated = generated_reader(cls, hook_of=lambda tp: hook_of(converter, tp),
                                 key_of=wire_key, as_is=_AS_IS, is_nullable=_is_nullable,
                                 extra_key=_EXTRA_KEY)
    if generated is None:  # a model generated_reader does not read: cattrs' function
        overrides = {a.name: override(rename=wire_key(a)) for a in fields
                     if wire_key(a) != a.name}
        generated = make_dict_structure_fn(
            cls, converter, _cattrs_forbid_extra_keys=False,
            _cattrs_detailed_validation=False,
            extra=override(rename=_EXTRA_KEY, struct_hook=_any_hook),
            **overrides)  # type: ignore[arg-type]
    hints = typing.get_type_hints(cls)
    fields_read = [(wire_key(a), hook_of(converter, hints[a.name]), hints[a.name])
                   for a in fields]
    return _model_reader(cls, generated, fields_read)


def _model_reader(cls: type, generated: Callable[[Any, Any], Any],
                  fields: list[tuple[str, Callable[[Any, Any], Any], Any]],
                  ) -> Callable[[Any, Any], Any]:
    """A response model's hook: checks the answer is an object, adds its unknown keys
    under ``_EXTRA_KEY`` (to a copy) when it has any, and calls ``generated``; a
    failure is named by the key it happened at (``fields``: wire key, hook, type)."""
    known = frozenset(key for key, _, _ in fields)
    count = len(known)
    name = cls.__name__

    def read_model(data: Any, _: Any) -> Any:
        if not isinstance(data, dict):
            if data.__class__ is cls:  # decoded already, as it was parsed (big_json build)
                return data
            raise DecodeFailure(f"expected an object ({name}), got {type(data).__name__}")
        if len(data) > count or not known.issuperset(data):
            data = {**data, _EXTRA_KEY: {k: v for k, v in data.items() if k not in known}}
        try:
            return generated(data, cls)
        except READ_ERRORS as exc:
            raise _failure_at(exc, fields, data) from None

    return read_model


def _failure_at(exc: Exception,
                fields: list[tuple[str, Callable[[Any, Any], Any], Any]],
                data: dict[str, Any]) -> DecodeFailure:
    """What a model's generated function raised, as a failure named by the key it
    happened at (``fields``: wire key, hook, type): a required key missing, a value
    refused by its hook, or (an input model) a field refused by the model's own check."""
    if isinstance(exc, KeyError) and exc.args and any(
            key == exc.args[0] and key not in data for key, _, _ in fields):
        return DecodeFailure("missing (required)", f".{exc.args[0]}")
    if isinstance(exc, InvalidInputError):
        text, field = str(exc), exc.field
        if field and text.startswith(f"{field}: "):
            return DecodeFailure(text[len(field) + 2:], f".{field}")
        return DecodeFailure(text)
    return unreadable(exc).within(_failing_key(fields, data))


def unreadable(exc: Exception) -> DecodeFailure:
    """``exc`` as a ``DecodeFailure``: itself, or what any other error of a hook says
    (never a bare ``ValueError`` reaching the caller, and the place still named)."""
    if isinstance(exc, DecodeFailure):
        return exc
    return DecodeFailure(f"could not be read ({type(exc).__name__}: {exc!s:.80})")


def _failing_key(fields: list[tuple[str, Callable[[Any, Any], Any], Any]],
                 data: dict[str, Any]) -> str:
    """``.key`` of the first field whose hook refuses its value (called on a failure
    only, to name the place), else ``""``."""
    for key, read, tp in fields:
        if key in data:
            try:
                read(data[key], tp)
            except READ_ERRORS:
                return f".{key}"
    return ""


# --- Encoding hooks ----------------------------------------------------------------------


def _encode_decimal(value: Any) -> Any:
    if not isinstance(value, Decimal):
        return value
    # ``copy_abs`` of a zero: ``Decimal("-0")`` (or ``-0.001`` rounded) goes out as
    # "0.00", not "-0.00", which a strict reader of the amount may refuse.
    cents = in_cents(value)  # in the library's context, not the caller's
    return format(cents.copy_abs() if cents.is_zero() else cents, "f")


def _date_encoder(date_format: str) -> Callable[[Any], Any]:
    def encode_date(value: Any) -> Any:
        if not isinstance(value, dt.date):
            return value  # None
        if date_format == DATETIME_ISO and not isinstance(value, dt.datetime):
            value = dt.datetime.combine(value, dt.time())
        # The year as four digits, as the wire formats say: ``%Y`` is not zero-padded
        # below 1000 by every C library (glibc writes year 5 as "5").
        return value.strftime(date_format.replace("%Y", f"{value.year:04d}"))

    return encode_date


def _input_hook(converter: cattrs.Converter, cls: type) -> Callable[[Any], Any]:
    """cattrs' generated unstructure function of input model ``cls``, one override per
    field (see the module docstring)."""
    from cattrs.gen import make_dict_unstructure_fn, override

    hints = typing.get_type_hints(cls)
    date_format = getattr(cls, "_date_format", DATE_ISO)
    by_runtime_type = converter.unstructure  # lists, nested models, codes, plain values
    overrides = {}
    for a in attrs.fields(cls):
        inner = split_optional(hints[a.name])[0]
        hook: Callable[[Any], Any] = by_runtime_type
        if inner in (dt.date, dt.datetime):
            hook = _date_encoder(date_format)
        elif inner is Decimal:
            hook = _encode_decimal
        overrides[a.name] = override(rename=wire_key(a), omit_if_default=True,
                                     unstruct_hook=hook)
    return make_dict_unstructure_fn(cls, converter, **overrides)  # type: ignore[arg-type]


def _model_of(base: type) -> Callable[[Any], bool]:
    """The predicate of the attrs classes derived from ``base``."""
    return lambda tp: isinstance(tp, type) and issubclass(tp, base) and attrs.has(tp)


def _is_list(tp: Any) -> bool:
    return typing.get_origin(tp) in (list, typing.Sequence) or tp is list


def _is_dict(tp: Any) -> bool:
    return typing.get_origin(tp) in (dict, typing.Mapping) or tp is dict


def _is_nullable(tp: Any) -> bool:
    """``X | None`` of one type ``X`` (``int | str | None`` has its own hook)."""
    inner, nullable, _ = split_optional(tp)
    return nullable and typing.get_origin(inner) not in (typing.Union, types.UnionType)


def _is_int_or_str(tp: Any) -> bool:
    return set(typing.get_args(tp)) - {type(None)} == {int, str}


def _is_error(tp: Any) -> bool:
    return isinstance(tp, type) and issubclass(tp, BaseException)


def make_converter(*, input_model: type, response_model: type) -> cattrs.Converter:
    """The package's converter, made once by ``models._base.get_converter``:
    ``input_model`` and ``response_model`` are the bases of the models sent and of the
    models read (``InputModel``, ``ResponseModel``), each written and read by its own
    rules (the module docstring); any other attrs model by its field names."""
    import cattrs

    converter = cattrs.Converter(detailed_validation=False, forbid_extra_keys=False)
    _register_structure_hooks(converter, response_model)
    _register_unstructure_hooks(converter, input_model, response_model)
    return converter


def _register_structure_hooks(converter: cattrs.Converter, response_model: type) -> None:
    """Reading answers and ``to_dict()`` forms. Hooks registered later win over earlier
    ones that also match."""
    for tp, hook in ((int, parse_int), (str, parse_str), (bool, parse_bool),
                     (Decimal, parse_decimal), (dt.date, parse_date),
                     (dt.datetime, parse_datetime), (type(None), _none_hook)):
        converter.register_structure_hook(tp, hook)
    converter.register_structure_hook_func(is_any, _any_hook)
    converter.register_structure_hook_func(_is_dict, _dict_hook)
    converter.register_structure_hook_func(_is_error, _error_hook)
    # Class hooks, as for int and str above: the most specific class wins, so the open
    # code lists (int and str subclasses) get theirs.
    converter.register_structure_hook(OpenIntEnum, _code_hook)
    converter.register_structure_hook(OpenStrEnum, _code_hook)
    converter.register_structure_hook_factory(
        _is_list, lambda tp: _list_hook(converter, tp))
    converter.register_structure_hook_factory(
        _model_of(object), lambda cls: _strict_hook(converter, cls))
    converter.register_structure_hook_factory(
        _model_of(response_model), lambda cls: _response_hook(converter, cls))
    converter.register_structure_hook_factory(
        _is_nullable, lambda tp: _nullable_hook(converter, tp))
    converter.register_structure_hook_func(_is_int_or_str, parse_int_or_str)


def _register_unstructure_hooks(converter: cattrs.Converter, input_model: type,
                                response_model: type) -> None:
    """Output: exact text for decimals and ISO dates; input models override both per
    field with the wire formats; response models under their wire names, their
    ``extra`` beside the fields."""
    converter.register_unstructure_hook(Decimal, str)
    converter.register_unstructure_hook(dt.date, dt.date.isoformat)
    converter.register_unstructure_hook(dt.datetime, dt.datetime.isoformat)
    converter.register_unstructure_hook(OpenStrEnum, _text_of)  # a plain str, as sent
    converter.register_unstructure_hook_func(
        _is_error, lambda exc: f"{type(exc).__name__}: {exc}")
    converter.register_unstructure_hook_factory(
        _model_of(input_model), lambda cls: _input_hook(converter, cls))
    converter.register_unstructure_hook_factory(
        _model_of(response_model), lambda cls: _response_out_hook(converter, cls))


def _text_of(code: OpenStrEnum) -> str:
    return str(code.value)


def _response_out_hook(converter: cattrs.Converter, cls: type) -> Callable[[Any], Any]:
    """cattrs' generated unstructure function of response model ``cls``: its fields
    under their wire names, then the unknown keys it kept (``extra``)."""
    from cattrs.gen import make_dict_unstructure_fn, override

    renamed = {a.name: override(rename=wire_key(a)) for a in attrs.fields(cls)
               if a.name != "extra" and wire_key(a) != a.name}
    generated: Callable[[Any], dict[str, Any]] = make_dict_unstructure_fn(
        cls, converter, extra=override(omit=True), **renamed)  # type: ignore[arg-type]

    def out(model: Any) -> dict[str, Any]:
        known = generated(model)
        return {**known, **model.extra} if model.extra else known

    return out


# --- Reading a to_dict() form back: models other than responses, and errors -------------
def _strict_hook(converter: cattrs.Converter, cls: type) -> Callable[[Any, Any], Any]:
    """cattrs' generated structure function of ``cls`` (an input model, an outcome, a
    row), wrapped: the data must be an object whose every key is a field's (wire) key,
    and a failure, or a refusal of the model's own checks, names its key."""
    from cattrs.gen import make_dict_structure_fn, override

    fields = attrs.fields(cls)
    hints = typing.get_type_hints(cls)
    overrides = {a.name: override(rename=wire_key(a)) for a in fields
                 if wire_key(a) != a.name}
    if getattr(cls, "_date_format", None) == DATETIME_ISO:
        # Its dates were written with their time: read back with it (the model's check
        # makes a time of midnight its date again, as it made the date given).
        overrides.update({a.name: override(rename=wire_key(a), struct_hook=_date_time_hook)
                          for a in fields
                          if split_optional(hints[a.name])[0] in (dt.date, dt.datetime)})
    generated: Callable[[Any, Any], Any] = make_dict_structure_fn(
        cls, converter, _cattrs_forbid_extra_keys=False, _cattrs_detailed_validation=False,
        **overrides)  # type: ignore[arg-type]
    fields_read = [(wire_key(a), hook_of(converter, hints[a.name]), hints[a.name])
                   for a in fields]
    known = frozenset(key for key, _, _ in fields_read)
    name = cls.__name__
    allowed = ", ".join(key for key, _, _ in fields_read)  # what to write instead

    def read_strictly(data: Any, _: Any) -> Any:
        if not isinstance(data, dict):
            raise DecodeFailure(f"expected an object ({name}), got {type(data).__name__}")
        unknown = [key for key in data if key not in known]
        if unknown:
            raise DecodeFailure(f"not a field of {name} (its fields: {allowed})",
                                f".{unknown[0]}")
        try:
            return generated(data, cls)
        except READ_ERRORS as exc:  # InvalidInputError is a ValueError
            raise _failure_at(exc, fields_read, data) from None

    return read_strictly


def _date_time_hook(value: Any, _: Any) -> dt.datetime | None:
    return None if value is None else parse_datetime(value)


def _none_hook(value: Any, _: Any) -> None:
    if value is not None:
        raise DecodeFailure(f"expected null, got {type(value).__name__}")


def _error_classes() -> dict[str, type[SDKError]]:
    """asyncsdk's errors (``SDKError`` and the classes below it) by name."""
    found: dict[str, type[SDKError]] = {}
    todo = [SDKError]
    while todo:
        cls = todo.pop()
        if cls.__module__ == SDKError.__module__:
            found[cls.__name__] = cls
            todo += cls.__subclasses__()
    return found


def _error_hook(value: Any, _: Any) -> SDKError:
    """An error as ``to_dict()`` writes it, ``"ClassName: text"``, as that class of
    asyncsdk's errors made from the text (what ``str()`` of it gave; its other
    attributes are not written, so not read). A class that needs more than a text
    (``JobFailedError``), or a name that is none of them, gives an ``SDKError`` of the
    whole value."""
    if not isinstance(value, str):
        raise DecodeFailure(f"expected an error as text, got {type(value).__name__}")
    name, sep, text = value.partition(": ")
    cls = _error_classes().get(name) if sep else None
    if cls is None:
        return SDKError(value)
    try:
        return cls(text)
    except TypeError:  # a keyword the class requires
        return SDKError(value)


def hook_of(converter: cattrs.Converter, tp: Any) -> Callable[[Any, Any], Any]:
    """The converter's structure hook for ``tp`` (called as ``hook(value, tp)``)."""
    get = getattr(converter, "get_structure_hook", None)  # cattrs >= 24.1
    if get is not None:
        hook: Callable[[Any, Any], Any] = get(tp)
        return hook
    return converter.structure


def named_failure(exc: Exception, model: Any, path: str = "$") -> DecodeFailure:
    """A failure anywhere inside data read as ``model``, named from its top
    (``Model at $...``)."""
    if isinstance(exc, DecodeFailure):
        return DecodeFailure(exc.why, f"{model.__name__} at {path}{exc.path}")
    return DecodeFailure(type(exc).__name__, f"{model.__name__} at {path}")


def read_back(converter: cattrs.Converter, data: Any, model: type[M]) -> M:
    """``data``, a model's ``to_dict()`` (saved, loaded, or written by hand), read as
    ``model`` by ``converter``: every model's ``from_dict``.

    Raises:
        InvalidInputError: data the model cannot be made from; the message names the
            place (``ContactListCreate at $.emaillist[2].mobile: ...``) and ``field``
            holds it (``emaillist[2].mobile``).
    """
    if isinstance(data, Mapping) and not isinstance(data, dict):
        data = dict(data)
    try:
        made: M = hook_of(converter, model)(data, model)
        return made
    except READ_ERRORS as exc:
        failure = named_failure(exc, model)
        field = exc.path.lstrip(".") if isinstance(exc, DecodeFailure) else ""
        raise InvalidInputError(str(failure), field=field or None) from None
