"""Free-form fields (``ContactInput.tags``, ``attributes``): any value JSON can carry, checked
before anything is sent, as the other value checks of ``_checks`` are (``Refused``).

Why: such a field is sent as it is given, so without a check ``NaN`` or ``Infinity`` go
out as text that is not JSON (``json.dumps`` writes them), an object or a huge int fails
only at send time, and a lone surrogate reaches the service.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

from .._checks import Refused, int_value, text_value

__all__ = ["MAX_JSON_DEPTH", "json_dict_value", "json_value"]

#: How deep lists and dicts may nest in a free-form field.
MAX_JSON_DEPTH = 32


def json_value(value: Any) -> Any:
    """A value of a free-form field (``tags``, ``attributes``) that JSON can carry:
    text (``text_value``), an int (``int_value``), a finite float, a bool, None, or a
    list/tuple/dict (string keys) of such values, nested at most 32 deep. ``NaN`` and
    ``Infinity`` are refused: ``json.dumps`` would write them, and they are not JSON."""
    return _json_value(value, 0)


def _json_value(value: Any, depth: int) -> Any:
    kind = value.__class__
    if kind is str:
        return text_value(value)
    if value is None or kind is bool:
        return value
    if kind is int:
        return int_value(value)
    if kind is float:
        if not math.isfinite(value):
            raise Refused("a finite number (JSON has no NaN or Infinity)", value)
        return value
    if depth >= MAX_JSON_DEPTH and isinstance(value, (list, tuple, Mapping)):
        raise Refused(f"JSON nested at most {MAX_JSON_DEPTH} deep", value)
    if isinstance(value, (list, tuple)):
        out = []
        for i, item in enumerate(value):
            try:
                out.append(_json_value(item, depth + 1))
            except Refused as no:
                raise Refused(no.allowed, no.value, f"[{i}]{no.path}") from None
        return out
    if isinstance(value, Mapping):
        copied = {}
        for key, item in value.items():
            if not isinstance(key, str):
                raise Refused("a dict with string keys", value)
            try:
                copied[text_value(str.__str__(key))] = _json_value(item, depth + 1)
            except Refused as no:
                raise Refused(no.allowed, no.value, f"[{key!r:.40}]{no.path}") from None
        return copied
    if isinstance(value, str):  # a subclass (a str enum): its text, not its ``str()``
        return text_value(str.__str__(value))
    if isinstance(value, (int, float)):  # a subclass (an IntEnum): its plain number
        return _json_value((int if isinstance(value, int) else float)(value), depth)
    raise Refused("a JSON value: text, number, True/False, None, or a list or dict of "
                  "them", value)


def json_dict_value(value: Any) -> dict[str, Any]:
    """A mapping with string keys whose values JSON can carry (``json_value``), copied."""
    if not isinstance(value, Mapping):
        raise Refused("a dict with string keys", value)
    copied: dict[str, Any] = json_value(value)
    return copied
