"""The one compiled fast path: decoding response models from parsed JSON.

Why it exists: cattrs' generated structure function calls a hook for every field of
every record (``X | None`` included) and builds each model through the frozen attrs
``__init__`` (one ``object.__setattr__`` per field). On 10,000 contact records that
falls below the floor the benchmarks hold the library to (``benchmarks/scen_decode.py``,
paired with pydantic v2; figures in ``benchmarks/RESULTS.md``). This module generates,
once per response model, a decoder that does what that function does, faster:

* one ``data.get`` per field; the converter's leaf hook (``_convert.structure_hook``) is
  called only when the value is not None and not already of the JSON type the hook
  returns unchanged (``str``, ``int``, ``bool``, ``dict``); ``list[Any]`` is copied,
  ``list[Model]`` decodes each item with the model's own fast decoder;
* models of this package (``asyncsdk.models``, plain frozen slotted attrs classes, which
  a test checks) are built by storing into their slots as their ``__init__`` would
  (through a ``filler_for`` subclass); any other class through its ``__init__``.

It is proven equal to the cattrs path (``_convert.cattrs_structure``) on every response
model by a hypothesis differential test (``tests/test_convert_fastpath.py``): same model,
or ``DecodeFailure`` from both. A failure names the path to the bad value
(``ContactList at $[0].emaillist[0].data[3].mobile: expected an integer, got str``).
"""

from __future__ import annotations

import enum
import inspect
import linecache
import typing
from collections.abc import Callable
from typing import Any

import attrs

from ..models._base import ResponseModel, is_any, split_optional
from .converter import DecodeFailure, exact_members, failing_index, structure_hook, wire_key

__all__ = ["builder_for", "decoder_for", "filler_for"]

Decoder = Callable[[Any], Any]

#: Leaf types whose converter hook returns a value of exactly this type unchanged.
_SAME = {str: "str", int: "int", bool: "bool", dict: "dict"}
_DECODERS: dict[type, Decoder] = {}


def decoder_for(cls: type) -> Decoder:
    """The fast decoder of response model ``cls`` (built on first use)."""
    decoder = _DECODERS.get(cls)
    if decoder is None:
        decoder = _DECODERS[cls] = _compile(cls)
    return decoder


def builder_for(cls: type, *names: str) -> Callable[..., Any]:
    """A function ``build(*values)`` giving what ``cls(**dict(zip(names, values)))``
    gives, the other fields at their defaults: for a model of this package, by plain
    stores into a ``filler_for(cls)`` (a frozen attrs ``__init__`` costs an
    ``object.__setattr__`` per field: ``check_many`` builds one outcome per input), else
    through ``__init__``."""
    filler = filler_for(cls)
    fields = attrs.fields(cls)
    if (filler is None or any(a.name not in names and (
            a.default is attrs.NOTHING or isinstance(a.default, attrs.Factory))  # type: ignore[arg-type,unused-ignore]
            for a in fields)):
        return lambda *values: cls(**dict(zip(names, values, strict=True)))
    namespace: dict[str, Any] = {"cls": cls, "filler": filler}
    lines = [f"def build({', '.join(names)}):", "    self = filler()"]
    for i, a in enumerate(fields):
        if a.name in names:
            lines.append(f"    self.{a.name} = {a.name}")
        else:
            namespace[f"default{i}"] = a.default
            lines.append(f"    self.{a.name} = default{i}")
    lines += ["    self.__class__ = cls", "    return self"]
    exec(compile("\n".join(lines) + "\n", f"<asyncsdk builder {cls.__qualname__}>", "exec"),  # noqa: S102
         namespace)
    build: Callable[..., Any] = namespace["build"]
    return build


_FILLERS: dict[type, type | None] = {}


def filler_for(cls: type) -> type | None:
    """A subclass of model ``cls`` that adds no slot, is made empty by calling it
    (``object``'s ``__init__``) and stores attributes the plain way (``object``'s
    ``__setattr__`` and ``__delattr__``), for a model of this package whose ``__init__``
    only stores its values (no validator, converter, alias or init hook; only ``extra``
    has a factory); else None (the class is then built through ``__init__``).

    A model is built as a filler, each field stored by the interpreter's own slot store,
    and then made a ``cls`` by ``__class__`` assignment, which Python allows between a
    class and a subclass of the same layout (weakref slot included): 0.4 µs for a
    contact of 33 fields against 1.8 µs through the slot descriptors' setters (the
    frozen ``__setattr__`` refuses plain stores; both ``__setattr__`` and
    ``__delattr__`` must be ``object``'s for the store to take the fast path). Every
    field must be stored before the assignment. The instance is a filler only inside
    the builder: it is made after every value is decoded and leaves as a ``cls``.
    Probed once per model: the filler must become a ``cls`` equal to the one
    ``cls(...)`` builds."""
    if cls in _FILLERS:
        return _FILLERS[cls]
    _FILLERS[cls] = filler = _make_filler(cls)
    return filler


def _make_filler(cls: type) -> type | None:
    if not cls.__module__.startswith("asyncsdk.models."):
        return None
    if hasattr(cls, "__attrs_pre_init__") or hasattr(cls, "__attrs_post_init__"):
        return None
    fields = attrs.fields(cls)
    slots = {s for c in cls.__mro__ for s in c.__dict__.get("__slots__", ())}
    if "__dict__" in slots or slots - {a.name for a in fields} - {"__weakref__"}:
        return None
    for a in fields:
        descriptor = inspect.getattr_static(cls, a.name, None)
        if (a.validator is not None or a.converter is not None or not a.init
                or a.alias != a.name or type(descriptor).__name__ != "member_descriptor"
                or not a.name.isidentifier() or a.name.startswith("__")
                or (isinstance(a.default, attrs.Factory)  # type: ignore[arg-type,unused-ignore]
                    and a.name != "extra")):
            return None
    filler = type(f"_{cls.__name__}Filler", (cls,), {
        "__slots__": (), "__module__": __name__, "__init__": object.__init__,
        "__setattr__": object.__setattr__, "__delattr__": object.__delattr__})
    values = {a.name: object() for a in fields}
    probe: Any = filler()
    try:
        for name, value in values.items():
            setattr(probe, name, value)
        probe.__class__ = cls
    except (TypeError, AttributeError):  # pragma: no cover - a layout Python refuses
        return None
    built = cls(**values)
    if type(probe) is not cls or any(  # pragma: no cover - another build than ours
            getattr(probe, name) is not getattr(built, name) for name in values):
        return None
    return filler


def _is_model(tp: Any) -> bool:
    return isinstance(tp, type) and issubclass(tp, ResponseModel)


def _compile(cls: type) -> Decoder:
    hints = typing.get_type_hints(cls)
    name = cls.__name__
    namespace: dict[str, Any] = {"cls": cls, "DecodeFailure": DecodeFailure,
                                 "failing_index": failing_index}
    lines = [
        "def decode_model(data):",
        "    if type(data) is not dict:",
        "        if not isinstance(data, dict):",
        "            raise DecodeFailure(",
        f"                {'expected an object (' + name + '), got '!r} + type(data).__name__)",
        "    get = data.get",
    ]
    values: list[tuple[str, str]] = []
    keys: list[str] = []
    for i, a in enumerate(attrs.fields(cls)):
        if a.name == "extra":
            continue
        key = wire_key(a)
        keys.append(key)
        inner = split_optional(hints[a.name])[0]
        var = f"v{i}"
        lines.append(f"    {var} = get({key!r})")
        namespace[f"d{i}"], namespace[f"t{i}"] = structure_hook(inner), inner
        call: str | None = f"d{i}({var}, t{i})"
        where = repr("." + key)
        test = f"{var} is not None"
        item = typing.get_args(inner)[0] if typing.get_origin(inner) is list else None
        if is_any(inner):
            call = None
        elif inner in _SAME:
            test = f"type({var}) is not {_SAME[inner]} and {var} is not None"
        elif typing.get_origin(inner) is dict:
            test = f"type({var}) is not dict and {var} is not None"
        elif item is Any:
            call = f"{var}[:] if type({var}) is list else {call}"
        elif item is not None and _is_model(item):
            namespace[f"n{i}"] = decoder_for(item)
            call = f"[n{i}(x) for x in {var}] if type({var}) is list else {call}"
            where = f"{'.' + key!r} + failing_index(n{i}, {var})"
        if call is not None and isinstance(inner, type) and issubclass(inner, enum.Enum):
            # A member's exact value is that member, looked up here: the hook (an enum
            # call for anything else) only for an unknown value or another type.
            namespace[f"e{i}"] = exact_members(inner)
            namespace[f"k{i}"] = int if issubclass(inner, int) else str
            lines += [
                f"    if {test}:",
                f"        m{i} = e{i}.get({var}) if type({var}) is k{i} else None",
                f"        if m{i} is not None:",
                f"            {var} = m{i}",
                "        else:",
                "            try:",
                f"                {var} = {call}",
                "            except DecodeFailure as exc:",
                f"                raise exc.within({where}) from None",
            ]
        elif call is not None:
            lines += [
                f"    if {test}:",
                "        try:",
                f"            {var} = {call}",
                "        except DecodeFailure as exc:",
                f"            raise exc.within({where}) from None",
            ]
        if a.default is attrs.NOTHING:  # required: missing or null is no model
            lines += [
                f"    if {var} is None:",
                f"        raise DecodeFailure('missing (required)', {'.' + key!r})",
            ]
        values.append((a.name, var))
    namespace["known"] = known = frozenset(keys)
    unknown = "{k: v for k, v in data.items() if k not in known}"
    extra_test = f"len(data) > {len(known)} or not known.issuperset(data)"
    filler = filler_for(cls)
    if filler is not None:
        namespace["filler"] = filler
        lines.append("    self = filler()")
        lines += [f"    self.{field} = {var}" for field, var in values]
        lines += [f"    self.extra = {unknown} if {extra_test} else {{}}",
                  "    self.__class__ = cls", "    return self"]
    else:
        call = ", ".join(f"{field}={var}" for field, var in values)
        lines += [
            f"    if {extra_test}:",
            f"        return cls({call + ', ' if call else ''}extra={unknown})",
            f"    return cls({call})",
        ]
    source = "\n".join(lines) + "\n"
    filename = f"<asyncsdk decoder {cls.__module__}.{cls.__qualname__}>"
    exec(compile(source, filename, "exec"), namespace)  # noqa: S102 - our own source
    linecache.cache[filename] = (len(source), None, source.splitlines(True), filename)
    decode_model: Decoder = namespace["decode_model"]
    return decode_model
