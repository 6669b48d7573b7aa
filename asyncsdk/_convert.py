"""The one converter of the package: dates, decimals, codes, ``UNSET`` and ``extra``.

Rules (DESIGN §2), each in exactly one place here:

* **Input models** check themselves when constructed (``InputModel.__attrs_post_init__``):
  every field against its annotation, so a bad value raises ``InvalidInputError`` naming
  the field and what is allowed, before any request exists.
* **Encoding** (``encode``): fields left ``UNSET`` are omitted; ``None`` is sent as null;
  ``Decimal`` as text with two places; codes as their number; dates in the format of the
  model (``DATE_DMY`` for contact create, ``DATETIME_ISO`` for contact update,
  ``DATE_ISO`` for invoices); the body key is the field name unless the field's
  metadata says ``wire``.
* **Decoding** (``decode``) is lenient: unknown keys are kept in ``extra``, a missing
  field is None, an unknown code stays a plain int (or str), numbers sent as text are
  read as numbers and dates in any of the three formats are read. A value that cannot be
  read raises ``DecodeFailure`` (the transport turns it into ``ResponseDecodeError``).

The per-class functions are built once, on first use, and cached by cattrs. The
converter itself (and the import of cattrs) is made at first use too, not at
``import asyncsdk``: see ``get_converter``.
"""

from __future__ import annotations

import datetime as dt
import enum
import inspect
import linecache
import math
import re
import types
import typing
from collections.abc import Callable, Mapping
from collections.abc import Sequence as Sequence_abc
from decimal import Decimal, InvalidOperation
from typing import TYPE_CHECKING, Any, ClassVar, Final, TypeVar, Union
from urllib.parse import urlsplit

import attrs

from ._errors import InvalidInputError

if TYPE_CHECKING:
    import cattrs

__all__ = [
    "DATETIME_ISO",
    "DATE_DMY",
    "DATE_ISO",
    "UNSET",
    "CountryCode",
    "DecodeFailure",
    "Email",
    "InputModel",
    "OneOf",
    "ResponseModel",
    "SingleLine",
    "UnsetType",
    "decode",
    "encode",
    "get_converter",
]

T = TypeVar("T")

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


# --- Annotated markers for values with rules beyond their Python type ----------------
class _Marker:
    __slots__ = ("name",)

    def __init__(self, name: str) -> None:
        self.name = name


class OneOf(_Marker):
    """An ``Annotated`` marker: the value (checked against the base type first) must be
    one of ``values``, e.g. ``Annotated[int, OneOf(0, 1)]``."""

    __slots__ = ("values",)

    def __init__(self, *values: Any) -> None:
        super().__init__("one of " + ", ".join(map(repr, values)))
        self.values = values


_EMAIL = _Marker("email")
_COUNTRY = _Marker("country")
_SINGLE_LINE = _Marker("single line")

#: An email address: checked for shape (one ``@``, a dotted domain, no spaces or control
#: characters) before sending.
Email = typing.Annotated[str, _EMAIL]
#: A country code of the service: 1, or 26 to 247.
CountryCode = typing.Annotated[int, _COUNTRY]
#: Text that ends up in a form field or header: no CR, LF or other control characters.
SingleLine = typing.Annotated[str, _SINGLE_LINE]

_EMAIL_RE = re.compile(r"[^@\s]+@[^@\s.]+(\.[^@\s.]+)+")
_CONTROL_RE = re.compile(r"[\x00-\x1f\x7f]")
_COUNTRY_CODES = frozenset({1, *range(26, 248)})


class DecodeFailure(ValueError):
    """A response value could not be read as its field's type (internal)."""


# --- Input checking -------------------------------------------------------------------
Check = Callable[[Any, str], Any]


def _fail(field: str, allowed: str, value: Any) -> InvalidInputError:
    shown = type(value).__name__ if isinstance(value, (bytes, bytearray)) else repr(value)
    if len(shown) > 60:
        shown = shown[:57] + "..."
    return InvalidInputError(f"{field}: expected {allowed}, got {shown}", field=field)


def _check_str(value: Any, field: str) -> str:
    if not isinstance(value, str):
        raise _fail(field, "a string", value)
    if "\x00" in value:
        raise _fail(field, "text without NUL characters", value)
    return value


def _check_single_line(value: Any, field: str) -> str:
    text = _check_str(value, field)
    if _CONTROL_RE.search(text):
        raise _fail(field, "a single line without control characters (no CR/LF)", value)
    return text


def check_seconds(value: Any, field: str) -> int | float:
    """``value`` if it is a positive, finite number of seconds, else InvalidInputError."""
    if (isinstance(value, bool) or not isinstance(value, (int, float))
            or not math.isfinite(value) or value <= 0):
        raise InvalidInputError(
            f"{field}: expected a positive number of seconds, got {value!r:.40}", field=field)
    return value


def is_http_url(text: str) -> bool:
    """True for an absolute http(s) URL with a host, without white space or control
    characters (a job's file URL, or a result the service hosts elsewhere)."""
    if _CONTROL_RE.search(text) or any(c.isspace() for c in text):
        return False
    try:
        parts = urlsplit(text)
        return parts.scheme.lower() in ("http", "https") and bool(parts.hostname)
    except ValueError:
        return False


def check_email(value: Any, field: str) -> str:
    """Return ``value`` if it is a plausible email address, else raise InvalidInputError."""
    text = _check_str(value, field)
    if len(text) > 254 or _CONTROL_RE.search(text) or not _EMAIL_RE.fullmatch(text):
        raise _fail(field, "an email address like name@example.com", value)
    return text


def _check_int(value: Any, field: str) -> int:
    if isinstance(value, bool) or not isinstance(value, int):
        raise _fail(field, "an integer", value)
    return value


def _check_country(value: Any, field: str) -> int:
    code = _check_int(value, field)
    if code not in _COUNTRY_CODES:
        raise _fail(field, "a country code: 1 or 26 to 247", value)
    return code


def _check_bool(value: Any, field: str) -> bool:
    if not isinstance(value, bool):
        raise _fail(field, "True or False", value)
    return value


def _check_decimal(value: Any, field: str) -> Decimal:
    if isinstance(value, bool) or not isinstance(value, (Decimal, int, str)):
        raise _fail(field, "a Decimal (or int, or numeric text) with at most two places", value)
    try:
        number = Decimal(value.strip() if isinstance(value, str) else value)
    except InvalidOperation:
        raise _fail(field, "a number such as Decimal('12.50')", value) from None
    if not number.is_finite():
        raise _fail(field, "a finite number", value)
    try:
        exact = number == number.quantize(_CENT)
    except InvalidOperation:  # more digits than the decimal context holds
        exact = False
    if not exact:
        raise _fail(field, "a number with at most two decimal places", value)
    return number


def _check_date(value: Any, field: str) -> dt.date:
    if not isinstance(value, dt.date):
        raise _fail(field, "a datetime.date", value)
    return value


def _check_any(value: Any, field: str) -> Any:
    return value


def _code_ranges(values: list[int]) -> str:
    """'2-60, 62-64' for a sorted list of codes."""
    runs: list[list[int]] = []
    for v in values:
        if runs and v == runs[-1][1] + 1:
            runs[-1][1] = v
        else:
            runs.append([v, v])
    return ", ".join(str(a) if a == b else f"{a}-{b}" for a, b in runs)


def _one_of_check(base: Check, marker: OneOf) -> Check:
    def check(value: Any, field: str) -> Any:
        checked = base(value, field)
        if checked not in marker.values:
            raise _fail(field, marker.name, value)
        return checked

    return check


def _enum_check(enum_cls: type[enum.IntEnum]) -> Check:
    members = sorted(enum_cls, key=int)
    if len(members) <= 8:
        allowed = ", ".join(f"{m.value} ({m.name})" for m in members)
    else:
        allowed = f"{_code_ranges([m.value for m in members])} (see asyncsdk.{enum_cls.__name__})"

    def check(value: Any, field: str) -> enum.IntEnum:
        if isinstance(value, bool) or not isinstance(value, int):
            raise _fail(field, f"{enum_cls.__name__} code {allowed}", value)
        try:
            return enum_cls(value)
        except ValueError:
            raise _fail(field, f"{enum_cls.__name__} code {allowed}", value) from None

    return check


def _list_check(item: Check) -> Check:
    def check(value: Any, field: str) -> list[Any]:
        if not isinstance(value, (list, tuple)):
            raise _fail(field, "a list", value)
        return [item(v, f"{field}[{i}]") for i, v in enumerate(value)]

    return check


def _dict_check(value: Any, field: str) -> dict[str, Any]:
    if not isinstance(value, Mapping) or not all(isinstance(k, str) for k in value):
        raise _fail(field, "a dict with string keys", value)
    return dict(value)


def _model_check(model_cls: type) -> Check:
    def check(value: Any, field: str) -> Any:
        if not isinstance(value, model_cls):
            raise _fail(field, f"a {model_cls.__name__}", value)
        return value

    return check


_CENT = Decimal("0.01")
_MARKER_CHECKS: dict[_Marker, Check] = {
    _EMAIL: check_email,
    _COUNTRY: _check_country,
    _SINGLE_LINE: _check_single_line,
}
_SIMPLE_CHECKS: dict[Any, Check] = {
    str: _check_str,
    int: _check_int,
    bool: _check_bool,
    Decimal: _check_decimal,
    dt.date: _check_date,
    dt.datetime: _check_date,
    Any: _check_any,
    object: _check_any,
}


def _split_optional(tp: Any) -> tuple[Any, bool, bool]:
    """(inner type, accepts None, accepts UNSET) of an annotation."""
    origin = typing.get_origin(tp)
    if origin is Union or origin is types.UnionType:
        args = typing.get_args(tp)
        rest = [a for a in args if a not in (type(None), UnsetType)]
        inner = rest[0] if len(rest) == 1 else Union[tuple(rest)]  # noqa: UP007
        return inner, type(None) in args, UnsetType in args
    return tp, False, False


def _check_for(tp: Any) -> Check:
    if typing.get_origin(tp) is typing.Annotated:
        base, *extras = typing.get_args(tp)
        for marker in extras:
            if isinstance(marker, OneOf):
                return _one_of_check(_check_for(base), marker)
            if isinstance(marker, _Marker):
                return _MARKER_CHECKS[marker]
        return _check_for(base)
    if tp in _SIMPLE_CHECKS:
        return _SIMPLE_CHECKS[tp]
    if isinstance(tp, type) and issubclass(tp, enum.IntEnum):
        return _enum_check(tp)
    if isinstance(tp, type) and attrs.has(tp):
        return _model_check(tp)
    origin = typing.get_origin(tp)
    if origin in (list, tuple, typing.Sequence, Sequence_abc):
        return _list_check(_check_for(typing.get_args(tp)[0]))
    if origin in (dict, Mapping, typing.Mapping):
        return _dict_check
    raise TypeError(f"no input check for annotation {tp!r}")  # a bug of ours, at first use


def _field_checks(cls: type) -> list[tuple[str, Check, bool, bool]]:
    hints = typing.get_type_hints(cls, include_extras=True)
    checks = []
    for a in attrs.fields(cls):
        inner, nullable, unsettable = _split_optional(hints[a.name])
        checks.append((a.name, _check_for(inner), nullable, unsettable))
    return checks


_INPUT_CHECKS: dict[type, list[tuple[str, Check, bool, bool]]] = {}


class InputModel:
    """Base of the models sent to the service: checks every field when constructed."""

    __slots__ = ()
    #: How dates of this model go on the wire.
    _date_format: ClassVar[str] = DATE_ISO

    def __attrs_post_init__(self) -> None:
        cls = type(self)
        checks = _INPUT_CHECKS.get(cls)
        if checks is None:
            checks = _INPUT_CHECKS[cls] = _field_checks(cls)
        for name, check, nullable, unsettable in checks:
            value = getattr(self, name)
            if value is UNSET:
                if unsettable:
                    continue
                raise InvalidInputError(f"{name}: a value is required", field=name)
            if value is None:
                if nullable:
                    continue
                raise InvalidInputError(f"{name}: must not be None", field=name)
            checked = check(value, name)
            if checked is not value:
                object.__setattr__(self, name, checked)  # normalised (e.g. int -> enum)


@attrs.frozen(kw_only=True)
class ResponseModel:
    """Base of the models read from the service. ``extra`` keeps the keys the model does
    not know (the service may add fields)."""

    extra: Mapping[str, Any] = attrs.field(factory=dict)


# --- Encoding -------------------------------------------------------------------------
Encoder = Callable[[Any], Any]


def _encode_decimal(value: Decimal) -> str:
    return format(value.quantize(_CENT), "f")


def _encode_value(value: Any, date_format: str) -> Any:
    # Ordered by how often each kind occurs in a body.
    if value is None or isinstance(value, (str, bool)):
        return value
    if isinstance(value, enum.Enum):
        return value.value
    if isinstance(value, int):
        return value
    if isinstance(value, Decimal):
        return _encode_decimal(value)
    if isinstance(value, dt.date):
        if date_format == DATETIME_ISO and not isinstance(value, dt.datetime):
            value = dt.datetime.combine(value, dt.time())
        return value.strftime(date_format)
    if isinstance(value, (list, tuple)):
        return [_encode_value(v, date_format) for v in value]
    if isinstance(value, Mapping):
        return {k: _encode_value(v, date_format) for k, v in value.items()}
    if attrs.has(type(value)):
        return get_converter().unstructure(value)
    return value


def _make_encoder(cls: type) -> Encoder:
    date_format = getattr(cls, "_date_format", DATE_ISO)
    plan = [(a.name, a.metadata.get("wire", a.name)) for a in attrs.fields(cls)]

    def encode_model(obj: Any) -> dict[str, Any]:
        body: dict[str, Any] = {}
        for name, key in plan:
            value = getattr(obj, name)
            if value is not UNSET:
                body[key] = _encode_value(value, date_format)
        return body

    return encode_model


# --- Decoding -------------------------------------------------------------------------
Decoder = Callable[[Any], Any]


def _decode_int(value: Any) -> int:
    if isinstance(value, int) and not isinstance(value, bool):
        return value
    if isinstance(value, str) and value.strip().lstrip("+-").isdigit():
        return int(value)
    if isinstance(value, float) and value.is_integer():
        return int(value)
    raise DecodeFailure(f"expected an integer, got {type(value).__name__}")


def _decode_str(value: Any) -> str:
    if isinstance(value, str):
        return value
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return str(value)  # zip codes and similar arrive as numbers in some answers
    raise DecodeFailure(f"expected text, got {type(value).__name__}")


_TRUE = frozenset({"true", "1", "yes"})
_FALSE = frozenset({"false", "0", "no", ""})


def _decode_bool(value: Any) -> bool:
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


def _decode_decimal(value: Any) -> Decimal:
    if isinstance(value, (str, int, float)) and not isinstance(value, bool):
        try:
            number = Decimal(str(value))
        except InvalidOperation:
            pass
        else:
            if number.is_finite():
                return number
    raise DecodeFailure(f"expected a decimal number, got {value!r:.40}")


_DATE_FORMATS = (DATE_ISO, DATE_DMY, DATETIME_ISO)


def parse_date(value: Any) -> dt.date | None:
    """Read a date sent in any of the service's formats (time part dropped); '' is None."""
    if not isinstance(value, str):
        raise DecodeFailure(f"expected a date, got {type(value).__name__}")
    text = value.strip()
    if not text:
        return None
    if len(text) >= 10 and text[4] == "-":
        try:  # ISO date or date-time, possibly with fractions or a zone
            return dt.date.fromisoformat(text[:10])
        except ValueError:
            pass
    for fmt in _DATE_FORMATS:
        try:
            return dt.datetime.strptime(text, fmt).date()
        except ValueError:
            continue
    raise DecodeFailure(f"expected a date (YYYY-MM-DD or DD-MM-YYYY), got {value!r:.40}")


def _decode_datetime(value: Any) -> dt.datetime | None:
    if not isinstance(value, str):
        raise DecodeFailure(f"expected a date-time, got {type(value).__name__}")
    try:
        return dt.datetime.fromisoformat(value.strip().replace("Z", "+00:00"))
    except ValueError:
        day = parse_date(value)
        return None if day is None else dt.datetime.combine(day, dt.time())


def _decode_int_or_str(value: Any) -> int | str:
    """For ``int | str`` fields: a number stays a number, text stays text."""
    if isinstance(value, str):
        return value
    return _decode_int(value)


def _decode_any(value: Any) -> Any:
    return value


def _open_enum_decoder(enum_cls: type[enum.Enum]) -> Decoder:
    """Known values become members; unknown ones pass through (the service may add)."""
    members: dict[Any, Any] = {m.value: m for m in enum_cls}
    if issubclass(enum_cls, int):
        def decode_int_code(value: Any) -> Any:
            number = _decode_int(value)
            return members.get(number, number)

        return decode_int_code
    lowered = {str(k).lower(): m for k, m in members.items()}

    def decode_text_code(value: Any) -> Any:
        text = _decode_str(value)
        found = members.get(text)
        if found is None:
            found = lowered.get(text.strip().lower(), text)
        return found

    return decode_text_code


#: What the generated decoders may inline: each list decoder's item decoder, and each
#: nested-model decoder's (structure hook, model).
_LIST_ITEMS: dict[Decoder, Decoder] = {}
_NESTED: dict[Decoder, tuple[Callable[[Any, Any], Any], type]] = {}


def _list_decoder(item: Decoder) -> Decoder:
    def decode_list(value: Any) -> list[Any]:
        if not isinstance(value, list):
            raise DecodeFailure(f"expected a list, got {type(value).__name__}")
        return [item(v) for v in value]

    _LIST_ITEMS[decode_list] = item
    return decode_list


def _dict_decoder(value: Any) -> dict[str, Any]:
    if not isinstance(value, dict):
        raise DecodeFailure(f"expected an object, got {type(value).__name__}")
    return value


_SIMPLE_DECODERS: dict[Any, Decoder] = {
    int: _decode_int,
    str: _decode_str,
    bool: _decode_bool,
    Decimal: _decode_decimal,
    dt.date: parse_date,
    dt.datetime: _decode_datetime,
    Any: _decode_any,
    object: _decode_any,
}


def _decoder_for(tp: Any) -> Decoder:
    inner, _nullable, _unset = _split_optional(tp)
    if inner is not tp:
        return _decoder_for(inner)
    if typing.get_origin(tp) is typing.Annotated:
        return _decoder_for(typing.get_args(tp)[0])
    origin = typing.get_origin(tp)
    if origin is Union or origin is types.UnionType:
        # "Industry | int" and the like: the first member that is not a plain fallback.
        args = [a for a in typing.get_args(tp) if a not in (int, str)]
        fallbacks = [a for a in typing.get_args(tp) if a in (int, str)]
        if not args and len(fallbacks) == 2:  # "int | str": keep whichever arrived
            return _decode_int_or_str
        return _decoder_for(args[0] if args else fallbacks[0])
    if tp in _SIMPLE_DECODERS:
        return _SIMPLE_DECODERS[tp]
    if isinstance(tp, type) and issubclass(tp, enum.Enum):
        return _open_enum_decoder(tp)
    if isinstance(tp, type) and attrs.has(tp):
        hook = get_converter().get_structure_hook(tp)

        def decode_nested(value: Any) -> Any:
            return hook(value, tp)

        _NESTED[decode_nested] = (hook, tp)
        return decode_nested
    if origin in (list, tuple, typing.Sequence, Sequence_abc):
        return _list_decoder(_decoder_for(typing.get_args(tp)[0]))
    if origin in (dict, Mapping, typing.Mapping):
        return _dict_decoder
    raise TypeError(f"no decoder for annotation {tp!r}")


#: Decoders that return a value of this exact JSON type unchanged: the generated
#: per-class decoder skips the call when the value already has that type.
_PASS_THROUGH: dict[Any, str] = {
    _decode_str: "str",
    _decode_int: "int",
    _decode_bool: "bool",
    _dict_decoder: "dict",
    _decode_int_or_str: "str",
}


def _slot_setters(cls: type) -> dict[str, Any] | None:
    """For a plain frozen slotted attrs class, each field's slot setter; else None.

    "Plain": the attrs-generated ``__init__`` would do nothing but store the values
    (no validator, converter, alias, pre/post-init hook, cached hash or other slot), and
    only ``extra`` has a default that is not a plain value (a ``dict`` factory). Such a
    class can be built by storing into its slots directly, as its ``__init__`` would.
    """
    init = getattr(cls, "__init__", None)
    code = getattr(init, "__code__", None)
    if code is None or not code.co_filename.startswith("<attrs generated"):
        return None
    if hasattr(cls, "__attrs_pre_init__") or hasattr(cls, "__attrs_post_init__"):
        return None
    fields = attrs.fields(cls)
    names = {a.name for a in fields}
    slots = {s for c in cls.__mro__ for s in c.__dict__.get("__slots__", ())}
    if "__dict__" in slots or slots - names - {"__weakref__"}:
        return None
    setters: dict[str, Any] = {}
    for a in fields:
        descriptor = inspect.getattr_static(cls, a.name, None)
        if (
            a.validator is not None or a.converter is not None or not a.init
            or a.alias != a.name or type(descriptor).__name__ != "member_descriptor"
            or (isinstance(a.default, attrs.Factory) and a.name != "extra")  # type: ignore[arg-type,unused-ignore]
        ):
            return None
        setters[a.name] = descriptor.__set__
    extra = attrs.fields_dict(cls).get("extra")
    if extra is None or extra.default != attrs.Factory(dict):
        return None
    return setters


def _make_decoder(cls: type) -> Callable[[Any, Any], Any]:
    """The decoder of response model ``cls``, generated as Python source and compiled
    once (as attrs and cattrs do): one straight run of ``data.get`` per field, the
    field's decoder called only when the value is not None and not already of the JSON
    type it would return unchanged, and the model built with keyword arguments (or, for
    a plain frozen slotted class, by storing into its slots as its ``__init__`` would).

    Behaviour is that of the plain loop it replaces: a value that can't be read raises
    ``DecodeFailure("<Model>.<key>: why")``; a required field (no default) missing or
    null raises ``DecodeFailure("<Model>.<key>: missing (required)")``; unknown keys go
    to ``extra``.
    """
    hints = typing.get_type_hints(cls)
    name = cls.__name__
    namespace: dict[str, Any] = {"cls": cls, "DecodeFailure": DecodeFailure}
    lines = [
        "def decode_model(data, _=None):",
        "    if not isinstance(data, dict):",
        "        raise DecodeFailure(",
        f"            {name + ': expected an object, got '!r} + type(data).__name__)",
        "    get = data.get",
    ]
    values: list[tuple[str, str]] = []  # (field, variable holding its value)
    keys: list[str] = []
    for i, a in enumerate(attrs.fields(cls)):
        if a.name == "extra":
            continue
        key = a.metadata.get("wire", a.name)
        keys.append(key)
        decoder = _decoder_for(hints[a.name])
        var = f"v{i}"
        namespace[f"d{i}"] = decoder
        lines.append(f"    {var} = get({key!r})")
        same = _PASS_THROUGH.get(decoder)
        item = _LIST_ITEMS.get(decoder)
        if decoder is _decode_any:
            call = None
        elif same is not None:  # already the type the decoder would return unchanged
            test = f"type({var}) is not {same} and {var} is not None"
            call = f"d{i}({var})"
        elif item is _decode_any:  # list[Any]: a copy, as the list decoder makes
            test = f"{var} is not None"
            call = f"{var}[:] if type({var}) is list else d{i}({var})"
        elif item in _NESTED:  # list[Model]: the model's hook straight, per item
            namespace[f"h{i}"], namespace[f"m{i}"] = _NESTED[item]
            test = f"{var} is not None"
            call = f"[h{i}(x, m{i}) for x in {var}] if type({var}) is list else d{i}({var})"
        else:
            test = f"{var} is not None"
            call = f"d{i}({var})"
        if call is not None:
            lines += [
                f"    if {test}:",
                "        try:",
                f"            {var} = {call}",
                "        except DecodeFailure as exc:",
                f"            raise DecodeFailure({f'{name}.{key}: '!r} + str(exc)) from None",
            ]
        if a.default is attrs.NOTHING:  # required: missing or null is no model
            lines += [
                f"    if {var} is None:",
                f"        raise DecodeFailure({f'{name}.{key}: missing (required)'!r})",
            ]
        values.append((a.name, var))
    namespace["known"] = known = frozenset(keys)
    unknown = "{k: v for k, v in data.items() if k not in known}"
    setters = _slot_setters(cls)
    if setters is not None:
        namespace["new"] = object.__new__
        namespace.update({f"set_{name}": setter for name, setter in setters.items()})
        lines.append("    self = new(cls)")
        lines += [f"    set_{field}(self, {var})" for field, var in values]
        lines += [
            f"    if len(data) > {len(known)} or not known.issuperset(data):",
            f"        set_extra(self, {unknown})",
            "    else:",
            "        set_extra(self, {})",
            "    return self",
        ]
    else:
        call = ", ".join(f"{field}={var}" for field, var in values)
        lines += [
            f"    if len(data) > {len(known)} or not known.issuperset(data):",
            f"        return cls({call + ', ' if call else ''}extra={unknown})",
            f"    return cls({call})",
        ]
    source = "\n".join(lines) + "\n"
    filename = f"<asyncsdk decoder {cls.__module__}.{cls.__qualname__}>"
    exec(compile(source, filename, "exec"), namespace)  # noqa: S102 - our own source
    linecache.cache[filename] = (len(source), None, source.splitlines(True), filename)
    decode_model: Callable[[Any, Any], Any] = namespace["decode_model"]
    return decode_model


def _is_input_model(cls: Any) -> bool:
    return isinstance(cls, type) and issubclass(cls, InputModel) and attrs.has(cls)


def _is_response_model(cls: Any) -> bool:
    return isinstance(cls, type) and issubclass(cls, ResponseModel)


_converter: cattrs.Converter | None = None


def get_converter() -> cattrs.Converter:
    """The package's one cattrs converter, made (and cattrs imported) at first use, which
    keeps cattrs out of ``import asyncsdk``."""
    global _converter
    if _converter is None:
        import cattrs

        made = cattrs.Converter()
        made.register_unstructure_hook_factory(_is_input_model, _make_encoder)
        made.register_structure_hook_factory(_is_response_model, _make_decoder)
        _converter = made
    return _converter


def encode(model: InputModel) -> dict[str, Any]:
    """The JSON-ready body of an input model (``UNSET`` fields left out)."""
    body: dict[str, Any] = get_converter().unstructure(model)
    return body


def decode(data: Any, model: type[T]) -> T:
    """Read ``data`` (parsed JSON) as ``model``; raises ``DecodeFailure`` if it cannot."""
    try:
        result: T = get_converter().structure(data, model)
        return result
    except DecodeFailure:
        raise
    except (TypeError, ValueError, KeyError, AttributeError, RecursionError) as exc:
        raise DecodeFailure(f"{model.__name__}: {type(exc).__name__}") from None


def decode_list(data: Any, model: type[T]) -> list[T]:
    """Read a JSON array of ``model`` objects; raises ``DecodeFailure`` if it cannot."""
    if not isinstance(data, list):
        raise DecodeFailure(f"expected a list of {model.__name__}, got {type(data).__name__}")
    hook = get_converter().get_structure_hook(model)
    try:
        return [hook(item, model) for item in data]
    except DecodeFailure:
        raise
    except (TypeError, ValueError, KeyError, AttributeError, RecursionError) as exc:
        raise DecodeFailure(f"{model.__name__}: {type(exc).__name__}") from None
