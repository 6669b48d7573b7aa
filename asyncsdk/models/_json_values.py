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
    kind = value.__class__  # the exact type: a subclass (an enum) is taken apart below
    if kind is str:
        return text_value(value)
    if value is None or kind is bool:
        return value
    if kind is int:
        return int_value(value)
    if kind is float:
        return _finite(value)
    if isinstance(value, (list, tuple, Mapping)):
        return _json_container(value, depth)
    return _plain_value(value, depth)


def _finite(value: float) -> float:
    if not math.isfinite(value):
        raise Refused("a finite number (JSON has no NaN or Infinity)", value)
    return value


def _json_container(value: list[Any] | tuple[Any, ...] | Mapping[Any, Any],
                    depth: int) -> Any:
    """A list, tuple or dict at ``depth``: its items checked one level deeper."""
    if depth >= MAX_JSON_DEPTH:
        raise Refused(f"JSON nested at most {MAX_JSON_DEPTH} deep", value)
    if isinstance(value, (list, tuple)):
        return _json_array(value, depth + 1)
    return _json_object(value, depth + 1)


def _json_array(items: list[Any] | tuple[Any, ...], depth: int) -> list[Any]:
    """The items, each checked at ``depth``, as a list; a refusal names its index."""
    out = []
    for i, item in enumerate(items):
        try:
            out.append(_json_value(item, depth))
        except Refused as no:
            raise Refused(no.allowed, no.value, f"[{i}]{no.path}") from None
    return out


def _json_object(members: Mapping[Any, Any], depth: int) -> dict[str, Any]:
    """The members (string keys), each value checked at ``depth``, copied into a dict; a
    refusal names its key."""
    copied = {}
    for key, item in members.items():
        if not isinstance(key, str):
            raise Refused("a dict with string keys", members)
        try:
            copied[text_value(str.__str__(key))] = _json_value(item, depth)
        except Refused as no:
            raise Refused(no.allowed, no.value, f"[{key!r:.40}]{no.path}") from None
    return copied


def _plain_value(value: Any, depth: int) -> Any:
    """A subclass of str, int or float (a str enum, an IntEnum) as its plain value: its
    text, not its ``str()``, or its number. Anything else is no JSON value."""
    if isinstance(value, str):
        return text_value(str.__str__(value))
    if isinstance(value, (int, float)):
        return _json_value((int if isinstance(value, int) else float)(value), depth)
    raise Refused("a JSON value: text, number, True/False, None, or a list or dict of "
                  "them", value)


def json_dict_value(value: Any) -> dict[str, Any]:
    """A mapping with string keys whose values JSON can carry (``json_value``), copied."""
    if not isinstance(value, Mapping):
        raise Refused("a dict with string keys", value)
    copied: dict[str, Any] = json_value(value)
    return copied
