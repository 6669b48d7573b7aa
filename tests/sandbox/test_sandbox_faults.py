"""Each fault kind, path matching, counting and the seeded random mode."""

from __future__ import annotations

import asyncio
import json

import aiohttp
import pytest
from sandbox_helpers import Api

from asyncsdk import InvalidInputError
from asyncsdk.testing import FaultKind, Sandbox

CHECK = "/api/v1/single/check"
LEADS = "/mysite/api/v1/lead/"


def check_params(sb: Sandbox) -> dict[str, str]:
    return {"api": sb.api_key, "username": sb.username, "email": "a@example.com", "timeout": "5"}


async def test_reset_drops_the_connection(api: Api, sandbox: Sandbox) -> None:
    # times=2: aiohttp 3.14 itself re-sends an idempotent request once after a
    # disconnect, even on a fresh connection, so one reset alone would go unseen here.
    sandbox.faults.reset(CHECK, times=2)
    async with aiohttp.ClientSession() as fresh:
        with pytest.raises(aiohttp.ServerDisconnectedError):
            await fresh.get(sandbox.base_url + CHECK, params=check_params(sandbox))
    assert [(r.fault, r.status) for r in sandbox.requests] == [("reset", None)] * 2
    assert (await api.check("a@example.com"))["status"] == "success"  # rule used up
    assert sandbox.faults.applied == [("GET", CHECK, FaultKind.RESET)] * 2


async def test_aiohttp_resends_a_get_after_one_reset(sandbox: Sandbox) -> None:
    sandbox.faults.reset(CHECK)
    async with aiohttp.ClientSession() as fresh:
        url = sandbox.base_url + CHECK
        async with fresh.get(url, params=check_params(sandbox)) as resp:
            assert (await resp.json())["status"] == "success"
    assert [r.fault for r in sandbox.requests] == ["reset", None]


async def test_reset_after_processing_keeps_the_change(sandbox: Sandbox) -> None:
    sandbox.faults.reset(LEADS, method="POST", process=True)
    lead = {"name": "A", "email": "a@b.co", "company": "C", "industry": 2, "source": 2,
            "funnel": "F", "status": 1, "rating": 2}  # fmt: skip
    async with aiohttp.ClientSession() as fresh:
        with pytest.raises(aiohttp.ServerDisconnectedError):
            await fresh.post(sandbox.base_url + LEADS, params={"api_key": sandbox.api_key},
                             json=lead)  # fmt: skip
    assert list(sandbox.state.leads) == [1]
    assert sandbox.requests[-1].json == lead


@pytest.mark.parametrize("status", [500, 502, 503])
async def test_status_faults_skip_the_handler(api: Api, sandbox: Sandbox, status: int) -> None:
    sandbox.faults.status(LEADS, status, times=2, method="POST")
    for _ in range(2):
        assert (await api.resource("POST", LEADS, {}))[0] == status
    assert (await api.resource("GET", LEADS))[0] == 200  # another method: untouched
    assert (await api.resource("POST", LEADS, {}))[0] == 400  # the rule has run out


async def test_rate_limit(api: Api, sandbox: Sandbox) -> None:
    sandbox.faults.rate_limit(CHECK, retry_after=2)
    sandbox.faults.rate_limit(CHECK, retry_after="Wed, 21 Oct 2015 07:28:00 GMT")
    for expected in ("2", "Wed, 21 Oct 2015 07:28:00 GMT"):
        async with api.http.get(CHECK, params=check_params(sandbox)) as resp:
            assert resp.status == 429
            assert resp.headers["Retry-After"] == expected
    assert sandbox.credit is None


async def test_delay_holds_the_answer(api: Api, sandbox: Sandbox) -> None:
    sandbox.faults.delay(CHECK, seconds=0.05)
    slow = asyncio.create_task(api.check("a@example.com"))
    while not sandbox.requests:  # until the request has reached the server
        await asyncio.sleep(0)
    assert sandbox.in_flight == 1
    assert not slow.done()
    assert (await slow)["status"] == "success"


async def test_invalid_json(api: Api, sandbox: Sandbox) -> None:
    sandbox.faults.invalid_json("/api/v1/*")
    async with api.http.get(CHECK, params=check_params(sandbox)) as resp:
        assert resp.status == 200
        assert resp.content_type == "application/json"
        with pytest.raises(json.JSONDecodeError):
            json.loads(await resp.read())


async def test_html_error_page(api: Api, sandbox: Sandbox) -> None:
    sandbox.faults.html_error(CHECK)
    async with api.http.get(CHECK, params=check_params(sandbox)) as resp:
        assert resp.status == 502
        assert resp.content_type == "text/html"
        assert "<h1>502 Bad Gateway</h1>" in await resp.text()


async def test_truncated_body(sandbox: Sandbox) -> None:
    sandbox.faults.truncated(CHECK)
    url = sandbox.base_url + CHECK
    async with (
        aiohttp.ClientSession() as fresh,
        fresh.get(url, params=check_params(sandbox)) as resp,
    ):
        assert resp.status == 200
        with pytest.raises(aiohttp.ClientPayloadError):
            await resp.read()
    assert sandbox.credit is None


async def test_wrong_content_type(api: Api, sandbox: Sandbox) -> None:
    sandbox.faults.wrong_content_type(CHECK)
    async with api.http.get(CHECK, params=check_params(sandbox)) as resp:
        assert resp.status == 200
        assert resp.content_type == "text/html"
        assert json.loads(await resp.read())["result"] == "Valid"


@pytest.mark.parametrize("shape", ["csv", "json"])
@pytest.mark.parametrize(
    "kind", [FaultKind.TRUNCATED, FaultKind.INVALID_JSON, FaultKind.WRONG_CONTENT_TYPE]
)
async def test_streamed_download_faults(sandbox: Sandbox, shape: str, kind: FaultKind) -> None:
    sandbox.settings.download_shape = shape  # type: ignore[assignment]
    sandbox.settings.chunk_size = 1024
    job_id = sandbox.make_job(rows=1000)
    sandbox.faults.add("/api/v1/jobs/download", kind)
    params = {"api": sandbox.api_key, "username": sandbox.username, "job_id": str(job_id)}
    url = sandbox.base_url + "/api/v1/jobs/download"
    async with aiohttp.ClientSession() as fresh, fresh.get(url, params=params) as resp:
        if kind is FaultKind.TRUNCATED:
            with pytest.raises(aiohttp.ClientPayloadError):
                await resp.read()
        elif kind is FaultKind.INVALID_JSON:
            with pytest.raises(json.JSONDecodeError):
                json.loads(await resp.read())
        else:
            assert resp.content_type == "text/html"
            assert len(await resp.read()) > 40_000


async def test_path_patterns_and_pending(api: Api, sandbox: Sandbox) -> None:
    exact = sandbox.faults.status("/mysite/api/v1/lead", 500)  # no slash: matches nothing
    prefix = sandbox.faults.status("/mysite/*", 503, times=None)
    assert (await api.resource("GET", LEADS))[0] == 503
    assert (await api.resource("GET", "/mysite/api/v1/products/"))[0] == 503
    assert (await api.check("a@example.com"))["status"] == "success"
    assert (exact.hits, prefix.hits, prefix.remaining) == (0, 2, None)
    assert sandbox.faults.pending == [exact, prefix]
    sandbox.faults.clear()
    assert (await api.resource("GET", LEADS))[0] == 200


async def test_random_faults_are_seeded(sandbox: Sandbox) -> None:
    async def run() -> list[int]:
        sandbox.faults.random(rate=0.3, kinds=["status", "rate_limit"], seed=7, path=LEADS)
        statuses = []
        async with aiohttp.ClientSession(base_url=sandbox.base_url) as http:
            for _ in range(40):
                async with http.get(LEADS, params={"api_key": sandbox.api_key}) as resp:
                    statuses.append(resp.status)
        return statuses

    first = await run()
    assert await run() == first
    assert {200, 503, 429} == set(first)


def test_fault_arguments_are_checked() -> None:
    sb = Sandbox()
    with pytest.raises(ValueError):
        sb.faults.add(CHECK, "explode")
    with pytest.raises(ValueError):
        sb.faults.random(rate=2)
    with pytest.raises(ValueError):
        sb.faults.random(rate=0.1, kinds=[])


@pytest.mark.parametrize("content_type", ["text/html; charset=iso-8859-1",
                                          "application/xml;charset=UTF-16", "text/plain"])
@pytest.mark.parametrize("path", ["/api/v1/single/check", "/api/v1/jobs/download"])
@pytest.mark.parametrize("shape", ["csv", "json"])
async def test_a_wrong_content_type_is_sent_as_given(
    http: aiohttp.ClientSession, sandbox: Sandbox, content_type: str, path: str, shape: str
) -> None:
    # With a charset it answered 500 (a plain answer) or had the charset replaced by
    # utf-8 (a streamed one): not the content type the test asked for.
    sandbox.settings.download_shape = shape  # type: ignore[assignment]
    job_id = sandbox.make_job(2)
    sandbox.faults.wrong_content_type(path, content_type=content_type)
    query = {"api": sandbox.api_key, "username": sandbox.username, "job_id": str(job_id),
             "email": "ann@example.com", "timeout": "5"}
    async with http.get(path, params=query) as resp:
        assert resp.status == 200
        assert resp.headers["Content-Type"] == content_type
        assert (await resp.read()).startswith((b"{", b"Email,Name"))


@pytest.mark.parametrize("status", [100, 199, 600, "503", 503.0, True])
def test_a_status_no_answer_has_is_refused(sandbox: Sandbox, status: object) -> None:
    # A 1xx "answer" left the client waiting for the real one until its timeout.
    for add in (lambda: sandbox.faults.status("/api/v1/single/check", status),  # type: ignore[arg-type]
                lambda: sandbox.faults.html_error("/api/v1/single/check", status),  # type: ignore[arg-type]
                lambda: sandbox.faults.random(0.5, status=status)):
        with pytest.raises(InvalidInputError) as refused:
            add()
        assert refused.value.field == "status"
    assert sandbox.faults.pending == []
