"""The words every model module shares: ``UNSET``, the wire date formats, and what the
input checks and the converter read of an annotation (``split_optional``, ``is_any``).

It sits below both of them (``_input_checks``, ``_convert``) and below the model bases
(``_base``), which is what lets those two stay apart: neither knows a model class.
"""

from __future__ import annotations

import enum
import types
import typing
from typing import Any, Final, Union

__all__ = [
    "DATETIME_ISO",
    "DATE_DMY",
    "DATE_ISO",
    "UNSET",
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


def is_any(tp: Any) -> bool:
    """True for ``Any`` and ``object``: annotations that take any value."""
    return tp is Any or tp is object
