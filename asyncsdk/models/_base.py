"""The model bases: ``InputModel``, ``ResponseModel``, and ``WireForm`` (``to_dict``,
``to_json``, ``from_dict``) of every model; and the package's one converter
(``get_converter``).

* An **input model** checks itself when constructed: every field against its annotation
  (``_input_checks``), so a bad value raises ``InvalidInputError`` naming the field and
  what is allowed, before any request exists. A plain ``int`` given for a code list
  becomes its member; a member of another code list (``industry=Rating.ACTIVE``) or a
  code the list does not know is refused.
* A **response model** keeps the keys it does not know in ``extra`` (the service may add
  fields).
* Every model has ``to_dict()`` and ``to_json()`` (the model as the service's JSON, wire
  names and formats) and ``from_dict()`` (that JSON read back as an equal model), all
  through the one converter. The model layer owns it: this module makes it, at first
  use, from ``_convert.make_converter`` given the two bases below, and
  ``_serde.converter`` (a floor above) reads the service's answers with it. So the
  arrows are plain imports, all pointing down: ``_serde`` -> ``models._base`` ->
  ``models._convert``.

Dates: each input model names how its dates go on the wire (``_date_format``):
``DATE_DMY`` (contact create), ``DATETIME_ISO`` (contact update), ``DATE_ISO`` (default,
invoices).
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, ClassVar, TypeVar

import attrs

from ._convert import make_converter, read_back
from ._input_checks import check_fields
from ._vocabulary import (
    DATE_DMY,
    DATE_ISO,
    DATETIME_ISO,
    UNSET,
    UnsetType,
    is_any,
    split_optional,
)

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
    "WireForm",
    "get_converter",
    "is_any",
    "split_optional",
]

M = TypeVar("M", bound="WireForm")


class WireForm:
    """``to_dict()``, ``to_json()`` and ``from_dict()`` of every model."""

    __slots__ = ()

    def to_dict(self) -> dict[str, Any]:
        """The model as JSON-ready data with the service's field names, through the
        package's one converter: an input model as the body it is sent as (fields left
        ``UNSET`` out, dates and amounts in the wire formats); a model read from the
        service with its known fields (dates ISO 8601, amounts as exact text, codes as
        their numbers or texts) and the keys it did not know (``extra``) beside them,
        so that ``from_dict`` gives an equal model."""
        form: dict[str, Any] = get_converter().unstructure(self)
        return form

    def to_json(self, *, indent: int | None = None) -> str:
        """``to_dict()`` as JSON text (non-ASCII characters kept as they are)."""
        return json.dumps(self.to_dict(), ensure_ascii=False, indent=indent)

    @classmethod
    def from_dict(cls: type[M], data: Mapping[str, Any]) -> M:
        """The model that ``data``, its ``to_dict()`` (saved as JSON and loaded, say),
        describes: ``Model.from_dict(m.to_dict()) == m``. Read as leniently as the
        service's answers are (numbers as text, any of the wire date formats); a model
        read from the service keeps unknown keys in ``extra``, any other model refuses
        them; an input model checks its fields as its constructor does.

        Raises:
            InvalidInputError: data this model cannot be made from (a missing required
                key, a value of the wrong type, an unknown key of an input model, a
                value its checks refuse); ``field`` names the place
                (``emaillist[2].mobile``).
        """
        return read_back(get_converter(), data, cls)


_converter: cattrs.Converter | None = None


def get_converter() -> cattrs.Converter:
    """The package's one cattrs converter (``_convert``), made (and cattrs imported) at
    first use, which keeps cattrs out of ``import asyncsdk``."""
    global _converter
    if _converter is None:
        _converter = make_converter(input_model=InputModel, response_model=ResponseModel)
    return _converter


class InputModel(WireForm):
    """Base of the models sent to the service: checks every field when constructed."""

    __slots__ = ()
    #: How dates of this model go on the wire.
    _date_format: ClassVar[str] = DATE_ISO

    def __attrs_post_init__(self) -> None:
        check_fields(self)


@attrs.frozen(kw_only=True)
class ResponseModel(WireForm):
    """Base of the models read from the service. ``extra`` keeps the keys the model does
    not know (the service may add fields)."""

    # Left out of the hash (a dict cannot be hashed), so a model is hashable; still
    # compared by ``==``.
    extra: Mapping[str, Any] = attrs.field(factory=dict, hash=False)
