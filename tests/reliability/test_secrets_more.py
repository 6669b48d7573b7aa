"""Secrets, continued: the paths the echo suite (``test_secrets_echo``) did not reach.

* A cancellation from outside (``asyncio.wait_for``, ``asyncio.timeout``, a cancelled
  task) while a request waits for its answer's head or body: the ``CancelledError``
  (the ``__context__`` of the caller's ``TimeoutError``) passed through aiohttp's
  frames, whose locals hold the full URL and the form.
* A bug-like exception (not the library's) raised inside aiohttp's request frames.
* ``exc.request_id`` and ``RawResponse.headers`` echoing the request.
* A job result hosted at a URL carrying the credentials (the DEBUG line, and the
  locals of a failed fetch); a result CSV whose header echoes them.
* The password of a base URL (``http://user:pw@host``) and its ``Authorization: Basic``.
* The scrubber: base64 forms of the key; short credentials inside ordinary words.

Everything shown is rendered as error trackers render it: the traceback with the local
variables of every frame (``capture_locals``), chained exceptions included, plus the
reprs of the exception and its attributes (``exception_text``). Moments to cancel come
from events (the server got the request; aiohttp read the answer's head), never from a
sleep. Only 127.0.0.1.
"""

from __future__ import annotations

import asyncio
import base64
import logging
import sys
import traceback
from collections.abc import AsyncIterator, Awaitable, Callable
from pathlib import Path
from types import SimpleNamespace
from typing import Any
from urllib.parse import parse_qs

import aiohttp
import pytest
from aiohttp import web
from auth_helpers import leaks, serve
from helpers import API_KEY, USERNAME
from reliability_helpers import SECRETS, assert_no_secrets, exception_text, log_text

import asyncsdk
from asyncsdk._core.credentials import Credentials

#: The password of a base URL's ``user:password@`` part.
PASSWORD = "pw_SECRET_Pa55word_77"
#: Everything that must never show, for the tests with a password in the base URL.
WITH_PASSWORD = (*SECRETS, PASSWORD)
CSV_HEAD = b"Email,Name,Status,Role Based Emails\r\n"


def shown(exc: BaseException) -> str:
    """Everything ``exc`` shows: the traceback rendered with the locals of every frame
    (the chain included), and its reprs and attributes (``exception_text``)."""
    rendered = "".join(
        traceback.TracebackException.from_exception(exc, capture_locals=True).format())
    return rendered + "\n" + exception_text(exc)


def assert_clean(text: str, secrets: tuple[str, ...] = SECRETS) -> None:
    """No secret in ``text``, raw (``assert_no_secrets``) or in any encoding."""
    assert_no_secrets(text)
    found = leaks(text, secrets)
    assert not found, found
    for secret in secrets[len(SECRETS):]:
        assert secret not in text, f"secret leaked: {secret}"


def _client(base: str, *, password: bool = False, **options: Any) -> asyncsdk.Client:
    """A client of ``base`` (with a ``user:password@`` part when ``password``): built
    here, so that no frame the tests render holds the password in a local."""
    if password:
        base = base.replace("http://", f"http://me:{PASSWORD}@", 1)
    return asyncsdk.Client(API_KEY, USERNAME, base_url=base, max_retries=0, **options)


# --- a server that stalls -----------------------------------------------------------------
class Staller:
    """Answers nothing (``phase`` "head") or the head and part of the body ("body"),
    then waits for ``release`` (set at teardown). ``arrived``: a request was read."""

    def __init__(self) -> None:
        self.phase = "head"
        self.arrived = asyncio.Event()
        self.release = asyncio.Event()
        self.base = ""

    async def handle(self, request: web.Request) -> web.StreamResponse:
        await request.read()
        if self.phase == "head":
            self.arrived.set()
            await self.release.wait()
            return web.json_response({})
        csv = request.path.endswith("/jobs/download")
        response = web.StreamResponse(headers={
            "Content-Type": "text/csv" if csv else "application/json",
            "Content-Length": "100000"})
        await response.prepare(request)
        await response.write(CSV_HEAD if csv else b'{"status": "success", ')
        self.arrived.set()
        await self.release.wait()
        return response


@pytest.fixture
async def staller() -> AsyncIterator[Staller]:
    server = Staller()
    async with serve(server.handle) as base:
        server.base = base
        try:
            yield server
        finally:
            server.release.set()  # the held handlers end now: the server closes at once


async def _rows(client: asyncsdk.Client, tmp: Path) -> None:
    async for _ in client.validation.job(7).rows():
        pass


CALLS: dict[str, Callable[[asyncsdk.Client, Path], Awaitable[Any]]] = {
    "validation.check (key in the query)": lambda c, _: c.validation.check("a@b.com"),
    "contacts.get (api_key in the query)": lambda c, _: c.contacts.get(12),
    "mail.send (form body)": lambda c, _: c.mail.send(
        sender="s@example.com", to="t@example.org", subject="hi", html="<p>x</p>"),
    "job.rows (stream)": _rows,
    "job.download (stream)": lambda c, tmp: c.validation.job(7).download(tmp / "out.csv"),
}


def _head_read_tracer(event: asyncio.Event) -> aiohttp.TraceConfig:
    """A trace config setting ``event`` once aiohttp has read an answer's head: from
    then on the call waits for the body."""

    async def on_request_end(*_: Any) -> None:
        event.set()

    tracer = aiohttp.TraceConfig()
    tracer.on_request_end.append(on_request_end)
    return tracer


async def _by_wait_for(call: Awaitable[Any], moment: asyncio.Event) -> None:
    # The server never completes the answer: the timeout always lands mid-call (at
    # whichever step); no event can move ``wait_for``'s deadline.
    await asyncio.wait_for(call, 0.1)


async def _by_timeout(call: Awaitable[Any], moment: asyncio.Event) -> None:
    async with asyncio.timeout(None) as scope:
        async def expire() -> None:
            await moment.wait()
            scope.reschedule(asyncio.get_running_loop().time())

        expiring = asyncio.create_task(expire())
        try:
            await call
        finally:
            expiring.cancel()


async def _by_task_cancel(call: Awaitable[Any], moment: asyncio.Event) -> None:
    task = asyncio.ensure_future(call)
    await moment.wait()
    task.cancel()
    await task


MECHANISMS = {
    "wait_for": _by_wait_for,
    "asyncio.timeout": _by_timeout,
    "task.cancel": _by_task_cancel,
}


@pytest.mark.parametrize("mechanism", list(MECHANISMS))
@pytest.mark.parametrize("phase", ["head", "body"])
@pytest.mark.parametrize("call", list(CALLS))
async def test_a_cancellation_from_outside_leaves_no_credential_in_the_traceback(
    staller: Staller, tmp_path: Path, call: str, phase: str, mechanism: str
) -> None:
    """While the answer's head is awaited (the client's own session), or its body (a
    caller's session, whose tracer tells when the head was read), the call is cancelled
    from outside: the ``TimeoutError`` (or ``CancelledError``), rendered with every
    frame's locals and its chained ``CancelledError``, shows no credential."""
    if mechanism == "asyncio.timeout" and sys.version_info < (3, 11):
        pytest.skip("asyncio.timeout is Python 3.11+")
    staller.phase = phase
    # asyncio.TimeoutError: the builtin TimeoutError from 3.11 on, its own class on 3.10
    expected = asyncio.CancelledError if mechanism == "task.cancel" else asyncio.TimeoutError
    if phase == "head":
        async with _client(staller.base) as client:
            with pytest.raises(expected) as info:
                await MECHANISMS[mechanism](CALLS[call](client, tmp_path), staller.arrived)
    else:
        head_read = asyncio.Event()
        async with aiohttp.ClientSession(trace_configs=[_head_read_tracer(head_read)]) as s, \
                _client(staller.base, session=s) as client:
            with pytest.raises(expected) as info:
                await MECHANISMS[mechanism](CALLS[call](client, tmp_path), head_read)
    assert_clean(shown(info.value))
    assert not list(tmp_path.iterdir())


async def test_a_cancelled_call_shows_no_base_url_password(staller: Staller) -> None:
    async with _client(staller.base, password=True) as client:
        with pytest.raises(asyncio.TimeoutError) as info:  # not builtin's on 3.10
            await asyncio.wait_for(client.validation.check("a@b.com"), 0.1)
    assert_clean(shown(info.value), WITH_PASSWORD)


async def test_an_exception_raised_inside_aiohttp_is_raised_as_it_is_without_the_url(
) -> None:
    """Not the library's exception (here a caller's trace hook fails inside aiohttp's
    request frame, which holds the full URL): raised as it is, its frames cleared."""

    async def failing_hook(*_: Any) -> None:
        raise RuntimeError("trace hook failed")

    tracer = aiohttp.TraceConfig()
    tracer.on_request_start.append(failing_hook)

    async def never(request: web.Request) -> web.Response:  # pragma: no cover
        return web.json_response({})

    async with serve(never) as base, aiohttp.ClientSession(trace_configs=[tracer]) as s, \
            _client(base, session=s) as client:
        for call in (lambda: client.validation.check("a@b.com"),
                     lambda: client.mail.send(sender="s@example.com", to="t@example.org",
                                              subject="hi", html="x")):
            with pytest.raises(RuntimeError, match="trace hook failed") as info:
                await call()
            assert_clean(shown(info.value))


# --- what a service echoes ------------------------------------------------------------------
def _echo_values(request: web.Request, form: str) -> SimpleNamespace:
    values = parse_qs(request.query_string) | parse_qs(form)
    return SimpleNamespace(api=(values.get("api") or values.get("api_key") or [""])[0],
                           user=(values.get("username") or [""])[0])


async def test_request_id_echoing_the_request_is_scrubbed() -> None:
    async def handle(request: web.Request) -> web.Response:
        echo = _echo_values(request, await request.text())
        return web.json_response({"detail": "nope"}, status=401, headers={
            "X-Request-Id": f"req-1 key={echo.api}"})

    async with serve(handle) as base, _client(base) as client:
        with pytest.raises(asyncsdk.AuthenticationError) as info:
            await client.contacts.get(1)
    assert info.value.request_id == "req-1 key=REDACTED"
    assert_clean(shown(info.value))


async def test_raw_response_headers_echoing_the_request_are_scrubbed() -> None:
    async def handle(request: web.Request) -> web.Response:
        echo = _echo_values(request, await request.text())
        return web.json_response([], headers={
            "X-Request-Id": request.query_string, "X-Echo": f"api={echo.api}",
            "X-RateLimit-Remaining": "9"})

    async with serve(handle) as base, _client(base) as client:
        raw = await client.with_raw_response.contacts.list()
    assert raw.headers["x-echo"] == "api=REDACTED"  # still case-insensitive
    assert raw.headers["X-RateLimit-Remaining"] == "9"
    assert raw.request_id is not None and "api_key=REDACTED" in raw.request_id
    assert_clean(repr(raw) + repr(dict(raw.headers)))


async def test_raw_response_headers_without_an_echo_are_aiohttps_own() -> None:
    async def handle(request: web.Request) -> web.Response:
        return web.json_response([], headers={"X-Request-Id": "req-42"})

    async with serve(handle) as base, _client(base) as client:
        raw = await client.with_raw_response.contacts.list()
    assert type(raw.headers).__name__ == "CIMultiDictProxy"
    assert raw.request_id == "req-42" and raw.headers["x-request-id"] == "req-42"


# --- a result hosted at a URL with the credentials in it ----------------------------------
class Hosting:
    """jobs/download answers a JSON result pointing at ``/files/...`` with the request's
    credentials in the URL's path and query; ``/files`` answers ``files_status`` (0: the
    head and a piece of the body, then the connection closes)."""

    def __init__(self) -> None:
        self.files_status = 200

    async def handle(self, request: web.Request) -> web.StreamResponse:
        echo = _echo_values(request, "")
        if request.path.endswith("/jobs/download"):
            url = (f"http://{request.host}/files/{echo.api}/r.csv"
                   f"?api={echo.api}&username={echo.user}")
            return web.json_response({"status": "success", "result": url})
        if self.files_status == 0:
            response = web.StreamResponse(headers={"Content-Type": "text/csv",
                                                   "Content-Length": "100000"})
            await response.prepare(request)
            await response.write(CSV_HEAD)
            request.transport.close()  # type: ignore[union-attr]
            return response
        if self.files_status != 200:
            return web.Response(status=self.files_status, text="gone")
        return web.Response(body=CSV_HEAD + b"a@b.com,A,Valid,False\r\n",
                            content_type="text/csv")


@pytest.fixture
async def hosting() -> AsyncIterator[tuple[Hosting, str]]:
    server = Hosting()
    async with serve(server.handle) as base:
        yield server, base


async def test_a_hosted_result_url_is_scrubbed_in_the_debug_log(
    hosting: tuple[Hosting, str], caplog: pytest.LogCaptureFixture
) -> None:
    _, base = hosting
    caplog.set_level(logging.DEBUG, logger="asyncsdk")
    async with _client(base) as client:
        rows = [row async for row in client.validation.job(1).rows()]
    assert [row.email for row in rows] == ["a@b.com"]
    lines = [r.getMessage() for r in caplog.records if r.name == "asyncsdk"]
    # The key in the path is the service's (scrubbed in the line); its query's credential
    # fields are taken out before the request is made (never sent to a hosted result).
    assert any(line.split()[1].endswith("/files/REDACTED/r.csv") for line in lines), lines
    assert_clean(log_text(caplog.records))


@pytest.mark.parametrize("how", ["rows", "download"])
@pytest.mark.parametrize(("status", "error"), [(500, asyncsdk.ServerError),
                                               (0, asyncsdk.APIConnectionError)])
async def test_a_failed_hosted_fetch_shows_no_credential_in_locals(
    hosting: tuple[Hosting, str], tmp_path: Path, how: str, status: int,
    error: type[Exception],
) -> None:
    """The hosted file refused (500) or cut mid-body: message, ``url`` and every
    frame's locals (the URL in ``csv_text``, ``stream``, ``_open_stream``) clean."""
    server, base = hosting
    server.files_status = status
    async with _client(base) as client:
        with pytest.raises(error) as info:
            await CALLS["job.rows (stream)" if how == "rows" else "job.download (stream)"](
                client, tmp_path)
    assert_clean(shown(info.value))


# --- a result CSV whose header echoes the credentials -------------------------------------
@pytest.mark.parametrize("how", ["rows", "download"])
async def test_a_csv_header_echoing_the_key_is_not_chained_nor_in_locals(
    tmp_path: Path, how: str
) -> None:
    async def handle(request: web.Request) -> web.Response:
        echo = _echo_values(request, "")
        return web.Response(text=f"Email,{echo.api},{echo.user}\r\na,b,c\r\n",
                            content_type="text/csv")

    async with serve(handle) as base, _client(base) as client:
        with pytest.raises(asyncsdk.ResponseDecodeError) as info:
            await CALLS["job.rows (stream)" if how == "rows" else "job.download (stream)"](
                client, tmp_path)
    assert "'REDACTED'" in str(info.value)
    assert info.value.__context__ is None and info.value.__cause__ is None
    assert_clean(shown(info.value))
    assert not list(tmp_path.iterdir())


# --- the password of a base URL -------------------------------------------------------------
async def test_a_base_url_password_echoed_by_the_service_is_scrubbed() -> None:
    """aiohttp sends a base URL's ``user:password`` as ``Authorization: Basic``: a
    service quoting the header, or the login it decodes, shows neither."""

    async def handle(request: web.Request) -> web.Response:
        header = request.headers.get("Authorization", "")
        login = base64.b64decode(header.split()[-1]).decode() if header else ""
        return web.json_response({"detail": f"header {header}; login {login}"}, status=401)

    async with serve(handle) as base, _client(base, password=True) as client:
        with pytest.raises(asyncsdk.AuthenticationError) as info:
            await client.contacts.get(1)
    assert str(info.value) == ("contacts.get: header Basic REDACTED; login me:REDACTED "
                               "(HTTP 401)")
    assert_clean(shown(info.value), WITH_PASSWORD)


def test_with_urls_adds_each_password_and_its_basic_value() -> None:
    creds = Credentials(api_key=API_KEY, username=USERNAME)
    assert creds.with_urls([None, "https://h.example", "https://me@h.example"]) is creds
    more = creds.with_urls(["https://me:p%40ss@h.example/x", "https://h.example"])
    assert more.url_logins == (("me", "p%40ss"),)
    basic = base64.b64encode(b"me:p@ss").decode()
    for text in ("p@ss", "p%40ss", basic, basic.rstrip("=")):
        assert more.scrub(f"got {text}.") == "got REDACTED.", text
    assert PASSWORD not in repr(more) and "p@ss" not in repr(more)


# --- the scrubber ---------------------------------------------------------------------------
HOSTILE_KEY = "kÖ+y/Z=9==Qx"  # base64 punctuation and a non-ASCII letter


@pytest.mark.parametrize("key", [HOSTILE_KEY, API_KEY, "a>b?c~"])
def test_base64_forms_of_the_key_are_scrubbed(key: str) -> None:
    creds = Credentials(api_key=key, username="o")
    raw = key.encode()
    forms = {base64.b64encode(raw).decode(), base64.urlsafe_b64encode(raw).decode()}
    forms |= {f.rstrip("=") for f in forms}
    for form in forms:
        for text in (f"bad token {form}", f'{{"token": "{form}"}}', f"Bearer {form}."):
            out = creds.scrub(text)
            assert form not in out and "REDACTED" in out, (text, out)


async def test_a_base64_echo_of_the_key_is_scrubbed_end_to_end() -> None:
    async def handle(request: web.Request) -> web.Response:
        echo = _echo_values(request, "")
        token = base64.urlsafe_b64encode(echo.api.encode()).decode().rstrip("=")
        return web.json_response({"detail": f"bad token {token}"}, status=401)

    async with serve(handle) as base, _client(base) as client:
        with pytest.raises(asyncsdk.AuthenticationError) as info:
            await client.contacts.get(1)
    assert str(info.value) == "contacts.get: bad token REDACTED (HTTP 401)"
    text = shown(info.value)  # (the token is no local here: this frame is rendered too)
    assert base64.urlsafe_b64encode(API_KEY.encode()).decode().rstrip("=") not in text


@pytest.mark.parametrize(("user", "text"), [
    ("t", "The job isn't ready; can't download yet."),
    ("s", "The user's quota is spent."),
    ("o", "Replace the o-ring."),
    ("t", "A t-shirt."),
    ("ll", "We'll see."),
])
def test_a_short_credential_inside_an_ordinary_word_is_left_alone(user: str,
                                                                  text: str) -> None:
    assert Credentials(api_key=API_KEY, username=user).scrub(text) == text


@pytest.mark.parametrize(("user", "text", "expected"), [
    ("o", "{'username': 'o'}", "{'username': 'REDACTED'}"),
    ("o", "['o', 'x']", "['REDACTED', 'x']"),
    ("t", "user t can't", "user REDACTED can't"),
    ("s", "-s flag", "-REDACTED flag"),
    # A longer credential is redacted next to an apostrophe or hyphen all the same.
    ("jsmith", "jsmith's quota; x-jsmith", "REDACTED's quota; x-REDACTED"),
])
def test_a_short_credential_standing_alone_is_still_redacted(user: str, text: str,
                                                             expected: str) -> None:
    assert Credentials(api_key=API_KEY, username=user).scrub(text) == expected
