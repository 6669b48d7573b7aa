"""The cattrs converter: encoding rules, ``to_jsonable``, and the lowest cattrs declared."""

from __future__ import annotations

import datetime as dt
import json
from collections.abc import Iterator
from decimal import Decimal

import pytest

import asyncsdk
from asyncsdk._serde import converter as _convert
from asyncsdk._serde.converter import DecodeFailure, decode, decode_list, encode, to_jsonable
from asyncsdk.models import _base as _bases
from asyncsdk.models import _convert as _hooks


def test_unset_is_left_out_none_is_null_and_formats_follow_the_model() -> None:
    update = asyncsdk.ContactUpdate(uuid="u", email="a@b.c", mobile=1, city=None,
                                    dob=dt.date(2000, 1, 2))
    assert encode(update) == {"uuid": "u", "email": "a@b.c", "mobile": 1, "city": None,
                              "dob": "2000-01-02T00:00:00"}
    create = asyncsdk.ContactListCreate(name="n", is_email=True, emaillist=[
        asyncsdk.ContactInput(email="a@b.c", mobile=1, dob=dt.date(2000, 1, 2))])
    assert encode(create)["emaillist"] == [{"email": "a@b.c", "mobile": 1, "dob": "02-01-2000"}]
    line = asyncsdk.InvoiceLine(products=1, quantity=Decimal(2), rate=Decimal("1.5"))
    body = encode(asyncsdk.InvoiceUpdate(due_date=dt.date(2024, 3, 31), productinvoices=[line]))
    assert body == {"due_date": "2024-03-31", "productinvoices": [
        {"products": 1, "quantity": "2.00", "rate": "1.50"}]}
    lead = asyncsdk.LeadInput(name="A", email="a@b.co", company="C", industry=6, source=2,
                              funnel="F", status=1, rating=3)
    assert encode(lead)["industry"] == 6 and type(encode(lead)["industry"]) is int
    json.dumps(encode(lead))


def test_to_jsonable_is_plain_json_for_any_model_or_list() -> None:
    product = decode({"id": 1, "selling_price": "12.345", "unit": 99, "new": [1]},
                     asyncsdk.Product)
    got = to_jsonable([product])
    assert got == [{"id": 1, "name": None, "selling_price": "12.345", "product_type": None,
                    "unit": 99, "sku": None, "description": None, "new": [1]}]  # as sent
    assert type(got[0]["unit"]) is int
    assert got == [product.to_dict()]
    outcome = asyncsdk.CheckFailure(email="x", error=asyncsdk.InvalidInputError("email: no"))
    assert to_jsonable(outcome) == {"email": "x", "error": "InvalidInputError: email: no",
                                    "result": None, "attempted": True}
    invoice = decode({"invoice_date": "31-03-2024"}, asyncsdk.Invoice)
    assert to_jsonable(invoice)["invoice_date"] == "2024-03-31"
    json.dumps(to_jsonable(invoice))


def test_the_cli_prints_models_by_their_public_to_dict() -> None:
    """The CLI's JSON is each model's public ``to_dict()`` (it imports nothing of
    ``_serde``: tests/test_architecture.py), in lists and dicts too."""
    from asyncsdk.cli.common import to_jsonable as cli_to_jsonable

    lead = decode({"industry": 6, "created": "x"}, asyncsdk.Lead)
    assert cli_to_jsonable(lead) == to_jsonable(lead) == lead.to_dict()
    assert cli_to_jsonable([lead]) == [lead.to_dict()]
    assert cli_to_jsonable({"email": "a", "result": lead}) == {
        "email": "a", "result": lead.to_dict()}


def test_bad_answers_are_decode_failures_with_the_place() -> None:
    with pytest.raises(DecodeFailure, match=r"^ContactList at \$\[1\]\.emaillist\[0\]"
                                            r"\.data\[2\]\.mobile: expected an integer"):
        decode_list([{}, {"emaillist": [{"data": [{}, {"mobile": 1}, {"mobile": "12x"}]}]}],
                    asyncsdk.ContactList)
    with pytest.raises(DecodeFailure, match=r"^CheckResult at \$\.email: missing"):
        decode({"status": "success"}, asyncsdk.CheckResult)
    with pytest.raises(DecodeFailure):
        decode_list({"not": "a list"}, asyncsdk.Lead)


@pytest.fixture
def fresh_converter() -> Iterator[None]:
    saved = _bases._converter, dict(_convert._READERS)
    _bases._converter = None
    _convert._READERS.clear()
    yield
    _bases._converter = saved[0]
    _convert._READERS.clear()
    _convert._READERS.update(saved[1])


def test_works_without_get_structure_hook_as_on_cattrs_23_2(
    monkeypatch: pytest.MonkeyPatch, fresh_converter: None
) -> None:
    """cattrs 23.2 (the declared floor) has no ``get_structure_hook``: every hook the
    converter's factories look up is then ``converter.structure``, and listings must
    still decode (issue 11: they died with a bare AttributeError). (cattrs' own code
    generation uses the method on the installed version, so only ours goes without.)"""

    class Older:
        def structure(self, value: object, tp: object) -> object:
            return value

    old = Older()
    assert _hooks.hook_of(old, int) == old.structure  # type: ignore[arg-type]
    for module in (_hooks, _convert):  # the hooks' factories, and ``decode``'s readers
        monkeypatch.setattr(module, "hook_of", lambda converter, tp: converter.structure)
    got = decode_list([{"id": 1, "industry": 6, "dob": "x"}], asyncsdk.Lead)
    assert got[0].industry is asyncsdk.Industry.BANKS and got[0].extra == {"dob": "x"}
    lists = decode_list([{"emaillist": [{"data": [{"dob": "02-01-2000"}]}]}],
                        asyncsdk.ContactList)
    assert lists[0].contacts[0].dob == dt.date(2000, 1, 2)
    with pytest.raises(DecodeFailure, match=r"\$\[0\]\.emaillist\[0\]\.data\[0\]\.mobile"):
        decode_list([{"emaillist": [{"data": [{"mobile": "x"}]}]}], asyncsdk.ContactList)


def test_the_converter_is_configured_once() -> None:
    """One converter for the package, made at first use; each model's hook is made once
    (cattrs' generated function) and found again for every answer."""
    converter = _convert.get_converter()
    assert _convert.get_converter() is converter is _bases.get_converter()
    assert not converter.detailed_validation
    decode({"email": "a", "status": "s", "result": "Valid"}, asyncsdk.CheckResult)
    hook = _convert._READERS[asyncsdk.CheckResult]
    decode({"email": "b", "status": "s", "result": "Bounce"}, asyncsdk.CheckResult)
    assert _convert._READERS[asyncsdk.CheckResult] is hook


@pytest.mark.parametrize("year", [1, 9, 10, 99, 100, 999, 1000, 2024, 9999])
def test_input_dates_always_have_four_year_digits(year: int) -> None:
    """Each model's wire format (``DD-MM-YYYY``, ``YYYY-MM-DDTHH:MM:SS``, ``YYYY-MM-DD``)
    holds for every year: before, ``strftime("%Y")`` wrote year 5 as "5" (glibc)."""
    from asyncsdk.models.contacts import ContactInput, ContactUpdate
    from asyncsdk.models.invoices import InvoiceUpdate

    day = dt.date(year, 6, 7)
    made = [
        (encode(ContactInput(email="a@example.com", mobile=1, dob=day))["dob"], "%d-%m-%Y"),
        (encode(ContactUpdate(uuid="u", email="a@example.com", mobile=1, dob=day))["dob"],
         "%Y-%m-%dT%H:%M:%S"),
        (encode(InvoiceUpdate(due_date=day))["due_date"], "%Y-%m-%d"),
    ]
    for text, form in made:
        assert f"{year:04d}" in text and str(year).zfill(4) == text.replace("T", "-").split(
            "-")[2 if form.startswith("%d") else 0]
        assert dt.datetime.strptime(text, form).date() == day


@pytest.mark.parametrize("wire", [2.0**53 + 2, 1.8446744073709552e19, 1e30, -(2.0**60)])
def test_an_integer_field_refuses_a_float_too_large_to_be_exact(wire: float) -> None:
    """orjson reads an integer beyond 64 bits (``18446744073709551617``) as a float: an
    id decoded from it would be silently rounded, so it is a ``DecodeFailure`` (before:
    ``id=18446744073709551616``). Integral floats that are exact still read as ints."""
    from asyncsdk.models.contacts import ContactList

    with pytest.raises(DecodeFailure, match="too large to be exact"):
        decode({"id": wire, "name": "n"}, ContactList)
    assert decode({"id": 12.0, "name": "n"}, ContactList).id == 12
    assert decode({"id": 2.0**53, "name": "n"}, ContactList).id == 2**53


def _response_models() -> list[type]:
    from asyncsdk.models._base import ResponseModel

    return [cls for name in asyncsdk.__all__
            if isinstance(cls := getattr(asyncsdk, name), type)
            and issubclass(cls, ResponseModel)]


@pytest.mark.parametrize("model", _response_models(), ids=lambda m: m.__name__)
def test_every_response_model_is_hashable_as_a_frozen_model_should_be(model: type) -> None:
    """Before: ``hash(CheckResult(...))`` raised ``TypeError: unhashable type: 'dict'``
    (its ``extra``), as did every model holding a list. Equal models hash alike."""
    import attrs

    required = {f.name: "x" for f in attrs.fields(model)
                if f.default is attrs.NOTHING and f.name != "extra"}
    one = decode({**required, "unknown": [1]}, model)
    two = decode({**required, "unknown": [1]}, model)
    assert one is not two and hash(one) == hash(two) and one == two
    assert len({one, two}) == 1
    assert decode({**required, "unknown": [2]}, model) != one  # ``extra`` counts for ==


def test_models_holding_lists_are_hashable() -> None:
    listing = decode({"id": 1, "emaillist": [{"contact": 1, "data": [
        {"email": "a@b.com", "tags": ["x"], "attributes": {"k": [1]}}]}]},
        asyncsdk.ContactList)
    invoice = decode({"id": 2, "productinvoices": [{"quantity": "1.00"}]}, asyncsdk.Invoice)
    assert len({listing, invoice, listing}) == 2


@pytest.mark.parametrize("field", ["product_type", "customer_type"])
@pytest.mark.parametrize("wire", [[], {}, ["Goods"], [1], {"a": 1}, 1.5, True])
def test_a_code_field_of_another_json_type_is_a_decode_failure(wire: object,
                                                               field: str) -> None:
    """Regression (found by the hostile-responses property test): in a listing, a list
    or an object where a code was due raised ``TypeError: unhashable type`` (the
    members' lookup, and again while naming the element), not the ``DecodeFailure``
    that becomes a ``ResponseDecodeError``; the failure names the place and the field."""
    from asyncsdk.models.customers import Customer
    from asyncsdk.models.products import Product

    model = {"product_type": Product, "customer_type": Customer}[field]
    with pytest.raises(DecodeFailure, match=rf"\$\.{field}"):
        decode({field: wire}, model)
    with pytest.raises(DecodeFailure, match=rf"\$\[1\]\.{field}"):  # in a listing
        decode_list([{field: 0}, {field: wire}], model)
