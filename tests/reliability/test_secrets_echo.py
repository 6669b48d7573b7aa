"""Secrets against a service that echoes the request back, in every encoding (issue 11).

A tiny aiohttp server answers every request with an error whose text quotes the request
(its raw query, its decoded credentials, its form body) in one of several encodings.
Whatever comes back, no credential may appear in ``str(exc)``, ``exc.body``,
``exc.error_text``, ``exc.url``, ``repr(exc)``, a log record, a warning, or a traceback
rendered with its local variables (as Sentry, rich and loguru render them).
"""

from __future__ import annotations

import json
import logging
import traceback
import warnings
from collections.abc import AsyncIterator, Awaitable, Callable
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, quote, unquote_plus

import pytest
from aiohttp import web
from auth_helpers import leaks, serve
from reliability_helpers import FIGURES

import asyncsdk
from asyncsdk.testing import VirtualClock

KEY = "kÖ+y/Z=9==Qx"  # base64 punctuation and a non-ASCII letter
USER = "o"  # one letter: redacted as a token, never as a substring
SECRETS = (KEY, USER)


def _echoes(request: web.Request, form: str) -> dict[str, str]:
    """The request quoted back in each encoding the server may use."""
    values = parse_qs(request.query_string) | parse_qs(form)
    api = (values.get("api") or values.get("api_key") or [""])[0]
    user = (values.get("username") or [""])[0]
    plain = f"bad key {api} for user {user}"
    return {
        "url-raw": f"no access for {request.path_qs}",
        "url-full": f"denied: {request.url}",
        "url-quoted-again": "see " + quote(request.path_qs, safe=""),
        "plus-as-space": "denied: " + unquote_plus(request.query_string + "&" + form),
        "form-raw": f"form was {form}",
        "decoded": plain,
        "json-in-text": json.dumps({"api": api, "username": user}),
        "slash-escaped": plain.replace("/", "\\/"),
    }


MODES = ["url-raw", "url-full", "url-quoted-again", "plus-as-space", "form-raw", "decoded",
         "json-in-text", "slash-escaped"]
#: How the echo is wrapped: a JSON body (ASCII escapes), JSON with raw UTF-8, plain text.
WRAPS = ["json-ascii", "json-utf8", "text"]


class EchoServer:
    def __init__(self) -> None:
        self.mode = MODES[0]
        self.wrap = WRAPS[0]
        self.stream_cut = False
        self.base = ""

    async def handle(self, request: web.Request) -> web.StreamResponse:
        FIGURES["requests served"] += 1
        form = await request.text()
        echo = _echoes(request, form)[self.mode]
        if self.stream_cut and request.path.endswith("/jobs/download"):
            response = web.StreamResponse(headers={"Content-Type": "text/csv",
                                                   "Content-Length": "100000"})
            await response.prepare(request)
            await response.write(b"Email,Name,Status,Role Based Emails\r\n")
            request.transport.close()  # type: ignore[union-attr]
            return response
        in_body = request.path.startswith(("/api/v1/single", "/api/v1/mail"))
        status = 200 if in_body else 401
        payload: dict[str, Any] = (
            {"status": "fail", "error": echo} if in_body else {"detail": echo})
        if self.wrap == "text":
            return web.Response(status=400 if in_body else 401, text=echo)
        body = json.dumps(payload, ensure_ascii=self.wrap == "json-ascii")
        return web.Response(status=status, text=body, content_type="application/json")


@pytest.fixture
async def echo() -> AsyncIterator[EchoServer]:
    server = EchoServer()
    async with serve(server.handle) as base:
        server.base = base
        yield server


def _client(server: EchoServer, **options: Any) -> asyncsdk.Client:
    return asyncsdk.Client(KEY, USER, base_url=server.base, max_retries=0,
                           clock=VirtualClock(), **options)


async def _download(client: asyncsdk.Client, tmp: Path) -> None:
    await client.validation.job(7).download(tmp / "out.csv")


async def _rows(client: asyncsdk.Client, tmp: Path) -> None:
    async for _ in client.validation.job(7).rows():
        pass


CALLS: dict[str, Callable[[asyncsdk.Client, Path], Awaitable[Any]]] = {
    "plain request": lambda c, _: c.contacts.get(12),
    "validation check": lambda c, _: c.validation.check("a@b.com"),
    "mail send (form body)": lambda c, _: c.mail.send(
        sender="s@example.com", to="t@example.org", subject="hi", html="<p>x</p>"),
    "job status": lambda c, _: c.validation.job(7).status(),
    "failed stream (download)": _download,
    "failed stream (rows)": _rows,
}


def _everything_shown(exc: BaseException, records: list[logging.LogRecord],
                      caught: list[warnings.WarningMessage]) -> str:
    rendered = "".join(traceback.TracebackException(
        type(exc), exc, exc.__traceback__, capture_locals=True).format())
    fields = [str(getattr(exc, n, "")) for n in ("body", "error_text", "url", "message")]
    return "\n".join([str(exc), repr(exc), rendered, *fields,
                      *(r.getMessage() for r in records),
                      *(str(w.message) for w in caught)])


@pytest.mark.parametrize("wrap", WRAPS)
@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("call", list(CALLS))
async def test_no_credential_in_anything_an_error_shows(
    echo: EchoServer, caplog: pytest.LogCaptureFixture, tmp_path: Path,
    call: str, mode: str, wrap: str,
) -> None:
    echo.mode, echo.wrap = mode, wrap
    caplog.set_level(logging.DEBUG, logger="asyncsdk")
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        async with _client(echo) as client:
            with pytest.raises(asyncsdk.SDKError) as info:
                await CALLS[call](client, tmp_path)
    FIGURES["calls made"] += 1
    shown = _everything_shown(info.value, caplog.records, caught)
    assert not leaks(shown, SECRETS), leaks(shown, SECRETS)


@pytest.mark.parametrize("call", ["failed stream (download)", "failed stream (rows)"])
async def test_a_stream_cut_mid_body_shows_no_credential(
    echo: EchoServer, caplog: pytest.LogCaptureFixture, tmp_path: Path, call: str
) -> None:
    echo.stream_cut = True
    caplog.set_level(logging.DEBUG, logger="asyncsdk")
    async with _client(echo) as client:
        with pytest.raises(asyncsdk.APIConnectionError) as info:
            await CALLS[call](client, tmp_path)
    shown = _everything_shown(info.value, caplog.records, [])
    assert not leaks(shown, SECRETS), leaks(shown, SECRETS)
    assert not list(tmp_path.iterdir())


async def test_a_missing_credential_shows_no_other_credential_in_locals(
    echo: EchoServer,
) -> None:
    async with asyncsdk.Client(KEY, base_url=echo.base) as client:
        with pytest.raises(asyncsdk.ConfigurationError) as info:
            await client.validation.check("a@b.com")
    shown = _everything_shown(info.value, [], [])
    assert not leaks(shown, (KEY,))


async def test_messages_are_not_garbled_by_a_one_letter_user_name() -> None:
    """Redaction replaces whole tokens: "Not found." stays "Not found."."""

    async def not_found(request: web.Request) -> web.Response:
        return web.json_response({"detail": "Not found."}, status=404)

    async with serve(not_found) as base, asyncsdk.Client(KEY, USER, base_url=base) as client:
        with pytest.raises(asyncsdk.NotFoundError) as info:
            await client.leads.get(3)
    assert str(info.value) == "leads.get: Not found. (HTTP 404)"
    assert info.value.error_text == "Not found."
    assert info.value.body == '{"detail": "Not found."}'


@pytest.mark.parametrize("call", [
    lambda c: c.validation.check("no at sign"),
    lambda c: c.contacts.get(-1),
    lambda c: c.mail.send(sender="s@example.com", to="t@example.org", subject="a\nb",
                          html="x"),
])
async def test_input_refused_before_sending_shows_no_credential_in_locals(
    echo: EchoServer, call: Callable[[asyncsdk.Client], Awaitable[Any]]
) -> None:
    async with _client(echo) as client:
        with pytest.raises(asyncsdk.InvalidInputError) as info:
            await call(client)
    shown = _everything_shown(info.value, [], [])
    assert not leaks(shown, SECRETS), leaks(shown, SECRETS)
