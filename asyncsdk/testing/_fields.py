"""Field checking for the resource areas, answering like Django REST framework does:
``{"field": ["This field is required."]}`` with HTTP 400."""

from __future__ import annotations

import datetime as dt
import decimal
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from functools import partial
from typing import Any, Literal, TypeGuard

from . import _texts

__all__ = ["COUNTRY_CODES", "Errors", "FieldSpec", "check_fields"]

Kind = Literal[
    "str", "int", "bool", "list", "dict", "email", "decimal", "zipcode", "country",
    "date_dmy", "datetime_iso", "date_iso",
]  # fmt: skip

COUNTRY_CODES: frozenset[int] = frozenset({1, *range(26, 248)})

# Field name -> messages, or (for nested lists) a list of such mappings.
Errors = dict[str, Any]

_DATE_FORMATS: dict[str, tuple[str, str]] = {
    "date_dmy": ("%d-%m-%Y", "DD-MM-YYYY"),
    "datetime_iso": ("%Y-%m-%dT%H:%M:%S", "YYYY-MM-DDThh:mm:ss"),
    "date_iso": ("%Y-%m-%d", "YYYY-MM-DD"),
}


@dataclass(frozen=True)
class FieldSpec:
    """One input field: its kind, whether it is required, and its allowed codes."""

    kind: Kind = "str"
    required: bool = False
    choices: frozenset[int] | None = None


class _Invalid(Exception):
    pass


def _is_int(value: Any) -> TypeGuard[int]:
    return isinstance(value, int) and not isinstance(value, bool)


def _convert(kind: Kind, value: Any, choices: frozenset[int] | None) -> Any:
    """Return the stored form of ``value`` or raise ``_Invalid(message)``."""
    if kind == "int":  # the one kind with a list of allowed values
        return _integer(value, choices)
    return _CONVERTERS[kind](value)


def _text(value: Any) -> str:
    if not isinstance(value, str):
        raise _Invalid("Not a valid string.")
    return value


def _email(value: Any) -> str:
    text = _text(value)
    if not _looks_like_email(text):
        raise _Invalid("Enter a valid email address.")
    return text


def _integer(value: Any, choices: frozenset[int] | None) -> int:
    if not _is_int(value):
        raise _Invalid("A valid integer is required.")
    if choices is not None and value not in choices:
        raise _Invalid(f'"{value}" is not a valid choice.')
    return value


def _boolean(value: Any) -> bool:
    if not isinstance(value, bool):
        raise _Invalid("Must be a valid boolean.")
    return value


def _list(value: Any) -> list[Any]:
    if not isinstance(value, list):
        raise _Invalid(f'Expected a list of items but got type "{type(value).__name__}".')
    return list(value)


def _dict(value: Any) -> dict[Any, Any]:
    if not isinstance(value, dict):
        raise _Invalid(f'Expected a dictionary of items but got type "{type(value).__name__}".')
    return dict(value)


def _money(value: Any) -> str:
    """Money is decimal text; numbers are tolerated, floats are not exact so refused."""
    if isinstance(value, bool) or not isinstance(value, (str, int)):
        raise _Invalid("A valid number is required.")
    try:
        amount = decimal.Decimal(str(value).strip())
    except decimal.InvalidOperation:
        raise _Invalid("A valid number is required.") from None
    if not amount.is_finite():
        raise _Invalid("A valid number is required.")
    return f"{amount.quantize(decimal.Decimal('0.01')):f}"


def _zipcode(value: Any) -> str:
    """Text in the document, integers in its samples: kept as text."""
    if _is_int(value) or isinstance(value, str):
        return str(value)
    raise _Invalid("Not a valid string.")


def _country(value: Any) -> int:
    """An integer code, sometimes sent as digit text."""
    if isinstance(value, str) and value.strip().isdigit():
        value = int(value)
    if not _is_int(value) or value not in COUNTRY_CODES:
        raise _Invalid(f'"{value}" is not a valid choice.')
    return value


def _date(fmt: str, shown: str, value: Any) -> str:
    """A date in ``fmt`` (``shown`` to people), stored as ISO text."""
    if not isinstance(value, str):
        raise _Invalid(f"Date has wrong format. Use one of these formats instead: {shown}.")
    try:
        return dt.datetime.strptime(value, fmt).date().isoformat()
    except ValueError:
        raise _Invalid(
            f"Date has wrong format. Use one of these formats instead: {shown}."
        ) from None


#: The check of each kind of field but ``int``, which has its ``choices``.
_CONVERTERS: dict[str, Callable[[Any], Any]] = {
    "str": _text, "email": _email, "bool": _boolean, "list": _list, "dict": _dict,
    "decimal": _money, "zipcode": _zipcode, "country": _country,
    **{kind: partial(_date, fmt, shown) for kind, (fmt, shown) in _DATE_FORMATS.items()},
}


def _looks_like_email(value: str) -> bool:
    local, at, domain = value.rpartition("@")
    return bool(at and local and "." in domain and " " not in value and not domain.endswith("."))


def check_fields(
    body: Mapping[str, Any], spec: Mapping[str, FieldSpec], *, partial: bool = False
) -> tuple[dict[str, Any], Errors]:
    """Check ``body`` against ``spec``; unknown keys are ignored.

    Args:
        body: the decoded JSON object.
        spec: field name -> rule.
        partial: if True, required fields may be left out (a partial update).
    Returns:
        ``(clean, errors)``: the stored forms of the fields present, and
        ``{field: [message]}`` for every field in error (empty when all is well).
    """
    clean: dict[str, Any] = {}
    errors: Errors = {}
    for name, rule in spec.items():
        if name not in body:
            if rule.required and not partial:
                errors[name] = [_texts.FIELD_REQUIRED]
            continue
        value = body[name]
        if value is None:
            if rule.required:
                errors[name] = ["This field may not be null."]
            else:
                clean[name] = None
            continue
        if rule.required and value == "" and rule.kind in ("str", "email"):
            errors[name] = ["This field may not be blank."]
            continue
        try:
            clean[name] = _convert(rule.kind, value, rule.choices)
        except _Invalid as exc:
            errors[name] = [str(exc)]
    return clean, errors
