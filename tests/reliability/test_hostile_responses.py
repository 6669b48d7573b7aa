"""Hostile and malformed answers: every decoder yields a model or an SDK error.

hypothesis generates bodies (JSON of wrong shapes, huge numbers, deep nesting, wrong
types per field, random bytes, invalid UTF-8, truncated CSV, CSV with extra or missing
columns) for each decoder, tested directly (``_convert.decode/decode_list``,
``Transport.decode``, ``Transport.interpret``, the stream readers of ``_stream``)
and end to end through a tiny aiohttp.web server that serves the generated body. The
outcome is a model or ``ResponseDecodeError``/``APIError``, never another exception and
never a hang. An answer larger than the JSON size cap is refused, not read.
"""

from __future__ import annotations

import asyncio
import csv
import io
import json
import sys
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager, suppress
from decimal import Decimal
from typing import Any

import attrs
import pytest
from aiohttp import web
from helpers import API_KEY, USERNAME, rows_of
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from reliability_helpers import FIGURES, assert_no_secrets, exception_text, instant

import asyncsdk
from asyncsdk import _constants
from asyncsdk._core.answer import Interpreter
from asyncsdk._core.credentials import Credentials
from asyncsdk._core.operation import Call as Request
from asyncsdk._core.operation import Operation
from asyncsdk._serde.converter import DecodeFailure, decode
from asyncsdk.models._base import ResponseModel
from asyncsdk.models.contacts import Contact, ContactGroup, ContactList
from asyncsdk.models.customers import Customer
from asyncsdk.models.invoices import Invoice, InvoiceLineItem
from asyncsdk.models.leads import Lead
from asyncsdk.models.mail import MailResult
from asyncsdk.models.products import Product
from asyncsdk.models.validation import CheckResult, EmailRow
from asyncsdk.resources._areas import Area
from asyncsdk.resources.validation import readers as _stream

FAST = settings(max_examples=60, deadline=None,
                suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large,
                                       HealthCheck.function_scoped_fixture])
E2E = settings(max_examples=40, deadline=None,
               suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large,
                                      HealthCheck.function_scoped_fixture])

RESPONSE_MODELS: tuple[type[ResponseModel], ...] = (
    ContactList, ContactGroup, Contact, Lead, Customer, Product, Invoice, InvoiceLineItem,
    CheckResult, MailResult)
def tried(name: str) -> None:
    FIGURES["hostile responses tried"] += 1


# --- strategies -----------------------------------------------------------------------
scalars = st.one_of(
    st.none(), st.booleans(),
    st.integers(), st.integers(min_value=10**18, max_value=10**60),  # huge numbers
    st.floats(allow_nan=False, allow_infinity=False), st.text(max_size=30),
    st.sampled_from(["", " ", "1e999", "-0", "NaN", "2024-13-45", "31-02-2024", "True",
                     "\x00", "Valid", "fail", "success", "9" * 50]),
)
json_values = st.recursive(
    scalars,
    lambda children: st.one_of(st.lists(children, max_size=4),
                               st.dictionaries(st.text(max_size=8), children, max_size=4)),
    max_leaves=12,
)


def field_names(model: type[Any]) -> list[str]:
    return [a.metadata.get("wire", a.name) for a in attrs.fields(model) if a.name != "extra"]


@st.composite
def wrong_typed_object(draw: st.DrawFn, model: type[Any]) -> dict[str, Any]:
    """An object with (some of) the model's own keys, each holding any JSON value."""
    names = field_names(model)
    keys = draw(st.lists(st.sampled_from(names), unique=True, max_size=len(names)))
    obj = {k: draw(json_values) for k in keys}
    if draw(st.booleans()):
        obj.update(draw(st.dictionaries(st.text(max_size=6), json_values, max_size=2)))
    return obj


def deep(depth: int, kind: str) -> Any:
    value: Any = 1
    for _ in range(depth):
        value = [value] if kind == "list" else {"a": value}
    return value


def interpreter() -> Interpreter:
    """The answer interpreter of a client with these credentials (no session needed)."""
    return Interpreter(Credentials(api_key=API_KEY, username=USERNAME))


INTERPRETER = interpreter()
RESOURCE_OP = Operation("hostile.get", "GET", Area.CRM, "/mysite/api/v1/lead/1/", True)
VALIDATION_OP = Operation("hostile.check", "GET", Area.VALIDATION, "/api/v1/single/check",
                          True)
#: A call of ``RESOURCE_OP`` (what the interpreter's decoding names in its errors).
RESOURCE_CALL = Request(RESOURCE_OP, "http://127.0.0.1:9/mysite/api/v1/lead/1/",
                        {"api": API_KEY, "username": USERNAME})


# --- the converter, directly ----------------------------------------------------------
MANY = settings(FAST, max_examples=100)


@MANY
@given(data=st.data())
def test_decode_gives_model_or_decode_failure(data: st.DataObject) -> None:
    model = data.draw(st.sampled_from(RESPONSE_MODELS))
    body = data.draw(st.one_of(json_values, wrong_typed_object(model)))
    tried("decode")
    try:
        out = decode(body, model)
    except DecodeFailure:
        return
    assert isinstance(out, model)


@MANY
@given(data=st.data())
def test_transport_decode_gives_model_or_response_decode_error(data: st.DataObject) -> None:
    model = data.draw(st.sampled_from(RESPONSE_MODELS))
    body = data.draw(st.one_of(json_values, wrong_typed_object(model),
                               st.lists(wrong_typed_object(model), max_size=3)))
    tried("transport.decode")
    for decoder in (INTERPRETER.decode, INTERPRETER.decode_many):
        try:
            out = decoder(RESOURCE_CALL, 200, body, model)
        except asyncsdk.ResponseDecodeError as exc:
            assert_no_secrets(exception_text(exc))
            continue
        assert isinstance(out, (model, list))


@pytest.mark.parametrize("kind", ["list", "dict"])
@pytest.mark.parametrize("model", [ContactList, Lead, Invoice], ids=lambda m: m.__name__)
def test_deep_nesting_is_a_decode_error_or_kept(model: type[Any], kind: str) -> None:
    transport = interpreter()
    for depth in (50, 5000):
        nested = deep(depth, kind)
        for body in (nested, {"id": 1, "emaillist": nested, "productinvoices": nested,
                              "name": nested, "attributes": nested}):
            tried("deep")
            try:
                one = transport.decode(RESOURCE_CALL, 200, body, model)
                many = transport.decode_many(RESOURCE_CALL, 200, [body], model)
            except asyncsdk.ResponseDecodeError:
                continue
            assert isinstance(one, model)  # kept: a real model, not something half-built
            assert len(many) == 1 and isinstance(many[0], model)


def test_huge_numbers_are_read_or_refused() -> None:
    transport = interpreter()
    for number in (10**400, -(10**400), 1e308, 10**18 + 0.5):
        for model, key in ((Lead, "annual_revenue"), (Product, "selling_price"),
                           (Invoice, "customer"), (Contact, "mobile")):
            tried("huge")
            with suppress(asyncsdk.ResponseDecodeError):
                transport.decode(RESOURCE_CALL, 200, {key: number}, model)


# --- the answer parser, directly ------------------------------------------------------
@FAST
@given(raw=st.one_of(
    st.binary(max_size=200),
    st.builds(lambda v: json.dumps(v).encode(), json_values),
    st.sampled_from([b"\xff\xfe\x00", b"\xc3\x28", b'{"status": "fail", "error": 5}',
                     b'{"status": "FAIL", "error": "' + API_KEY.encode() + b'"}',
                     b"[" * 100_000, b'{"a":' * 50_000, b"<html>502</html>", b"\x00" * 64,
                     b'{"status": "fail", "error": ["x"]}', b"1" * 5000]),
), status=st.sampled_from([200, 201, 204, 400, 401, 404, 409, 418, 429, 500, 503]),
    area=st.sampled_from([RESOURCE_OP, VALIDATION_OP]))
def test_parse_answer_returns_data_or_raises_sdk_errors(
    raw: bytes, status: int, area: Operation
) -> None:
    tried("parse_answer")
    transport = interpreter()
    query = {"api": API_KEY, "username": USERNAME}
    try:
        transport.interpret(Request(area, "http://127.0.0.1:9/x", query), status,
                            {"Content-Type": "application/json"}, raw)
    except (asyncsdk.APIError, asyncsdk.ResponseDecodeError) as exc:
        assert_no_secrets(exception_text(exc))
    else:
        assert 200 <= status < 300


# --- the stream readers, directly -------------------------------------------------------
HEADER = ["Email", "Name", "Status", "Role Based Emails"]
# (csv on Python 3.10 cannot write a NUL, nor read one: not data the writer can give)
cells = st.text(alphabet=st.characters(
    codec="utf-8", exclude_categories=["Cs"],
    exclude_characters="\x00" if sys.version_info < (3, 11) else ""), max_size=12)
csv_rows = st.lists(st.lists(cells, min_size=0, max_size=6), max_size=8)


def to_csv(rows: list[list[str]]) -> str:
    out = io.StringIO()
    csv.writer(out).writerows(rows)
    return out.getvalue()


def split(text: str, cuts: list[int]) -> list[str]:
    points = sorted({c % (len(text) + 1) for c in cuts})
    pieces, last = [], 0
    for p in points:
        pieces.append(text[last:p])
        last = p
    pieces.append(text[last:])
    return pieces


@FAST
@given(header=st.one_of(st.just(HEADER), st.permutations(HEADER),
                        st.lists(st.sampled_from([*HEADER, "Extra", ""]), max_size=6)),
       rows=csv_rows, cut=st.integers(min_value=0), cuts=st.lists(st.integers(), max_size=5),
       raw=st.one_of(st.none(), st.text(max_size=80)))
def test_csv_reader_gives_rows_or_stream_decode_error(
    header: list[str], rows: list[list[str]], cut: int, cuts: list[int], raw: str | None
) -> None:
    tried("csv")
    text = raw if raw is not None else to_csv([header, *rows])
    if cut and text:
        text = text[: cut % len(text)]  # truncated
    try:
        out = rows_of(split(text, cuts))
    except _stream.StreamDecodeError:
        return
    assert all(isinstance(r, EmailRow) for r in out)


@FAST
@given(rows=st.lists(st.tuples(cells, cells, st.sampled_from(["Valid", "Bounce", "x"]),
                               st.sampled_from(["True", "False", "1", "0"])), max_size=10),
       cuts=st.lists(st.integers(), max_size=6))
def test_csv_reader_reads_well_formed_csv_exactly(
    rows: list[tuple[str, str, str, str]], cuts: list[int]
) -> None:
    tried("csv-exact")
    rows = [r for r in rows if r[0].strip() or r[1].strip()]  # blank records are skipped
    out = rows_of(split(to_csv([HEADER, *map(list, rows)]), cuts))
    assert [(r.email, r.name, str(r.status)) for r in out] == [
        (e.strip(), n, s) for e, n, s, _ in rows]


@FAST
@given(result=st.text(max_size=200), other=json_values, cuts=st.lists(st.integers(), max_size=6),
       ensure_ascii=st.booleans())
def test_json_extractor_streams_result_text_exactly(
    result: str, other: Any, cuts: list[int], ensure_ascii: bool
) -> None:
    tried("json-exact")
    text = json.dumps({"status": "success", "other": other, "result": result},
                      ensure_ascii=ensure_ascii)
    extractor = _stream.JsonMemberReader("result")
    pieces = [p for piece in split(text, cuts) for p in extractor.feed(piece)]
    extractor.finish()
    assert "".join(pieces) == result


@FAST
@given(text=st.one_of(st.text(max_size=120),
                      st.builds(json.dumps, json_values),
                      st.builds(lambda v, n: json.dumps(v)[:n], json_values, st.integers(0, 60))),
       cuts=st.lists(st.integers(), max_size=5))
def test_json_extractor_gives_text_or_stream_decode_error(text: str, cuts: list[int]) -> None:
    tried("json")
    extractor = _stream.JsonMemberReader("result")
    try:
        for piece in split(text, cuts):
            for out in extractor.feed(piece):
                assert isinstance(out, str)
        extractor.finish()
    except _stream.StreamDecodeError:
        pass


@FAST
@given(data=st.binary(max_size=200), cuts=st.lists(st.integers(), max_size=5))
def test_utf8_decoder_gives_text_or_stream_decode_error(data: bytes, cuts: list[int]) -> None:
    tried("utf8")
    decoder = _stream.Utf8Decoder()
    points = sorted({c % (len(data) + 1) for c in cuts})
    pieces, last = [], 0
    for p in [*points, len(data)]:
        pieces.append(data[last:p])
        last = p
    try:
        text = "".join(decoder.decode(p) for p in pieces) + decoder.decode(b"", True)
    except _stream.StreamDecodeError:
        return
    assert text == data.decode("utf-8-sig")


# --- end to end through a tiny server ---------------------------------------------------
@asynccontextmanager
async def serving(body: bytes, status: int, content_type: str,
                  chunked: bool = False) -> AsyncIterator[str]:
    """An aiohttp.web server on 127.0.0.1 answering every request with ``body``."""

    async def handler(request: web.Request) -> web.StreamResponse:
        await request.read()
        if chunked:
            response = web.StreamResponse(status=status, headers={"Content-Type": content_type})
            await response.prepare(request)
            for at in range(0, len(body), 65536):
                await response.write(body[at: at + 65536])
            await response.write_eof()
            return response
        return web.Response(body=body, status=status, headers={"Content-Type": content_type})

    app = web.Application()
    app.router.add_route("*", "/{tail:.*}", handler)
    runner = web.AppRunner(app, access_log=None, shutdown_timeout=0.1)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    port = runner.addresses[0][1]
    try:
        yield f"http://127.0.0.1:{port}"
    finally:
        await runner.cleanup()


Call = Callable[[asyncsdk.Client], Awaitable[Any]]


async def _rows(c: asyncsdk.Client) -> list[EmailRow]:
    return [r async for r in c.validation.job(7).rows()]


E2E_CALLS: dict[str, Call] = {
    "contacts.list": lambda c: c.contacts.list(),
    "leads.get": lambda c: c.leads.get(1),
    "products.create": lambda c: c.products.create(
        asyncsdk.ProductInput(name="W", selling_price=Decimal(1))),
    "validation.check": lambda c: c.validation.check("ada@example.com"),
    "job.status": lambda c: c.validation.job(7).status(),
    "job.rows": _rows,
    "mail.send": lambda c: c.mail.send(sender="a@example.com", to="b@example.com",
                                       subject="s", html="<p>h</p>"),
}


def _e2e_body(draw_json: Any, draw_bytes: bytes, draw_csv: str, which: int) -> bytes:
    if which == 0:
        return json.dumps(draw_json).encode()
    if which == 1:
        return draw_bytes
    if which == 2:
        return draw_csv.encode()
    # The JSON shape of jobs/download, whole or cut short.
    wrapped = json.dumps({"status": "success", "result": draw_csv}).encode()
    return wrapped if which == 3 else wrapped[: len(wrapped) * 2 // 3]


@pytest.mark.parametrize("name", list(E2E_CALLS))
@E2E
@given(value=json_values, raw=st.binary(max_size=120),
       csv_text=st.builds(lambda h, r, n: to_csv([h, *r])[:n] if n else to_csv([h, *r]),
                          st.lists(st.sampled_from([*HEADER, "X"]), max_size=5), csv_rows,
                          st.integers(0, 200)),
       which=st.integers(0, 4),
       status=st.sampled_from([200, 200, 201, 400, 404, 500]),
       content_type=st.sampled_from(["application/json", "text/csv", "text/html",
                                     "application/octet-stream"]))
async def test_end_to_end_hostile_body(name: str, value: Any, raw: bytes, csv_text: str,
                                       which: int, status: int, content_type: str) -> None:
    tried("e2e")
    body = _e2e_body(value, raw, csv_text, which)
    async with (serving(body, status, content_type) as base,
                asyncsdk.Client(API_KEY, USERNAME, base_url=base, max_retries=0,
                                timeout=5, clock=instant()) as c):
        try:
            await asyncio.wait_for(E2E_CALLS[name](c), 5)  # never a hang
        except (asyncsdk.APIError, asyncsdk.ResponseDecodeError) as exc:
            assert_no_secrets(exception_text(exc))


# --- the size cap ----------------------------------------------------------------------
@pytest.mark.parametrize("chunked", [False, True], ids=["content-length", "chunked"])
@pytest.mark.parametrize("name", ["contacts.list", "validation.check", "leads.get"])
async def test_oversized_json_answer_is_refused(
    name: str, chunked: bool, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(_constants, "MAX_JSON_BODY_BYTES", 4096)
    huge = json.dumps([{"id": i, "name": "x" * 100} for i in range(20_000)]).encode()
    assert len(huge) > 2_000_000
    async with (serving(huge, 200, "application/json", chunked=chunked) as base,
                asyncsdk.Client(API_KEY, USERNAME, base_url=base, max_retries=0) as c):
        with pytest.raises(asyncsdk.ResponseDecodeError, match="cap"):
            await asyncio.wait_for(E2E_CALLS[name](c), 5)


@pytest.mark.parametrize("body", [b"{}", b'{"status": null}', b'{"email": "a@example.com"}',
                                  b'{"status": "success"}'])
@pytest.mark.parametrize("name", ["validation.check", "mail.send"])
async def test_answer_without_its_required_fields_is_a_decode_error(
    name: str, body: bytes
) -> None:
    """Regression: these gave a model holding None, then a bare AttributeError."""
    async with (serving(body, 200, "application/json") as base,
                asyncsdk.Client(API_KEY, USERNAME, base_url=base) as c):
        if name == "mail.send" and body == b'{"status": "success"}':
            await E2E_CALLS[name](c)  # all a MailResult needs
            return
        with pytest.raises(asyncsdk.ResponseDecodeError):
            await E2E_CALLS[name](c)


@pytest.mark.parametrize("name", ["contacts.list", "validation.check", "job.rows",
                                  "mail.send"])
async def test_answer_stalling_mid_body_times_out(name: str) -> None:
    """Headers and half a body, then silence: a timeout, never a hang."""
    release = asyncio.Event()

    async def stall(request: web.Request) -> web.StreamResponse:
        await request.read()
        response = web.StreamResponse(headers={"Content-Type": "application/json"})
        response.content_length = 1000
        await response.prepare(request)
        await response.write(b'{"status": "success", "re')
        await release.wait()
        return response

    app = web.Application()
    app.router.add_route("*", "/{tail:.*}", stall)
    runner = web.AppRunner(app, access_log=None, shutdown_timeout=0.05)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    try:
        base = f"http://127.0.0.1:{runner.addresses[0][1]}"
        async with asyncsdk.Client(API_KEY, USERNAME, base_url=base,
                                   timeout=0.2, max_retries=1, clock=instant()) as c:
            with pytest.raises(asyncsdk.APITimeoutError):
                await asyncio.wait_for(E2E_CALLS[name](c), 5)
    finally:
        release.set()
        await runner.cleanup()
