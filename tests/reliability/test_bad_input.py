"""Bad input is refused with ``InvalidInputError`` before anything is sent.

For every input model: wrong types, out-of-list codes, malformed emails, control
characters; a required field left out is Python's own ``TypeError`` naming it. For the
arguments of the operations (ids, ``check``/``check_many``/``create_job``/``mail.send``,
``request_timeout``): ``InvalidInputError``, and the sandbox saw no request at all. Mail
fields bound for a form or a header (subject, addresses) refuse CR/LF: no header
injection.
"""

from __future__ import annotations

import datetime as dt
import math
from collections.abc import Awaitable, Callable
from decimal import Decimal
from pathlib import Path
from typing import Any

import attrs
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from reliability_helpers import (
    FIGURES,
    OPS,
    RECIPIENT,
    SENDER,
    Op,
    World,
    contact_list_create,
    customer_create,
    instant,
    lead_input,
    prepare,
    product_input,
    sandbox,
)

import asyncsdk
from asyncsdk._checks import check_email
from asyncsdk.models.contacts import ContactInput, ContactListCreate, ContactUpdate
from asyncsdk.models.customers import CustomerCreate, CustomerUpdate
from asyncsdk.models.invoices import InvoiceLine, InvoiceUpdate
from asyncsdk.models.leads import LeadInput
from asyncsdk.models.products import ProductInput

VALID: dict[type[Any], dict[str, Any]] = {
    ContactListCreate: {"name": "L", "is_email": True,
                        "emaillist": [ContactInput(email="a@example.com", mobile=1)]},
    ContactInput: {"email": "a@example.com", "mobile": 447700900001},
    ContactUpdate: {"uuid": "u-1", "email": "a@example.com", "mobile": 447700900001},
    LeadInput: {"name": "Ada", "email": "ada@example.com", "company": "AE",
                "industry": 63, "source": 13, "funnel": "Default", "status": 1, "rating": 3},
    CustomerCreate: {"customer_type": 1, "first_name": "G", "email": "g@example.org"},
    CustomerUpdate: {"email": "g@example.org"},
    ProductInput: {"name": "W", "selling_price": Decimal("1.50")},
    InvoiceUpdate: {},
    InvoiceLine: {"products": 1, "quantity": Decimal("1"), "rate": Decimal("2.00")},
}
MODELS = list(VALID)

BAD_EMAILS = ["", "plain", "a@", "@b.com", "a@b", "a b@c.com", "a@b..com", "a@@b.com",
              "a@b.com\r\nBcc: evil@x.com", "a@b.com\n", "\x00a@b.com", "a@b.com\x7f",
              "a" * 250 + "@b.com"]
#: What the address check before sending refuses (issue 13: only what cannot be an
#: address at all); the rest of ``BAD_EMAILS`` is for the service to judge.
IMPOSSIBLE_EMAILS = [e for e in BAD_EMAILS
                     if e not in ("a@", "@b.com", "a@b", "a@b..com", "a@@b.com")]
CONTROL = ["\r\n", "\n", "\r", "\x00", "\x1b", "\x7f"]
WRONG_VALUES: list[Any] = [object(), b"bytes", 1.5, [1], {"a": 1}, True, "text", -1, 10**30]

#: Field -> values that must be refused on construction (on top of the wrong types).
OUT_OF_LIST: dict[tuple[type[Any], str], list[Any]] = {
    (LeadInput, "industry"): [0, 1, 61, 65, -3, 999],
    (LeadInput, "source"): [0, 1, 20],
    (LeadInput, "rating"): [0, 1, 7],
    (LeadInput, "country"): [0, 2, 25, 248],
    (CustomerCreate, "customer_type"): [0, 3],
    (CustomerCreate, "currency"): [-1, 6],
    (CustomerCreate, "payment_terms"): [6, 99],
    (CustomerCreate, "billing_country"): [0, 25, 248],
    (CustomerCreate, "shipping_country"): [0, 25, 248],
    (CustomerUpdate, "customer_type"): [0, 3],
    (ProductInput, "product_type"): [2, -1],
    (ProductInput, "unit"): [7, -1],
    (ProductInput, "selling_price"): ["abc", "1.234", Decimal("NaN"), Decimal("Infinity"),
                                      "1e400", 1.5, Decimal("1E+26"), 10**26],
    (InvoiceLine, "quantity"): ["x", Decimal("0.001"), Decimal("-Infinity")],
    (ContactInput, "customer_type"): [2, -1],
    (ContactUpdate, "customer_type"): [2],
}
#: Text that cannot be sent as it is: a lone surrogate (UTF-8 cannot encode it; yarl
#: would drop it from a URL and send the rest), C1 control characters.
LONE_SURROGATE = "\ud800"
EMAIL_FIELDS = [(LeadInput, "email"), (CustomerCreate, "email"), (CustomerUpdate, "email")]


def required_fields(model: type[Any]) -> list[str]:
    return [a.name for a in attrs.fields(model) if a.default is attrs.NOTHING]


def typed_fields(model: type[Any]) -> list[str]:
    return [a.name for a in attrs.fields(model)]


def count(kind: str) -> None:
    FIGURES["bad inputs tried"] += 1


# --- models -----------------------------------------------------------------------------
@pytest.mark.parametrize("model", MODELS, ids=lambda m: m.__name__)
def test_valid_inputs_are_accepted(model: type[Any]) -> None:
    model(**VALID[model])


@pytest.mark.parametrize(("model", "name"),
                         [(m, f) for m in MODELS for f in required_fields(m)],
                         ids=lambda v: getattr(v, "__name__", v))
def test_missing_required_field_is_type_error_naming_it(model: type[Any], name: str) -> None:
    count("missing")
    kwargs = {k: v for k, v in VALID[model].items() if k != name}
    with pytest.raises(TypeError, match=name):
        model(**kwargs)


@pytest.mark.parametrize(("model", "name"),
                         [(m, f) for m in MODELS for f in typed_fields(m)],
                         ids=lambda v: getattr(v, "__name__", v))
def test_wrong_types_are_invalid_input(model: type[Any], name: str) -> None:
    refused: list[asyncsdk.InvalidInputError] = []
    for value in WRONG_VALUES:
        count("wrong type")
        try:
            model(**{**VALID[model], name: value})
        except asyncsdk.InvalidInputError as exc:  # anything else fails the test
            refused.append(exc)
    assert len(refused) >= len(WRONG_VALUES) - 3  # a str field takes "text", an int -1, ...
    assert all(e.field is not None and name in e.field for e in refused)


@pytest.mark.parametrize(("model", "name"), list(OUT_OF_LIST),
                         ids=lambda v: getattr(v, "__name__", v))
def test_out_of_list_codes_are_invalid_input(model: type[Any], name: str) -> None:
    for value in OUT_OF_LIST[(model, name)]:
        count("code")
        with pytest.raises(asyncsdk.InvalidInputError) as refused:
            model(**{**VALID[model], name: value})
        if isinstance(value, int) and value > 10**20:  # not "too many decimal places"
            assert "decimal places" not in str(refused.value)


@pytest.mark.parametrize(("model", "name"), EMAIL_FIELDS, ids=lambda v: getattr(v, "__name__", v))
@pytest.mark.parametrize("email", BAD_EMAILS)
def test_malformed_emails_are_invalid_input(model: type[Any], name: str, email: str) -> None:
    count("email")
    with pytest.raises(asyncsdk.InvalidInputError):
        model(**{**VALID[model], name: email})


@pytest.mark.parametrize("model", MODELS, ids=lambda m: m.__name__)
def test_nul_in_text_is_invalid_input(model: type[Any]) -> None:
    for a in attrs.fields(model):
        if isinstance(VALID[model].get(a.name), str):
            count("nul")
            with pytest.raises(asyncsdk.InvalidInputError):
                model(**{**VALID[model], a.name: "x\x00y"})


def _text_fields(model: type[Any]) -> list[str]:
    """Every field of ``model`` that takes text (tried with a plain string)."""
    names = []
    for a in attrs.fields(model):
        try:
            model(**{**VALID[model], a.name: VALID[model].get(a.name, "x")
                     if isinstance(VALID[model].get(a.name), str) else "x"})
        except asyncsdk.InvalidInputError:
            continue
        names.append(a.name)
    return names


@pytest.mark.parametrize("model", MODELS, ids=lambda m: m.__name__)
def test_text_utf8_cannot_encode_is_invalid_input(model: type[Any]) -> None:
    """Before: a lone surrogate passed the checks, then went out dropped from a URL or
    into a body the service stored, or raised ``UnicodeEncodeError`` at send time."""
    fields = _text_fields(model)
    for name in fields:
        count("surrogate")
        with pytest.raises(asyncsdk.InvalidInputError, match=name):
            model(**{**VALID[model], name: f"x{LONE_SURROGATE}@example.com"})


#: Free-form fields (``tags``, ``attributes``): what JSON cannot carry, at any depth.
NOT_JSON: list[Any] = [math.nan, -math.inf, object(), b"x", {1, 2}, 10**5000, 2**63,
                       f"x{LONE_SURROGATE}", [[math.inf]], {"a": [object()]},
                       {"a": {"b": math.nan}}, {1: "x"}, Decimal("1.5")]


def _nested(depth: int) -> Any:
    value: Any = 1
    for _ in range(depth):
        value = [value]
    return value


@pytest.mark.parametrize("model", [ContactInput, ContactUpdate], ids=lambda m: m.__name__)
@pytest.mark.parametrize("name", ["tags", "attributes"])
def test_free_form_fields_take_only_json(model: type[Any], name: str) -> None:
    """Before: NaN/Infinity went out as not-JSON (and the service created the record),
    objects and huge ints raised bare TypeError/ValueError at send time."""
    for value in NOT_JSON:
        count("not json")
        wrapped = [value] if name == "tags" else {"k": value}
        with pytest.raises(asyncsdk.InvalidInputError, match=name):
            model(**{**VALID[model], name: wrapped})
    with pytest.raises(asyncsdk.InvalidInputError, match="deep"):
        model(**{**VALID[model], name: [_nested(40)] if name == "tags" else {"k": _nested(40)}})
    fine: Any = [1, -2**63, 2**63 - 1, 1.5, "ö", None, True, {"a": [1, {"b": None}]},
                 _nested(20)]
    made = model(**{**VALID[model], name: fine if name == "tags" else {"k": fine}})
    assert getattr(made, name) == (fine if name == "tags" else {"k": fine})


def _takes(model: type[Any], name: str, value: Any) -> bool:
    try:
        model(**{**VALID[model], name: value})
    except asyncsdk.InvalidInputError:
        return False
    return True


#: Fields that take an int (not also a Decimal, which holds big numbers exactly).
INT_FIELDS = [(m, f) for m in MODELS for f in typed_fields(m)
              if not _takes(m, f, Decimal(1)) and any(_takes(m, f, v) for v in (0, 1, 2))]


@pytest.mark.parametrize(("model", "name"), INT_FIELDS,
                         ids=lambda v: getattr(v, "__name__", v))
def test_ints_beyond_64_bits_are_invalid_input(model: type[Any], name: str) -> None:
    """Before: a huge int was accepted, then a bare ValueError or the service's 400."""
    for value in (2**63, -(2**63) - 1, 10**5000):
        count("huge int")
        with pytest.raises(asyncsdk.InvalidInputError) as refused:
            model(**{**VALID[model], name: value})
        assert refused.value.field is not None and name in refused.value.field


def test_nested_models_are_checked() -> None:
    count("nested")
    with pytest.raises(asyncsdk.InvalidInputError):
        ContactListCreate(name="L", is_email=True,
                          emaillist=[{"email": "a@example.com", "mobile": 1}])  # type: ignore[list-item]
    with pytest.raises(asyncsdk.InvalidInputError):
        InvoiceUpdate(productinvoices=[("1", "2")])  # type: ignore[list-item]
    with pytest.raises(asyncsdk.InvalidInputError):
        ContactInput(email="a@example.com", mobile=1, dob="2024-01-01")  # type: ignore[arg-type]
    with pytest.raises(asyncsdk.InvalidInputError):
        ContactInput(email="a@example.com", mobile=1, attributes={1: "x"})  # type: ignore[dict-item]


#: Any character, surrogates and C1 controls included (``st.text`` leaves surrogates out).
_ANY_CHAR = st.one_of(st.characters(blacklist_categories=()),
                      st.sampled_from(["\x85", "\x9b", "\ud800", "\udfff", "\u2028", '"']))


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(text=st.one_of(st.text(max_size=40),
                      st.builds(lambda a, b, c: f"{a}@{b}.{c}", st.text(max_size=8),
                                st.text(max_size=8), st.text(max_size=4)),
                      st.builds(lambda a, b, c: f"{a}@{b}.{c}", st.text(_ANY_CHAR, max_size=8),
                                st.text(_ANY_CHAR, max_size=8), st.text(max_size=4))))
def test_email_check_accepts_only_single_line_addresses(text: str) -> None:
    count("email (generated)")
    try:
        checked = check_email(text, "email")
    except asyncsdk.InvalidInputError:
        return
    # Issue 13: only what cannot be an address is refused; white space only in quotes.
    assert "@" in checked and len(checked) <= 254
    # No control character (C0, DEL, C1), and UTF-8 can encode it (no lone surrogate).
    assert not any(ord(c) < 32 or 127 <= ord(c) <= 159 for c in checked)
    checked.encode("utf-8")
    assert '"' in checked or not any(c.isspace() for c in checked)


# --- operations: refused, and nothing sent --------------------------------------------------
Bad = Callable[[asyncsdk.Client, World], Awaitable[Any]]


def _mail(**override: Any) -> Bad:
    fields = {"sender": SENDER, "to": RECIPIENT, "subject": "Hello", "html": "<p>Hi</p>",
              **override}
    return lambda c, w: c.mail.send(**fields)


def _bad(method: str, *args: Any, **kwargs: Any) -> Bad:
    """Calls ``client.<area>.<name>(*args, **kwargs)``."""
    area, name = method.split(".")
    return lambda c, w: getattr(getattr(c, area), name)(*args, **kwargs)


def _drain(**kwargs: Any) -> Bad:
    async def drain(c: asyncsdk.Client, w: World) -> None:
        async for _ in c.validation.check_many(**kwargs):
            pass

    return drain


def _job_status(job_id: Any) -> Bad:
    return lambda c, w: c.validation.job(job_id).status()


BAD_IDS: list[Any] = [-1, True, None, "", "a/b", "..", ".", 1.5, b"1", [1], "x\ud800"]
#: 10**400: an int too big for a float (``math.isfinite`` raises OverflowError on it).
BAD_TIMEOUTS: list[Any] = [0, -1, math.nan, math.inf, "5", True, [1], 10**400]


def _download(path: Any) -> Bad:
    return lambda c, w: c.validation.job(w.job_id).download(path)


def _wait(**kwargs: Any) -> Bad:
    return lambda c, w: c.validation.job(w.job_id).wait(**kwargs)

BAD_CALLS: dict[str, Bad] = {
    **{f"contacts.get[{i!r}]": _bad("contacts.get", i) for i in BAD_IDS},
    **{f"leads.delete[{i!r}]": _bad("leads.delete", i) for i in BAD_IDS},
    "contacts.create[dict]": lambda c, w: c.contacts.create({"name": "x"}),  # type: ignore[arg-type]
    "contacts.create[other model]": lambda c, w: c.contacts.create(lead_input()),  # type: ignore[arg-type]
    "contacts.update[empty]": lambda c, w: c.contacts.update(w.list_id, []),
    "contacts.update[str]": lambda c, w: c.contacts.update(w.list_id, "x"),  # type: ignore[arg-type]
    "contacts.update[input model]": lambda c, w: c.contacts.update(
        w.list_id, [ContactInput(email="a@example.com", mobile=1)]),  # type: ignore[list-item]
    "leads.create[None]": lambda c, w: c.leads.create(None),  # type: ignore[arg-type]
    "leads.update[bad id]": lambda c, w: c.leads.update("a/b", lead_input()),
    "customers.create[update model]": lambda c, w: c.customers.create(
        CustomerUpdate(email="g@example.org")),  # type: ignore[arg-type]
    "customers.update[create model]": lambda c, w: c.customers.update(1, customer_create()),  # type: ignore[arg-type]
    "products.update[dict]": lambda c, w: c.products.update(1, {"name": "x"}),  # type: ignore[arg-type]
    "invoices.update[line]": lambda c, w: c.invoices.update(
        1, InvoiceLine(products=1, quantity=Decimal(1), rate=Decimal(1))),  # type: ignore[arg-type]
    **{f"check[{e!r}]": _bad("validation.check", e)
       for e in [*IMPOSSIBLE_EMAILS, None, 5, b"a@b.com", f"a{LONE_SURROGATE}@b.com",
                 f"a@b.com{LONE_SURROGATE}", "a@b.com\x9b[31m", "a\x85b@c.com"]},
    **{f"check[validity_timeout={t!r}]": _bad("validation.check", "ada@example.com",
                                              validity_timeout=t)
       for t in [0, -1, math.nan, "30", True]},
    "check_many[str]": _drain(emails="a@example.com"),
    "check_many[int]": _drain(emails=5),
    **{f"check_many[concurrency={n!r}]": _drain(emails=["a@example.com"], concurrency=n)
       for n in [0, -1, 1.5, "5", True]},
    "check_many[validity_timeout=-1]": _drain(emails=["a@example.com"], validity_timeout=-1),
    **{f"check_many[adaptive={a!r}]": _drain(emails=["a@example.com"], adaptive=a)
       for a in ["yes", None, 1, 2]},
    **{f"create_job[{u!r}]": _bad("validation.create_job", u)
       for u in ["", "list.csv", "ftp://127.0.0.1/x.csv", "file:///etc/passwd",
                 "http://", "http:///x", "http://127.0.0.1/x.csv\r\nX-Injected: 1",
                 "http://127.0.0.1/a b\n", "javascript:alert(1)", None, 5,
                 b"http://127.0.0.1/x.csv", "http://[::1/x",
                 f"http://127.0.0.1/x{LONE_SURROGATE}.csv", "http://127.0.0.1:99999/x.csv",
                 "http://127.0.0.1:abc/x.csv", "http://127.0.0.1/x\x85.csv"]},
    "create_job[validity_timeout=0]": lambda c, w: c.validation.create_job(
        w.file_url, validity_timeout=0),
    **{f"job[{j!r}]": _job_status(j)
       for j in [-1, "abc", None, 1.5, True, "1; DROP"]},
    "job_from_dict[junk]": lambda c, w: c.validation.job_from_dict({"x": 1}).status(),
    "job_from_dict[str]": lambda c, w: c.validation.job_from_dict("7").status(),  # type: ignore[arg-type]
    **{f"mail.send[subject={s!r}]": _mail(subject=s)
       for s in ["Hi\r\nBcc: evil@example.com", "Hi\nthere", "Hi\rX", "\x00", "", "  ", 5,
                 None, "Hi\x85there", "Hi\u2028there", "Hi\x9b", f"Hi{LONE_SURROGATE}"]},
    **{f"mail.send[to={t!r}]": _mail(to=t) for t in [*IMPOSSIBLE_EMAILS, None, ["a@example.com"]]},
    **{f"mail.send[sender={s!r}]": _mail(sender=s)
       for s in ["news@example.com\r\nBcc: evil@x.com", "news", "", None]},
    **{f"mail.send[html={h!r}]": _mail(html=h)
       for h in ["", "   ", None, b"<p>", 5, f"<p>{LONE_SURROGATE}</p>"]},
    **{f"mail.send[to={t!r}]": _mail(to=t)
       for t in [f"a{LONE_SURROGATE}@example.com", "a@example.com\x9f"]},
    **{f"wait[{k}={v!r}]": _wait(**{k: v})
       for k, v in [("on_status", "print"), ("on_status", 5), ("interval", 10**400),
                    ("deadline", 10**400), ("factor", math.nan)]},
    **{f"download[{p!r}]": _download(p)
       for p in [None, 5, b"out.csv", "a\x00b.csv", "", ".", "/", "x" * 300 + ".csv",
                 f"out{LONE_SURROGATE}.csv"]},
}
#: ``request_timeout`` out of range, for every operation of the table.
TIMEOUT_CASES = [(op, t) for op in OPS for t in BAD_TIMEOUTS]


@pytest.mark.parametrize("name", list(BAD_CALLS))
async def test_bad_arguments_send_nothing(name: str, tmp_path: Path) -> None:
    count("call")
    async with sandbox() as sb:
        world = prepare(sb, tmp_path)
        async with sb.client(clock=instant()) as client:
            with pytest.raises(asyncsdk.InvalidInputError):
                await BAD_CALLS[name](client, world)
        assert sb.requests == []
        assert sb.outbox == []


@pytest.mark.parametrize(("op", "timeout"), TIMEOUT_CASES,
                         ids=[f"{op.name}-{t!r}" for op, t in TIMEOUT_CASES])
async def test_bad_request_timeout_sends_nothing(op: Op, timeout: Any, tmp_path: Path) -> None:
    count("request_timeout")
    async with sandbox() as sb:
        world = prepare(sb, tmp_path)
        async with sb.client(clock=instant()) as client:
            if "bulk" in op.tags:  # refused at once, or each input's outcome says so
                try:
                    outcomes = [o async for o in client.validation.check_many(
                        ["ada@example.com", "bob@example.org"], request_timeout=timeout)]
                except asyncsdk.InvalidInputError:
                    outcomes = []
                assert all(isinstance(o.error, asyncsdk.InvalidInputError) for o in outcomes)
            else:
                with pytest.raises(asyncsdk.InvalidInputError):
                    await op.call(client, world, timeout)
        assert sb.requests == []


async def test_a_bad_address_in_check_many_is_its_own_outcome_and_not_sent(
    tmp_path: Path
) -> None:
    emails = ["ada@example.com", "a@b.com\r\nX-Injected: 1", "", None,
              f"x{LONE_SURROGATE}@example.com", "bob@example.org"]
    async with sandbox() as sb, sb.client() as client:
        outcomes = [o async for o in client.validation.check_many(emails)]  # type: ignore[arg-type]
        assert len(outcomes) == len(emails)
        bad = [o for o in outcomes if not o.ok]
        assert len(bad) == 4
        assert all(isinstance(o.error, asyncsdk.InvalidInputError) for o in bad)
        sent = sorted(r.query["email"] for r in sb.requests)
        assert sent == ["ada@example.com", "bob@example.org"]


async def test_json_bodies_carry_control_characters_safely(tmp_path: Path) -> None:
    """Free text with CR/LF in a JSON body is data, not a header: sent as given."""
    async with sandbox() as sb:
        prepare(sb, tmp_path)
        async with sb.client() as client:
            made = await client.products.create(
                ProductInput(name="A\r\nX-Injected: 1", selling_price=Decimal(1),
                             description="line1\nline2"))
            assert made.name == "A\r\nX-Injected: 1"
        (request,) = sb.requests
        assert "X-Injected" not in request.headers


def test_dates_of_the_wrong_kind_are_refused() -> None:
    with pytest.raises(asyncsdk.InvalidInputError):
        InvoiceUpdate(due_date="2024-01-01")  # type: ignore[arg-type]
    with pytest.raises(asyncsdk.InvalidInputError):
        InvoiceUpdate(invoice_date=20240101)  # type: ignore[arg-type]
    InvoiceUpdate(due_date=dt.date(2024, 1, 1))
    product_input()
    contact_list_create()


def test_free_form_fields_take_enum_members_as_their_plain_values() -> None:
    """A ``(str, Enum)`` member is its text, not its ``str()`` ("Plan.PRO" before)."""
    import enum

    class Plan(str, enum.Enum):
        PRO = "pro"

    class Level(enum.IntEnum):
        HIGH = 3

    made = ContactInput(email="a@example.com", mobile=1, tags=[Plan.PRO, Level.HIGH],
                        attributes={Plan.PRO: Level.HIGH})
    assert made.tags == ["pro", 3] and made.attributes == {"pro": 3}
    assert type(made.tags[0]) is str and type(made.tags[1]) is int
