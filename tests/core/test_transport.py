"""The request core: retries, safety of unsafe operations, deadlines, errors, secrets."""

from __future__ import annotations

import asyncio
import logging
import re
import traceback
from collections.abc import AsyncIterator
from types import SimpleNamespace
from typing import Any

import aiohttp
import pytest
from aioresponses import CallbackResult, aioresponses
from helpers import API_KEY, BASE, USERNAME, Sleeper, engine_of

import asyncsdk
from asyncsdk import _constants
from asyncsdk._core import CallOptions, Operation
from asyncsdk._core.retry import parse_retry_after
from asyncsdk._core.transport import Transport
from asyncsdk.resources._areas import Area
from asyncsdk.testing import Sandbox, VirtualClock

CHECK_URL = re.compile(r"^https://api\.test/api/v1/single/check(\?.*)?$")
CREATE_URL = re.compile(r"^https://api\.test/api/v1/jobs/create(\?.*)?$")
RESOURCE_URL = re.compile(r"^https://api\.test/api/v1/contact/(\?.*)?$")
OK_CHECK = {"email": "a@b.com", "status": "success", "result": "Valid", "role": False}

SAFE_GET = Operation("test.safe", "GET", Area.VALIDATION, "/api/v1/single/check", True)
UNSAFE_GET = Operation("test.unsafe", "GET", Area.VALIDATION, "/api/v1/jobs/create", False)
UNSAFE_POST = Operation("test.create", "POST", Area.CONTACTS, "/api/v1/contact/", False)
SAFE_RESOURCE = Operation("test.list", "GET", Area.CONTACTS, "/api/v1/contact/", True)


@pytest.fixture
async def engine(clock: VirtualClock) -> AsyncIterator[Transport]:
    """The engine alone (as a ``Client`` composes it), for operations of the tests' own."""
    async with engine_of(clock) as composed:
        yield composed


def sent(m: aioresponses) -> int:
    return sum(len(calls) for calls in m.requests.values())


def refused() -> aiohttp.ClientConnectorError:
    key = SimpleNamespace(ssl=False, host="api.test", port=443)
    return aiohttp.ClientConnectorError(key, OSError(111, "Connection refused"))  # type: ignore[arg-type]


@pytest.mark.parametrize("status", sorted(_constants.RETRYABLE_STATUSES))
async def test_retryable_status_is_retried_then_succeeds(
    client: asyncsdk.Client, mocked: aioresponses, clock: VirtualClock, status: int
) -> None:
    mocked.get(CHECK_URL, status=status, body="busy")
    mocked.get(CHECK_URL, status=status, body="busy")
    mocked.get(CHECK_URL, payload=OK_CHECK)
    result = await client.validation.check("a@b.com")
    assert result.result is asyncsdk.Verdict.VALID
    assert sent(mocked) == 3
    assert clock.sleeps == [0.5, 1.0]  # full jitter at its top (rand=1.0): base * 2**n


async def test_retries_stop_at_max_retries(
    client: asyncsdk.Client, mocked: aioresponses
) -> None:
    for _ in range(5):
        mocked.get(CHECK_URL, status=503, body="<html>down</html>",
                   content_type="text/html")
    with pytest.raises(asyncsdk.ServerError) as info:
        await client.validation.check("a@b.com")
    assert sent(mocked) == 3  # 1 + max_retries
    assert info.value.status_code == 503


async def test_max_retries_zero_sends_once(mocked: aioresponses) -> None:
    mocked.get(CHECK_URL, status=500)
    async with asyncsdk.Client(API_KEY, USERNAME, base_url=BASE, max_retries=0) as client:
        with pytest.raises(asyncsdk.ServerError):
            await client.validation.check("a@b.com")
    assert sent(mocked) == 1


@pytest.mark.parametrize("status", [400, 401, 403, 404, 409, 422])
async def test_client_errors_are_not_retried(
    engine: Transport, mocked: aioresponses, status: int
) -> None:
    mocked.get(RESOURCE_URL, status=status, payload={"detail": "nope"})
    with pytest.raises(asyncsdk.APIError) as info:
        await engine.request(CallOptions(SAFE_RESOURCE))
    assert sent(mocked) == 1
    assert info.value.status_code == status and info.value.error_text == "nope"


async def test_connection_errors_are_retried_for_safe_operations(
    client: asyncsdk.Client, mocked: aioresponses
) -> None:
    mocked.get(CHECK_URL, exception=aiohttp.ServerDisconnectedError())
    mocked.get(CHECK_URL, exception=asyncio.TimeoutError())
    mocked.get(CHECK_URL, payload=OK_CHECK)
    await client.validation.check("a@b.com")
    assert sent(mocked) == 3


@pytest.mark.parametrize("op", [UNSAFE_GET, UNSAFE_POST], ids=["jobs-create", "post-create"])
@pytest.mark.parametrize(
    ("answer", "error"),
    [({"status": 500}, asyncsdk.ServerError),
     ({"status": 502}, asyncsdk.ServerError),
     ({"status": 408}, asyncsdk.APIError),
     ({"exception": asyncio.TimeoutError()}, asyncsdk.APITimeoutError),
     ({"exception": aiohttp.ServerDisconnectedError()}, asyncsdk.APIConnectionError),
     ({"exception": aiohttp.ClientPayloadError("cut")}, asyncsdk.APIConnectionError)],
    ids=["500", "502", "408", "timeout", "disconnect", "cut-short"],
)
async def test_unsafe_operation_is_sent_once_when_it_may_have_arrived(
    engine: Transport, mocked: aioresponses, op: Operation,
    answer: dict[str, Any], error: type[Exception],
) -> None:
    url = CREATE_URL if op is UNSAFE_GET else RESOURCE_URL
    getattr(mocked, op.method.lower())(url, **answer)
    getattr(mocked, op.method.lower())(url, payload={"status": "success", "job_id": 1})
    with pytest.raises(error) as info:
        await engine.request(CallOptions(op))
    assert sent(mocked) == 1
    if isinstance(info.value, asyncsdk.APIConnectionError):
        assert info.value.may_have_been_sent is True


async def test_unsafe_operation_is_retried_after_429(
    engine: Transport, mocked: aioresponses, clock: VirtualClock
) -> None:
    mocked.get(CREATE_URL, status=429, headers={"Retry-After": "2"})
    mocked.get(CREATE_URL, payload={"status": "success", "job_id": 7})
    assert await engine.request(CallOptions(UNSAFE_GET)) == {"status": "success", "job_id": 7}
    assert sent(mocked) == 2
    assert clock.sleeps == [2.0]


async def test_unsafe_operation_is_retried_when_it_never_left(
    engine: Transport, mocked: aioresponses
) -> None:
    mocked.post(RESOURCE_URL, exception=refused())
    mocked.post(RESOURCE_URL, payload={"id": 1}, status=201)
    assert await engine.request(CallOptions(UNSAFE_POST, json_body={})) == {"id": 1}
    assert sent(mocked) == 2


async def test_connect_failure_reports_not_sent(
    engine: Transport, mocked: aioresponses
) -> None:
    for _ in range(3):
        mocked.post(RESOURCE_URL, exception=refused())
    with pytest.raises(asyncsdk.APIConnectionError) as info:
        await engine.request(CallOptions(UNSAFE_POST, json_body={}))
    assert info.value.may_have_been_sent is False
    assert not isinstance(info.value, asyncsdk.APITimeoutError)


async def test_retry_after_http_date_and_cap(mocked: aioresponses, clock: VirtualClock) -> None:
    async with asyncsdk.Client(API_KEY, USERNAME, base_url=BASE, timeout=3600,
                               clock=clock) as client:
        mocked.get(CHECK_URL, status=429, headers={"Retry-After": "100000"})
        mocked.get(CHECK_URL, payload=OK_CHECK)
        await client.validation.check("a@b.com")
    assert clock.sleeps == [_constants.MAX_RETRY_AFTER]


async def test_rate_limit_error_carries_retry_after(
    client: asyncsdk.Client, mocked: aioresponses
) -> None:
    for _ in range(3):
        mocked.get(CHECK_URL, status=429, headers={"Retry-After": "1.5"})
    with pytest.raises(asyncsdk.RateLimitError) as info:
        await client.validation.check("a@b.com")
    assert info.value.retry_after == 1.5


@pytest.mark.parametrize(
    ("header", "expected"),
    [(None, None), ("", None), ("3", 3.0), ("0.25", 0.25), ("-5", None), ("soon", None),
     ("nan", None), ("99999", _constants.MAX_RETRY_AFTER),
     ("Wed, 21 Oct 2015 07:28:10 GMT", 10.0),   # 10 s after "now" below
     ("Wed, 21 Oct 2015 07:27:00 GMT", None)],  # past: normal backoff (issue 13)
)
def test_parse_retry_after(header: str | None, expected: float | None) -> None:
    now = 1445412480.0  # Wed, 21 Oct 2015 07:28:00 GMT
    assert parse_retry_after(header, now=now) == expected


async def test_no_retry_starts_past_the_deadline(mocked: aioresponses) -> None:
    clock = VirtualClock(random=1.0)
    async with asyncsdk.Client(API_KEY, USERNAME, base_url=BASE, timeout=1.0,
                               max_retries=5, clock=clock) as client:
        for _ in range(6):
            mocked.get(CHECK_URL, status=503)
        with pytest.raises(asyncsdk.ServerError):
            await client.validation.check("a@b.com")
    # 0.5 fits in 1.0 s; the next (1.0) would end past the deadline, so it is not taken.
    assert clock.sleeps == [0.5]
    assert sent(mocked) == 2


async def test_service_error_text_in_body_maps_whatever_the_status(
    client: asyncsdk.Client, mocked: aioresponses
) -> None:
    mocked.get(CHECK_URL, payload={"status": "fail", "error": "Email Format is not correct."})
    with pytest.raises(asyncsdk.InvalidEmailError) as info:
        await client.validation.check("a@b.com")
    assert info.value.error_text == "Email Format is not correct."
    assert info.value.operation == "validation.check"
    mocked.get(CHECK_URL, payload={"status": "fail", "error": "Brand new text"})
    with pytest.raises(asyncsdk.APIError) as info2:
        await client.validation.check("a@b.com")
    assert type(info2.value) is asyncsdk.APIError  # unknown text: plain APIError
    mocked.get(CHECK_URL, status=400, payload={"status": "fail", "error": "Brand new text"})
    with pytest.raises(asyncsdk.InvalidRequestError):  # ...unless the status says more
        await client.validation.check("a@b.com")


async def test_non_json_success_is_a_decode_error(
    client: asyncsdk.Client, mocked: aioresponses
) -> None:
    mocked.get(CHECK_URL, body="<html>hello</html>", content_type="text/html")
    with pytest.raises(asyncsdk.ResponseDecodeError) as info:
        await client.validation.check("a@b.com")
    assert info.value.body == "<html>hello</html>"


async def test_wrong_shape_is_a_decode_error(client: asyncsdk.Client, mocked: aioresponses) -> None:
    mocked.get(CHECK_URL, payload=[1, 2, 3])
    with pytest.raises(asyncsdk.ResponseDecodeError):
        await client.validation.check("a@b.com")


async def test_oversized_answer_is_refused(
    client: asyncsdk.Client, mocked: aioresponses, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(_constants, "MAX_JSON_BODY_BYTES", 100)
    mocked.get(CHECK_URL, body='{"email": "' + "x" * 500 + '"}')
    with pytest.raises(asyncsdk.ResponseDecodeError, match="cap"):
        await client.validation.check("a@b.com")


async def test_secrets_never_surface(
    client: asyncsdk.Client, mocked: aioresponses, caplog: pytest.LogCaptureFixture
) -> None:  # through the public face: the frames the engine's errors pass are a client's
    caplog.set_level(logging.DEBUG, logger="asyncsdk")
    echo = f'{{"detail": "bad key {API_KEY} for {USERNAME}"}}'
    mocked.get(RESOURCE_URL, status=401, body=echo)
    mocked.get(CHECK_URL, exception=refused())
    mocked.get(CHECK_URL, exception=aiohttp.ServerDisconnectedError())
    mocked.get(CHECK_URL, exception=asyncio.TimeoutError())
    errors: list[BaseException] = []
    with pytest.raises(asyncsdk.AuthenticationError) as auth:
        await client.contacts.list()
    errors.append(auth.value)
    with pytest.raises(asyncsdk.APITimeoutError) as conn:
        await client.validation.check("a@b.com")
    errors.append(conn.value)
    assert len([r for r in caplog.records if r.levelno == logging.DEBUG]) == 4
    for err in errors:
        text = "".join(traceback.format_exception(err)) + repr(err) + str(vars(err))
        assert API_KEY not in text and USERNAME not in text
        assert "REDACTED" in str(getattr(err, "url", ""))
        assert err.__cause__ is None
        assert err.__context__ is None
    for record in caplog.records:
        line = record.getMessage()
        assert API_KEY not in line and USERNAME not in line
        assert "api=REDACTED" in line or "api_key=REDACTED" in line


async def test_one_debug_line_per_attempt(
    client: asyncsdk.Client, mocked: aioresponses, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG, logger="asyncsdk")
    mocked.get(CHECK_URL, status=502)
    mocked.get(CHECK_URL, payload=OK_CHECK)
    await client.validation.check("a@b.com")
    lines = [r.getMessage() for r in caplog.records
             if r.name == "asyncsdk" and r.levelno == logging.DEBUG]
    assert len(lines) == 2
    assert lines[0].startswith("GET https://api.test/api/v1/single/check?")
    assert "-> 502" in lines[0] and "(attempt 1)" in lines[0]
    assert "-> 200" in lines[1] and "(attempt 2)" in lines[1]
    assert re.search(r"in \d+\.\d ms", lines[1])


async def test_cancellation_propagates_and_client_keeps_working(
    client: asyncsdk.Client, mocked: aioresponses
) -> None:
    started = asyncio.Event()

    async def hang_first_time(url: Any, **kwargs: Any) -> CallbackResult:
        if not started.is_set():
            started.set()
            await asyncio.Event().wait()
        return CallbackResult(payload=OK_CHECK)

    mocked.get(CHECK_URL, callback=hang_first_time, repeat=True)
    task = asyncio.create_task(client.validation.check("a@b.com"))
    await started.wait()
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert (await client.validation.check("a@b.com")).email == "a@b.com"


async def test_cancellation_during_retry_sleep(mocked: aioresponses) -> None:
    clock = Sleeper(hold=3600)
    clock.long = True
    async with asyncsdk.Client(API_KEY, USERNAME, base_url=BASE, clock=clock) as client:
        mocked.get(CHECK_URL, status=503)
        task = asyncio.create_task(client.validation.check("a@b.com"))
        await clock.sleeping.wait()
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task


async def test_credentials_go_where_the_area_wants_them() -> None:
    async with Sandbox(api_key=API_KEY, username=USERNAME) as sb, sb.client() as client:
        await client.contacts.list()
        await client.validation.check("a@example.com")
        listing, check = sb.requests
    assert listing.query == {"api_key": API_KEY}
    assert check.query == {"email": "a@example.com", "timeout": "30", "api": API_KEY,
                           "username": USERNAME}


async def test_each_attempt_is_bounded_by_the_calls_remaining_time(
    client: asyncsdk.Client, mocked: aioresponses
) -> None:
    # An attempt of a safe operation gets a third of the call's budget by default: aiohttp
    # bounds its wait for a connection, and a moment later the whole attempt, body
    # included (a stalled body times out: tests/reliability/test_hostile_responses.py).
    # Streams get a sock_read bound instead.
    mocked.get(CHECK_URL, payload=OK_CHECK)
    await client.validation.check("a@b.com", request_timeout=5)
    (call,) = next(iter(mocked.requests.values()))
    timeout = call.kwargs["timeout"]
    assert timeout.connect == pytest.approx(5 * _constants.DEFAULT_ATTEMPT_SHARE)
    assert timeout.total == pytest.approx(timeout.connect, abs=0.1)
    assert timeout.total > timeout.connect
    mocked.get(CHECK_URL, payload=OK_CHECK)
    await client.validation.check("a@b.com", request_timeout=5, attempt_timeout=60)
    calls = next(iter(mocked.requests.values()))
    assert 4 < calls[-1].kwargs["timeout"].connect <= 5  # never past the call's budget


BARE_FAIL_CASES = [
    ("check", lambda c: c.validation.check("a@b.com"), CHECK_URL, "get"),
    ("create_job", lambda c: c.validation.create_job("https://files.test/list.csv"),
     CREATE_URL, "get"),
    ("mail", lambda c: c.mail.send(sender="a@b.com", to="c@d.org", subject="s", html="h"),
     re.compile(r"^https://api\.test/api/v1/mail/send/.*$"), "post"),
]


@pytest.mark.parametrize(("name", "call", "url", "method"), BARE_FAIL_CASES,
                         ids=[case[0] for case in BARE_FAIL_CASES])
async def test_bare_fail_is_a_plain_api_error(
    client: asyncsdk.Client, mocked: aioresponses, name: str, call: Any, url: Any,
    method: str,
) -> None:
    getattr(mocked, method)(url, payload={"status": "fail"})
    with pytest.raises(asyncsdk.APIError) as info:
        await call(client)
    assert type(info.value) is asyncsdk.APIError
    assert "without an error text" in str(info.value)


async def test_bare_fail_of_job_status_is_the_jobs_state(
    client: asyncsdk.Client, mocked: aioresponses
) -> None:
    mocked.get(re.compile(r"^https://api\.test/api/v1/jobs/status\?.*$"),
               payload={"status": "fail"})
    assert await client.validation.job(5).status() is asyncsdk.JobStatus.FAIL


@pytest.mark.parametrize("operation", ["job.status", "create_job"])
async def test_deeply_nested_answer_without_the_field_is_a_decode_error(
    client: asyncsdk.Client, mocked: aioresponses, operation: str
) -> None:
    # Depths around the recursion limit: some parse as JSON but were too deep to repr
    # when the error was built by hand (a bare RecursionError escaped).
    url = re.compile(r"^https://api\.test/api/v1/jobs/(status|create)\?.*$")
    def call() -> Any:
        if operation == "job.status":
            return client.validation.job(1).status()
        return client.validation.create_job("https://files.test/list.csv")

    for depth in range(900, 1001, 10):
        mocked.get(url, body='{"x": ' + "[" * depth + "]" * depth + "}")
        with pytest.raises(asyncsdk.ResponseDecodeError):
            await call()
