"""Field checking for the resource areas, answering like Django REST framework does:
``{"field": ["This field is required."]}`` with HTTP 400."""

from __future__ import annotations

import datetime as dt
import decimal
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Literal

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


def _is_int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _convert(kind: Kind, value: Any, choices: frozenset[int] | None) -> Any:
    """Return the stored form of ``value`` or raise ``_Invalid(message)``."""
    if kind in ("str", "email"):
        if not isinstance(value, str):
            raise _Invalid("Not a valid string.")
        if kind == "email" and not _looks_like_email(value):
            raise _Invalid("Enter a valid email address.")
        return value
    if kind == "int":
        if not _is_int(value):
            raise _Invalid("A valid integer is required.")
        if choices is not None and value not in choices:
            raise _Invalid(f'"{value}" is not a valid choice.')
        return value
    if kind == "bool":
        if not isinstance(value, bool):
            raise _Invalid("Must be a valid boolean.")
        return value
    if kind == "list":
        if not isinstance(value, list):
            raise _Invalid(f'Expected a list of items but got type "{type(value).__name__}".')
        return list(value)
    if kind == "dict":
        if not isinstance(value, dict):
            raise _Invalid(f'Expected a dictionary of items but got type "{type(value).__name__}".')
        return dict(value)
    if kind == "decimal":
        # Money is decimal text; numbers are tolerated, floats are not exact so refused.
        if isinstance(value, bool) or not isinstance(value, (str, int)):
            raise _Invalid("A valid number is required.")
        try:
            amount = decimal.Decimal(str(value).strip())
        except decimal.InvalidOperation:
            raise _Invalid("A valid number is required.") from None
        if not amount.is_finite():
            raise _Invalid("A valid number is required.")
        return f"{amount.quantize(decimal.Decimal('0.01')):f}"
    if kind == "zipcode":  # text in the document, integers in its samples: keep as text
        if _is_int(value) or isinstance(value, str):
            return str(value)
        raise _Invalid("Not a valid string.")
    if kind == "country":  # an integer code, sometimes sent as digit text
        if isinstance(value, str) and value.strip().isdigit():
            value = int(value)
        if not _is_int(value) or value not in COUNTRY_CODES:
            raise _Invalid(f'"{value}" is not a valid choice.')
        return value
    fmt, shown = _DATE_FORMATS[kind]
    if not isinstance(value, str):
        raise _Invalid(f"Date has wrong format. Use one of these formats instead: {shown}.")
    try:
        return dt.datetime.strptime(value, fmt).date().isoformat()
    except ValueError:
        raise _Invalid(
            f"Date has wrong format. Use one of these formats instead: {shown}."
        ) from None


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
