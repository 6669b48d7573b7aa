"""Module attributes imported on first use (PEP 562), for the packages' ``__init__``; and
implementations named by the package's root for its lower floors (``provide`` /
``provided``): how a lower floor calls a higher one without importing it (the models'
``to_dict`` reaches the one converter, ``_serde``, a floor above them). Nothing here
knows the library: names and module paths are the root's."""

from __future__ import annotations

import importlib
import sys
from collections.abc import Callable, Mapping
from typing import Any


def lazy_attributes(
    package: str, table: Mapping[str, str]
) -> tuple[Callable[[str], Any], Callable[[], list[str]]]:
    """``__getattr__`` and ``__dir__`` for ``package`` whose names in ``table`` (name ->
    relative module) are imported when first looked up, then kept in the package."""

    def __getattr__(name: str) -> Any:
        module = table.get(name)
        if module is None:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        value = getattr(importlib.import_module(module, package), name)
        setattr(sys.modules[package], name, value)  # later lookups skip this function
        return value

    def __dir__() -> list[str]:
        return sorted(set(vars(sys.modules[package])) | set(table))

    return __getattr__, __dir__


#: name -> "module:attribute", set by the package's root (``asyncsdk/__init__``).
_PROVIDERS: dict[str, str] = {}
#: name -> the attribute, imported at its first use.
_PROVIDED: dict[str, Any] = {}


def provide(name: str, target: str) -> None:
    """Name ``target`` (``"package.module:attribute"``) as what ``provided(name)`` gives;
    nothing is imported until then."""
    _PROVIDERS[name] = target
    _PROVIDED.pop(name, None)


def provided(name: str) -> Any:
    """What ``provide`` named ``name``, imported at its first use.

    Raises:
        LookupError: nothing was provided under ``name``.
    """
    value = _PROVIDED.get(name)
    if value is None:
        target = _PROVIDERS.get(name)
        if target is None:
            raise LookupError(f"nothing provides {name!r}")
        module, _, attribute = target.partition(":")
        value = _PROVIDED[name] = getattr(importlib.import_module(module), attribute)
    return value
