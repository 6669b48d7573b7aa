"""The README's documented patterns as code that type-checks under ``mypy --strict``.

CI runs ``mypy --strict examples/typed_usage.py`` (``tests/test_typing.py`` does too), so
a change that makes a documented pattern lose its types fails the build. Importing this
file does nothing; run it against the sandbox with ``python examples/typed_usage.py``.

What it shows about types:

* ``CheckResult.result`` is a ``Verdict`` (a verdict the library does not know is an
  unknown ``Verdict`` value, still a ``str``), so it goes to a function taking a
  ``Verdict`` as it is; ``Lead.industry`` is an ``Industry | None``: compare with the
  members directly.
* ``job.status()`` and ``job.wait()`` return a ``JobStatus`` (open too: an unknown
  state is an unknown ``JobStatus`` value), and ``on_status`` receives one.
* ``if outcome.ok:`` narrows a ``CheckOutcome`` to ``CheckSuccess``, whose ``result`` is
  a ``CheckResult`` (not ``None``).
* ``client.validation.pace()`` is an ``asyncsdk.pacing.PaceState``: its ``rate`` is a
  ``float | None``, its ``phase`` a ``Phase`` (compare with the members).
* Ids of answers are ``int | None`` (every response field is optional): check before
  passing one to ``update``/``delete``.
"""

from __future__ import annotations

import asyncio
import datetime as dt
from collections.abc import Iterable
from decimal import Decimal

import asyncsdk
from asyncsdk import (
    CheckOutcome,
    CheckResult,
    ContactInput,
    ContactList,
    ContactListCreate,
    ContactUpdate,
    CustomerCreate,
    CustomerType,
    CustomerUpdate,
    EmailRow,
    Industry,
    InvoiceLine,
    InvoiceLineItem,
    InvoiceUpdate,
    JobStatus,
    Lead,
    LeadInput,
    LeadSource,
    MailResult,
    MailState,
    ProductInput,
    Rating,
    Unit,
    ValidationJob,
    Verdict,
)
from asyncsdk.pacing import PaceState, Phase


def describe(verdict: Verdict) -> str:
    """A verdict in words (an unknown one as the service's text)."""
    if verdict is Verdict.VALID:
        return "deliverable"
    if verdict is Verdict.BOUNCE:
        return "bounces"
    return f"unsure ({verdict})"


async def quickstart(client: asyncsdk.Client) -> None:
    result: CheckResult = await client.validation.check("someone@example.com")
    print(describe(result.result), result.role)
    if result.result is Verdict.VALID:
        print(result.result, result.role)


async def check_many(client: asyncsdk.Client, addresses: Iterable[str]) -> int:
    valid = 0
    async for outcome in client.validation.check_many(addresses, concurrency=16):
        if outcome.ok:
            print(outcome.email, outcome.result.result)
            valid += outcome.result.result is Verdict.VALID
        else:
            print(outcome.email, "failed:", outcome.error)
    return valid


def pace_line(client: asyncsdk.Client) -> str:
    """The README's "Seeing the pace": a frozen ``PaceState``; ``rate`` and
    ``service_rate`` are ``float | None`` (None: not known yet), the seconds ``float``."""
    state: PaceState = client.validation.pace()
    rate = "unpaced" if state.rate is None else f"{state.rate:.0f}/s"
    held = f", held {state.hold_seconds:.1f}s" if state.hold_seconds else ""
    if state.phase is Phase.DARK:
        held += " (the service takes nothing)"
    return (f"{state.phase.value} at {rate}{held}, "
            f"{state.in_flight}/{state.max_in_flight} in flight")


def describe_outcome(outcome: CheckOutcome) -> str:
    if outcome.ok:
        verdict: Verdict = outcome.result.result
        return f"{outcome.email}: {describe(verdict)}"
    error: asyncsdk.SDKError = outcome.error
    return f"{outcome.email}: {type(error).__name__} (attempted={outcome.attempted})"


async def jobs(client: asyncsdk.Client, url: str) -> int:
    job: ValidationJob = await client.validation.create_job(url)
    saved = job.to_dict()
    job = client.validation.job_from_dict(saved)
    now: JobStatus = await job.status()
    if now is JobStatus.FAIL:
        return 0

    def report(status: JobStatus, elapsed: float) -> None:
        print(f"{elapsed:.0f}s {status}")

    try:
        done: JobStatus = await job.wait(deadline=3600, on_status=report)
    except asyncsdk.JobTimeoutError:
        return 0
    print(done)
    rows = 0
    async for row in job.rows():
        checked: EmailRow = row
        rows += checked.status is Verdict.VALID and not checked.role_based
    await job.download("emaillist.csv")
    return rows


async def mail(client: asyncsdk.Client) -> None:
    sent: MailResult = await client.mail.send(sender="me@example.com", to="you@example.org",
                                              subject="Welcome", html="<p>Hello</p>")
    if sent.message is MailState.QUEUED:
        print("queued", sent.id)


async def resources(client: asyncsdk.Client) -> None:
    made: ContactList = await client.contacts.create(ContactListCreate(
        name="Newsletter", is_email=True,
        emaillist=[ContactInput(email="ann@example.com", mobile=919800000001,
                                dob=dt.date(1990, 4, 5), customer_type=1)]))
    first = made.contacts[0]
    if made.id is not None and first.uuid is not None:
        await client.contacts.update(made.id, [ContactUpdate(
            uuid=first.uuid, email="ann@example.com", mobile=919800000001, city="Pune")])

    lead: Lead = await client.leads.create(LeadInput(
        name="Ann Lee", email="ann@example.com", company="Acme", industry=Industry.BANKS,
        source=LeadSource.TRADE_SHOW, funnel="Default", status=1, rating=Rating.ACTIVE))
    if lead.industry is Industry.BANKS:
        print("a bank")

    customer = await client.customers.create(CustomerCreate(
        customer_type=CustomerType.BUSINESS, first_name="Ann", email="ann@example.com"))
    if customer.id is not None:
        await client.customers.update(customer.id, CustomerUpdate(email="ann@example.com",
                                                                  last_name=None))

    product = await client.products.create(ProductInput(
        name="Widget", selling_price=Decimal("12.5"), unit=Unit.KG))
    if product.id is not None:
        await client.invoices.update(21, InvoiceUpdate(
            due_date=dt.date(2024, 3, 31),
            productinvoices=[InvoiceLine(products=product.id, quantity=Decimal(2),
                                         rate=Decimal("12.50"))]))
    for invoice in await client.invoices.list():
        lines: list[InvoiceLineItem] = invoice.productinvoices or []
        print(invoice.id, sum((line.quantity or Decimal(0) for line in lines), Decimal(0)))
    await client.invoices.delete(21)


async def options_and_errors(client: asyncsdk.Client) -> dict[str, object]:
    """``with_options``, per-call extras, an error's answer, a model's ``to_dict()``."""
    patient: asyncsdk.Client = client.with_options(timeout=300, max_retries=5)
    result: CheckResult = await patient.validation.check(
        "ann@example.com", extra_headers={"X-Request-Source": "signup"},
        extra_query={"source": "signup"})
    try:
        await client.contacts.get(999_999)
    except asyncsdk.NotFoundError as exc:
        raw: asyncsdk.RawResponse[None] | None = exc.response
        if exc.headers is not None and raw is not None:
            print(raw.attempts, exc.headers.get("Retry-After"))
    base: str | None = client.base_url
    print(base, asyncsdk.redact_url(base or ""), sorted(asyncsdk.CREDENTIAL_FIELDS))
    return result.to_dict()


async def main() -> None:
    from asyncsdk.testing import Sandbox

    async with Sandbox() as sandbox, sandbox.client() as client:
        await quickstart(client)
        print(await check_many(client, ["a@example.com", "not an address"]))
        print(pace_line(client))


if __name__ == "__main__":
    asyncio.run(main())
