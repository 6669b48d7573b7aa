"""Every model's ``to_dict()`` / ``to_json()``: the service's field names and formats,
made by the one converter (``models._convert``, which the model bases import): an input
model as the body it is sent as, a model read from the service with its unknown keys
beside its fields, so that the dict reads back as an equal model (``from_dict``:
tests/models/test_from_dict.py)."""

from __future__ import annotations

import datetime as dt
import json
from decimal import Decimal
from typing import Any

import attrs
import pytest
from resource_cases import (
    CONTACT_LIST_WIRE,
    CONTACT_UPDATE_BODY,
    CONTACT_UPDATES,
    CUSTOMER_WIRE,
    INVOICE_WIRE,
    LEAD_BODY,
    LEAD_INPUT,
    LEAD_WIRE,
    PRODUCT_WIRE,
)

import asyncsdk
from asyncsdk._serde.converter import decode, encode
from asyncsdk.models._base import ResponseModel

MODELS = [getattr(asyncsdk, name) for name in asyncsdk.__all__
          if attrs.has(getattr(asyncsdk, name)) and name != "RawResponse"]


def test_every_public_model_has_them() -> None:
    assert len(MODELS) == 22
    for model in MODELS:
        assert callable(model.to_dict) and callable(model.to_json), model.__name__


WIRES: list[tuple[type[Any], dict[str, Any]]] = [
    (asyncsdk.ContactList, CONTACT_LIST_WIRE), (asyncsdk.Lead, LEAD_WIRE),
    (asyncsdk.Customer, CUSTOMER_WIRE), (asyncsdk.Product, PRODUCT_WIRE),
    (asyncsdk.Invoice, INVOICE_WIRE),
    (asyncsdk.CheckResult, {"email": "a@b.com", "status": "success", "result": "Risky",
                            "role": "False"}),
    (asyncsdk.MailResult, {"status": "success", "message": "Queued", "id": "m-1"}),
]


@pytest.mark.parametrize(("model", "wire"), WIRES, ids=[m.__name__ for m, _ in WIRES])
def test_a_model_read_from_the_service_reads_back_equal(model: type[Any],
                                                        wire: dict[str, Any]) -> None:
    read = decode({**wire, "added_later": {"by": "the service"}}, model)
    form = read.to_dict()
    assert decode(form, model) == read  # the same model again
    assert form["added_later"] == {"by": "the service"} and "extra" not in form
    assert set(wire) <= set(form)  # every key it was sent, under the same name
    assert json.loads(read.to_json()) == form
    assert json.loads(json.dumps(form)) == form  # plain JSON types only


def test_values_are_in_json_forms() -> None:
    check = decode(WIRES[5][1], asyncsdk.CheckResult).to_dict()
    assert check["result"] == "Risky" and type(check["result"]) is str  # an unknown verdict
    assert check["role"] is False
    invoice = decode({"invoice_date": "31-03-2024", "total": "12.5"}, asyncsdk.Invoice)
    assert invoice.to_dict()["invoice_date"] == "2024-03-31"
    product = decode({"selling_price": "12.345", "unit": 99}, asyncsdk.Product).to_dict()
    assert product["selling_price"] == "12.345" and product["unit"] == 99  # exact, unknown


def test_an_input_model_is_the_body_it_is_sent_as() -> None:
    assert LEAD_INPUT.to_dict() == encode(LEAD_INPUT) == LEAD_BODY
    assert [u.to_dict() for u in CONTACT_UPDATES] == CONTACT_UPDATE_BODY["data"]
    line = asyncsdk.InvoiceLine(products=1, quantity=Decimal(2), rate=Decimal("1.5"))
    update = asyncsdk.InvoiceUpdate(due_date=dt.date(2024, 3, 31), productinvoices=[line])
    assert json.loads(update.to_json(indent=2)) == {
        "due_date": "2024-03-31",
        "productinvoices": [{"products": 1, "quantity": "2.00", "rate": "1.50"}]}


def test_outcomes_and_rows_are_plain_json_too() -> None:
    row = asyncsdk.EmailRow(email="a@b.com", name="A", status=asyncsdk.Verdict.VALID,
                            role_based=None)
    assert row.to_dict() == {"email": "a@b.com", "name": "A", "status": "Valid",
                             "role_based": None}
    failure = asyncsdk.CheckFailure(email="x", error=asyncsdk.InvalidInputError("email: no"))
    assert json.loads(failure.to_json()) == {"email": "x", "error": "InvalidInputError: email: no",
                                             "result": None, "attempted": True}
    success = asyncsdk.CheckSuccess(email="a@b.com",
                                    result=decode(WIRES[5][1], asyncsdk.CheckResult))
    assert success.to_dict()["result"]["result"] == "Risky"


@attrs.frozen(kw_only=True)
class Renamed(ResponseModel):
    """A field whose wire name differs (``metadata={"wire": ...}``)."""

    full_name: str | None = attrs.field(default=None, metadata={"wire": "customer_name"})
    born: dt.date | None = None


def test_a_field_is_written_under_its_wire_name() -> None:
    read = decode({"customer_name": "Ann", "born": "05-04-1990", "x": 1}, Renamed)
    assert read.full_name == "Ann"
    assert read.to_dict() == {"customer_name": "Ann", "born": "1990-04-05", "x": 1}
    assert decode(read.to_dict(), Renamed) == read
