"""Answers into models, and input models into request bodies, for the engine: the
engine's one window on the models (the core knows no model, only a type it hands here).

The converter itself belongs to the model layer (``models._convert`` makes it with its
hooks, ``models._base.get_converter`` holds the one instance, and every model's
``to_dict`` / ``from_dict`` uses it); this floor adds what reading an answer needs on
top: each model's reader found once (``decode``), failures named from the answer's top
(``ContactList at $[0].emaillist[0].data[3].mobile: expected an integer, got str``) as a
``DecodeFailure`` the transport turns into ``ResponseDecodeError``, and big listings
read element by element, letting the event loop in (``decode_list``'s ``share``).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypeVar

from ..models._base import InputModel, get_converter
from ..models._convert import (
    READ_ERRORS,
    DecodeFailure,
    failing_index,
    hook_of,
    named_failure,
    parse_int,  # the validation resource's reading of a job id
)

__all__ = [
    "DecodeFailure",
    "decode",
    "decode_list",
    "encode",
    "get_converter",
    "parse_int",
    "to_jsonable",
]

T = TypeVar("T")


def encode(model: InputModel) -> dict[str, Any]:
    """The JSON-ready body of an input model (``UNSET`` fields left out): its
    ``to_dict()``."""
    body: dict[str, Any] = get_converter().unstructure(model)
    return body


def to_jsonable(value: Any) -> Any:
    """A model, a list of them, or any plain value as JSON types: a model as its
    ``to_dict()``, dates ISO, decimals as exact text, codes as their value, errors as
    their text."""
    return get_converter().unstructure(value)


#: model -> its hook (``decode``): found once per model (models and a few typing forms),
#: not per answer.
_READERS: dict[Any, Callable[[Any, Any], Any]] = {}


def _reader_for(model: Any) -> Callable[[Any, Any], Any]:
    reader = hook_of(get_converter(), model)
    if len(_READERS) < 512:
        _READERS[model] = reader
    return reader


def decode(data: Any, model: type[T]) -> T:
    """Read ``data`` (parsed JSON) as ``model``; raises ``DecodeFailure`` (with the path
    to the bad value) if it cannot."""
    try:
        result: T = (_READERS.get(model) or _reader_for(model))(data, model)
        return result
    except READ_ERRORS as exc:
        raise named_failure(exc, model) from None


def decode_list(data: Any, model: type[T],
                share: Callable[[], None] | None = None) -> list[T]:
    """Read a JSON array of ``model`` objects; raises ``DecodeFailure`` (with the path to
    the bad value) if it cannot. ``share``: called after each element (a worker thread's
    ``big_json.gil_sharer``, letting the event loop in)."""
    if not isinstance(data, list):
        raise DecodeFailure(f"expected a list of {model.__name__}, got {type(data).__name__}")
    read = _READERS.get(model) or _reader_for(model)
    try:
        if share is None:
            return [read(item, model) for item in data]
        return _read_sharing(read, model, data, share)
    except READ_ERRORS as exc:
        where = failing_index(lambda item: read(item, model), data)
        raise named_failure(exc, model, "$" + where) from None


def _read_sharing(read: Callable[[Any, Any], Any], model: type[T], data: list[Any],
                  share: Callable[[], None]) -> list[T]:
    out = []
    for item in data:
        out.append(read(item, model))
        share()
    return out
