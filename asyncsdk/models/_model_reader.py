"""A response model's structure function, generated for the converter: what cattrs'
``make_dict_structure_fn`` makes of the model, in fewer steps.

cattrs' function calls every field's hook, collects the values in a dict and hands it
to the constructor as ``**kwargs``. Most fields of the service's models are ``X | None
= None``, and most values in an answer are None or already of the JSON type the field's
hook returns unchanged (``converter._nullable_hook``): for those the generated function
reads the value with one ``dict.get`` and keeps it, calling the hook only for any other
value, and passes every field as a keyword. Everything else is read as cattrs reads it,
in cattrs' order (the fields with a default in field order, then the required ones): a
field with another default is passed only when its key is there; a required field is
``o[key]`` (a missing one raises ``KeyError`` with its key, which the converter names).
The model is built by its own constructor either way, and reads alike: the same values,
the same failures (a differential test holds them equal for every response model).

In numbers (10,000 contacts, 33 fields each; ``benchmarks/RESULTS.md``, issue 39): the
fields cost about half of what they cost through cattrs' function.
"""

from __future__ import annotations

import typing
from collections.abc import Callable, Mapping
from typing import Any

import attrs

from ._vocabulary import split_optional

__all__ = ["generated_reader"]


def generated_reader(cls: type, *, hook_of: Callable[[Any], Callable[[Any, Any], Any]],
                     key_of: Callable[[attrs.Attribute[Any]], str],
                     as_is: Mapping[Any, type], is_nullable: Callable[[Any], bool],
                     extra_key: str) -> Callable[[Any, Any], Any] | None:
    """The structure function of response model ``cls`` (called ``f(data, cls)``, as
    cattrs calls it), or None for a model it does not read (a field left out of
    ``__init__``): then cattrs' own. The converter's rules, handed in: ``hook_of`` a
    type's hook; ``key_of`` a field's wire key; ``as_is`` the JSON type a leaf hook
    returns unchanged, by type; ``is_nullable`` the types that get the nullable hook;
    ``extra_key`` the key the unknown members come under, for the field ``extra``."""
    hints = typing.get_type_hints(cls)
    names: dict[str, Any] = {"__cl": cls}
    first: list[str] = []  # the fields with a default, in field order
    last: list[str] = []  # the required ones
    passed: list[str] = []  # alias=variable, in field order
    keyed = False
    for at, field in enumerate(attrs.fields(cls)):
        if not field.init:
            return None
        tp = hints.get(field.name, Any)
        key = extra_key if field.name == "extra" else key_of(field)
        hook, var = f"h{at}", f"v{at}"
        names[hook], names[f"t{at}"] = hook_of(tp), tp
        if field.default is attrs.NOTHING:
            last.append(f"  {var} = {hook}(o[{key!r}], t{at})")
            passed.append(f"{field.alias}={var}")
        elif field.default is None and is_nullable(tp) and field.name != "extra":
            kind = as_is.get(split_optional(tp)[0])
            test = f"{var} is not None"
            if kind is not None:
                names[f"k{at}"] = kind
                test += f" and {var}.__class__ is not k{at}"
            first += [f"  {var} = get({key!r})", f"  if {test}:",
                      f"    {var} = {hook}({var}, t{at})"]
            passed.append(f"{field.alias}={var}")
        else:
            first += [f"  if {key!r} in o:",
                      f"    kw[{field.alias!r}] = {hook}(o[{key!r}], t{at})"]
            keyed = True
    if keyed:
        first.insert(0, "  kw = {}")
        passed.append("**kw")
    source = "\n".join([f"def read_{cls.__name__}(o, _=None):", "  get = o.get", *first, *last,
                        f"  return __cl({', '.join(passed)})", ""])
    # Source made of field aliases and repr()'d keys only, as cattrs makes its own.
    exec(compile(source, f"<asyncsdk reader of {cls.__qualname__}>", "exec"), names)  # noqa: S102
    reader: Callable[[Any, Any], Any] = names[f"read_{cls.__name__}"]
    return reader
