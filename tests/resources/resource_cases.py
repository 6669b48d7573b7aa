"""The 23 resource operations as a table, with realistic inputs, bodies and answers.

Each answer carries a key no model knows (it must land in ``extra``) and, where the
resource has codes, a code the library does not know (it must stay a plain int).
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Awaitable, Callable
from decimal import Decimal
from typing import Any

import attrs
from helpers import BASE

import asyncsdk
from asyncsdk import (
    ContactInput,
    ContactListCreate,
    ContactUpdate,
    Currency,
    CustomerCreate,
    CustomerType,
    CustomerUpdate,
    Industry,
    InvoiceLine,
    InvoiceUpdate,
    LeadInput,
    LeadSource,
    PaymentTerms,
    ProductInput,
    ProductType,
    Rating,
    Unit,
)
from asyncsdk.models.codes import is_known


def url(path: str) -> str:
    """The full URL a resource request goes to, as a mock sees it: aioresponses stands in
    for aiohttp's request before the library's middleware adds the credentials (the
    wire, with them: tests/core/test_middleware.py)."""
    return f"{BASE}{path}"


# --- contacts -------------------------------------------------------------------------
CONTACT_LIST_CREATE = ContactListCreate(
    name="Newsletter",
    is_email=True,
    is_sms=False,
    emaillist=[
        ContactInput(
            email="ann@example.com", mobile=919800000001, customer_name="Ann",
            dob=dt.date(1990, 4, 5), marriage_date=dt.date(2015, 6, 7), customer_type=1,
            tags=["vip"], attributes={"plan": "gold"}, country="India", age=None,
        ),
    ],
)
CONTACT_LIST_CREATE_BODY = {
    "name": "Newsletter",
    "is_email": True,
    "is_sms": False,
    "emaillist": [{
        "email": "ann@example.com", "mobile": 919800000001, "customer_name": "Ann",
        "dob": "05-04-1990", "marriage_date": "07-06-2015", "customer_type": 1,
        "tags": ["vip"], "attributes": {"plan": "gold"}, "country": "India", "age": None,
    }],
}
CONTACT_UPDATES = [
    ContactUpdate(uuid="3f1c", email="ann@example.com", mobile=919800000001,
                  dob=dt.datetime(1990, 4, 5, 8, 30), marriage_date=dt.date(2015, 6, 7),
                  city=None, bounsestatus=0, dndphone=True),
    ContactUpdate(uuid="9a2b", email="bob@example.com", mobile=919800000002),
]
CONTACT_UPDATE_BODY = {
    "contact": 12,
    "data": [
        {"uuid": "3f1c", "email": "ann@example.com", "mobile": 919800000001,
         "dob": "1990-04-05T08:30:00", "marriage_date": "2015-06-07T00:00:00", "city": None,
         "bounsestatus": 0, "dndphone": True},
        {"uuid": "9a2b", "email": "bob@example.com", "mobile": 919800000002},
    ],
}
CONTACT_WIRE = {
    "uuid": "3f1c", "email": "ann@example.com", "customer_name": "Ann",
    "mobile": "919800000001", "sex": "F", "age": None, "dob": "1990-04-05T00:00:00",
    "ip_address": None, "city": "Pune", "country": "India", "bounsestatus": 0,
    "validation_status": 1, "isemail": True, "webpush_status": False,
    "marriage_date": "07-06-2015", "sms": True, "messaging_app": False, "dndphone": False,
    "device_id": "push-token", "customer_type": 1, "tags": ["vip"],
    "attributes": {"plan": "gold"}, "status": "subscribed", "pin_code": 411001,
    "browser_name": "Firefox", "source_ip": "10.0.0.1", "created_on": "2024-01-02",
}
CONTACT_LIST_WIRE = {
    "id": 12, "name": "Newsletter", "is_email": True, "is_push": False, "is_sms": False,
    "app_id": None, "emaillist": [{"contact": 12, "data": [CONTACT_WIRE]}], "owner": 5,
}


def check_contact_list(got: Any) -> None:
    assert isinstance(got, asyncsdk.ContactList)
    assert (got.id, got.name, got.is_email, got.is_push, got.app_id) == (
        12, "Newsletter", True, False, None)
    assert got.extra == {"owner": 5}
    assert got.emaillist is not None and got.emaillist[0].contact == 12
    [contact] = got.contacts
    assert isinstance(contact, asyncsdk.Contact)
    assert contact.mobile == 919800000001 and isinstance(contact.mobile, int)
    assert contact.dob == dt.date(1990, 4, 5)
    assert contact.marriage_date == dt.date(2015, 6, 7)
    assert contact.age is None and contact.sex == "F" and contact.pin_code == "411001"
    assert contact.tags == ["vip"] and contact.attributes == {"plan": "gold"}
    assert contact.isemail is True and contact.customer_type == 1
    assert contact.extra == {"created_on": "2024-01-02"}


# --- leads ----------------------------------------------------------------------------
LEAD_INPUT = LeadInput(
    name="Ann Lee", email="ann@example.com", company="Acme", industry=Industry.BANKS,
    source=LeadSource.TRADE_SHOW, funnel="Default", status=1, rating=3,  # int -> Rating
    mobile="+91 98000 00001", annual_revenue=1_000_000, country=99, zipcode="411001",
    title=None,
)
LEAD_BODY = {
    "name": "Ann Lee", "email": "ann@example.com", "company": "Acme", "industry": 6,
    "source": 12, "funnel": "Default", "status": 1, "rating": 3,
    "mobile": "+91 98000 00001", "annual_revenue": 1_000_000, "country": 99,
    "zipcode": "411001", "title": None,
}
LEAD_WIRE = {
    "id": 7, "name": "Ann Lee", "email": "ann@example.com", "company": "Acme",
    "industry": 6, "source": 99, "funnel": "Default", "status": 1, "rating": 3,
    "annual_revenue": "1000000", "country": 99, "zipcode": 411001, "phone": None,
    "created_at": "2024-01-02T10:00:00Z",
}


def check_lead(got: Any) -> None:
    assert isinstance(got, asyncsdk.Lead)
    assert (got.id, got.name, got.company, got.funnel, got.status) == (
        7, "Ann Lee", "Acme", "Default", 1)
    assert got.industry is Industry.BANKS and got.rating is Rating.ACTIVE
    assert got.source == 99 and int(got.source) == 99  # unknown code kept
    assert isinstance(got.source, asyncsdk.LeadSource) and not is_known(got.source)
    assert got.annual_revenue == 1_000_000 and got.zipcode == "411001"
    assert got.phone is None and got.website is None  # null and missing
    assert got.extra == {"created_at": "2024-01-02T10:00:00Z"}


# --- customers ------------------------------------------------------------------------
CUSTOMER_CREATE = CustomerCreate(
    customer_type=CustomerType.BUSINESS, first_name="Ann", email="ann@example.com",
    last_name=None, company_name="Acme", currency=Currency.INR,
    payment_terms=PaymentTerms.NET30, billing_zipcode="411001", billing_country=99,
    shipping_country=99, enable_portal=True, portal_language=0,
)
CUSTOMER_CREATE_BODY = {
    "customer_type": 1, "first_name": "Ann", "email": "ann@example.com", "last_name": None,
    "company_name": "Acme", "currency": 3, "payment_terms": 1, "billing_zipcode": "411001",
    "billing_country": 99, "shipping_country": 99, "enable_portal": True,
    "portal_language": 0,
}
CUSTOMER_UPDATE = CustomerUpdate(email="ann@example.com", phone="+91 20 1234", last_name=None)
CUSTOMER_UPDATE_BODY = {"email": "ann@example.com", "phone": "+91 20 1234", "last_name": None}
CUSTOMER_WIRE = {
    "id": 3, "customer_type": 1, "first_name": "Ann", "last_name": None,
    "email": "ann@example.com", "currency": 9, "payment_terms": 1,
    "billing_zipcode": 411001, "shipping_zipcode": "411002", "billing_country": 99,
    "shipping_country": 99, "enable_portal": True, "portal_language": 0, "gstin": "27AA",
}


def check_customer(got: Any) -> None:
    assert isinstance(got, asyncsdk.Customer)
    assert (got.id, got.first_name, got.last_name, got.email) == (
        3, "Ann", None, "ann@example.com")
    assert got.customer_type is CustomerType.BUSINESS
    assert got.payment_terms is PaymentTerms.NET30
    assert got.currency == 9 and int(got.currency) == 9  # unknown code kept
    assert isinstance(got.currency, asyncsdk.Currency) and not is_known(got.currency)
    assert got.billing_zipcode == "411001" and got.shipping_zipcode == "411002"
    assert got.shipping_country == 99 and got.billing_country == 99
    assert got.enable_portal is True and got.portal_language == 0
    assert got.extra == {"gstin": "27AA"}


# --- products -------------------------------------------------------------------------
PRODUCT_INPUT = ProductInput(name="Widget", selling_price=Decimal("12.5"),
                             product_type=ProductType.GOODS, unit=Unit.KG, sku="W-1")
PRODUCT_BODY = {"name": "Widget", "selling_price": "12.50", "product_type": 0, "unit": 3,
                "sku": "W-1"}
PRODUCT_WIRE = {"id": 4, "name": "Widget", "selling_price": "12.50", "product_type": 0,
                "unit": 42, "sku": "W-1", "description": None, "tax": "18"}


def check_product(got: Any) -> None:
    assert isinstance(got, asyncsdk.Product)
    assert (got.id, got.name, got.sku, got.description) == (4, "Widget", "W-1", None)
    assert got.selling_price == Decimal("12.50")
    assert got.product_type is ProductType.GOODS
    assert got.unit == 42 and int(got.unit) == 42  # unknown code kept
    assert isinstance(got.unit, asyncsdk.Unit) and not is_known(got.unit)
    assert got.extra == {"tax": "18"}


# --- invoices -------------------------------------------------------------------------
INVOICE_UPDATE = InvoiceUpdate(
    invoice_date=dt.date(2024, 3, 1), due_date=dt.datetime(2024, 3, 31, 12, 0), status=2,
    customer=3, subject=None,
    productinvoices=[InvoiceLine(products=4, quantity=Decimal(2), rate=Decimal("12.5"),
                                 discount=Decimal("0"), discount_unit=1)],
)
INVOICE_BODY = {
    "invoice_date": "2024-03-01", "due_date": "2024-03-31", "status": 2, "customer": 3,
    "subject": None,
    "productinvoices": [{"products": 4, "quantity": "2.00", "rate": "12.50",
                         "discount": "0.00", "discount_unit": 1}],
}
INVOICE_WIRE = {
    "id": 21, "invoice_number": "INV-21", "invoice_date": "2024-03-01",
    "due_date": "31-03-2024", "status": 2, "customer": 3, "is_recurring_invoices": False,
    "productinvoices": [{"id": 1, "products": 4, "quantity": "2.00", "rate": 12.5,
                         "discount": "0.00", "discount_unit": 1, "amount": "25.00"}],
    "total": "25.00",
}


def check_invoice(got: Any) -> None:
    assert isinstance(got, asyncsdk.Invoice)
    assert (got.id, got.invoice_number, got.status, got.customer) == (21, "INV-21", 2, 3)
    assert got.invoice_date == dt.date(2024, 3, 1) and got.due_date == dt.date(2024, 3, 31)
    assert got.is_recurring_invoices is False and got.subject is None
    assert got.productinvoices is not None
    [line] = got.productinvoices
    assert (line.id, line.products, line.discount_unit) == (1, 4, 1)
    assert (line.quantity, line.rate, line.discount) == (
        Decimal("2.00"), Decimal("12.5"), Decimal("0.00"))
    assert line.extra == {"amount": "25.00"}
    assert got.extra == {"total": "25.00"}


# --- the table ------------------------------------------------------------------------


@attrs.frozen
class Case:
    """One operation: how to call it, what must go out, what comes back."""

    name: str  # "<resource attribute>.<method>"
    args: tuple[Any, ...]
    method: str
    path: str
    body: Any  # the JSON body that must be sent (None: no body)
    answer: Any  # the JSON the mock answers (None: an empty 204)
    check: Callable[[Any], None]

    @property
    def unsafe(self) -> bool:
        return self.method == "POST"

    def call(self, client: asyncsdk.Client, **kwargs: Any) -> Awaitable[Any]:
        resource, method = self.name.split(".")
        result: Awaitable[Any] = getattr(getattr(client, resource), method)(
            *self.args, **kwargs)
        return result


def _listed(check: Callable[[Any], None]) -> Callable[[Any], None]:
    def check_list(got: Any) -> None:
        assert isinstance(got, list) and len(got) == 1
        check(got[0])

    return check_list


def _deleted(got: Any) -> None:
    assert got is None


def _crud(
    attr: str, path: str, wire: Any, check: Callable[[Any], None],
    create: tuple[Any, Any], update: tuple[Any, Any], obj_id: int | str,
) -> list[Case]:
    item = f"{path}{obj_id}/"
    return [
        Case(f"{attr}.list", (), "GET", path, None, [wire], _listed(check)),
        Case(f"{attr}.get", (obj_id,), "GET", item, None, wire, check),
        Case(f"{attr}.create", (create[0],), "POST", path, create[1], wire, check),
        Case(f"{attr}.update", (obj_id, update[0]), "PUT", item, update[1], wire, check),
        Case(f"{attr}.delete", (obj_id,), "DELETE", item, None, None, _deleted),
    ]


_CONTACT_CASES = _crud("contacts", "/api/v1/contact/", CONTACT_LIST_WIRE, check_contact_list,
                       (CONTACT_LIST_CREATE, CONTACT_LIST_CREATE_BODY),
                       (CONTACT_UPDATES, CONTACT_UPDATE_BODY), 12)
_LEAD_CASES = _crud("leads", "/mysite/api/v1/lead/", LEAD_WIRE, check_lead,
                    (LEAD_INPUT, LEAD_BODY), (LEAD_INPUT, LEAD_BODY), 7)
_CUSTOMER_CASES = _crud("customers", "/mysite/api/v1/customers/", CUSTOMER_WIRE,
                        check_customer, (CUSTOMER_CREATE, CUSTOMER_CREATE_BODY),
                        (CUSTOMER_UPDATE, CUSTOMER_UPDATE_BODY), "3")
_PRODUCT_CASES = _crud("products", "/mysite/api/v1/products/", PRODUCT_WIRE, check_product,
                       (PRODUCT_INPUT, PRODUCT_BODY), (PRODUCT_INPUT, PRODUCT_BODY), 4)
_INVOICE_CASES = [
    c for c in _crud("invoices", "/mysite/api/v1/invoices/", INVOICE_WIRE, check_invoice,
                     (None, None), (INVOICE_UPDATE, INVOICE_BODY), 21)
    if c.name.rsplit(".", 1)[1] in ("list", "update", "delete")
]

CASES: list[Case] = [
    *_CONTACT_CASES, *_LEAD_CASES, *_CUSTOMER_CASES, *_PRODUCT_CASES, *_INVOICE_CASES,
]
assert len(CASES) == 23
