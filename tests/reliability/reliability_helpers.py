"""The reliability suite's table of public operations and its shared checks.

Every public operation of the client is one ``Op`` row: how to call it against a prepared
sandbox (``World``), which request it sends (method and path, where faults are
injected and requests counted), whether it is safe to send twice (DESIGN §3), and how
to count the effect an unsafe operation has on the service (to prove it happened at
most once). Operations that have not landed yet (``needs`` names the attribute) are
skipped with a reason instead of failing.
"""

from __future__ import annotations

import asyncio
import datetime as dt
import logging
import traceback
from collections import Counter
from collections.abc import Callable, Coroutine, Iterable, Mapping
from dataclasses import dataclass, field
from decimal import Decimal
from pathlib import Path
from typing import Any

import pytest
from helpers import API_KEY, USERNAME, SkippedSleeps

import asyncsdk
from asyncsdk.models.contacts import ContactInput, ContactListCreate, ContactUpdate
from asyncsdk.models.customers import CustomerCreate, CustomerUpdate
from asyncsdk.models.invoices import InvoiceLine, InvoiceUpdate
from asyncsdk.models.leads import LeadInput
from asyncsdk.models.products import ProductInput
from asyncsdk.testing import Sandbox

SECRETS = (API_KEY, USERNAME)
#: What the suite counted in this run (printed at the end by the conftest): calls made,
#: requests that reached a server, faults injected, generated inputs tried, leaks found.
FIGURES: Counter[str] = Counter()
SENDER = "news@example.com"
RECIPIENT = "ada@example.org"
CHECK_MANY_EMAILS = ("a1@example.com", "a2@example.org", "info@example.net",
                     "x@mailinator.com", "bounce7@example.com")
#: Small client timeout for the "delay past the timeout" fault, and the server delay
#: a bit above it. Both run on the same event loop, so the client's timer always fires
#: first: deterministic, and fast.
SHORT_TIMEOUT = 0.1
SERVER_DELAY = 0.13
#: Retries of the client under test (the library default, stated here for the counts).
MAX_RETRIES = 2


def sandbox(**options: Any) -> Sandbox:
    """A sandbox for the suite's distinctive credentials (``helpers.API_KEY/USERNAME``)."""
    return Sandbox(api_key=API_KEY, username=USERNAME, **options)


def instant() -> SkippedSleeps:
    """A clock for the client under test (``Client(clock=instant())``): a retry's
    backoff costs one loop turn, not seconds, and no time."""
    return SkippedSleeps(counted=False)




# --- the world an operation runs in -----------------------------------------------------
@dataclass
class World:
    """Ids and URLs seeded in a fresh sandbox for the operations to act on."""

    sb: Sandbox
    tmp: Path
    list_id: int
    record_uuid: str
    lead_id: int
    customer_id: int
    product_id: int
    invoice_id: int
    job_id: int
    file_url: str

    def count(self, method: str, path: str) -> int:
        """Requests that reached the server with this method and path (a path ending
        in ``*`` is a prefix, as for faults)."""
        if path.endswith("*"):
            prefix = path[:-1]
            return sum(1 for r in self.sb.requests
                       if r.method == method and r.path.startswith(prefix))
        return sum(1 for r in self.sb.requests if r.method == method and r.path == path)


LEAD_FIELDS: dict[str, Any] = {"industry": 63, "source": 13, "funnel": "Default",
                               "status": 1, "rating": 3}


def prepare(sb: Sandbox, tmp: Path) -> World:
    """Seed one object of every kind, a verified sender domain, a finished job of a few
    rows and a hosted address file; forget the (no) requests so far."""
    list_id = sb.seed_contact_list("Newsletter", [{"email": "ada@example.com",
                                                   "mobile": 447700900001}])
    uuid = sb.state.contact_lists[list_id]["records"][0]["uuid"]
    lead_id = sb.seed_lead({"name": "Ada", "email": "ada@example.com", "company": "AE",
                            **LEAD_FIELDS})
    customer_id = sb.seed_customer({"customer_type": 1, "first_name": "Grace",
                                    "email": "grace@example.org", "currency": 4})
    product_id = sb.seed_product({"product_type": 0, "name": "Widget", "unit": 4,
                                  "selling_price": "19.99"})
    invoice_id = sb.seed_invoice({
        "invoice_number": "INV-1", "invoice_date": "2024-01-15", "due_date": "2024-02-14",
        "customer": customer_id, "status": 0, "terms": 1, "invoice_type": 0,
        "productinvoices": [{"quantity": "1.00", "rate": "19.99", "discount": "0.00",
                             "discount_unit": 0, "products": product_id}],
    })
    sb.verify_domain("example.com")
    job_id = sb.make_job(rows=25)
    file_url = sb.host_file("email,name\nada@example.com,Ada\nbob@example.org,Bob\n")
    sb.reset_stats()
    return World(sb, tmp, list_id, uuid, lead_id, customer_id, product_id, invoice_id,
                 job_id, file_url)


# --- inputs that the service accepts --------------------------------------------------
def contact_list_create() -> ContactListCreate:
    return ContactListCreate(
        name="Reliability", is_email=True,
        emaillist=[ContactInput(email="ada@example.com", mobile=447700900001,
                                dob=dt.date(1990, 5, 17))])


def lead_input() -> LeadInput:
    return LeadInput(name="Ada", email="ada@example.com", company="AE",
                     industry=asyncsdk.Industry.TECHNOLOGY,
                     source=asyncsdk.LeadSource.WEB_DOWNLOAD, funnel="Default", status=1,
                     rating=asyncsdk.Rating.ACTIVE)


def customer_create() -> CustomerCreate:
    return CustomerCreate(customer_type=asyncsdk.CustomerType.BUSINESS, first_name="Grace",
                          email="grace@example.org", currency=asyncsdk.Currency.USD)


def product_input() -> ProductInput:
    return ProductInput(name="Widget", selling_price=Decimal("19.99"),
                        unit=asyncsdk.Unit.PC)


def invoice_update(product_id: int) -> InvoiceUpdate:
    return InvoiceUpdate(subject="Widgets", due_date=dt.date(2024, 3, 1), productinvoices=[
        InvoiceLine(products=product_id, quantity=Decimal("2"), rate=Decimal("19.99"))])


# --- the table -------------------------------------------------------------------------
Call = Callable[[asyncsdk.Client, World, "float | None"], Coroutine[Any, Any, Any]]
Effects = Callable[[World], int]


@dataclass(frozen=True)
class Op:
    """One public operation as the suite sees it."""

    name: str
    method: str
    path: str  # format string: ``{list_id}``, ``{lead_id}``... filled from the World
    safe: bool
    call: Call
    needs: str | None = None  # attribute path on the client that must exist
    single: bool = True  # sends exactly one request (to ``path``) when nothing fails
    effects: Effects | None = None  # for unsafe ops: how many times it took effect
    tags: frozenset[str] = field(default_factory=frozenset)
    options: Mapping[str, Any] = field(default_factory=dict)  # for the Sandbox

    def target(self, world: World) -> str:
        return self.path.format(**vars(world))

    def available(self, client: asyncsdk.Client) -> bool:
        obj: Any = client
        for part in (self.needs or "").split("."):
            if part and not hasattr(obj, part):
                return False
            obj = getattr(obj, part) if part else obj
        return True

    def skip_unless_available(self, client: asyncsdk.Client) -> None:
        if not self.available(client):
            pytest.skip(f"{self.name}: not implemented yet ({self.needs} missing)")

    def __str__(self) -> str:
        return self.name


def _t(timeout: float | None) -> dict[str, Any]:
    return {} if timeout is None else {"request_timeout": timeout}


async def _check_many(c: asyncsdk.Client, w: World, t: float | None) -> list[Any]:
    outcomes = [o async for o in c.validation.check_many(
        list(CHECK_MANY_EMAILS), concurrency=2, **_t(t))]
    assert sorted(o.email for o in outcomes) == sorted(CHECK_MANY_EMAILS)
    for o in outcomes:
        assert (o.result is None) != (o.error is None)
        assert o.error is None or isinstance(o.error, asyncsdk.SDKError), repr(o.error)
    return outcomes


async def _rows(c: asyncsdk.Client, w: World, t: float | None) -> list[Any]:
    job = c.validation.job(w.job_id)
    rows = [row async for row in job.rows(**_t(t))]
    assert len(rows) == 25
    return rows


async def _download(c: asyncsdk.Client, w: World, t: float | None) -> Path:
    target = w.tmp / "emaillist.csv"
    await c.validation.job(w.job_id).download(target, **_t(t))
    assert target.read_text().count("\n") >= 25
    return target


def _objects(kind: str) -> Effects:
    return lambda w: len(getattr(w.sb.state, kind))


OPS: tuple[Op, ...] = (
    # contacts
    Op("contacts.list", "GET", "/api/v1/contact/", True,
       lambda c, w, t: c.contacts.list(**_t(t))),
    Op("contacts.get", "GET", "/api/v1/contact/{list_id}/", True,
       lambda c, w, t: c.contacts.get(w.list_id, **_t(t))),
    Op("contacts.create", "POST", "/api/v1/contact/", False,
       lambda c, w, t: c.contacts.create(contact_list_create(), **_t(t)),
       effects=lambda w: len(w.sb.state.contact_lists) - 1),
    Op("contacts.update", "PUT", "/api/v1/contact/{list_id}/", True,
       lambda c, w, t: c.contacts.update(
           w.list_id, [ContactUpdate(uuid=w.record_uuid, email="ada@example.com",
                                     mobile=447700900009)], **_t(t))),
    Op("contacts.delete", "DELETE", "/api/v1/contact/{list_id}/", True,
       lambda c, w, t: c.contacts.delete(w.list_id, **_t(t)), tags=frozenset({"delete"})),
    # leads
    Op("leads.list", "GET", "/mysite/api/v1/lead/", True,
       lambda c, w, t: c.leads.list(**_t(t))),
    Op("leads.get", "GET", "/mysite/api/v1/lead/{lead_id}/", True,
       lambda c, w, t: c.leads.get(w.lead_id, **_t(t))),
    Op("leads.create", "POST", "/mysite/api/v1/lead/", False,
       lambda c, w, t: c.leads.create(lead_input(), **_t(t)),
       effects=lambda w: len(w.sb.state.leads) - 1),
    Op("leads.update", "PUT", "/mysite/api/v1/lead/{lead_id}/", True,
       lambda c, w, t: c.leads.update(w.lead_id, lead_input(), **_t(t))),
    Op("leads.delete", "DELETE", "/mysite/api/v1/lead/{lead_id}/", True,
       lambda c, w, t: c.leads.delete(w.lead_id, **_t(t)), tags=frozenset({"delete"})),
    # customers
    Op("customers.list", "GET", "/mysite/api/v1/customers/", True,
       lambda c, w, t: c.customers.list(**_t(t))),
    Op("customers.get", "GET", "/mysite/api/v1/customers/{customer_id}/", True,
       lambda c, w, t: c.customers.get(w.customer_id, **_t(t))),
    Op("customers.create", "POST", "/mysite/api/v1/customers/", False,
       lambda c, w, t: c.customers.create(customer_create(), **_t(t)),
       effects=lambda w: len(w.sb.state.customers) - 1),
    Op("customers.update", "PUT", "/mysite/api/v1/customers/{customer_id}/", True,
       lambda c, w, t: c.customers.update(
           w.customer_id, CustomerUpdate(email="grace@example.org", last_name=None), **_t(t))),
    Op("customers.delete", "DELETE", "/mysite/api/v1/customers/{customer_id}/", True,
       lambda c, w, t: c.customers.delete(w.customer_id, **_t(t)), tags=frozenset({"delete"})),
    # products
    Op("products.list", "GET", "/mysite/api/v1/products/", True,
       lambda c, w, t: c.products.list(**_t(t))),
    Op("products.get", "GET", "/mysite/api/v1/products/{product_id}/", True,
       lambda c, w, t: c.products.get(w.product_id, **_t(t))),
    Op("products.create", "POST", "/mysite/api/v1/products/", False,
       lambda c, w, t: c.products.create(product_input(), **_t(t)),
       effects=lambda w: len(w.sb.state.products) - 1),
    Op("products.update", "PUT", "/mysite/api/v1/products/{product_id}/", True,
       lambda c, w, t: c.products.update(w.product_id, product_input(), **_t(t))),
    Op("products.delete", "DELETE", "/mysite/api/v1/products/{product_id}/", True,
       lambda c, w, t: c.products.delete(w.product_id, **_t(t)), tags=frozenset({"delete"})),
    # invoices
    Op("invoices.list", "GET", "/mysite/api/v1/invoices/", True,
       lambda c, w, t: c.invoices.list(**_t(t))),
    Op("invoices.update", "PUT", "/mysite/api/v1/invoices/{invoice_id}/", True,
       lambda c, w, t: c.invoices.update(w.invoice_id, invoice_update(w.product_id), **_t(t))),
    Op("invoices.delete", "DELETE", "/mysite/api/v1/invoices/{invoice_id}/", True,
       lambda c, w, t: c.invoices.delete(w.invoice_id, **_t(t)), tags=frozenset({"delete"})),
    # validation
    Op("validation.check", "GET", "/api/v1/single/check", True,
       lambda c, w, t: c.validation.check("ada@example.com", **_t(t))),
    Op("validation.check_many", "GET", "/api/v1/single/check", True, _check_many,
       needs="validation.check_many", single=False, tags=frozenset({"bulk"})),
    Op("validation.create_job", "GET", "/api/v1/jobs/create", False,
       lambda c, w, t: c.validation.create_job(w.file_url, **_t(t)),
       needs="validation.create_job", effects=lambda w: len(w.sb.state.jobs) - 1),
    Op("job.status", "GET", "/api/v1/jobs/status", True,
       lambda c, w, t: c.validation.job(w.job_id).status(**_t(t)),
       needs="validation.job"),
    Op("job.wait", "GET", "/api/v1/jobs/status", True,
       lambda c, w, t: c.validation.job(w.job_id).wait(**_t(t)),
       needs="validation.job", single=False, tags=frozenset({"poll"})),
    Op("job.rows", "GET", "/api/v1/jobs/download", True, _rows,
       needs="validation.job", single=False, tags=frozenset({"stream"})),
    Op("job.download", "GET", "/api/v1/jobs/download", True, _download,
       needs="validation.job", single=False, tags=frozenset({"stream"})),
    # mail
    Op("mail.send", "POST", "/api/v1/mail/send/", False,
       lambda c, w, t: c.mail.send(sender=SENDER, to=RECIPIENT,
                                   subject="Hello", html="<p>Hi</p>", **_t(t)),
       needs="mail.send", effects=lambda w: len(w.sb.outbox)),
)
_JSON = {"download_shape": "json"}
_URL = {"download_shape": "url"}
_STREAM = frozenset({"stream"})
#: The job result in its other wire shapes: JSON-wrapped CSV, and a URL of the CSV
#: (``/files/...``, fetched without credentials) with the faults on either request.
SHAPE_OPS: tuple[Op, ...] = (
    Op("job.rows[json]", "GET", "/api/v1/jobs/download", True, _rows, single=False,
       tags=_STREAM, options=_JSON),
    Op("job.download[json]", "GET", "/api/v1/jobs/download", True, _download,
       single=False, tags=_STREAM, options=_JSON),
    Op("job.rows[url]", "GET", "/api/v1/jobs/download", True, _rows, single=False,
       tags=_STREAM, options=_URL),
    Op("job.rows[url-file]", "GET", "/files/*", True, _rows, single=False,
       tags=_STREAM, options=_URL),
    Op("job.download[url-file]", "GET", "/files/*", True, _download, single=False,
       tags=_STREAM, options=_URL),
)
OPS_BY_NAME = {op.name: op for op in (*OPS, *SHAPE_OPS)}


# --- secrets ---------------------------------------------------------------------------
def exception_text(exc: BaseException) -> str:
    """Everything an exception shows: the formatted chain (causes and contexts), its
    repr, and the reprs of its attributes."""
    parts = ["".join(traceback.format_exception(type(exc), exc, exc.__traceback__))]
    seen: set[int] = set()
    current: BaseException | None = exc
    while current is not None and id(current) not in seen:
        seen.add(id(current))
        parts.append(repr(current))
        parts.append(str(current))
        parts.append(repr(getattr(current, "__dict__", {})))
        parts.extend(repr(a) for a in current.args)
        current = current.__cause__ or current.__context__
    return "\n".join(parts)


def log_text(records: Iterable[logging.LogRecord]) -> str:
    """Messages and raw args of the library's (and aiohttp client's) log records. The
    sandbox server's own records (aiohttp.server/web/access) are the service's logs,
    not the library's, and are left out."""
    parts = []
    for r in records:
        if r.name.startswith(("aiohttp.server", "aiohttp.web", "aiohttp.access")):
            continue
        parts.append(r.getMessage())
        parts.append(repr(r.args))
        if r.exc_info and r.exc_info[1] is not None:
            parts.append(exception_text(r.exc_info[1]))
    return "\n".join(parts)


def assert_no_secrets(*texts: str) -> None:
    for text in texts:
        for secret in SECRETS:
            assert secret not in text, f"secret leaked: ...{_around(text, secret)}..."


def _around(text: str, secret: str) -> str:
    at = text.index(secret)
    return text[max(0, at - 120): at + len(secret) + 40]


# --- open resources --------------------------------------------------------------------
def open_fds() -> int:
    """File descriptors open in this process right now."""
    import os

    return len(os.listdir("/proc/self/fd"))


def acquired(client: asyncsdk.Client) -> int:
    """Connections of the client's pool currently handed out to a request."""
    session = client._session
    if session is None or session.connector is None:
        return 0
    return len(session.connector._acquired)


def pooled(client: asyncsdk.Client) -> int:
    """Idle keep-alive connections in the client's pool."""
    session = client._session
    if session is None or session.connector is None:
        return 0
    conns = session.connector._conns
    return sum(len(v) for v in conns.values())


_SERVER_SIDE = ("aiohttp/web_", "asyncsdk/testing/")


def library_tasks() -> list[asyncio.Task[Any]]:
    """Pending tasks other than the current one and the sandbox server's own (its
    connection handlers live on the same loop)."""
    current = asyncio.current_task()
    found = []
    for task in asyncio.all_tasks():
        if task is current or task.done():
            continue
        code = getattr(task.get_coro(), "cr_code", None)
        filename = code.co_filename.replace("\\", "/") if code is not None else ""
        if any(part in filename for part in _SERVER_SIDE):
            continue
        if code is not None and code.co_name == "_accept_connection2":
            continue  # asyncio accepting a connection for the sandbox (a loaded machine)
        found.append(task)
    return found
