"""Every resource operation as the service receives it: a real aiohttp.web server on
127.0.0.1 records the request after the library's middleware has added the credentials
(what a mock sees comes before it), and the answer goes back over the socket.

Checked against spec/interface.md: method, path with its trailing slash, the id as one
percent-encoded path segment, credentials where each area carries them and nothing else
in the query, JSON or form body with the spec's field names, and the answer decoded.
"""

from __future__ import annotations

import decimal
import json
import re
from collections.abc import AsyncIterator, Awaitable, Callable
from decimal import Decimal
from typing import Any
from urllib.parse import parse_qsl, unquote

import attrs
import pytest
from aiohttp import web
from auth_helpers import serve
from helpers import API_KEY, USERNAME
from resource_cases import CASES, PRODUCT_INPUT, PRODUCT_WIRE, Case

import asyncsdk


@attrs.define
class Seen:
    """One request as it arrived."""

    method: str
    raw_path: str  # path and query, as sent (percent-encoded)
    last_segment: str  # the path's last segment (the id), as the server decodes it
    content_type: str | None
    body: bytes


@attrs.define
class WireServer:
    """Answers every request with ``status`` and ``answer`` (JSON; None: no body) and
    records what it received."""

    url: str = ""
    status: int = 200
    answer: Any = None
    seen: list[Seen] = attrs.Factory(list)

    async def handle(self, request: web.Request) -> web.StreamResponse:
        self.seen.append(Seen(request.method, request.raw_path,
                              request.path.removesuffix("/").rsplit("/", 1)[1],
                              request.headers.get("Content-Type"), await request.read()))
        if self.answer is None:
            return web.Response(status=self.status)
        return web.json_response(self.answer, status=self.status)


@pytest.fixture
async def wire() -> AsyncIterator[WireServer]:
    server = WireServer()
    async with serve(server.handle) as server.url:
        yield server


@pytest.fixture
async def wire_client(wire: WireServer) -> AsyncIterator[asyncsdk.Client]:
    async with asyncsdk.Client(API_KEY, USERNAME, base_url=wire.url, max_retries=0) as c:
        yield c


def split(raw_path: str) -> tuple[str, list[tuple[str, str]]]:
    path, _, query = raw_path.partition("?")
    return path, parse_qsl(query, keep_blank_values=True)


ALL = pytest.mark.parametrize("case", [pytest.param(c, id=c.name) for c in CASES])


@ALL
async def test_the_request_on_the_wire_is_the_spec_s(
        wire: WireServer, wire_client: asyncsdk.Client, case: Case) -> None:
    wire.answer, wire.status = case.answer, 200 if case.answer is not None else 204
    case.check(await case.call(wire_client))
    [seen] = wire.seen
    path, query = split(seen.raw_path)
    assert seen.method == case.method
    assert path == case.path and path.endswith("/")
    assert query == [("api_key", API_KEY)]  # the key alone, in the query, every time
    if case.body is None:
        assert seen.body == b""
    else:
        assert seen.content_type is not None
        assert seen.content_type.split(";")[0] == "application/json"
        assert json.loads(seen.body) == case.body


#: A path segment of RFC 3986: unreserved, sub-delims, ":", "@" and %XX escapes.
PATH_SEGMENT = re.compile(r"(?:[A-Za-z0-9\-._~!$&'()*+,;=:@]|%[0-9A-F]{2})+")
TEXT_IDS = ["a b", "ü", "%41", "a?b", "a#b", "a+b", "x;y", "007", "ab&api_key=x"]
ITEM_CALLS = {
    "get": lambda r, i: r.get(i),
    "delete": lambda r, i: r.delete(i),
    "update": lambda r, i: r.update(i, PRODUCT_INPUT),
}


@pytest.mark.parametrize("text_id", TEXT_IDS)
@pytest.mark.parametrize("call", sorted(ITEM_CALLS))
async def test_a_text_id_is_one_percent_encoded_path_segment(
        wire: WireServer, wire_client: asyncsdk.Client, text_id: str, call: str) -> None:
    wire.answer = None if call == "delete" else PRODUCT_WIRE
    wire.status = 204 if call == "delete" else 200
    await ITEM_CALLS[call](wire_client.products, text_id)
    [seen] = wire.seen
    path, query = split(seen.raw_path)
    collection, segment = path.removesuffix("/").rsplit("/", 1)
    assert f"{collection}/{segment}/" == path and collection == "/mysite/api/v1/products"
    assert PATH_SEGMENT.fullmatch(segment)  # only what RFC 3986 lets a segment hold
    assert unquote(segment) == text_id == seen.last_segment  # read back exactly as given
    assert query == [("api_key", API_KEY)]


async def test_check_on_the_wire(wire: WireServer, wire_client: asyncsdk.Client) -> None:
    wire.answer = {"email": "a+b@example.com", "status": "success", "result": "Valid",
                   "role": "False", "free": True}
    got = await wire_client.validation.check("a+b@example.com", validity_timeout=12)
    [seen] = wire.seen
    path, query = split(seen.raw_path)
    assert (seen.method, path, seen.body) == ("GET", "/api/v1/single/check", b"")
    assert sorted(query) == sorted([("email", "a+b@example.com"), ("timeout", "12"),
                                    ("api", API_KEY), ("username", USERNAME)])
    assert (got.email, got.result, got.role, got.extra) == (
        "a+b@example.com", asyncsdk.Verdict.VALID, False, {"free": True})


async def test_mail_on_the_wire(wire: WireServer, wire_client: asyncsdk.Client) -> None:
    wire.answer = {"status": "success", "message": "Queued", "id": 991}
    got = await wire_client.mail.send(sender="me@example.com", to="you@example.com",
                                      subject="Hi & bye = 1", html="<p>a+b</p>")
    [seen] = wire.seen
    path, query = split(seen.raw_path)
    assert (seen.method, path, query) == ("POST", "/api/v1/mail/send/", [])
    assert seen.content_type == "application/x-www-form-urlencoded"
    assert sorted(parse_qsl(seen.body.decode(), keep_blank_values=True)) == sorted([
        ("api", API_KEY), ("username", USERNAME), ("from", "me@example.com"),
        ("to", "you@example.com"), ("subject", "Hi & bye = 1"), ("message", "<p>a+b</p>")])
    assert (got.status, got.message, got.id) == ("success", asyncsdk.MailState.QUEUED, "991")


@pytest.mark.parametrize(("status", "error"), [
    (400, asyncsdk.InvalidRequestError), (401, asyncsdk.AuthenticationError),
    (403, asyncsdk.AuthenticationError), (404, asyncsdk.NotFoundError),
    (422, asyncsdk.InvalidRequestError), (429, asyncsdk.RateLimitError),
    (500, asyncsdk.ServerError), (409, asyncsdk.APIError),
])
@ALL
async def test_a_refusal_is_its_error_with_the_service_s_text(
        wire: WireServer, wire_client: asyncsdk.Client, case: Case, status: int,
        error: type[asyncsdk.APIError]) -> None:
    wire.answer, wire.status = {"detail": "No way."}, status
    with pytest.raises(error) as info:
        await case.call(wire_client)
    assert (info.value.status_code, info.value.error_text) == (status, "No way.")
    assert info.value.operation == case.name
    assert len(wire.seen) == 1  # max_retries=0: one attempt


async def test_a_negative_zero_amount_goes_out_as_zero(
        wire: WireServer, wire_client: asyncsdk.Client) -> None:
    """"-0.00" is not how an amount of nothing is written; a strict decimal field of the
    service may refuse it (a price, a quantity or a discount)."""
    wire.answer = PRODUCT_WIRE
    for amount in (Decimal("-0"), Decimal("-0.00"), Decimal("-0E+3")):
        await wire_client.products.create(asyncsdk.ProductInput(name="Free",
                                                                selling_price=amount))
        line = asyncsdk.InvoiceLine(products=4, quantity=amount, rate=amount,
                                    discount=amount)
        await wire_client.invoices.update(21, asyncsdk.InvoiceUpdate(productinvoices=[line]))
    bodies = [json.loads(s.body) for s in wire.seen]
    assert [b["selling_price"] for b in bodies[0::2]] == ["0.00"] * 3
    assert [b["productinvoices"][0] for b in bodies[1::2]] == [
        {"products": 4, "quantity": "0.00", "rate": "0.00", "discount": "0.00"}] * 3


@pytest.mark.parametrize(("sent", "said"), [
    (1.5, "got 1.5, not a whole number"), (-0.25, "got -0.25, not a whole number"),
    (1e300, "got a float too large to be exact"), ("12.5", "got str"),
])
async def test_a_number_that_is_no_id_is_named_for_what_it_is(
        wire: WireServer, wire_client: asyncsdk.Client, sent: Any, said: str) -> None:
    """A fraction where an integer belongs is a fraction, not "too large to be exact"."""
    wire.answer = {**PRODUCT_WIRE, "id": sent}
    with pytest.raises(asyncsdk.ResponseDecodeError) as info:
        await wire_client.products.get(4)
    assert f"Product at $.id: expected an integer, {said}" in str(info.value)


async def test_amounts_do_not_depend_on_the_caller_s_decimal_context(
        wire: WireServer, wire_client: asyncsdk.Client) -> None:
    """An application's own decimal context (few digits, rounding trapped) is not the
    library's: a price it holds is accepted and sent as it is, a third place still
    refused by name, never a bare ``decimal`` signal or a wrong "too many digits"."""
    wire.answer = PRODUCT_WIRE
    with decimal.localcontext() as theirs:
        theirs.prec = 3
        theirs.traps[decimal.Inexact] = theirs.traps[decimal.Rounded] = True
        await wire_client.products.create(asyncsdk.ProductInput(
            name="Widget", selling_price=Decimal("12345.67")))
        line = asyncsdk.InvoiceLine(products=4, quantity=Decimal("1000.5"),
                                    rate=Decimal("99999.99"))
        await wire_client.invoices.update(21, asyncsdk.InvoiceUpdate(productinvoices=[line]))
        with pytest.raises(asyncsdk.InvalidInputError, match="at most two decimal places"):
            asyncsdk.ProductInput(name="Widget", selling_price=Decimal("1.555"))
    product, invoice = (json.loads(s.body) for s in wire.seen)
    assert product["selling_price"] == "12345.67"
    assert invoice["productinvoices"] == [
        {"products": 4, "quantity": "1000.50", "rate": "99999.99"}]


#: Calls whose 2xx answer must say more than its shape: the mail that it was sent, a job
#: answer its job's id or state.
ANSWER_CHECKS: dict[str, tuple[Callable[[asyncsdk.Client], Awaitable[Any]], Any, str]] = {
    "mail.send": (lambda c: c.mail.send(sender="me@example.com", to="you@example.org",
                                        subject="Hi", html="<p>Hi</p>"),
                  {"status": "queued?", "id": "m1"},
                  "MailResult at $.status: expected \"success\", got 'queued?'"),
    "validation.job_status": (lambda c: c.validation.job(7).status(),
                              {"state": "processing"}, "jobs/status gave no status"),
    "validation.create_job": (lambda c: c.validation.create_job("https://files.test/a.csv"),
                              {"status": "success", "job": 5}, "jobs/create gave no job id"),
}


@pytest.mark.parametrize("status", [200, 201])
@pytest.mark.parametrize("name", sorted(ANSWER_CHECKS))
async def test_a_2xx_answer_that_is_no_answer_carries_its_status_url_and_body(
        wire: WireServer, wire_client: asyncsdk.Client, name: str, status: int) -> None:
    """As every other ``ResponseDecodeError`` of an answer does: where the answer came
    from and with which status, to tell a gateway's 2xx from the service's own."""
    call, wire.answer, why = ANSWER_CHECKS[name]
    wire.status = status
    with pytest.raises(asyncsdk.ResponseDecodeError) as info:
        await call(wire_client)
    error = info.value
    assert error.operation == name and why in str(error)
    assert error.status_code == status
    path = split(wire.seen[0].raw_path)[0]
    assert error.url is not None and error.url.startswith(wire.url + path)
    assert API_KEY not in error.url and USERNAME not in error.url
    assert error.body is not None and json.loads(error.body) == wire.answer
    assert len(wire.seen) == 1  # never sent again


async def test_the_reason_quoting_a_long_answer_is_cut_after_its_credentials_are_out(
        wire: WireServer, wire_client: asyncsdk.Client) -> None:
    """A status of kilobytes is not a message of kilobytes, and a credential it echoes
    is redacted before the cut, never shown in part."""
    prefix = "MailResult at $.status: expected \"success\", got '"
    # The key straddles the cut (240 characters): cut first, a piece of it would show.
    wire.answer = {"status": "x" * (234 - len(prefix)) + f" {API_KEY} " + "y" * 10_000}
    with pytest.raises(asyncsdk.ResponseDecodeError) as info:
        await ANSWER_CHECKS["mail.send"][0](wire_client)
    message = str(info.value)
    assert "REDACTED" in message and API_KEY[:8] not in message
    assert len(message) < 600 and "..." in message
    assert "it may have taken effect" in message  # the 2xx said so, whatever the cut


@pytest.mark.parametrize("path_id", [21, "21", "0021"])
async def test_an_invoice_id_in_the_body_that_is_the_path_s_is_sent(
        wire: WireServer, wire_client: asyncsdk.Client, path_id: int | str) -> None:
    wire.answer = {"id": 21}
    await wire_client.invoices.update(path_id, asyncsdk.InvoiceUpdate(id=21, subject="S"))
    [seen] = wire.seen
    assert split(seen.raw_path)[0] == f"/mysite/api/v1/invoices/{path_id}/"
    assert json.loads(seen.body) == {"id": 21, "subject": "S"}
