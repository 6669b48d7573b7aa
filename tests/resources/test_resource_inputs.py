"""Input models and arguments of the resource operations: checks before sending, date
formats, partial updates, lenient decoding, and encode→decode round trips."""

from __future__ import annotations

import datetime as dt
import json
import re
from collections.abc import Awaitable, Callable
from decimal import Decimal
from typing import Any

import attrs
import pytest
from aioresponses import aioresponses
from hypothesis import given
from hypothesis import strategies as st
from resource_cases import (
    CONTACT_LIST_CREATE,
    CONTACT_UPDATES,
    CUSTOMER_CREATE,
    INVOICE_UPDATE,
    LEAD_INPUT,
    PRODUCT_INPUT,
    url,
)

import asyncsdk
from asyncsdk import (
    UNSET,
    ContactInput,
    ContactListCreate,
    ContactUpdate,
    CustomerCreate,
    CustomerUpdate,
    InvoiceLine,
    InvoiceUpdate,
    LeadInput,
    ProductInput,
)
from asyncsdk._serde.converter import decode, encode

ANY_URL = re.compile(r".*")
Make = Callable[[asyncsdk.Client], Awaitable[Any]]


@pytest.fixture
def answers_everything(mocked: aioresponses) -> aioresponses:
    """A mock that would answer any request: the tests check that none was sent."""
    for method in ("GET", "POST", "PUT", "DELETE"):
        mocked.add(ANY_URL, method, payload={}, repeat=True)
    return mocked


async def refused(client: asyncsdk.Client, mocked: aioresponses, make: Make,
                  exc: type[Exception] = asyncsdk.InvalidInputError) -> Exception:
    """The exception ``make(client)`` raises; asserts that nothing was sent."""
    with pytest.raises(exc) as info:
        await make(client)
    assert mocked.requests == {}
    return info.value


# --- bad values in models: InvalidInputError naming the field and what is allowed -----
def lead(**changes: Any) -> LeadInput:
    return attrs.evolve(LEAD_INPUT, **changes)


BAD_VALUES: list[Any] = [
    ("industry 61", lambda c: c.leads.create(lead(industry=61)), "industry", "Industry code"),
    ("rating 7", lambda c: c.leads.update(7, lead(rating=7)), "rating", "Rating code"),
    ("source bool", lambda c: c.leads.create(lead(source=True)), "source", "LeadSource code"),
    ("lead country 25", lambda c: c.leads.create(lead(country=25)), "country", "1 or 26 to 247"),
    ("lead email", lambda c: c.leads.create(lead(email="ann@")), "email", "email address"),
    ("lead status text", lambda c: c.leads.create(lead(status="1")), "status", "an integer"),
    ("customer email", lambda c: c.customers.create(
        attrs.evolve(CUSTOMER_CREATE, email="not an email")), "email", "email address"),
    ("customer update email", lambda c: c.customers.update(
        3, CustomerUpdate(email="a b@example.com")), "email", "email address"),
    ("customer type 3", lambda c: c.customers.create(
        attrs.evolve(CUSTOMER_CREATE, customer_type=3)), "customer_type", "CustomerType"),
    ("billing country 25", lambda c: c.customers.update(
        3, CustomerUpdate(email="a@example.com", billing_country=25)), "billing_country",
     "1 or 26 to 247"),
    ("currency 6", lambda c: c.customers.update(
        3, CustomerUpdate(email="a@example.com", currency=6)), "currency", "Currency code"),
    ("zipcode int", lambda c: c.customers.update(
        3, CustomerUpdate(email="a@example.com", shipping_zipcode=411001)),
     "shipping_zipcode", "a string"),
    ("contact customer_type 2", lambda c: c.contacts.create(ContactListCreate(
        name="n", is_email=True, emaillist=[ContactInput(email="a", mobile=1, customer_type=2)],
    )), "customer_type", "one of 0, 1"),
    ("contact mobile text", lambda c: c.contacts.update(
        12, [ContactUpdate(uuid="u", email="a", mobile="98000")]), "mobile", "an integer"),
    ("contact dob text", lambda c: c.contacts.update(
        12, [ContactUpdate(uuid="u", email="a", mobile=1, dob="1990-04-05")]), "dob",
     "datetime.date"),
    ("record not a ContactInput", lambda c: c.contacts.create(ContactListCreate(
        name="n", is_email=True, emaillist=[{"email": "a", "mobile": 1}])), "emaillist[0]",
     "ContactInput"),
    ("price text", lambda c: c.products.create(ProductInput(name="W", selling_price="abc")),
     "selling_price", "a number"),
    ("price three places", lambda c: c.products.update(
        4, ProductInput(name="W", selling_price=Decimal("1.005"))), "selling_price",
     "two decimal places"),
    ("price float", lambda c: c.products.create(ProductInput(name="W", selling_price=1.5)),
     "selling_price", "Decimal"),
    ("unit 7", lambda c: c.products.create(attrs.evolve(PRODUCT_INPUT, unit=7)), "unit",
     "Unit code"),
    ("invoice date text", lambda c: c.invoices.update(
        21, InvoiceUpdate(invoice_date="2024-03-01")), "invoice_date", "datetime.date"),
    ("invoice line not a line", lambda c: c.invoices.update(
        21, InvoiceUpdate(productinvoices=[{"products": 4}])), "productinvoices[0]",
     "InvoiceLine"),
    ("line quantity nan", lambda c: c.invoices.update(21, InvoiceUpdate(productinvoices=[
        InvoiceLine(products=4, quantity=Decimal("NaN"), rate=Decimal(1))])), "quantity",
     "finite"),
    # A record named in a body has an id as one in a path does: 0 to 2**63-1.
    ("invoice customer negative", lambda c: c.invoices.update(
        21, InvoiceUpdate(customer=-1)), "customer", "a record id"),
    ("invoice id negative", lambda c: c.invoices.update(21, InvoiceUpdate(id=-21)), "id",
     "a record id"),
    # The body's id naming another invoice than the path's: which one would change?
    ("invoice id not the path's", lambda c: c.invoices.update(21, InvoiceUpdate(id=22)),
     "id", "the invoice's id in the path (21)"),
    ("invoice id not the text path's", lambda c: c.invoices.update(
        "INV-21", InvoiceUpdate(id=21)), "id", "the invoice's id in the path ('INV-21')"),
    ("line product negative", lambda c: c.invoices.update(21, InvoiceUpdate(productinvoices=[
        InvoiceLine(products=-4, quantity=Decimal(1), rate=Decimal(1))])), "products",
     "a record id"),
    ("line product over 64 bits", lambda c: c.invoices.update(21, InvoiceUpdate(
        productinvoices=[InvoiceLine(products=2**63, quantity=Decimal(1),
                                     rate=Decimal(1))])), "products", "2**63-1"),
]


@pytest.mark.parametrize(("make", "field", "allowed"),
                         [pytest.param(*case[1:], id=case[0]) for case in BAD_VALUES])
async def test_bad_value_is_refused_before_sending(
    client: asyncsdk.Client, answers_everything: aioresponses, make: Make, field: str,
    allowed: str,
) -> None:
    error = await refused(client, answers_everything, make)
    assert isinstance(error, asyncsdk.InvalidInputError)
    assert error.field == field
    assert str(error).startswith(f"{field}: expected ") and allowed in str(error)


@pytest.mark.parametrize(("make", "missing"), [
    pytest.param(lambda: LeadInput(name="n", email="a@b.co", company="c", industry=6,
                                   source=2, status=1, rating=2), "funnel", id="lead"),
    pytest.param(lambda: ContactUpdate(email="a", mobile=1), "uuid", id="contact update"),
    pytest.param(lambda: ContactInput(email="a"), "mobile", id="contact input"),
    pytest.param(lambda: ContactListCreate(name="n", is_email=True), "emaillist",
                 id="contact list"),
    pytest.param(lambda: CustomerCreate(customer_type=1, email="a@b.co"), "first_name",
                 id="customer create"),
    pytest.param(lambda: CustomerUpdate(first_name="Ann"), "email", id="customer update"),
    pytest.param(lambda: ProductInput(name="W"), "selling_price", id="product"),
    pytest.param(lambda: InvoiceLine(products=4, quantity=Decimal(1)), "rate", id="line"),
])
def test_missing_required_field_is_a_type_error_naming_it(
    make: Callable[[], Any], missing: str
) -> None:
    with pytest.raises(TypeError, match=missing):
        make()


def test_optional_fields_default_to_unset_and_required_ones_are_exactly_documented() -> None:
    def required(cls: type) -> set[str]:
        return {a.name for a in attrs.fields(cls) if a.default is attrs.NOTHING}

    assert required(ContactListCreate) == {"name", "is_email", "emaillist"}
    assert required(ContactInput) == {"email", "mobile"}
    assert required(ContactUpdate) == {"uuid", "email", "mobile"}
    assert required(LeadInput) == {"name", "email", "company", "industry", "source",
                                   "funnel", "status", "rating"}
    assert required(CustomerCreate) == {"customer_type", "first_name", "email"}
    assert required(CustomerUpdate) == {"email"}
    assert required(ProductInput) == {"name", "selling_price"}
    assert required(InvoiceUpdate) == set()
    for cls in (ContactInput, ContactUpdate, LeadInput, CustomerCreate, CustomerUpdate,
                ProductInput, InvoiceUpdate, InvoiceLine):
        assert all(a.default is UNSET for a in attrs.fields(cls) if a.name not in required(cls))


# --- a required text left blank is a required field left out ------------------------
#: One valid instance of every input model with a required field.
FILLED_MODELS = [LEAD_INPUT, CUSTOMER_CREATE, CustomerUpdate(email="ann@example.com"),
                 PRODUCT_INPUT, CONTACT_LIST_CREATE, CONTACT_UPDATES[0],
                 CONTACT_LIST_CREATE.emaillist[0]]
REQUIRED_TEXT = [(model, a.name) for model in FILLED_MODELS for a in attrs.fields(type(model))
                 if a.default is attrs.NOTHING and isinstance(getattr(model, a.name), str)]


def test_the_required_text_fields_are_found() -> None:
    found = {(type(m).__name__, name) for m, name in REQUIRED_TEXT}
    assert {("LeadInput", "funnel"), ("ProductInput", "name"), ("ContactUpdate", "uuid"),
            ("CustomerCreate", "first_name"), ("ContactInput", "email")} <= found


@pytest.mark.parametrize("blank", ["", " ", "\t\n", "\u00a0\u3000"])
@pytest.mark.parametrize(("model", "name"), [
    pytest.param(m, n, id=f"{type(m).__name__}.{n}") for m, n in REQUIRED_TEXT])
def test_a_required_text_left_blank_is_refused(model: Any, name: str, blank: str) -> None:
    """An empty or white-space text in a required field was sent (``"name": ""``), for
    the service to refuse as a missing parameter after the request (and, for a create,
    perhaps after it was paid for); it is refused when the model is made, naming it."""
    with pytest.raises(asyncsdk.InvalidInputError) as info:
        attrs.evolve(model, **{name: blank})
    assert info.value.field == name and str(info.value).startswith(f"{name}: expected")
    data = {**model.to_dict(), name: blank}
    with pytest.raises(asyncsdk.InvalidInputError) as info:
        type(model).from_dict(data)
    assert info.value.field == name


def test_an_optional_text_may_be_blank() -> None:
    assert attrs.evolve(LEAD_INPUT, title="").to_dict()["title"] == ""
    assert CustomerUpdate(email="a@example.com", first_name="").to_dict()["first_name"] == ""


# --- bad arguments of the methods -----------------------------------------------------
BAD_ARGUMENTS: list[Any] = [
    ("create a dict", lambda c: c.leads.create({"name": "x"}), "lead", "LeadInput"),
    ("create wrong model", lambda c: c.customers.create(
        CustomerUpdate(email="a@b.co")), "customer", "CustomerCreate"),
    ("update wrong model", lambda c: c.customers.update(3, CUSTOMER_CREATE), "customer",
     "CustomerUpdate"),
    ("product none", lambda c: c.products.create(None), "product", "ProductInput"),
    ("invoice wrong model", lambda c: c.invoices.update(21, LEAD_INPUT), "invoice",
     "InvoiceUpdate"),
    ("contact list dict", lambda c: c.contacts.create({}), "contact_list",
     "ContactListCreate"),
    ("records not a list", lambda c: c.contacts.update(12, CONTACT_UPDATES[0]), "records",
     "list of ContactUpdate"),
    ("records text", lambda c: c.contacts.update(12, "abc"), "records",
     "list of ContactUpdate"),
    ("records empty", lambda c: c.contacts.update(12, []), "records", "at least one"),
    ("record wrong model", lambda c: c.contacts.update(
        12, [CONTACT_UPDATES[0], CONTACT_LIST_CREATE.emaillist[0]]), "records[1]",
     "ContactUpdate"),
    *[(f"id {bad!r} ({op})", _call, "id", "an int >= 0 or a non-empty text without '/'")
      for bad in (-1, True, "", "a/b", "..", 1.5, None, " ", "12 ", " 12", "\t", "a\r\nb")
      for op, _call in [
          ("get", lambda c, bad=bad: c.leads.get(bad)),
          ("update", lambda c, bad=bad: c.products.update(bad, PRODUCT_INPUT)),
          ("delete", lambda c, bad=bad: c.invoices.delete(bad)),
          ("contacts.update", lambda c, bad=bad: c.contacts.update(bad, CONTACT_UPDATES)),
      ]],
    # The list id goes into the body as an integer: only ASCII digits are one (``"²"``
    # passes ``str.isdigit`` and was a bare ValueError; ``"٣"`` went out as 3).
    ("contacts.update id of 20 digits", lambda c: c.contacts.update(
        "9" * 20, CONTACT_UPDATES), "id", "at most 2**63-1"),
    # A falsy value of the wrong type is no "nothing to add": refused like any other.
    *[(f"{name} {bad!r}", _call, name, "a mapping")
      for bad in ("", [], (), 0, False, b"")
      for name, _call in [
          ("extra_query", lambda c, bad=bad: c.contacts.list(extra_query=bad)),
          ("extra_headers", lambda c, bad=bad: c.leads.get(7, extra_headers=bad)),
      ]],
]


@pytest.mark.parametrize(("make", "argument", "expected"),
                         [pytest.param(*case[1:], id=case[0]) for case in BAD_ARGUMENTS])
async def test_bad_argument_is_refused_before_sending(
    client: asyncsdk.Client, answers_everything: aioresponses, make: Make, argument: str,
    expected: str,
) -> None:
    error = await refused(client, answers_everything, make)
    assert isinstance(error, asyncsdk.InvalidInputError)
    assert error.field == argument
    assert str(error).startswith(f"{argument}: expected") and expected in str(error)


@pytest.mark.parametrize(("given_id", "path_segment", "contact"), [
    (0, "0", 0), ("12", "12", 12), ("list-a", "list-a", "list-a"), ("a b", "a%20b", "a b"),
    # Digits of other scripts are text: the body names the list the path names.
    ("\u00b2", "%C2%B2", "\u00b2"), ("\u0663", "%D9%A3", "\u0663"),
    ("\uff11\uff12", "%EF%BC%91%EF%BC%92", "\uff11\uff12"),
    (str(2**63 - 1), str(2**63 - 1), 2**63 - 1),
])
async def test_ids_are_path_segments_and_the_contact_list_id_goes_in_the_body(
    client: asyncsdk.Client, mocked: aioresponses, given_id: Any, path_segment: str,
    contact: Any,
) -> None:
    path = f"/api/v1/contact/{path_segment}/"
    mocked.put(url(path), payload={"id": 1})
    await client.contacts.update(given_id, CONTACT_UPDATES[1:])
    [((method, sent_url), [call])] = mocked.requests.items()
    assert (method, str(sent_url)) == ("PUT", url(path))
    assert call.kwargs["json"]["contact"] == contact


# --- dates, partial updates, decimals -------------------------------------------------
DAY = dt.date(1990, 4, 5)
MOMENT = dt.datetime(1990, 4, 5, 8, 30, 15)


@pytest.mark.parametrize(("model", "key", "wire"), [
    pytest.param(ContactInput(email="a", mobile=1, dob=DAY), "dob", "05-04-1990",
                 id="contact create DD-MM-YYYY"),
    pytest.param(ContactInput(email="a", mobile=1, marriage_date=MOMENT), "marriage_date",
                 "05-04-1990", id="contact create, datetime"),
    pytest.param(ContactUpdate(uuid="u", email="a", mobile=1, dob=DAY), "dob",
                 "1990-04-05T00:00:00", id="contact update date-time, date at midnight"),
    pytest.param(ContactUpdate(uuid="u", email="a", mobile=1, marriage_date=MOMENT),
                 "marriage_date", "1990-04-05T08:30:15", id="contact update date-time"),
    pytest.param(InvoiceUpdate(due_date=DAY), "due_date", "1990-04-05", id="invoice ISO"),
    pytest.param(InvoiceUpdate(invoice_date=MOMENT), "invoice_date", "1990-04-05",
                 id="invoice ISO, datetime"),
])
def test_dates_go_out_in_the_format_of_their_model(model: Any, key: str, wire: str) -> None:
    assert encode(model)[key] == wire


def test_nested_records_are_encoded_by_their_own_model() -> None:
    body = encode(ContactListCreate(name="n", is_email=True, emaillist=[
        ContactInput(email="a", mobile=1, dob=DAY)]))
    assert body["emaillist"] == [{"email": "a", "mobile": 1, "dob": "05-04-1990"}]


@pytest.mark.parametrize(("model", "body"), [
    pytest.param(CustomerUpdate(email="a@b.co"), {"email": "a@b.co"}, id="only required"),
    pytest.param(CustomerUpdate(email="a@b.co", last_name=None, phone="1"),
                 {"email": "a@b.co", "last_name": None, "phone": "1"}, id="None is null"),
    pytest.param(InvoiceUpdate(), {}, id="empty invoice update"),
    pytest.param(InvoiceUpdate(subject=None, productinvoices=None),
                 {"subject": None, "productinvoices": None}, id="invoice nulls"),
    pytest.param(ContactUpdate(uuid="u", email="a", mobile=1, city=None, sms=False),
                 {"uuid": "u", "email": "a", "mobile": 1, "city": None, "sms": False},
                 id="contact update"),
])
def test_partial_update_leaves_unset_out_and_sends_none_as_null(
    model: Any, body: dict[str, Any]
) -> None:
    assert encode(model) == body


async def test_partial_customer_update_on_the_wire(
    client: asyncsdk.Client, mocked: aioresponses
) -> None:
    mocked.put(url("/mysite/api/v1/customers/3/"), payload={"id": 3})
    await client.customers.update(3, CustomerUpdate(email="a@b.co", website=None))
    [[call]] = mocked.requests.values()
    assert call.kwargs["json"] == {"email": "a@b.co", "website": None}


@pytest.mark.parametrize(("price", "wire"), [
    (Decimal("12.5"), "12.50"), (12, "12.00"), (" 7.1 ", "7.10"), (Decimal("0"), "0.00"),
    (Decimal("1E+3"), "1000.00"),
])
def test_money_is_sent_as_text_with_two_places(price: Any, wire: str) -> None:
    assert encode(ProductInput(name="W", selling_price=price))["selling_price"] == wire


def test_codes_given_as_plain_ints_become_enums() -> None:
    assert LEAD_INPUT.rating is asyncsdk.Rating.ACTIVE
    assert ProductInput(name="W", selling_price=1, unit=6).unit is asyncsdk.Unit.UNITS


# --- lenient decoding -----------------------------------------------------------------
@pytest.mark.parametrize(("wire", "expected"), [
    ({"shipping_country": "India"}, "India"),
    ({"shipping_country": 99}, 99),
    ({"shipping_country": "99"}, "99"),
    ({}, None),
])
def test_customer_shipping_country_keeps_int_or_text(wire: Any, expected: Any) -> None:
    got = decode(wire, asyncsdk.Customer).shipping_country
    assert got == expected and type(got) is type(expected)


def test_missing_fields_are_none_and_an_empty_object_decodes() -> None:
    assert decode({}, asyncsdk.Lead) == asyncsdk.Lead()
    assert decode({}, asyncsdk.ContactList).contacts == []


@pytest.mark.parametrize(("path", "get", "wire"), [
    ("/mysite/api/v1/lead/7/", lambda c: c.leads.get(7), {"id": "seven"}),
    ("/mysite/api/v1/products/4/", lambda c: c.products.get(4), {"selling_price": "cheap"}),
    ("/api/v1/contact/12/", lambda c: c.contacts.get(12), {"emaillist": "none"}),
    ("/api/v1/contact/12/", lambda c: c.contacts.get(12),
     {"emaillist": [{"contact": 12, "data": [{"mobile": "n/a"}]}]}),
    ("/mysite/api/v1/customers/3/", lambda c: c.customers.get(3), {"enable_portal": "maybe"}),
])
async def test_a_field_of_the_wrong_type_is_a_decode_error_with_the_body(
    client: asyncsdk.Client, mocked: aioresponses, path: str, get: Make, wire: Any
) -> None:
    mocked.get(url(path), payload=wire)
    with pytest.raises(asyncsdk.ResponseDecodeError) as info:
        await get(client)
    assert info.value.body == json.dumps(wire)


# --- deletes --------------------------------------------------------------------------
@pytest.mark.parametrize("reply", [
    {"status": 204}, {"status": 200, "payload": {"detail": "deleted"}},
    {"status": 200, "body": "Deleted", "content_type": "text/plain"},
    {"status": 202, "body": ""},
])
async def test_delete_accepts_any_2xx_answer(
    client: asyncsdk.Client, mocked: aioresponses, reply: dict[str, Any]
) -> None:
    mocked.delete(url("/mysite/api/v1/lead/7/"), **reply)
    assert await client.leads.delete(7) is None


@pytest.mark.parametrize(("status", "error"), [
    (400, asyncsdk.InvalidRequestError), (401, asyncsdk.AuthenticationError),
    (500, asyncsdk.ServerError),
])
async def test_delete_raises_on_failure(
    client: asyncsdk.Client, mocked: aioresponses, status: int, error: type[Exception]
) -> None:
    mocked.delete(url("/mysite/api/v1/products/4/"), status=status, body="nope",
                  repeat=True)
    with pytest.raises(error):
        await client.products.delete(4)


# --- encode -> JSON -> decode round trips ---------------------------------------------
TEXT = st.text(st.characters(codec="utf-8", exclude_characters="\x00"), max_size=12)
#: A required text field: a blank one is refused (it is the field left out).
FILLED = TEXT.filter(str.strip)
EMAIL = st.from_regex(r"[a-z0-9._+-]{1,12}@[a-z0-9-]{1,10}\.[a-z]{2,6}", fullmatch=True)
MONEY = st.decimals(min_value=0, max_value=10**9, places=2, allow_nan=False,
                    allow_infinity=False)
COUNTRY = st.sampled_from([1, *range(26, 248)])


def maybe(strategy: st.SearchStrategy[Any]) -> st.SearchStrategy[Any]:
    return st.one_of(st.just(UNSET), st.none(), strategy)


def assert_round_trip(model: Any, out: type) -> None:
    body = json.loads(json.dumps(encode(model)))
    got = decode(body, out)
    assert got.extra == {}
    for a in attrs.fields(type(model)):
        sent = getattr(model, a.name)
        assert getattr(got, a.name) == (None if sent is UNSET else sent), a.name


@given(st.builds(
    ProductInput, name=FILLED, selling_price=MONEY,
    product_type=maybe(st.sampled_from(asyncsdk.ProductType)),
    unit=maybe(st.sampled_from(asyncsdk.Unit)), sku=maybe(TEXT), description=maybe(TEXT),
))
def test_product_round_trip(product: ProductInput) -> None:
    assert_round_trip(product, asyncsdk.Product)


@given(st.builds(
    LeadInput, name=FILLED, email=EMAIL, company=FILLED,
    industry=st.sampled_from(asyncsdk.Industry), source=st.sampled_from(asyncsdk.LeadSource),
    funnel=FILLED, status=st.integers(-(2**31), 2**31), rating=st.sampled_from(asyncsdk.Rating),
    zipcode=maybe(TEXT), annual_revenue=maybe(st.integers(0, 10**12)), country=maybe(COUNTRY),
))
def test_lead_round_trip(lead: LeadInput) -> None:
    assert_round_trip(lead, asyncsdk.Lead)


@given(st.builds(
    CustomerCreate, customer_type=st.sampled_from(asyncsdk.CustomerType), first_name=FILLED,
    email=EMAIL, last_name=maybe(TEXT), currency=maybe(st.sampled_from(asyncsdk.Currency)),
    payment_terms=maybe(st.sampled_from(asyncsdk.PaymentTerms)),
    billing_zipcode=maybe(TEXT), billing_country=maybe(COUNTRY),
    shipping_country=maybe(COUNTRY), enable_portal=maybe(st.booleans()),
))
def test_customer_round_trip(customer: CustomerCreate) -> None:
    assert_round_trip(customer, asyncsdk.Customer)


@given(st.builds(
    ContactInput, email=FILLED, mobile=st.integers(0, 10**15), customer_name=maybe(TEXT),
    dob=maybe(st.dates(dt.date(1000, 1, 1))), marriage_date=maybe(st.dates(dt.date(1000, 1, 1))),
    customer_type=maybe(st.sampled_from([0, 1])), isemail=maybe(st.booleans()),
    tags=maybe(st.lists(TEXT, max_size=3)), attributes=maybe(st.dictionaries(TEXT, TEXT)),
))
def test_contact_round_trip(contact: ContactInput) -> None:
    assert_round_trip(contact, asyncsdk.Contact)


def test_invoice_round_trip_of_the_table_example() -> None:
    body = json.loads(json.dumps(encode(INVOICE_UPDATE)))
    got = decode(body, asyncsdk.Invoice)
    assert got.invoice_date == dt.date(2024, 3, 1) and got.due_date == dt.date(2024, 3, 31)
    assert got.productinvoices is not None
    assert got.productinvoices[0].rate == Decimal("12.50")
