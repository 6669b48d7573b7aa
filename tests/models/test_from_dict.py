"""``Model.from_dict(m.to_dict()) == m`` for every model of the public face (issue 38:
the README promised it, and there was no way back), through JSON too; bad data is an
``InvalidInputError`` naming the field.

Models are drawn by hypothesis from their own annotations (``model_values``): every
attrs class in ``asyncsdk.__all__`` is covered, so a new model, or a field of a new
kind, is tried (or makes this test ask for a strategy) without a hand-kept list.
"""

from __future__ import annotations

import datetime as dt
import json
import subprocess
import sys
import types
import typing
from decimal import Decimal
from typing import Any

import attrs
import pytest
from helpers import same_all_the_way_down
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import asyncsdk
from asyncsdk._checks import Marker, OneOf
from asyncsdk.models._base import InputModel, ResponseModel, split_optional
from asyncsdk.models.codes import OpenIntEnum, OpenStrEnum

#: Every model class of the public face: the attrs classes of ``__all__`` but
#: ``RawResponse`` (a record of an answer's status and headers, not data to save).
MODELS = sorted((cls for name in asyncsdk.__all__
                 if isinstance(cls := getattr(asyncsdk, name), type) and attrs.has(cls)
                 and cls is not asyncsdk.RawResponse), key=lambda cls: cls.__name__)


def test_every_model_of_the_face_has_from_dict() -> None:
    assert len(MODELS) == 22
    for model in MODELS:
        assert callable(model.from_dict) and callable(model.to_dict), model.__name__
    assert not hasattr(asyncsdk.RawResponse, "to_dict")


# --- values of each annotation ------------------------------------------------------------
#: Text a model accepts: no NUL, no lone surrogate (``_checks.text_value``).
text = st.text(st.characters(exclude_categories=("Cs",), exclude_characters="\x00"),
               max_size=8)
int64 = st.integers(-(2**63), 2**63 - 1)
json_values = st.recursive(
    st.one_of(st.none(), st.booleans(), int64, text,
              st.floats(allow_nan=False, allow_infinity=False)),
    lambda inner: st.one_of(st.lists(inner, max_size=3),
                            st.dictionaries(text, inner, max_size=3)),
    max_leaves=6)
#: Values of the ``Annotated`` markers, by the marker's name.
MARKED: dict[str, st.SearchStrategy[Any]] = {
    "email": st.from_regex(r"[a-z0-9]{1,8}@[a-z]{1,8}\.[a-z]{2,4}", fullmatch=True),
    "country": st.sampled_from([1, *range(26, 248)]),
    "record id": st.integers(0, 2**63 - 1),
}


def _made_from_text(cls: type[asyncsdk.SDKError]) -> bool:
    try:
        cls("text")
    except TypeError:  # it needs more (a job id)
        return False
    return True


#: asyncsdk's errors that a text makes: what a ``CheckFailure``'s error reads back as.
ERRORS = [cls for name in asyncsdk.__all__ if isinstance(cls := getattr(asyncsdk, name), type)
          and issubclass(cls, asyncsdk.SDKError) and _made_from_text(cls)]


def test_every_error_but_the_jobs_is_made_from_its_text() -> None:
    errors = {getattr(asyncsdk, n) for n in asyncsdk.__all__ if n.endswith("Error")}
    assert errors - set(ERRORS) == {asyncsdk.JobFailedError, asyncsdk.JobTimeoutError}


def _error(cls: type[asyncsdk.SDKError], message: str, operation: str) -> Any:
    if issubclass(cls, (asyncsdk.APIError, asyncsdk.APIConnectionError,
                        asyncsdk.ResponseDecodeError)):
        return cls(message, operation=operation)  # its text: "operation: message"
    return cls(message)


errors = st.builds(_error, st.sampled_from(ERRORS), text,
                   st.sampled_from(["", "validation.check"]))


#: Date-times, as a caller may give them for a date (an input model takes them): with
#: and without a zone, with microseconds, at midnight.
moments = st.datetimes(timezones=st.none() | st.builds(
    dt.timezone, st.timedeltas(-dt.timedelta(hours=23, minutes=59),
                               dt.timedelta(hours=23, minutes=59)))) | st.dates().map(
    lambda day: dt.datetime.combine(day, dt.time()))


def _marked(tp: Any) -> st.SearchStrategy[Any]:
    markers = [m for m in typing.get_args(tp)[1:] if isinstance(m, Marker)]
    (marker,) = markers
    if isinstance(marker, OneOf):
        return st.sampled_from(marker.values)
    assert marker.name in MARKED, f"give the marker {marker.name!r} a strategy here"
    return MARKED[marker.name]


def _code(cls: type, sent: bool) -> st.SearchStrategy[Any]:
    members = st.sampled_from(list(cls))
    if sent:  # an input model takes documented codes only
        return members
    unknown = (st.integers(-999, 999) if issubclass(cls, int) else text).map(cls)
    return st.one_of(members, unknown)  # the service may send codes this library lacks


def _class(cls: type, sent: bool) -> st.SearchStrategy[Any]:
    if issubclass(cls, (OpenIntEnum, OpenStrEnum)):
        return _code(cls, sent)
    if attrs.has(cls):
        return model_values(cls)
    if issubclass(cls, BaseException):
        return errors
    leaves: dict[type, st.SearchStrategy[Any]] = {
        bool: st.booleans(), int: int64, str: text,
        dt.date: st.one_of(st.dates(), moments) if sent else st.dates(),
        type(None): st.none(),
        Decimal: (st.decimals(places=2, min_value=-10**15, max_value=10**15) if sent
                  else st.decimals(allow_nan=False, allow_infinity=False)),
    }
    return leaves[cls]


def values_of(tp: Any, sent: bool) -> st.SearchStrategy[Any]:
    """Values a field annotated ``tp`` takes (``sent``: of an input model, which checks
    them)."""
    inner, nullable, unsettable = split_optional(tp)
    drawn = _inner_values(inner, sent)
    if sent and inner is str and not unsettable:  # a required text is never blank
        drawn = drawn.filter(str.strip)
    if nullable:
        drawn = st.one_of(st.none(), drawn)
    if unsettable:
        drawn = st.one_of(st.just(asyncsdk.UNSET), drawn)
    return drawn


def _inner_values(tp: Any, sent: bool) -> st.SearchStrategy[Any]:
    origin = typing.get_origin(tp)
    if origin is typing.Annotated:
        return _marked(tp)
    if origin is list:
        return st.lists(values_of(typing.get_args(tp)[0], sent), max_size=3)
    if origin in (dict, typing.Union, types.UnionType) or tp is Any:
        args = set(typing.get_args(tp))
        if args == {int, str}:  # a field the service sends either way
            return st.one_of(int64, text)
        return (st.dictionaries(text, json_values, max_size=3) if origin is dict
                else json_values)
    return _class(tp, sent)


def model_values(model: type) -> st.SearchStrategy[Any]:
    """Instances of ``model``, every field drawn from its annotation; a model read from
    the service with unknown keys in ``extra`` too."""
    sent = issubclass(model, InputModel)
    hints = typing.get_type_hints(model, include_extras=True)
    fields = {a.name: values_of(hints[a.name], sent) for a in attrs.fields(model)
              if a.name != "extra"}
    if issubclass(model, ResponseModel):
        known = {a.metadata.get("wire", a.name) for a in attrs.fields(model)}
        fields["extra"] = st.dictionaries(text.filter(lambda k: k not in known),
                                          json_values, max_size=2)
    return st.deferred(lambda: st.builds(model, **fields))


# --- the round trip ---------------------------------------------------------------------
@pytest.mark.parametrize("model", MODELS, ids=lambda m: m.__name__)
@settings(max_examples=15, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data())
def test_a_model_reads_back_equal_from_its_dict(model: type[Any], data: st.DataObject) -> None:
    made = data.draw(model_values(model))
    form = made.to_dict()
    back = model.from_dict(form)
    assert back == made and same_all_the_way_down(back, made)
    saved = json.loads(json.dumps(form, allow_nan=False))  # to_dict() is JSON-ready
    assert model.from_dict(saved) == made
    assert back.to_dict() == form


def test_the_readme_promise_holds_for_a_contact_list() -> None:
    """Issue 38: ``ContactList(**cl.to_dict()) != cl`` was the only way back."""
    wire = {"id": 3, "name": "n", "is_email": "1", "new_flag": [1],
            "emaillist": [{"contact": 3, "data": [{"email": "a@b.co", "dob": "02-01-2000",
                                                  "mobile": "12", "tags": ["x"]}]}]}
    cl = asyncsdk.ContactList.from_dict(wire)  # the service's own answer reads too
    assert cl.contacts[0].dob == dt.date(2000, 1, 2) and cl.extra == {"new_flag": [1]}
    assert asyncsdk.ContactList.from_dict(json.loads(cl.to_json())) == cl
    assert asyncsdk.ContactList.from_dict(types.MappingProxyType(cl.to_dict())) == cl


# --- bad data ---------------------------------------------------------------------------
LEAD = {"name": "A", "email": "a@b.co", "company": "C", "industry": 6, "source": 2,
        "funnel": "F", "status": 1, "rating": 3}
CREATE = {"name": "n", "is_email": True, "emaillist": [{"email": "a@b.co", "mobile": 1}]}
BAD: list[tuple[type[Any], Any, str | None, str]] = [
    (asyncsdk.LeadInput, {**LEAD, "email": "nope"}, "email", "an email address"),
    (asyncsdk.LeadInput, {**LEAD, "industry": 61}, "industry", "Industry code"),
    (asyncsdk.LeadInput, {**LEAD, "nmae": "A"}, "nmae", "not a field of LeadInput"),
    (asyncsdk.LeadInput, {k: v for k, v in LEAD.items() if k != "funnel"}, "funnel",
     "missing"),
    (asyncsdk.ContactListCreate,
     {**CREATE, "emaillist": [{"email": "a@b.co", "mobile": 1}, {"email": "b@c.co",
                                                                 "mobile": "x"}]},
     "emaillist[1].mobile", "expected an integer"),
    (asyncsdk.ContactListCreate,
     {**CREATE, "emaillist": [{"email": "a@b.co", "mobile": 1, "customer_type": 5}]},
     "emaillist[0].customer_type", "one of 0, 1"),
    (asyncsdk.InvoiceUpdate, {"productinvoices": [{"products": 1, "quantity": "1.234",
                                                   "rate": 1}]},
     "productinvoices[0].quantity", "two decimal places"),
    (asyncsdk.ContactList, {"id": "twelve"}, "id", "expected an integer"),
    (asyncsdk.CheckResult, {"email": "a@b.co", "status": "success"}, "result", "missing"),
    (asyncsdk.CheckFailure, {"email": "x", "error": 3, "result": None, "attempted": True},
     "error", "an error as text"),
    (asyncsdk.EmailRow, ["a@b.co"], None, "expected an object"),
]


@pytest.mark.parametrize(("model", "data", "field", "why"), BAD,
                         ids=[f"{m.__name__}-{f}" for m, _, f, _ in BAD])
def test_bad_data_is_invalid_input_naming_the_field(model: type[Any], data: Any,
                                                    field: str | None, why: str) -> None:
    with pytest.raises(asyncsdk.InvalidInputError, match=why) as raised:
        model.from_dict(data)
    assert raised.value.field == field
    where = f"$.{field}" if field else "$"
    assert str(raised.value).startswith(f"{model.__name__} at {where}: ")


def test_an_error_reads_back_as_its_class_with_its_text() -> None:
    failure = asyncsdk.CheckFailure(email="x", error=asyncsdk.APITimeoutError(
        "timed out", operation="validation.check"))
    back = asyncsdk.CheckFailure.from_dict(failure.to_dict())
    assert type(back.error) is asyncsdk.APITimeoutError
    assert str(back.error) == "validation.check: timed out" and back == failure
    plain = asyncsdk.CheckFailure(email="x", error=asyncsdk.SDKError("a: b"))
    assert asyncsdk.CheckFailure.from_dict(plain.to_dict()) == plain
    other = asyncsdk.CheckFailure.from_dict({"email": "x", "error": "Mystery: boom"})
    assert type(other.error) is asyncsdk.SDKError and str(other.error) == "Mystery: boom"


def test_the_models_reach_the_converter_downwards_first_thing() -> None:
    """``to_dict()`` and ``from_dict()`` work first thing in a fresh process, cattrs is
    imported only then (``import asyncsdk`` and building a model stay light), and the
    serializer's floor above the models (``_serde``) is never imported by them."""
    code = ("import sys, json, asyncsdk\n"
            "u = asyncsdk.ContactUpdate(uuid='u', email='a@b.c', mobile=1)\n"
            "assert 'cattrs' not in sys.modules\n"
            "back = asyncsdk.ContactUpdate.from_dict(json.loads(u.to_json()))\n"
            "assert back == u and 'cattrs' in sys.modules\n"
            "assert not [m for m in sys.modules if m.startswith('asyncsdk._serde')]\n"
            "print(u.to_json())\n")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          check=True)
    assert json.loads(done.stdout) == {"uuid": "u", "email": "a@b.c", "mobile": 1}


ZONE = dt.timezone(dt.timedelta(hours=5, minutes=30))


@pytest.mark.parametrize(("given", "kept", "wire"), [
    (dt.datetime(1990, 4, 5, 8, 30, 15, 999, tzinfo=ZONE), dt.datetime(1990, 4, 5, 8, 30, 15),
     "1990-04-05T08:30:15"),
    (dt.datetime(1990, 4, 5), dt.date(1990, 4, 5), "1990-04-05T00:00:00"),
    (dt.date(1990, 4, 5), dt.date(1990, 4, 5), "1990-04-05T00:00:00"),
])
def test_a_date_time_is_kept_as_it_is_sent(given: dt.date, kept: dt.date, wire: str) -> None:
    """A date field keeps what goes on the wire (the wall-clock time to the second,
    no zone; a time of midnight as its date), so that it reads back as it was kept."""
    update = asyncsdk.ContactUpdate(uuid="u", email="a@b.c", mobile=1, dob=given)
    assert update.to_dict()["dob"] == wire
    assert same_all_the_way_down(update.dob, kept)
    assert same_all_the_way_down(asyncsdk.ContactUpdate.from_dict(update.to_dict()), update)
    created = asyncsdk.ContactInput(email="a@b.c", mobile=1, dob=given)
    assert created.to_dict()["dob"] == "05-04-1990"
    assert same_all_the_way_down(created.dob, dt.date(1990, 4, 5))
