"""Answers read from outside: whatever JSON value the service puts in any field of any
response model, decoding gives the model or a ``DecodeFailure`` that names the field
(``$.mobile``), never a bare error and never a value it only began like; what is
decoded reads back equal (``to_dict``, ``to_json``); and through the client, a wrong
answer is a ``ResponseDecodeError`` naming the place, small or big."""

from __future__ import annotations

import datetime as dt
import json
import re
from decimal import Decimal
from typing import Any

import attrs
import pytest
from aioresponses import aioresponses
from helpers import BASE
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

import asyncsdk
from asyncsdk import _constants
from asyncsdk._serde.converter import DecodeFailure, decode, get_converter
from asyncsdk.models._base import ResponseModel
from asyncsdk.models.contacts import Contact, ContactGroup, ContactList
from asyncsdk.models.customers import Customer
from asyncsdk.models.invoices import Invoice, InvoiceLineItem
from asyncsdk.models.leads import Lead
from asyncsdk.models.mail import MailResult
from asyncsdk.models.products import Product
from asyncsdk.models.validation import CheckResult

MODELS = [ContactList, ContactGroup, Contact, Lead, Customer, Product, Invoice,
          InvoiceLineItem, CheckResult, MailResult]
#: What a model needs beside the field tried (its required fields).
REQUIRED: dict[type, dict[str, Any]] = {
    CheckResult: {"email": "a@b.c", "status": "success", "result": "Valid"},
    MailResult: {"status": "success"},
}

# Text the lenient readers look at twice: numbers with signs, spaces, exponents; dates
# with times, zones, fractions; and what only begins like one of them.
number_text = st.from_regex(
    r"\A[ +\-]{0,3}[0-9]{0,5}(\.[0-9]{0,3})?([eE][+\-]?[0-9]{1,3})?[ _]?[0-9]?\Z")
date_text = st.from_regex(
    r"\A[0-9]{1,4}-[0-9W]{1,3}-[0-9]{1,4}([T ][0-9:.,]{0,12}(Z|[+-][0-9:]{1,5})?)?.?\Z")
scalars = st.one_of(
    st.none(), st.booleans(), st.integers(-10**30, 10**30), st.floats(),
    st.text(max_size=6), number_text, date_text,
    st.sampled_from(["true", "True", "0", "1", "yes", "", "Valid", " valid ", "\ud800",
                     "\ud83d\ude00"]))
json_values = st.recursive(
    scalars, lambda inner: st.lists(inner, max_size=3)
    | st.dictionaries(st.text(max_size=4), inner, max_size=3), max_leaves=6)


def _field_keys(model: type) -> list[str]:
    return [a.metadata.get("wire", a.name) for a in attrs.fields(model) if a.name != "extra"]


def _reads_back(model: type, made: Any) -> None:
    assert model.from_dict(made.to_dict()) == made
    assert model.from_dict(json.loads(made.to_json())) == made
    assert decode(json.loads(made.to_json()), model) == made


@settings(max_examples=400, deadline=None, suppress_health_check=list(HealthCheck))
@given(model=st.sampled_from(MODELS), data=st.data())
@example(model=Contact, data=None)  # the sign case, every run
def test_any_value_in_any_field_is_the_model_or_a_failure_naming_the_field(
        model: type, data: st.DataObject | None) -> None:
    if data is None:
        key, value = "mobile", "--5"
    else:
        key = data.draw(st.sampled_from(_field_keys(model)))
        value = data.draw(json_values)
    answer = {**REQUIRED.get(model, {}), key: value, "unknown_key": [value]}
    made = _decoded(answer, model)
    if isinstance(made, DecodeFailure):
        assert re.match(rf"{model.__name__} at \$\.{key}[.\[:]", str(made)), str(made)
    else:
        assert made.extra == {"unknown_key": [value]}
        _reads_back(model, made)


def _decoded(answer: Any, model: type) -> Any:
    """The model, or the ``DecodeFailure`` (anything else is raised: a bare error)."""
    try:
        return decode(answer, model)
    except DecodeFailure as failure:
        return failure


def test_a_failure_deep_in_a_listing_names_the_whole_path() -> None:
    listing = [{"id": 1}, {"id": 2, "emaillist": [
        {"contact": 2, "data": [{"mobile": 1}, {"mobile": "+-5"}]}]}]
    with pytest.raises(DecodeFailure) as info:
        decode(listing, list[ContactList])
    assert "$[1].emaillist[0].data[1].mobile: expected an integer, got str" in str(info.value)


@pytest.mark.parametrize("text", ["--5", "+-5", "-+5", "++1", "+ 1", "1_000", "\u0663", "0x1F",
                                  "1.0", "1e3", ""])
@pytest.mark.parametrize(("model", "key"), [(Contact, "mobile"), (ContactList, "id"),
                                       (Lead, "industry"), (Customer, "currency"),
                                       (InvoiceLineItem, "products")])
def test_text_that_is_no_integer_is_refused_by_its_field(model: type, key: str,
                                                         text: str) -> None:
    with pytest.raises(DecodeFailure) as info:
        decode({key: text}, model)
    assert str(info.value) == f"{model.__name__} at $.{key}: expected an integer, got str"


@pytest.mark.parametrize("text", ["12", " 12 ", "+12", "-12", "0012"])
def test_integral_text_is_read_as_its_integer(text: str) -> None:
    assert decode({"mobile": text}, Contact).mobile == int(text)


# Every date form the document shows (DD-MM-YYYY on create, YYYY-MM-DDTHH:MM:SS on
# update, YYYY-MM-DD for invoices), with the zones and fractions ISO 8601 adds.
@pytest.mark.parametrize("text", [
    "2020-01-02", "02-01-2020", "2020-01-02T03:04:05", "2020-01-02 03:04:05",
    "2020-01-02T03:04:05Z", "2020-01-02T03:04:05+05:30", "2020-01-02T23:59:59-0800",
    "2020-01-02T03:04:05.1", "2020-01-02T03:04:05.123456Z", "2020-01-02T03:04:05.1234567",
    "2020-01-02T03:04", " 2020-01-02 ", "2020-1-2", "2-1-2020",
])
def test_every_date_form_of_the_document_reads_as_its_day(text: str) -> None:
    assert decode({"dob": text}, Contact).dob == dt.date(2020, 1, 2)
    assert decode({"invoice_date": text}, Invoice).invoice_date == dt.date(2020, 1, 2)


@pytest.mark.parametrize("text", [
    "2020-01-02xyz", "2020-01-02T", "2020-01-02T25:00:00", "2020-01-02T03:60:00",
    "2020-01-02T03:04:61", "2020-01-02T03:04:05+25:00", "2020-01-02+05:30",
    "2020-W01-1", "2020-01-02-03", "2024-02-30", "0000-00-00",
    "\u0662\u0660\u0662\u0660-\u0660\u0661-\u0660\u0662",
    "\u0660\u0662-\u0660\u0661-\u0662\u0660\u0662\u0660", "20200102",
])
def test_text_that_only_begins_like_a_date_is_refused(text: str) -> None:
    with pytest.raises(DecodeFailure) as info:
        decode({"dob": text}, Contact)
    assert str(info.value).startswith("Contact at $.dob: expected a date")


@pytest.mark.parametrize(("text", "number"), [
    ("12.50", "12.50"), (" 12.5 ", "12.5"), ("1e3", "1E+3"), ("-0.5", "-0.5"),
    (".5", "0.5"), ("7", "7"),
])
def test_decimal_text_is_read_exactly(text: str, number: str) -> None:
    price = decode({"selling_price": text}, Product).selling_price
    assert price == Decimal(number) and str(price) == str(Decimal(text.strip()))


@pytest.mark.parametrize("wire", ["1_000", "\u0661\u0662", "1 000", "NaN", "Infinity", "0x10", "",
                                  "1e999999999999999999999", True])
def test_what_is_no_decimal_number_is_refused(wire: object) -> None:
    with pytest.raises(DecodeFailure) as info:
        decode({"selling_price": wire}, Product)
    assert str(info.value).startswith("Product at $.selling_price: expected a decimal")


class _Odd:
    """A field type whose hook fails with a plain error (a hook's bug)."""


@attrs.frozen(kw_only=True)
class _Holder(ResponseModel):
    odd: _Odd | None = None
    odds: list[_Odd] | None = attrs.field(default=None, hash=False)


def test_any_error_of_a_hook_is_a_failure_naming_its_field() -> None:
    def refuse(value: Any, _: Any) -> Any:
        raise TypeError("not odd enough")

    get_converter().register_structure_hook(_Odd, refuse)
    for answer, place in [({"odd": 1}, "$.odd"), ({"odds": [1]}, "$.odds[0]")]:
        with pytest.raises(DecodeFailure) as info:
            decode(answer, _Holder)
        assert str(info.value) == (
            f"_Holder at {place}: could not be read (TypeError: not odd enough)")


# --- through the client ------------------------------------------------------------------

@pytest.mark.parametrize("big", [False, True], ids=["on the loop", "off the loop"])
async def test_a_listing_with_a_bad_value_is_a_decode_error_naming_it(
        client: asyncsdk.Client, mocked: aioresponses, monkeypatch: pytest.MonkeyPatch,
        big: bool) -> None:
    if big:  # the big-answer reader (parsed in slices, records decoded as parsed)
        monkeypatch.setattr(_constants, "OFFLOAD_DECODE_BYTES", 64)
    records = [{"uuid": f"u{i}", "mobile": i} for i in range(20)]
    records[13]["mobile"] = "--13"
    body = json.dumps([{"id": 1, "emaillist": [{"contact": 1, "data": records}]}])
    mocked.get(f"{BASE}/api/v1/contact/", body=body,
               headers={"Content-Type": "application/json"})
    with pytest.raises(asyncsdk.ResponseDecodeError) as info:
        await client.contacts.list()
    assert "$[0].emaillist[0].data[13].mobile: expected an integer, got str" in str(
        info.value)
    # What answered, as for a single object's (before: None and None for a listing).
    assert info.value.status_code == 200
    assert info.value.url is not None and "/api/v1/contact/" in info.value.url


@pytest.mark.parametrize("big", [False, True], ids=["on the loop", "off the loop"])
async def test_a_big_object_of_the_wrong_shape_says_what_answered(
        client: asyncsdk.Client, mocked: aioresponses, monkeypatch: pytest.MonkeyPatch,
        big: bool) -> None:
    if big:
        monkeypatch.setattr(_constants, "OFFLOAD_DECODE_BYTES", 64)
    body = json.dumps({"id": "not a number", "name": "n" * 100})
    mocked.get(f"{BASE}/api/v1/contact/5/", body=body,
               headers={"Content-Type": "application/json"})
    with pytest.raises(asyncsdk.ResponseDecodeError) as info:
        await client.contacts.get(5)
    assert info.value.status_code == 200
    assert info.value.url is not None and "/api/v1/contact/5/" in info.value.url


@pytest.mark.parametrize("big", [False, True], ids=["on the loop", "off the loop"])
@pytest.mark.parametrize("ending", ["", " \n", '{"contact": 1, "data": [', '{"data": [ ',
                                    '{"data": [1, ', '{"da', "{"])
async def test_a_listing_cut_short_is_a_decode_error(
        client: asyncsdk.Client, mocked: aioresponses, monkeypatch: pytest.MonkeyPatch,
        big: bool, ending: str) -> None:
    """A body that ends inside the listing (the service cut it short) is no JSON: a
    ``ResponseDecodeError``, never a shorter listing nor a bare error of the reader."""
    if big:
        monkeypatch.setattr(_constants, "OFFLOAD_DECODE_BYTES", 64)
    body = '[{"id": 1, "name": "' + "n" * 100 + '", "emaillist": [' + ending
    mocked.get(f"{BASE}/api/v1/contact/", body=body,
               headers={"Content-Type": "application/json"})
    with pytest.raises(asyncsdk.ResponseDecodeError) as info:
        await client.contacts.list()
    assert "answer is not JSON" in str(info.value)
