"""The converter reads every response model as a plain reading of DESIGN §2 does.

The converter is cattrs tuned through its own options (hook factories for nullable
fields and lists, ``make_dict_structure_fn`` with ``extra`` renamed to a private key):
``reference`` below reads an answer field by field, the obvious way, with the same leaf
parsers. Hypothesis draws JSON objects with every field of the model (right types,
types the lenient hooks convert, wrong types, null, missing) plus unknown keys: both
give the same model, types included, or both refuse it, and the converter's failure
names a place that is in the answer. Models are built by their own constructor.
"""

from __future__ import annotations

import enum
import pickle
import re
import typing
import weakref
from decimal import Decimal
from typing import Any

import attrs
import pytest
from helpers import same_all_the_way_down
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import asyncsdk
from asyncsdk._serde.converter import DecodeFailure, decode, decode_list
from asyncsdk.models import _convert
from asyncsdk.models._base import ResponseModel, split_optional
from asyncsdk.models._convert import wire_key
from asyncsdk.models.codes import Industry

RESPONSE_MODELS = sorted(
    {getattr(asyncsdk, n) for n in asyncsdk.__all__
     if isinstance(getattr(asyncsdk, n), type) and issubclass(getattr(asyncsdk, n), ResponseModel)}
    | {asyncsdk.Contact, asyncsdk.models.contacts.ContactGroup, asyncsdk.InvoiceLineItem},
    key=lambda m: m.__name__)

json_leaf = st.one_of(
    st.none(), st.booleans(), st.integers(-(2**70), 2**70),
    st.floats(allow_nan=False, allow_infinity=False), st.text(max_size=12),
    st.sampled_from(["", "12", " 7 ", "-3", "1.50", "yes", "No", "true", "0", "1",
                     "2024-02-29", "29-02-2024", "2024-02-29T10:11:12", "2024-13-01",
                     "Valid", "valid", "CatchAll", "Queued", "send", "Risky"]))
json_value = st.recursive(json_leaf, lambda inner: st.one_of(
    st.lists(inner, max_size=3), st.dictionaries(st.text(max_size=5), inner, max_size=3)),
    max_leaves=6)


# --- the reference: each field read the plain way ------------------------------------------
_LEAVES: dict[Any, Any] = {
    str: _convert.parse_str, int: _convert.parse_int, bool: _convert.parse_bool,
    Decimal: _convert.parse_decimal, _convert.dt.date: _convert.parse_date,
    _convert.dt.datetime: _convert.parse_datetime}


def reference(data: Any, model: type) -> Any:
    """``data`` read as ``model`` field by field: a missing key is the default (a
    required one refuses), null is None where allowed, unknown keys are ``extra``."""
    if not isinstance(data, dict):
        raise DecodeFailure("not an object")
    hints = typing.get_type_hints(model)
    values, known = {}, set()
    for a in attrs.fields(model):
        if a.name == "extra":
            continue
        key = wire_key(a)
        known.add(key)
        if key in data:
            values[a.name] = reference_value(data[key], hints[a.name])
        elif a.default is attrs.NOTHING:
            raise DecodeFailure("missing (required)")
    unknown = {k: v for k, v in data.items() if k not in known}
    return model(**values, extra=unknown) if unknown else model(**values)


def reference_value(value: Any, tp: Any) -> Any:
    inner, nullable, _ = split_optional(tp)
    if set(typing.get_args(inner)) == {int, str}:
        return _convert.parse_int_or_str(value)
    if value is None and nullable:
        return None
    if typing.get_origin(inner) is list:
        if not isinstance(value, list):
            raise DecodeFailure("not a list")
        (item,) = typing.get_args(inner)
        return value[:] if item is Any else [reference_value(v, item) for v in value]
    if typing.get_origin(inner) is dict:
        if not isinstance(value, dict):
            raise DecodeFailure("not an object")
        return value
    if issubclass(inner, ResponseModel):
        return reference(value, inner)
    if issubclass(inner, enum.Enum):
        return inner(_code_text(value) if issubclass(inner, str) else _convert.parse_int(value))
    return _LEAVES[inner](value)


def _code_text(value: Any) -> str:
    """A text code list's value: text (a number is no verdict)."""
    if not isinstance(value, str):
        raise DecodeFailure("not a code's text")
    return value


def _field_value(tp: Any, depth: int) -> st.SearchStrategy[Any]:
    """Values of the field's own JSON shape, and anything else."""
    inner = split_optional(tp)[0]
    if typing.get_origin(inner) is list and depth < 2:
        (item,) = typing.get_args(inner)
        if isinstance(item, type) and issubclass(item, ResponseModel):
            return st.one_of(st.lists(_model_json(item, depth + 1), max_size=3), json_value)
    if isinstance(inner, type) and issubclass(inner, ResponseModel) and depth < 2:
        return st.one_of(_model_json(inner, depth + 1), json_value)
    return json_value


def _model_json(model: type, depth: int = 0) -> st.SearchStrategy[dict[str, Any]]:
    hints = typing.get_type_hints(model)
    fields = {wire_key(a): _field_value(hints[a.name], depth)
              for a in attrs.fields(model) if a.name != "extra"}
    return st.builds(
        lambda known, keep, unknown: {**{k: v for k, v in known.items() if k in keep},
                                      **unknown},
        st.fixed_dictionaries(fields), st.sets(st.sampled_from(sorted(fields))),
        st.dictionaries(st.text(max_size=6), json_leaf, max_size=2))


def _outcome(read: Any, data: Any, model: type) -> Any:
    try:
        return ("ok", read(data, model))
    except DecodeFailure as failure:
        return ("DecodeFailure", failure)


_STEP = re.compile(r"\.([A-Za-z_]\w*)|\[(\d+)\]")


def _assert_place_in(body: Any, failure: DecodeFailure, model: type) -> None:
    """The failure's path (``Model at $.emaillist[0].data[2].mobile``) walks into
    ``body``, up to the last key, which a "missing" failure names as absent."""
    prefix = f"{model.__name__} at $"
    assert failure.path.startswith(prefix), failure
    steps = _STEP.findall(failure.path[len(prefix):])
    assert "".join(f".{k}" if k else f"[{i}]" for k, i in steps) == failure.path[len(prefix):]
    here = body
    for n, (key, index) in enumerate(steps):
        last = n == len(steps) - 1
        if index:
            assert isinstance(here, list) and int(index) < len(here), failure
            here = here[int(index)]
        elif last and failure.why.startswith("missing"):
            assert isinstance(here, dict) and key not in here, failure
        else:
            assert isinstance(here, dict) and key in here, failure
            here = here[key]


def _compare(body: Any, model: type) -> None:
    got, expected = _outcome(decode, body, model), _outcome(reference, body, model)
    assert got[0] == expected[0], (body, got, expected)
    if got[0] == "ok":
        assert same_all_the_way_down(got[1], expected[1]), (body, got, expected)
    else:
        _assert_place_in(body, got[1], model)


@pytest.mark.parametrize("model", RESPONSE_MODELS, ids=lambda m: m.__name__)
@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data())
def test_the_converter_reads_as_the_reference(model: type, data: st.DataObject) -> None:
    _compare(data.draw(st.one_of(_model_json(model), json_value)), model)


ENUM_FIELDS = [
    (model, a.name, wire_key(a), split_optional(typing.get_type_hints(model)[a.name])[0])
    for model in RESPONSE_MODELS for a in attrs.fields(model)
    if a.name != "extra" and isinstance(split_optional(typing.get_type_hints(model)[a.name])[0],
                                        type)
    and issubclass(split_optional(typing.get_type_hints(model)[a.name])[0], enum.Enum)]


@pytest.mark.parametrize(("model", "name", "key", "enum_cls"), ENUM_FIELDS,
                         ids=lambda v: getattr(v, "__name__", str(v)))
def test_code_fields_read_as_the_reference(model: type, name: str, key: str,
                                           enum_cls: Any) -> None:
    """The code hook's look-up of a member's exact value gives what the enum call gives,
    for every code field: each member's value, and every near miss (another type, case,
    spaces, a bool for an int code, 1.0, another list's code, unknown)."""
    values = [*(m.value for m in enum_cls), *(str(m.value) for m in enum_cls),
              *(float(m.value) for m in enum_cls if isinstance(m.value, int)),
              True, False, 1, 2, 0, -1, 1.0, "1", " 2 ", "Valid", "VALID", " valid ",
              "Risky", "", None, [1], {"a": 1}, 2**70]
    hints = typing.get_type_hints(model)
    required = {wire_key(a): "x" for a in attrs.fields(model) if a.default is attrs.NOTHING}
    assert all(hints[a.name] is str or a.name == name  # (``CheckResult.result``)
               for a in attrs.fields(model) if a.default is attrs.NOTHING)
    for value in values:
        body = {**required, key: value}
        _compare(body, model)
        got = _outcome(decode, body, model)
        if got[0] == "ok" and getattr(got[1], name) in list(enum_cls):
            assert getattr(got[1], name) is enum_cls(getattr(got[1], name))  # the member


def test_every_response_model_is_covered() -> None:
    """A new response model lands in the differential test by being exported."""
    import importlib
    import pkgutil

    import asyncsdk.models as pkg

    found = set()
    for info in pkgutil.iter_modules(pkg.__path__):
        module = importlib.import_module(f"asyncsdk.models.{info.name}")
        found |= {v for v in vars(module).values()
                  if isinstance(v, type) and issubclass(v, ResponseModel)
                  and v is not ResponseModel}
    assert found <= set(RESPONSE_MODELS)


def test_a_listing_reads_as_its_constructors_build_it() -> None:
    body = {"id": "7", "name": "L", "is_email": "yes", "emaillist": [
        {"contact": 7, "data": [{"email": "a@b.c", "dob": "01-02-2000", "mobile": 12.0,
                                 "tags": ["x"], "new": 1}]}], "more": True}
    got = decode(body, asyncsdk.ContactList)
    contact = asyncsdk.Contact(email="a@b.c", dob=_convert.dt.date(2000, 2, 1), mobile=12,
                               tags=["x"], extra={"new": 1})
    assert got == asyncsdk.ContactList(
        id=7, name="L", is_email=True, extra={"more": True},
        emaillist=[asyncsdk.models.contacts.ContactGroup(contact=7, data=[contact])])
    assert got.emaillist[0].data[0].tags is not body["emaillist"][0]["data"][0]["tags"]
    assert decode({"selling_price": "12.345"}, asyncsdk.Product).selling_price == Decimal(
        "12.345")


def test_models_are_built_by_their_own_constructor(monkeypatch: pytest.MonkeyPatch) -> None:
    """Regression (issue 27): models were built as a "filler" subclass whose class was
    then swapped (``__class__`` assignment). Now every model of a listing is made by
    one call of its class's ``__init__``, which is handed ``extra`` where the answer
    has unknown keys (never set on the model afterwards)."""
    built: list[tuple[str, dict[str, Any]]] = []
    for model in (asyncsdk.ContactList, asyncsdk.models.contacts.ContactGroup,
                  asyncsdk.Contact):
        original = model.__init__

        def counting(self: Any, *args: Any, __original: Any = original,
                     **kwargs: Any) -> None:
            assert not args
            built.append((type(self).__name__, kwargs))
            __original(self, **kwargs)

        monkeypatch.setattr(model, "__init__", counting)
    data = [{"id": i, "emaillist": [{"contact": i, "data": [
        {"email": f"{i}.{j}@b.c", **({"new": j} if j else {})} for j in range(3)]}]}
        for i in range(2)]
    got = decode_list(data, asyncsdk.ContactList)
    assert [name for name, _ in built].count("Contact") == 6
    assert [name for name, _ in built].count("ContactGroup") == 2
    assert [name for name, _ in built].count("ContactList") == 2
    extras = [kwargs.get("extra") for name, kwargs in built if name == "Contact"]
    assert extras == [None, {"new": 1}, {"new": 2}] * 2  # only where there are some
    assert [c.extra for cl in got for c in cl.contacts] == [{}, {"new": 1}, {"new": 2}] * 2


def test_an_answer_holding_the_private_extra_key_keeps_it_in_extra() -> None:
    """``extra`` reaches the constructor under a private key the reader adds to a copy
    of the answer: an answer that sends that key itself has it kept, as any unknown
    key, and the answer is not changed."""
    key = _convert._EXTRA_KEY
    body = {"email": "a@b.c", "status": "success", "result": "Valid", key: {"x": 1}}
    got = decode(body, asyncsdk.CheckResult)
    assert got.extra == {key: {"x": 1}}
    assert body == {"email": "a@b.c", "status": "success", "result": "Valid", key: {"x": 1}}
    assert decode({"email": "a", "status": "s", "result": "Valid", "x": 2},
                  asyncsdk.CheckResult).extra == {"x": 2}


@pytest.mark.parametrize("model", RESPONSE_MODELS, ids=lambda m: m.__name__)
def test_decoded_models_are_exactly_their_own_frozen_class(model: type) -> None:
    """A decoded model is exactly its own class: frozen against setting and deleting,
    weak-referenceable where the class is, and it pickles to an equal model."""
    required = {wire_key(a): "x" for a in attrs.fields(model) if a.default is attrs.NOTHING}
    got = decode({**required, "unknown key": 1}, model)
    assert type(got) is model and got.extra == {"unknown key": 1}
    name = attrs.fields(model)[0].name
    with pytest.raises(attrs.exceptions.FrozenInstanceError):
        setattr(got, name, "other")
    with pytest.raises(attrs.exceptions.FrozenInstanceError):
        delattr(got, name)
    if any("__weakref__" in c.__dict__.get("__slots__", ()) for c in model.__mro__):
        assert weakref.ref(got)() is got
    assert pickle.loads(pickle.dumps(got)) == got
    assert repr(got).startswith(model.__name__ + "(")


# --- the known-code shortcut of ``_code_hook`` ------------------------------------------
@settings(max_examples=300, deadline=None)
@given(value=st.one_of(
    st.sampled_from([*(m.value for m in asyncsdk.Verdict), *(m.value for m in Industry)]),
    st.sampled_from([" valid ", "VALID", "Risky", "1", "2", True, False, 1.0, 2.0]),
    st.integers(-3, 200), st.text(max_size=6)),
    enum_cls=st.sampled_from([asyncsdk.Verdict, Industry]))
def test_code_hook_shortcut_reads_as_the_enum_call_does(value: Any, enum_cls: Any) -> None:
    """A member's exact value is looked up directly (no enum call); every other value
    (another case, white space, a bool for an int code, 1.0, another list's code) goes
    the way it went before, with the same member, unknown value or refusal."""
    def before(v: Any) -> Any:
        return enum_cls(_code_text(v) if issubclass(enum_cls, str) else _convert.parse_int(v))

    try:
        expected: Any = before(value)
    except (TypeError, ValueError, _convert.DecodeFailure) as exc:
        with pytest.raises(type(exc)):
            _convert._code_hook(value, enum_cls)
        return
    got = _convert._code_hook(value, enum_cls)
    assert got == expected and type(got) is type(expected)
    if expected in enum_cls.__members__.values():
        assert got is expected
