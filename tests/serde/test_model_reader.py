"""The generated structure function of a response model (``models._model_reader``) reads
every answer as cattrs' ``make_dict_structure_fn`` reads it: the same model, or the
same failure, for every response model and any members (differential, property-based).
"""

from __future__ import annotations

import importlib
import pkgutil
import typing
from typing import Any

import attrs
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import asyncsdk.models
from asyncsdk._serde.converter import decode, get_converter
from asyncsdk.models import _convert
from asyncsdk.models._base import ResponseModel
from asyncsdk.models._convert import wire_key
from asyncsdk.models._model_reader import generated_reader


def response_models() -> list[type]:
    found: set[type] = set()
    for info in pkgutil.iter_modules(asyncsdk.models.__path__):
        module = importlib.import_module(f"asyncsdk.models.{info.name}")
        found.update(value for value in vars(module).values()
                     if isinstance(value, type) and issubclass(value, ResponseModel)
                     and attrs.has(value))
    return sorted(found, key=lambda cls: cls.__name__)


MODELS = response_models()


def cattrs_reader(cls: type) -> Any:
    """The structure function the converter used before: cattrs' own."""
    from cattrs.gen import make_dict_structure_fn, override

    converter = get_converter()
    fields = [a for a in attrs.fields(cls) if a.name != "extra"]
    overrides = {a.name: override(rename=wire_key(a)) for a in fields if wire_key(a) != a.name}
    return make_dict_structure_fn(
        cls, converter, _cattrs_forbid_extra_keys=False, _cattrs_detailed_validation=False,
        extra=override(rename=_convert._EXTRA_KEY, struct_hook=_convert._any_hook),
        **overrides)


def rules(converter: Any) -> dict[str, Any]:
    """The converter's rules, as it hands them to ``generated_reader``."""
    return {"hook_of": lambda tp: _convert.hook_of(converter, tp), "key_of": wire_key,
            "as_is": _convert._AS_IS, "is_nullable": _convert._is_nullable,
            "extra_key": _convert._EXTRA_KEY}


def our_reader(cls: type) -> Any:
    converter = get_converter()
    reader = generated_reader(cls, **rules(converter))
    assert reader is not None
    return reader


def outcome(read: Any, data: dict[str, Any], cls: type) -> Any:
    try:
        return read(data, cls)
    except Exception as exc:  # the same failure: its class and its text
        return (type(exc), str(exc))


leaf = (st.none() | st.booleans() | st.integers(-3, 10**20) | st.floats(allow_nan=False)
        | st.text(max_size=6) | st.sampled_from(["", " ", "1", "0", "yes", "Valid", "x",
                                                  "2024-01-31", "31-01-2024", "12.50",
                                                  "2024-01-31T10:00:00Z", "-1"]))
values = st.recursive(leaf, lambda inner: st.lists(inner, max_size=3)
                      | st.dictionaries(st.text(max_size=4), inner, max_size=3),
                      max_leaves=6)


@st.composite
def answers(draw: st.DrawFn, cls: type) -> dict[str, Any]:
    """Members of ``cls`` (any subset, any values: good ones often), maybe the unknown
    members' key."""
    keys = [wire_key(a) for a in attrs.fields(cls) if a.name != "extra"]
    hints = typing.get_type_hints(cls)
    names = {wire_key(a): a.name for a in attrs.fields(cls)}
    data: dict[str, Any] = {}
    for key in draw(st.lists(st.sampled_from(keys), unique=True)) if keys else []:
        tp = hints[names[key]]
        good = st.builds(lambda: None) if "None" in str(tp) else st.nothing()
        if "str" in str(tp) or "Verdict" in str(tp):
            good = good | st.text(max_size=6)
        if "int" in str(tp) or "Decimal" in str(tp):
            good = good | st.integers(0, 99)
        data[key] = draw(good | values)
    if draw(st.booleans()):
        data[_convert._EXTRA_KEY] = {"u": draw(values)}
    return data


@pytest.mark.parametrize("cls", MODELS, ids=lambda cls: cls.__name__)
@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data())
def test_the_generated_reader_reads_as_cattrs_reads(cls: type, data: st.DataObject) -> None:
    answer = data.draw(answers(cls))
    ours, theirs = our_reader(cls), cattrs_reader(cls)
    assert outcome(ours, dict(answer), cls) == outcome(theirs, dict(answer), cls)


def test_every_response_model_is_read_by_a_generated_reader() -> None:
    """No model falls back to cattrs' function (none has a field outside __init__)."""
    assert len(MODELS) >= 10
    for cls in MODELS:
        assert our_reader(cls) is not None


def test_a_model_with_a_field_outside_init_is_left_to_cattrs() -> None:
    @attrs.frozen(kw_only=True)
    class Odd(ResponseModel):
        a: int | None = None
        b: int = attrs.field(init=False, default=1)

    converter = get_converter()
    assert generated_reader(Odd, **rules(converter)) is None
    assert decode({"a": "2", "z": 1}, Odd) == Odd(a=2, extra={"z": 1})


def test_decode_names_a_missing_required_member_and_a_bad_value() -> None:
    from asyncsdk._serde.converter import DecodeFailure
    from asyncsdk.models.validation import CheckResult

    with pytest.raises(DecodeFailure, match=r"CheckResult at \$\.status: missing"):
        decode({"email": "a@b.c", "result": "Valid"}, CheckResult)
    with pytest.raises(DecodeFailure, match=r"CheckResult at \$\.role: expected"):
        decode({"email": "a@b.c", "status": "success", "result": "Valid", "role": [1]},
               CheckResult)
