"""A big listing decoded as it is parsed: ``builders(model)`` names, for a JSON array of
``model``, every place where a response model sits (the array's elements, and the
models nested in them through their fields: ``X``, ``X | None``, ``list[X]``), each
with the function that decodes the value read there (``converter.decode``).

``big_json.read_json(raw, build=builders(model))`` hands each record to its function as
soon as it is parsed, so its parsed dict dies young, while the listing is read: a
listing of 50,000 contacts never holds 50,000 parsed dicts beside their models (the
cyclic collector's full collections, which hold the GIL and so the loop, walk half as
much). The enclosing models are then decoded by the converter as usual, the models
already built passed through as they are. Where a record cannot be decoded,
``read_json`` reads the document again without builders, and the ordinary decoding
names the failure as it always does.

The places are named as ``big_json`` names them: ``$`` the document, ``[]`` an
element, ``."key"`` a member (the wire key, quoted as JSON).
"""

from __future__ import annotations

import json
import typing
from collections.abc import Callable
from functools import partial
from typing import Any

import attrs

from ..models._base import ResponseModel, split_optional
from ..models._convert import wire_key
from .converter import decode

__all__ = ["builders"]

#: Nesting followed at most (a model that holds itself stops there: decoded as usual).
_MAX_DEPTH = 6
_BUILDERS: dict[Any, dict[str, Callable[[Any], Any]]] = {}


def builders(model: type) -> dict[str, Callable[[Any], Any]]:
    """place -> the decoding of the value read there, for a JSON array of ``model``
    (module docstring); empty for a type that is not a response model."""
    found = _BUILDERS.get(model)
    if found is None:
        found = {}
        if _is_response_model(model):
            _add(found, "$[]", model, 0)
        if len(_BUILDERS) < 256:
            _BUILDERS[model] = found
    return found


def _add(found: dict[str, Callable[[Any], Any]], place: str, model: type,
         depth: int) -> None:
    found[place] = partial(_decoded, model)
    if depth >= _MAX_DEPTH:
        return
    hints = typing.get_type_hints(model)
    for field in attrs.fields(model):
        inner = split_optional(hints.get(field.name, Any))[0]
        here = f"{place}.{json.dumps(wire_key(field))}"
        if _is_response_model(inner):
            _add(found, here, inner, depth + 1)
        elif typing.get_origin(inner) is list:
            (item, *_) = typing.get_args(inner) or (Any,)
            if _is_response_model(item):
                _add(found, here + "[]", item, depth + 1)


def _decoded(model: type, data: Any) -> Any:
    return decode(data, model)


def _is_response_model(tp: Any) -> bool:
    return isinstance(tp, type) and issubclass(tp, ResponseModel) and attrs.has(tp)
