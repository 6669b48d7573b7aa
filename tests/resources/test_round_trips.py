"""Property: whatever a valid input model holds goes out in the spec's wire form and
reads back, through JSON, as the same values in the model of the answer (a service that
echoes what it stored). Field by field: codes, amounts with two places, dates in the
area's format, None sent as null, UNSET fields left out."""

from __future__ import annotations

import json
from decimal import Decimal
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from asyncsdk import (
    UNSET,
    Contact,
    ContactInput,
    ContactUpdate,
    Currency,
    Customer,
    CustomerCreate,
    CustomerType,
    Industry,
    Invoice,
    InvoiceLine,
    InvoiceUpdate,
    Lead,
    LeadInput,
    LeadSource,
    PaymentTerms,
    Product,
    ProductInput,
    ProductType,
    Rating,
    Unit,
)

TEXT = st.text(st.characters(blacklist_categories=("Cs", "Cc")), max_size=12)
REQUIRED_TEXT = TEXT.filter(str.strip)
MONEY = st.decimals(min_value=Decimal("-1e12"), max_value=Decimal("1e12"), places=2,
                    allow_nan=False, allow_infinity=False)
INT64 = st.integers(-(2**63), 2**63 - 1)
RECORD_ID = st.integers(0, 2**63 - 1)
COUNTRY = st.sampled_from([1, 26, 100, 247])
CENT = Decimal("0.01")
SETTINGS = settings(max_examples=150, deadline=None,
                    suppress_health_check=[HealthCheck.too_slow])


def optional(values: st.SearchStrategy[Any]) -> st.SearchStrategy[Any]:
    return st.one_of(st.just(UNSET), st.none(), values)


def echoed(model: Any, answer: type[Any]) -> Any:
    """``model`` sent (its JSON body), stored and sent back as the answer."""
    return answer.from_dict(json.loads(json.dumps(model.to_dict())))


def assert_read_back(model: Any, got: Any, *fields: str) -> None:
    for name in fields:
        sent = getattr(model, name)
        assert getattr(got, name) == (None if sent is UNSET else sent), name
    assert got.extra == {}


@SETTINGS
@given(name=REQUIRED_TEXT, price=MONEY, unit=optional(st.sampled_from(list(Unit))),
       kind=optional(st.sampled_from(list(ProductType))), sku=optional(TEXT),
       description=optional(TEXT))
def test_a_product(name: str, price: Decimal, unit: Any, kind: Any, sku: Any,
                   description: Any) -> None:
    model = ProductInput(name=name, selling_price=price, unit=unit, product_type=kind,
                         sku=sku, description=description)
    written = model.to_dict()["selling_price"]  # two places, never "-0.00"
    assert written == ("0.00" if price.is_zero() else format(price.quantize(CENT), "f"))
    assert_read_back(model, echoed(model, Product), "name", "selling_price", "unit",
                     "product_type", "sku", "description")


@SETTINGS
@given(email=REQUIRED_TEXT, mobile=RECORD_ID, dob=optional(st.dates()),
       married=optional(st.dates()), kind=optional(st.sampled_from([0, 1])),
       tags=optional(st.lists(TEXT, max_size=3)), pin=optional(TEXT),
       age=optional(st.integers(0, 150)), flags=st.lists(optional(st.booleans()),
                                                         min_size=4, max_size=4))
def test_a_contact_on_create_and_on_update(
        email: str, mobile: int, dob: Any, married: Any, kind: Any, tags: Any, pin: Any,
        age: Any, flags: list[Any]) -> None:
    created = ContactInput(email=email, mobile=mobile, dob=dob, marriage_date=married,
                           customer_type=kind, tags=tags, pin_code=pin, age=age,
                           isemail=flags[0], sms=flags[1], webpush_status=flags[2],
                           messaging_app=flags[3])
    if dob not in (UNSET, None):  # DD-MM-YYYY on create
        assert created.to_dict()["dob"] == f"{dob.day:02d}-{dob.month:02d}-{dob.year:04d}"
    assert_read_back(created, echoed(created, Contact), "email", "mobile", "dob",
                     "marriage_date", "customer_type", "tags", "pin_code", "age",
                     "isemail", "sms", "webpush_status", "messaging_app")
    updated = ContactUpdate(uuid="u-1", email=email, mobile=mobile, dob=dob,
                            marriage_date=married)
    if dob not in (UNSET, None):  # YYYY-MM-DDTHH:MM:SS on update
        assert updated.to_dict()["dob"] == f"{dob.isoformat()}T00:00:00"
    assert_read_back(updated, echoed(updated, Contact), "uuid", "email", "mobile", "dob",
                     "marriage_date")


@SETTINGS
@given(quantity=MONEY, rate=MONEY, discount=optional(MONEY),
       unit=optional(st.integers(0, 5)), product=RECORD_ID, dated=optional(st.dates()),
       due=optional(st.dates()), subject=optional(TEXT), recurring=optional(st.booleans()))
def test_an_invoice_and_its_lines(quantity: Decimal, rate: Decimal, discount: Any,
                                  unit: Any, product: int, dated: Any, due: Any,
                                  subject: Any, recurring: Any) -> None:
    line = InvoiceLine(products=product, quantity=quantity, rate=rate, discount=discount,
                       discount_unit=unit)
    model = InvoiceUpdate(productinvoices=[line], invoice_date=dated, due_date=due,
                          subject=subject, is_recurring_invoices=recurring)
    got = echoed(model, Invoice)
    assert_read_back(model, got, "invoice_date", "due_date", "subject",
                     "is_recurring_invoices")
    assert got.productinvoices is not None
    [read] = got.productinvoices
    assert_read_back(line, read, "products", "quantity", "rate", "discount",
                     "discount_unit")


@SETTINGS
@given(kind=st.sampled_from(list(CustomerType)), first=REQUIRED_TEXT,
       currency=optional(st.sampled_from(list(Currency))),
       terms=optional(st.sampled_from(list(PaymentTerms))), zipcode=optional(TEXT),
       country=optional(COUNTRY), portal=optional(st.booleans()), last=optional(TEXT))
def test_a_customer(kind: CustomerType, first: str, currency: Any, terms: Any,
                    zipcode: Any, country: Any, portal: Any, last: Any) -> None:
    model = CustomerCreate(customer_type=kind, first_name=first, email="ann@example.com",
                           currency=currency, payment_terms=terms, billing_zipcode=zipcode,
                           shipping_country=country, billing_country=country,
                           enable_portal=portal, last_name=last)
    assert_read_back(model, echoed(model, Customer), "customer_type", "first_name",
                     "currency", "payment_terms", "billing_zipcode", "shipping_country",
                     "billing_country", "enable_portal", "last_name")


@SETTINGS
@given(industry=st.sampled_from(list(Industry)), source=st.sampled_from(list(LeadSource)),
       rating=st.sampled_from(list(Rating)), status=INT64, mobile=optional(TEXT),
       revenue=optional(INT64), country=optional(COUNTRY), zipcode=optional(TEXT),
       funnel=REQUIRED_TEXT)
def test_a_lead(industry: Industry, source: LeadSource, rating: Rating, status: int,
                mobile: Any, revenue: Any, country: Any, zipcode: Any, funnel: str) -> None:
    model = LeadInput(name="Ann", email="ann@example.com", company="Acme",
                      industry=industry, source=source, funnel=funnel, status=status,
                      rating=rating, mobile=mobile, annual_revenue=revenue, country=country,
                      zipcode=zipcode)
    assert_read_back(model, echoed(model, Lead), "industry", "source", "rating", "status",
                     "mobile", "annual_revenue", "country", "zipcode", "funnel")
