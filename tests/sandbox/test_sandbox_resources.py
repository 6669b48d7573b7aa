"""Contacts, leads, customers, products, invoices: CRUD, 400, 401, 404."""

from __future__ import annotations

import json
from typing import Any

import aiohttp
import pytest
from sandbox_helpers import Api

from asyncsdk.testing import Sandbox

CONTACTS = "/api/v1/contact/"
LEADS = "/mysite/api/v1/lead/"
CUSTOMERS = "/mysite/api/v1/customers/"
PRODUCTS = "/mysite/api/v1/products/"
INVOICES = "/mysite/api/v1/invoices/"
REQUIRED = ["This field is required."]

NEW_LIST: dict[str, Any] = {
    "name": "Newsletter",
    "is_email": True,
    "emaillist": [
        {"email": "ada@example.com", "mobile": 447700900001, "dob": "10-12-1815",
         "tags": ["vip"], "attributes": {"plan": "pro"}, "customer_type": 1},
        {"email": "alan@example.org", "mobile": 447700900002},
    ],
}  # fmt: skip
LEAD: dict[str, Any] = {
    "name": "Ada",
    "email": "ada@example.com",
    "company": "Engines",
    "industry": 63,
    "source": 13,
    "funnel": "Default",
    "status": 1,
    "rating": 3,
}


async def test_contact_list_crud(api: Api) -> None:
    status, made = await api.resource("POST", CONTACTS, NEW_LIST)
    assert status == 201
    assert {k: made[k] for k in ("id", "name", "is_email", "is_push", "is_sms", "app_id")} == {
        "id": 1, "name": "Newsletter", "is_email": True, "is_push": False, "is_sms": False,
        "app_id": None,
    }  # fmt: skip
    [group] = made["emaillist"]
    assert group["contact"] == 1
    first, second = group["data"]
    assert first["uuid"] != second["uuid"]
    assert first["dob"] == "1815-12-10"
    assert first["tags"] == ["vip"]
    assert first["attributes"] == {"plan": "pro"}
    assert second["age"] is None
    assert second["bounsestatus"] == 0
    assert second["mobile"] == 447700900002
    assert {"http_referer", "source_ip", "validation_status", "device_id"} <= set(second)

    assert await api.resource("GET", CONTACTS) == (200, [made])
    assert await api.resource("GET", f"{CONTACTS}1/") == (200, made)

    change = {"uuid": first["uuid"], "email": "ada@example.net", "mobile": 1,
              "dob": "1815-12-10T00:00:00", "dndphone": True, "bounsestatus": 2}  # fmt: skip
    status, updated = await api.resource("PUT", f"{CONTACTS}1/", {"contact": 1, "data": [change]})
    assert status == 200
    record = updated["emaillist"][0]["data"][0]
    assert (record["email"], record["mobile"], record["dndphone"]) == ("ada@example.net", 1, True)
    assert record["dob"] == "1815-12-10"
    assert record["customer_type"] == 1

    assert await api.resource("DELETE", f"{CONTACTS}1/") == (204, None)
    assert await api.resource("GET", f"{CONTACTS}1/") == (404, {"detail": "Not found."})


async def test_contact_list_input_errors(api: Api) -> None:
    status, body = await api.resource("POST", CONTACTS, {"emaillist": [{"email": "a@b.co"}]})
    assert status == 400
    assert body == {"name": REQUIRED, "is_email": REQUIRED, "emaillist": [{"mobile": REQUIRED}]}
    bad_date = {**NEW_LIST, "emaillist": [{"email": "a@b.co", "mobile": 1, "dob": "1815-12-10"}]}
    status, body = await api.resource("POST", CONTACTS, bad_date)
    assert status == 400
    assert "DD-MM-YYYY" in body["emaillist"][0]["dob"][0]

    _, made = await api.resource("POST", CONTACTS, NEW_LIST)
    path = f"{CONTACTS}{made['id']}/"
    unknown = {"uuid": "00000000-0000-0000-0000-00000000dead", "email": "x@y.co", "mobile": 1}
    status, body = await api.resource("PUT", path, {"contact": made["id"], "data": [unknown]})
    assert status == 400
    assert "uuid" in body["detail"]
    status, body = await api.resource("PUT", path, {"data": []})
    assert (status, body) == (400, {"contact": REQUIRED})
    known = {"uuid": made["emaillist"][0]["data"][0]["uuid"], "email": "x@y.co", "mobile": 1,
             "marriage_date": "01-01-2000"}  # fmt: skip
    status, body = await api.resource("PUT", path, {"contact": made["id"], "data": [known]})
    assert status == 400
    assert "YYYY-MM-DD" in body["data"][0]["marriage_date"][0]
    assert await api.resource("GET", path) == (200, made)  # nothing changed


async def test_body_must_be_a_json_object(api: Api) -> None:
    query = {"api_key": api.sb.api_key}
    async with api.http.post(CONTACTS, params=query, data="name=x") as resp:
        assert resp.status == 415
    async with api.http.post(LEADS, params=query, data=b"{oops", headers={
            "Content-Type": "application/json"}) as resp:  # fmt: skip
        assert resp.status == 400
        assert "JSON parse error" in (await resp.json())["detail"]
    assert (await api.resource("POST", LEADS, [LEAD]))[0] == 400


@pytest.mark.parametrize("path", [CONTACTS, LEADS, CUSTOMERS, PRODUCTS, INVOICES])
@pytest.mark.parametrize("api_key", [None, "sk_wrong"])
async def test_resource_credentials(api: Api, path: str, api_key: str | None) -> None:
    status, body = await api.resource("GET", path, api_key=api_key)
    assert status == 401
    assert body == {"detail": "Authentication credentials were not provided or are invalid."}
    assert (await api.resource("DELETE", f"{path}1/", api_key=api_key))[0] == 401


@pytest.mark.parametrize("path", [CONTACTS, LEADS, CUSTOMERS, PRODUCTS])
async def test_unknown_ids_are_404(api: Api, path: str) -> None:
    # Superscript two and full-width digits: str.isdigit is True (before: "²" was a 500).
    for obj_id in ("7", "abc", "%C2%B2", "%EF%BC%91%EF%BC%92"):
        assert await api.resource("GET", f"{path}{obj_id}/") == (404, {"detail": "Not found."})
        assert (await api.resource("DELETE", f"{path}{obj_id}/"))[0] == 404
        assert (await api.resource("PUT", f"{path}{obj_id}/", {}))[0] == 404


async def test_lead_crud_and_validation(api: Api) -> None:
    status, made = await api.resource("POST", LEADS, {**LEAD, "country": 44, "score": 5})
    assert status == 201
    assert made["id"] == 1
    assert made["company"] == "Engines"
    assert made["country"] == 44
    assert made["fax"] is None  # documented but not sent: null
    assert await api.resource("GET", f"{LEADS}1/") == (200, made)
    assert await api.resource("GET", LEADS) == (200, [made])
    status, updated = await api.resource("PUT", f"{LEADS}1/", {**LEAD, "rating": 2})
    assert status == 200
    assert updated["rating"] == 2
    assert updated["score"] is None
    status, body = await api.resource("PUT", f"{LEADS}1/", {"rating": 2})
    assert status == 400
    assert body["name"] == REQUIRED
    bad = {**LEAD, "industry": 61, "source": 1, "rating": "3", "email": "nope", "country": 5}
    status, body = await api.resource("POST", LEADS, bad)
    assert status == 400
    assert set(body) == {"industry", "source", "rating", "email", "country"}
    assert (await api.resource("DELETE", f"{LEADS}1/")) == (204, None)
    assert await api.resource("GET", LEADS) == (200, [])


async def test_customer_crud_partial_update(api: Api) -> None:
    status, body = await api.resource("POST", CUSTOMERS, {"email": "g@example.org"})
    assert (status, body) == (400, {"customer_type": REQUIRED, "first_name": REQUIRED})
    new = {"customer_type": 1, "first_name": "Grace", "email": "g@example.org",
           "billing_zipcode": 12345, "shipping_country": "26", "currency": 4}  # fmt: skip
    status, made = await api.resource("POST", CUSTOMERS, new)
    assert status == 201
    assert made["billing_zipcode"] == "12345"
    assert made["shipping_country"] == 26
    path = f"{CUSTOMERS}{made['id']}/"
    status, body = await api.resource("PUT", path, {"last_name": "Hopper"})
    assert (status, body) == (400, {"email": REQUIRED})
    status, updated = await api.resource("PUT", path, {"email": "g@example.com", "last_name": None})
    assert status == 200
    assert updated == {**made, "email": "g@example.com", "last_name": None}
    assert (await api.resource("PUT", path, {"email": "g@x.io", "currency": 9}))[0] == 400
    assert await api.resource("GET", CUSTOMERS) == (200, [updated])
    assert (await api.resource("DELETE", path))[0] == 204


async def test_product_crud(api: Api) -> None:
    status, body = await api.resource("POST", PRODUCTS, {"unit": 9})
    assert status == 400
    assert set(body) == {"name", "selling_price", "unit"}
    status, made = await api.resource(
        "POST", PRODUCTS, {"name": "Widget", "selling_price": "19.9", "unit": 4, "product_type": 0}
    )
    assert status == 201
    assert made["selling_price"] == "19.90"
    assert made["sku"] is None
    path = f"{PRODUCTS}{made['id']}/"
    status, updated = await api.resource("PUT", path, {"name": "Gadget", "selling_price": "5"})
    assert status == 200
    assert updated["selling_price"] == "5.00"
    assert updated["unit"] is None
    status, body = await api.resource("PUT", path, {"name": "G", "selling_price": "five"})
    assert status == 400
    assert body == {"selling_price": ["A valid number is required."]}
    assert await api.resource("GET", PRODUCTS) == (200, [updated])
    assert (await api.resource("DELETE", path))[0] == 204


async def test_invoices_are_seeded_updated_and_deleted(api: Api, sandbox: Sandbox) -> None:
    invoice_id = sandbox.seed_invoice({"invoice_number": "INV-1", "customer": 3})
    status, listing = await api.resource("GET", INVOICES)
    assert status == 200
    assert listing[0]["id"] == invoice_id
    assert listing[0]["invoice_number"] == "INV-1"
    assert listing[0]["productinvoices"] == []
    assert listing[0]["due_date"] is None
    line = {"quantity": "2", "rate": "10.5", "discount": "0", "discount_unit": 0, "products": 1}
    change = {"due_date": "2024-02-01", "productinvoices": [line], "is_recurring_invoices": True}
    status, updated = await api.resource("PUT", f"{INVOICES}{invoice_id}/", change)
    assert status == 200
    assert updated["due_date"] == "2024-02-01"
    assert updated["invoice_number"] == "INV-1"
    assert updated["productinvoices"] == [{**line, "quantity": "2.00", "rate": "10.50",
                                           "discount": "0.00"}]  # fmt: skip
    status, body = await api.resource("PUT", f"{INVOICES}{invoice_id}/", {"due_date": "01-02-2024"})
    assert status == 400
    assert "due_date" in body
    assert (await api.resource("POST", INVOICES, {}))[0] == 405  # the interface has no create
    assert (await api.resource("GET", f"{INVOICES}{invoice_id}/"))[0] == 405
    assert (await api.resource("DELETE", f"{INVOICES}{invoice_id}/"))[0] == 204
    assert (await api.resource("DELETE", f"{INVOICES}{invoice_id}/"))[0] == 404


async def test_seed_helpers(api: Api, sandbox: Sandbox) -> None:
    list_id = sandbox.seed_contact_list("Seeded", [{"email": "a@b.co", "uuid": "fixed-uuid"}])
    _, listing = await api.resource("GET", f"{CONTACTS}{list_id}/")
    assert listing["emaillist"][0]["data"][0]["uuid"] == "fixed-uuid"
    assert sandbox.seed_lead(LEAD) == 1
    assert sandbox.seed_customer({"email": "c@d.co"}) == 1
    assert sandbox.seed_product({"name": "P", "selling_price": "1.00"}) == 1
    assert (await api.resource("GET", f"{PRODUCTS}1/"))[1]["name"] == "P"


@pytest.mark.asyncsdk_sandbox(demo_data=True)
async def test_demo_data(api: Api, sandbox: Sandbox) -> None:
    for path in (CONTACTS, LEADS, CUSTOMERS, PRODUCTS, INVOICES):
        status, items = await api.resource("GET", path)
        assert status == 200
        assert len(items) >= 2
    assert (await api.mail())["status"] == "success"  # the demo sender domain is verified


@pytest.mark.parametrize("constant", ["NaN", "Infinity", "-Infinity"])
@pytest.mark.parametrize(
    ("path", "body"),
    [("/api/v1/contact/", '{"name": "n", "is_email": true, "emaillist": [{"email": '
                          '"a@example.com", "mobile": 1, "attributes": {"x": %s}}]}'),
     ("/mysite/api/v1/products/", '{"name": "n", "selling_price": "1.00", "sku": "s", '
                                  '"extra": [%s]}')],
)
async def test_json_without_nan_or_infinity(http: aiohttp.ClientSession, sandbox: Sandbox,
                                            path: str, body: str, constant: str) -> None:
    # Python's json reads NaN and Infinity; stored, they made the list answer invalid
    # JSON for every later reader. Refused as Django REST framework refuses them.
    params = {"api_key": sandbox.api_key}
    async with http.post(path, params=params, data=body % constant,
                         headers={"Content-Type": "application/json"}) as resp:
        assert resp.status == 400
        assert (await resp.json())["detail"].startswith("JSON parse error - ")
    async with http.get(path, params=params) as resp:
        assert json.loads(await resp.text(), parse_constant=pytest.fail) == []
