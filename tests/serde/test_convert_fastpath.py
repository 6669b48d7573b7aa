"""The compiled fast path (``_fastdecode``) decodes exactly as the cattrs converter's
generated functions do, on every response model: the same model, or ``DecodeFailure``
from both. Hypothesis draws JSON objects with every field of the model (right types,
types the lenient hooks convert, wrong types, null, missing) plus unknown keys."""

from __future__ import annotations

import datetime as dt
import enum
import pickle
import typing
import weakref
from decimal import Decimal
from typing import Any

import attrs
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import asyncsdk
from asyncsdk._serde.converter import DecodeFailure, cattrs_structure, decode, wire_key
from asyncsdk._serde.fastdecode import decoder_for
from asyncsdk.models._base import ResponseModel, split_optional
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
    except DecodeFailure:
        return ("DecodeFailure",)


def _fast(data: Any, model: type) -> Any:
    return decode(data, model)


def _same(a: Any, b: Any) -> bool:
    """Equal, with the same types all the way down (an enum is not its plain value)."""
    if type(a) is not type(b):
        return False
    if attrs.has(type(a)):
        return all(_same(getattr(a, f.name), getattr(b, f.name)) for f in attrs.fields(type(a)))
    if isinstance(a, list):
        return len(a) == len(b) and all(map(_same, a, b))
    if isinstance(a, dict):
        return a.keys() == b.keys() and all(_same(a[k], b[k]) for k in a)
    return bool(a == b)


@pytest.mark.parametrize("model", RESPONSE_MODELS, ids=lambda m: m.__name__)
@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data())
def test_fast_path_equals_cattrs_path(model: type, data: st.DataObject) -> None:
    body = data.draw(st.one_of(_model_json(model), json_value))
    fast, slow = _outcome(_fast, body, model), _outcome(cattrs_structure, body, model)
    assert fast[0] == slow[0], (body, fast, slow)
    if fast[0] == "ok":
        assert _same(fast[1], slow[1]), (body, fast, slow)


ENUM_FIELDS = [
    (model, a.name, wire_key(a), split_optional(typing.get_type_hints(model)[a.name])[0])
    for model in RESPONSE_MODELS for a in attrs.fields(model)
    if a.name != "extra" and isinstance(split_optional(typing.get_type_hints(model)[a.name])[0],
                                        type)
    and issubclass(split_optional(typing.get_type_hints(model)[a.name])[0], enum.Enum)]


@pytest.mark.parametrize(("model", "name", "key", "enum_cls"), ENUM_FIELDS,
                         ids=lambda v: getattr(v, "__name__", str(v)))
def test_code_fields_read_as_the_cattrs_path(model: type, name: str, key: str,
                                              enum_cls: Any) -> None:
    """The decoder's inline lookup of a member's exact value gives what the converter's
    hook gives, for every code field: each member's value, and every near miss (another
    type, case, spaces, a bool for an int code, 1.0, another list's code, unknown)."""
    values = [*(m.value for m in enum_cls), *(str(m.value) for m in enum_cls),
              *(float(m.value) for m in enum_cls if isinstance(m.value, int)),
              True, False, 1, 2, 0, -1, 1.0, "1", " 2 ", "Valid", "VALID", " valid ",
              "Risky", "", None, [1], {"a": 1}, 2**70]
    hints = typing.get_type_hints(model)
    required = {wire_key(a): "x" for a in attrs.fields(model) if a.default is attrs.NOTHING}
    assert all(hints[a.name] is str for a in attrs.fields(model) if a.default is attrs.NOTHING)
    for value in values:
        body = {**required, key: value}
        fast, slow = _outcome(_fast, body, model), _outcome(cattrs_structure, body, model)
        assert fast[0] == slow[0], (value, fast, slow)
        if fast[0] == "ok":
            assert _same(fast[1], slow[1]), (value, fast, slow)
            got = getattr(fast[1], name)
            if got in list(enum_cls):
                assert got is getattr(slow[1], name)  # the member itself


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


def test_fast_path_builds_models_as_init_would() -> None:
    """The slot stores give the very object the constructor gives (extra included)."""
    body = {"id": "7", "name": "L", "is_email": "yes", "emaillist": [
        {"contact": 7, "data": [{"email": "a@b.c", "dob": "01-02-2000", "mobile": 12.0,
                                 "tags": ["x"], "new": 1}]}], "more": True}
    got = decoder_for(asyncsdk.ContactList)(body)
    contact = asyncsdk.Contact(email="a@b.c", dob=dt.date(2000, 2, 1), mobile=12,
                               tags=["x"], extra={"new": 1})
    assert got == asyncsdk.ContactList(
        id=7, name="L", is_email=True, extra={"more": True},
        emaillist=[asyncsdk.models.contacts.ContactGroup(contact=7, data=[contact])])
    assert got.emaillist[0].data[0].tags is not body["emaillist"][0]["data"][0]["tags"]
    assert decode({"selling_price": "12.345"}, asyncsdk.Product).selling_price == Decimal(
        "12.345")


@pytest.mark.parametrize("model", RESPONSE_MODELS, ids=lambda m: m.__name__)
def test_decoded_models_leave_as_their_own_frozen_class(model: type) -> None:
    """Every response model is built through its filler subclass (live: else each field
    costs a slot descriptor call), and leaves the decoder as exactly its own class:
    frozen against setting and deleting, weak-referenceable where the class is, and it
    pickles to an equal model."""
    from asyncsdk._serde import fastdecode as _fastdecode

    filler = _fastdecode.filler_for(model)
    assert filler is not None and filler is not model and issubclass(filler, model)
    required = {wire_key(a): "x" for a in attrs.fields(model) if a.default is attrs.NOTHING}
    got = decoder_for(model)({**required, "unknown key": 1})
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
    from asyncsdk._serde import converter as _convert

    def before(v: Any) -> Any:
        parse = _convert.parse_int if issubclass(enum_cls, int) else _convert.parse_str
        return enum_cls(parse(v))

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


# --- builders: a model stored into its slots, as its constructor builds it ---------------
@pytest.mark.parametrize(("cls", "values"), [
    (asyncsdk.CheckSuccess, {"email": "a@b.c", "result": asyncsdk.CheckResult(
        email="a@b.c", status="success")}),
    (asyncsdk.CheckFailure, {"email": "x", "error": asyncsdk.APIError("no")}),
    (asyncsdk.CheckFailure, {"email": "x", "error": asyncsdk.APIError("no"),
                             "attempted": False}),
])
def test_builder_builds_what_the_constructor_builds(cls: type, values: dict[str, Any]) -> None:
    from asyncsdk._serde.fastdecode import builder_for

    built = builder_for(cls, *values)(*values.values())
    made = cls(**values)
    assert type(built) is cls and built == made
    assert repr(built) == repr(made)
    for a in attrs.fields(cls):
        assert getattr(built, a.name) is getattr(made, a.name)
    with pytest.raises(attrs.exceptions.FrozenInstanceError):
        built.email = "other"


def test_builder_of_another_class_calls_its_constructor() -> None:
    from asyncsdk._serde.fastdecode import builder_for

    @attrs.frozen
    class Outside:
        a: int
        b: list[int] = attrs.field(factory=list)

    calls = []
    original = Outside.__init__

    def counting(self: Any, *args: Any, **kwargs: Any) -> None:
        calls.append(kwargs)
        original(self, *args, **kwargs)

    Outside.__init__ = counting  # type: ignore[method-assign]
    assert builder_for(Outside, "a")(1) == Outside(a=1)
    assert calls[0] == {"a": 1}
    with pytest.raises(ValueError):  # every value named, no more
        builder_for(Outside, "a")(1, 2)
