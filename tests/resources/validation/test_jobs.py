"""Validation jobs: create, resume, status, wait, rows and download."""

from __future__ import annotations

import asyncio
import datetime as dt
import json
import os
from contextlib import aclosing
from pathlib import Path
from typing import Any

import pytest
from aiohttp import web
from aioresponses import CallbackResult, aioresponses
from helpers import API_KEY, BASE, USERNAME
from validation_tools import LocalServer, stalling, streaming, url_of

import asyncsdk
from asyncsdk import JobStatus, Verdict
from asyncsdk.testing import VirtualClock

CREATE = url_of("/api/v1/jobs/create")
STATUS = url_of("/api/v1/jobs/status")
DOWNLOAD = url_of("/api/v1/jobs/download")
DOWNLOAD_PATH = "/api/v1/jobs/download"

AUTH = "User authentication failed. Wrong API Key or username."
MISSING = "Required parameter missing or invalid"
NOT_YOURS = "This Job Id not associated to your users."
PROCESSING = "List is currently Processing. Please wait some times."

CSV_TEXT = ("Email,Name,Status,Role Based Emails\r\n"
            'a@b.com,"Doe, ""J""",Valid,True\r\n'
            'c@d.com,"multi\nline é😀",Bounce,0\r\n'
            "e@f.com,,CatchAll,false\r\n")
ROWS = [
    asyncsdk.EmailRow(email="a@b.com", name='Doe, "J"', status=Verdict.VALID,
                      role_based=True),
    asyncsdk.EmailRow(email="c@d.com", name="multi\nline é😀", status=Verdict.BOUNCE,
                      role_based=False),
    asyncsdk.EmailRow(email="e@f.com", name="", status=Verdict.CATCH_ALL, role_based=False),
]


def sent(m: aioresponses) -> int:
    return sum(len(calls) for calls in m.requests.values())


def query_of(m: aioresponses) -> dict[str, str]:
    (key, _), = m.requests.items()
    return dict(key[1].query)


# --- create_job ------------------------------------------------------------------------
async def test_create_job_sends_the_url_and_returns_a_job(
    client: asyncsdk.Client, mocked: aioresponses
) -> None:
    mocked.get(CREATE, payload={"status": "success", "job_id": 42})
    before = dt.datetime.now(dt.timezone.utc)
    job = await client.validation.create_job("https://files.example/list.csv",
                                             validity_timeout=12)
    assert isinstance(job, asyncsdk.ValidationJob)
    assert (job.job_id, job.file_url) == (42, "https://files.example/list.csv")
    assert job.submitted_at is not None and job.submitted_at >= before
    query = query_of(mocked)
    assert query["file_name"] == "https://files.example/list.csv"
    assert query["timeout"] == "12"
    assert "api" not in query  # added last, on the wire (tests/core/test_middleware.py)


@pytest.mark.parametrize("bad", [
    "list.csv", "/tmp/list.csv", "ftp://files.example/list.csv", "https://", "http:///x",
    "https://files.example/a b.csv", "https://files.example/\nx", "", None, 3])
async def test_create_job_refuses_a_non_http_url_without_sending(
    client: asyncsdk.Client, mocked: aioresponses, bad: Any
) -> None:
    with pytest.raises(asyncsdk.InvalidInputError) as info:
        await client.validation.create_job(bad)
    assert info.value.field == "file_url"
    assert not mocked.requests


async def test_create_job_is_not_repeated_after_a_500(
    client: asyncsdk.Client, mocked: aioresponses
) -> None:
    mocked.get(CREATE, status=500, body="oops", repeat=True)
    with pytest.raises(asyncsdk.ServerError):
        await client.validation.create_job("https://files.example/list.csv")
    assert sent(mocked) == 1


@pytest.mark.parametrize(("text", "cls"), [
    ("Required parameter missing or invalid.", asyncsdk.InvalidRequestError),
    (AUTH, asyncsdk.AuthenticationError),
    ("The request was refused due to insufficent credit.", asyncsdk.InsufficientCreditError),
    ("File is not downloadable.", asyncsdk.FileNotDownloadableError),
    ("File Format is not correct.", asyncsdk.FileFormatError),
])
async def test_every_error_text_of_jobs_create(
    client: asyncsdk.Client, mocked: aioresponses, text: str, cls: type[Exception]
) -> None:
    mocked.get(CREATE, payload={"status": "fail", "error": text})
    with pytest.raises(cls) as info:
        await client.validation.create_job("https://files.example/list.csv")
    assert type(info.value) is cls


async def test_create_job_answer_without_job_id_is_a_decode_error(
    client: asyncsdk.Client, mocked: aioresponses
) -> None:
    mocked.get(CREATE, payload={"status": "success"})
    with pytest.raises(asyncsdk.ResponseDecodeError):
        await client.validation.create_job("https://files.example/list.csv")


# --- resume ----------------------------------------------------------------------------
def test_job_handle_and_dict_round_trip_through_json(client: asyncsdk.Client) -> None:
    job = client.validation.job(7)
    assert (job.job_id, job.file_url, job.submitted_at) == (7, None, None)
    when = dt.datetime(2024, 5, 6, 7, 8, 9, tzinfo=dt.timezone.utc)
    full = client.validation.job_from_dict({"job_id": 9, "file_url": "https://h/x.csv",
                                            "submitted_at": when.isoformat()})
    saved = json.loads(json.dumps(full.to_dict()))
    assert saved == {"job_id": 9, "file_url": "https://h/x.csv",
                     "submitted_at": "2024-05-06T07:08:09+00:00"}
    again = client.validation.job_from_dict(saved)
    assert (again.job_id, again.file_url, again.submitted_at) == (9, "https://h/x.csv", when)
    assert client.validation.job_from_dict(job.to_dict()).job_id == 7


@pytest.mark.parametrize("bad", [
    None, [], {}, {"job_id": "x"}, {"job_id": -1}, {"job_id": 1, "submitted_at": "later"},
    {"job_id": 1, "file_url": 5}])
def test_job_from_dict_refuses_bad_data(client: asyncsdk.Client, bad: Any) -> None:
    with pytest.raises(asyncsdk.InvalidInputError) as info:
        client.validation.job_from_dict(bad)
    # The message names the field it is about (``data`` itself, or the key in it).
    assert info.value.field is not None
    assert str(info.value).startswith(f"{info.value.field}: expected")


def test_job_refuses_a_bad_id(client: asyncsdk.Client) -> None:
    with pytest.raises(asyncsdk.InvalidInputError):
        client.validation.job(True)  # type: ignore[arg-type]


# --- status ----------------------------------------------------------------------------
@pytest.mark.parametrize(("answer", "expected"), [
    ({"status": "processing"}, JobStatus.PROCESSING),
    ({"status": "success"}, JobStatus.SUCCESS),
    ({"status": "Success"}, JobStatus.SUCCESS),
    ({"status": "fail"}, JobStatus.FAIL),  # no error text: the job's own state
    ({"status": "queued"}, JobStatus("queued")),  # unknown: an unknown JobStatus value
])
async def test_status(client: asyncsdk.Client, mocked: aioresponses, answer: dict[str, Any],
                      expected: Any) -> None:
    mocked.get(STATUS, payload=answer)
    got = await client.validation.job(5).status()
    assert got == expected and type(got) is type(expected)
    assert query_of(mocked)["job_id"] == "5"


@pytest.mark.parametrize(("text", "cls"), [
    (NOT_YOURS, asyncsdk.JobNotFoundError),
    (MISSING, asyncsdk.InvalidRequestError),
    (AUTH, asyncsdk.AuthenticationError),
])
async def test_every_error_text_of_jobs_status(
    client: asyncsdk.Client, mocked: aioresponses, text: str, cls: type[Exception]
) -> None:
    mocked.get(STATUS, payload={"status": "fail", "error": text})
    with pytest.raises(cls) as info:
        await client.validation.job(5).status()
    assert type(info.value) is cls


@pytest.mark.parametrize("answer", [{}, {"status": None}, [1], {"status": ""}])
async def test_status_without_a_status_is_a_decode_error(
    client: asyncsdk.Client, mocked: aioresponses, answer: Any
) -> None:
    mocked.get(STATUS, payload=answer)
    with pytest.raises(asyncsdk.ResponseDecodeError):
        await client.validation.job(5).status()


# --- wait ------------------------------------------------------------------------------
def job_finishing_at(mocked: aioresponses, clock: VirtualClock, at: float,
                     end: str = "success") -> list[float]:
    polls: list[float] = []

    def answer(url: Any, **kwargs: Any) -> CallbackResult:
        polls.append(clock.now())
        return CallbackResult(payload={"status": end if clock.now() >= at else "processing"})

    mocked.get(STATUS, callback=answer, repeat=True)
    return polls


@pytest.mark.parametrize("rand", [0.0, 0.5, 1.0, None])
async def test_wait_defaults_find_a_60s_job_with_few_polls_and_little_delay(
    mocked: aioresponses, rand: float | None
) -> None:
    clock = VirtualClock(seed=4) if rand is None else VirtualClock(random=rand)
    polls = job_finishing_at(mocked, clock, 60.0)
    async with asyncsdk.Client(API_KEY, USERNAME, base_url=BASE, clock=clock) as client:
        assert await client.validation.job(1).wait() is JobStatus.SUCCESS
    assert len(polls) <= 12  # status requests
    assert polls[-1] - 60.0 <= 30.0  # detected within max_interval of finishing
    assert max(clock.sleeps) <= 30.0


@pytest.mark.parametrize(("rand", "pauses"), [
    (0.0, [1, 2, 4, 8, 10, 10]),  # no jitter: the bare schedule
    (1.0, [0.75, 1.5, 3.0, 6.0, 7.5, 7.5]),  # the most jitter shortens by a quarter
])
async def test_wait_backs_off_exponentially_up_to_the_cap(
    client: asyncsdk.Client, mocked: aioresponses, clock: VirtualClock, rand: float,
    pauses: list[float],
) -> None:
    clock.random_value = rand
    job_finishing_at(mocked, clock, 100.0)
    await client.validation.job(1).wait(interval=1, factor=2, max_interval=10)
    assert clock.sleeps[:6] == pauses


async def test_wait_reports_each_status_and_awaits_async_callbacks(
    client: asyncsdk.Client, mocked: aioresponses, clock: VirtualClock
) -> None:
    job_finishing_at(mocked, clock, 3.0)
    clock.random_value = 0.0
    seen: list[tuple[Any, float]] = []

    async def on_status(status: Any, elapsed: float) -> None:
        seen.append((status, elapsed))

    await client.validation.job(1).wait(on_status=on_status)
    assert seen == [(JobStatus.PROCESSING, 0.0), (JobStatus.PROCESSING, 1.0),
                    (JobStatus.SUCCESS, 3.0)]


async def test_wait_raises_job_failed(
    client: asyncsdk.Client, mocked: aioresponses, clock: VirtualClock
) -> None:
    job_finishing_at(mocked, clock, 5.0, end="fail")
    with pytest.raises(asyncsdk.JobFailedError) as info:
        await client.validation.job(8).wait()
    assert info.value.job_id == 8


async def test_wait_deadline_never_sleeps_past_it_and_polls_at_it(
    client: asyncsdk.Client, mocked: aioresponses, clock: VirtualClock
) -> None:
    clock.random_value = 0.0
    polls = job_finishing_at(mocked, clock, 1000.0)
    with pytest.raises(asyncsdk.JobTimeoutError) as info:
        await client.validation.job(3).wait(deadline=10.0)
    # the last pause cut so that the last poll starts WAIT_FINAL_POLL_RESERVE (1 s)
    # before the deadline and can answer within it
    assert polls == [0.0, 1.0, 3.0, 7.0, 9.0]
    assert clock.now() == 9.0
    assert info.value.job_id == 3
    assert info.value.last_status is JobStatus.PROCESSING


async def test_wait_deadline_last_poll_can_still_succeed(
    client: asyncsdk.Client, mocked: aioresponses, clock: VirtualClock
) -> None:
    clock.random_value = 0.0
    job_finishing_at(mocked, clock, 9.0)
    assert await client.validation.job(3).wait(deadline=10.0) is JobStatus.SUCCESS


@pytest.mark.parametrize(("deadline", "request_timeout"), [
    (1.0, None), (10.0, None), (100.0, 30.0), (0.05, None), (250.0, None)])
async def test_wait_bounds_every_poll_by_the_time_left(
    client: asyncsdk.Client, mocked: aioresponses, clock: VirtualClock, deadline: float,
    request_timeout: float | None,
) -> None:
    """Regression: each poll ran with the full client timeout (60 s), so
    ``wait(deadline=1.0)`` could take a minute against a stalled service. Seen as
    aiohttp's bound of each attempt (``ClientTimeout.total``)."""
    seen: list[tuple[float, Any]] = []

    def answer(url: Any, **kwargs: Any) -> CallbackResult:
        seen.append((clock.now(), kwargs.get("timeout")))
        return CallbackResult(payload={"status": "processing"})

    mocked.get(STATUS, callback=answer, repeat=True)
    with pytest.raises(asyncsdk.JobTimeoutError):
        await client.validation.job(3).wait(deadline=deadline,
                                            request_timeout=request_timeout)
    assert seen
    for at, timeout in seen:
        assert timeout is not None and 0 < timeout.total <= deadline - at
        assert timeout.total <= (request_timeout or client.timeout)
    assert clock.now() <= deadline


async def test_wait_with_a_zero_deadline_polls_nothing(
    client: asyncsdk.Client, mocked: aioresponses, clock: VirtualClock
) -> None:
    with pytest.raises(asyncsdk.JobTimeoutError):
        await client.validation.job(3).wait(deadline=0)
    assert not mocked.requests


async def test_wait_treats_an_unknown_status_as_processing(
    client: asyncsdk.Client, mocked: aioresponses, clock: VirtualClock
) -> None:
    mocked.get(STATUS, payload={"status": "queued"})
    mocked.get(STATUS, payload={"status": "success"})
    assert await client.validation.job(3).wait() is JobStatus.SUCCESS
    assert len(clock.sleeps) == 1


async def test_wait_survives_transient_errors_escaping_the_core(
    client: asyncsdk.Client, mocked: aioresponses, clock: VirtualClock
) -> None:
    for _ in range(3):  # one poll: the first attempt and its two retries
        mocked.get(STATUS, status=503, body="busy")
    mocked.get(STATUS, payload={"status": "success"})
    assert await client.validation.job(3).wait() is JobStatus.SUCCESS
    assert sent(mocked) == 4


async def test_wait_without_deadline_gives_up_after_many_failed_polls(
    client: asyncsdk.Client, mocked: aioresponses, clock: VirtualClock
) -> None:
    mocked.get(STATUS, status=503, body="busy", repeat=True)
    with pytest.raises(asyncsdk.ServerError):
        await client.validation.job(3).wait()
    assert sent(mocked) == 10 * 3  # MAX_WAIT_TRANSIENT_FAILURES polls of 3 attempts


async def test_wait_with_deadline_keeps_polling_through_errors_until_it(
    client: asyncsdk.Client, mocked: aioresponses, clock: VirtualClock
) -> None:
    mocked.get(STATUS, status=503, body="busy", repeat=True)
    with pytest.raises(asyncsdk.JobTimeoutError) as info:
        await client.validation.job(3).wait(deadline=120.0)
    assert isinstance(info.value.__cause__, asyncsdk.ServerError)
    assert clock.now() <= 120.0 + 20  # retries' sleeps of the last poll at most


async def test_wait_does_not_swallow_a_refusal(
    client: asyncsdk.Client, mocked: aioresponses, clock: VirtualClock
) -> None:
    mocked.get(STATUS, payload={"status": "fail", "error": NOT_YOURS})
    with pytest.raises(asyncsdk.JobNotFoundError):
        await client.validation.job(3).wait(deadline=60)


@pytest.mark.parametrize("kwargs", [
    {"interval": 0}, {"interval": -1}, {"max_interval": 0.5}, {"factor": 0.5},
    {"deadline": -1}, {"interval": "1"}, {"interval": float("inf")},
    {"request_timeout": 0}, {"request_timeout": "5"}, {"deadline": 5, "request_timeout": -1},
    {"max_interval": float("inf")}, {"factor": float("nan")}])
async def test_wait_checks_its_arguments(
    client: asyncsdk.Client, mocked: aioresponses, kwargs: dict[str, Any]
) -> None:
    with pytest.raises(asyncsdk.InvalidInputError):
        await client.validation.job(3).wait(**kwargs)
    assert not mocked.requests


# --- rows (mocked) -----------------------------------------------------------------------
async def test_rows_from_a_csv_body(client: asyncsdk.Client, mocked: aioresponses) -> None:
    mocked.get(DOWNLOAD, body=CSV_TEXT.encode(), content_type="text/csv")
    assert [r async for r in client.validation.job(4).rows()] == ROWS
    assert query_of(mocked)["job_id"] == "4"


async def test_rows_from_a_json_body(client: asyncsdk.Client, mocked: aioresponses) -> None:
    mocked.get(DOWNLOAD, payload={"status": "success", "result": CSV_TEXT})
    assert [r async for r in client.validation.job(4).rows()] == ROWS


@pytest.mark.parametrize(("text", "cls"), [
    (NOT_YOURS, asyncsdk.JobNotFoundError),
    (PROCESSING, asyncsdk.JobNotReadyError),
    (MISSING, asyncsdk.InvalidRequestError),
    (AUTH, asyncsdk.AuthenticationError),
])
async def test_every_error_text_of_jobs_download(
    client: asyncsdk.Client, mocked: aioresponses, text: str, cls: type[Exception]
) -> None:
    mocked.get(DOWNLOAD, payload={"status": "fail", "error": text})
    with pytest.raises(cls) as info:
        async for _ in client.validation.job(4).rows():
            pass
    assert type(info.value) is cls
    assert API_KEY not in repr(info.value.__dict__)


@pytest.mark.parametrize(("body", "content_type"), [
    (b'{"status": "success"}', "application/json"),  # no result
    (b'{"status": "success", "result": null}', "application/json"),
    (b'{"status": "success", "result": "Email,Na', "application/json"),  # cut short
    (b"Email,Name,Status\r\na@b.com,A,Valid\r\n", "text/csv"),  # a column missing
    (b"Email,Name,Status,Role Based Emails\r\n\xff\xfe,x,y,1\r\n", "text/csv"),  # not UTF-8
])
async def test_rows_refuses_a_bad_result(
    client: asyncsdk.Client, mocked: aioresponses, body: bytes, content_type: str
) -> None:
    mocked.get(DOWNLOAD, body=body, content_type=content_type)
    with pytest.raises(asyncsdk.ResponseDecodeError):
        async for _ in client.validation.job(4).rows():
            pass


# --- rows and download through a real local server --------------------------------------
JSON_BODY = json.dumps({"status": "success", "result": CSV_TEXT}).encode()


@pytest.mark.parametrize(("body", "content_type", "disposition"), [
    (CSV_TEXT.encode(), "text/csv", None),
    ("\ufeff".encode() + CSV_TEXT.encode(), "application/octet-stream",
     "attachment; filename=emaillist.csv"),
    (JSON_BODY, "application/json", None),
    (JSON_BODY, "text/html", None),  # sniffed
])
async def test_rows_end_to_end_in_both_shapes(
    local: LocalServer, local_client: asyncsdk.Client, body: bytes, content_type: str,
    disposition: str | None,
) -> None:
    local.routes[DOWNLOAD_PATH] = streaming(body, content_type, disposition=disposition)
    assert [r async for r in local_client.validation.job(4).rows()] == ROWS


async def test_a_result_url_is_fetched_without_credentials(
    local: LocalServer, local_client: asyncsdk.Client
) -> None:
    hosted = f"{local.url}/files/result.csv?token=t1"
    local.routes[DOWNLOAD_PATH] = streaming(
        json.dumps({"status": "success", "result": hosted}).encode(), "application/json")
    local.routes["/files/result.csv"] = streaming(CSV_TEXT.encode(), "text/csv")
    assert [r async for r in local_client.validation.job(4).rows()] == ROWS
    fetch = next(r for r in local.requests if r.path == "/files/result.csv")
    assert dict(fetch.query) == {"token": "t1"}
    assert API_KEY not in str(fetch.url) and USERNAME not in str(fetch.url)
    assert not any(API_KEY in v or USERNAME in v for v in fetch.headers.values())


async def test_leaving_rows_early_releases_the_connection(
    local: LocalServer, local_client: asyncsdk.Client
) -> None:
    big = CSV_TEXT.encode() + b"x@y.com,N,Valid,1\r\n" * 200_000
    local.routes[DOWNLOAD_PATH] = streaming(big, "text/csv", piece=65536)
    async with aclosing(local_client.validation.job(4).rows()) as rows:
        async for _ in rows:
            session = local_client._session
            assert session is not None and len(session.connector._acquired) == 1  # type: ignore[union-attr]
            break
    assert len(session.connector._acquired) == 0  # type: ignore[union-attr]


def breaking(body: bytes, content_type: str) -> Any:
    """Announces the whole body, writes half of it, then drops the connection."""
    async def handle(request: web.Request) -> web.StreamResponse:
        response = web.StreamResponse()
        response.content_type = content_type
        response.content_length = len(body)
        await response.prepare(request)
        transport = request.transport
        assert transport is not None
        await response.write(body[: len(body) // 2])
        await asyncio.sleep(0.01)
        transport.close()
        return response
    return handle


async def test_download_writes_atomically_and_counts_rows(
    local: LocalServer, local_client: asyncsdk.Client, tmp_path: Path
) -> None:
    local.routes[DOWNLOAD_PATH] = streaming(JSON_BODY, "application/json")
    target = tmp_path / "emaillist.csv"
    assert await local_client.validation.job(4).download(target) == 3
    assert target.read_bytes() == CSV_TEXT.encode()  # the CSV as sent, decoded from JSON
    assert os.listdir(tmp_path) == ["emaillist.csv"]


@pytest.mark.parametrize(("body", "content_type"), [
    (CSV_TEXT.encode() + b"x@y.com,N,Valid,1\r\n" * 50, "text/csv"),
    (JSON_BODY, "application/json")])
async def test_an_interrupted_download_leaves_no_partial_file(
    local: LocalServer, local_client: asyncsdk.Client, tmp_path: Path, body: bytes,
    content_type: str,
) -> None:
    local.routes[DOWNLOAD_PATH] = breaking(body, content_type)
    target = tmp_path / "emaillist.csv"
    target.write_text("previous result")
    with pytest.raises(asyncsdk.APIConnectionError):
        await local_client.validation.job(4).download(target)
    assert target.read_text() == "previous result"  # untouched
    assert os.listdir(tmp_path) == ["emaillist.csv"]  # temp file removed


async def test_a_refused_download_leaves_no_file(
    local: LocalServer, local_client: asyncsdk.Client, tmp_path: Path
) -> None:
    local.routes[DOWNLOAD_PATH] = streaming(
        json.dumps({"status": "fail", "error": PROCESSING}).encode(), "application/json")
    with pytest.raises(asyncsdk.JobNotReadyError):
        await local_client.validation.job(4).download(tmp_path / "out.csv")
    assert os.listdir(tmp_path) == []


async def test_a_cancelled_download_leaves_no_file(
    local: LocalServer, local_client: asyncsdk.Client, tmp_path: Path
) -> None:
    started = asyncio.Event()
    local.routes[DOWNLOAD_PATH] = stalling(CSV_TEXT.encode(), started)
    task = asyncio.ensure_future(local_client.validation.job(4).download(tmp_path / "o.csv"))
    await started.wait()
    await asyncio.sleep(0.01)
    assert len(os.listdir(tmp_path)) == 1  # the temporary file, being written
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert os.listdir(tmp_path) == []


async def test_download_of_a_broken_csv_is_a_decode_error_and_no_file(
    local: LocalServer, local_client: asyncsdk.Client, tmp_path: Path
) -> None:
    local.routes[DOWNLOAD_PATH] = streaming(b'Email,Name,Status,Role Based Emails\r\n"a,b',
                                            "text/csv")
    with pytest.raises(asyncsdk.ResponseDecodeError):
        await local_client.validation.job(4).download(tmp_path / "o.csv")
    assert os.listdir(tmp_path) == []


@pytest.mark.parametrize(("polls", "ends"), [(10**6, asyncsdk.JobTimeoutError), (0, None)])
async def test_a_slow_on_status_is_bounded_by_the_deadline(polls: int, ends: Any) -> None:
    """Before: ``wait(deadline=1)`` with a callback taking 3 s returned after 3 s. The
    callback is cancelled at the deadline; a job that ended is still reported."""
    from asyncsdk.testing import Sandbox

    cancelled = []

    async def hangs(status: Any, elapsed: float) -> None:
        try:
            await asyncio.sleep(30)  # a slow callback: cancelled long before (30 s if not)
        except asyncio.CancelledError:
            cancelled.append(status)
            raise

    async with Sandbox(job_polls=polls) as sb, sb.client() as client:
        job = await client.validation.create_job(sb.host_file(b"email\na@example.com\n"))
        if ends is None:
            assert await job.wait(deadline=0.05, interval=0.01, on_status=hangs) is (
                JobStatus.SUCCESS)
        else:
            with pytest.raises(ends):
                await job.wait(deadline=0.05, interval=0.01, on_status=hangs)
    assert len(cancelled) == 1


async def test_download_cancelled_during_fsync_closes_the_file_after_the_thread(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Before: the cancelled ``download()`` closed the file while the thread was still
    about to ``fsync`` its descriptor (EBADF, or an fsync of the file that reused the
    number). Now it waits for the thread, then removes the temporary file."""
    import threading

    from asyncsdk.testing import Sandbox

    entered, release = threading.Event(), threading.Event()
    seen: list[int] = []
    real = os.fsync

    def slow_fsync(fd: int) -> None:
        entered.set()
        release.wait(10)
        os.fstat(fd)  # the descriptor is still this file's (EBADF if closed)
        seen.append(fd)
        real(fd)

    monkeypatch.setattr(os, "fsync", slow_fsync)
    async with Sandbox() as sb, sb.client() as client:
        job = client.validation.job(sb.make_job(rows=3))
        task = asyncio.create_task(job.download(tmp_path / "out.csv"))
        assert await asyncio.to_thread(entered.wait, 10)  # the thread is in fsync
        task.cancel()
        for _ in range(20):
            await asyncio.sleep(0)
        assert not task.done()  # still waiting for the thread
        release.set()
        with pytest.raises(asyncio.CancelledError):
            await task
    assert len(seen) == 1
    assert list(tmp_path.iterdir()) == []


async def test_close_ends_a_wait_sleeping_between_polls_at_once() -> None:
    """Before: ``close()`` left a ``wait()`` asleep until its next poll (up to
    ``max_interval``, 30 s by default), which then raised ``UsageError``."""
    from asyncsdk.testing import Sandbox

    polled = asyncio.Event()
    async with Sandbox(job_polls=10**6) as sb:
        client = sb.client()
        job = await client.validation.create_job(sb.host_file(b"email\na@example.com\n"))
        waiting = asyncio.create_task(job.wait(
            interval=3600, max_interval=3600, on_status=lambda s, t: polled.set()))
        await polled.wait()
        await asyncio.sleep(0)  # into the pause after that poll
        await client.close()
        with pytest.raises(asyncsdk.APIConnectionError, match="closed") as caught:
            await asyncio.wait_for(waiting, 5)
        assert not caught.value.may_have_been_sent
        with pytest.raises(asyncsdk.UsageError):
            await job.wait(interval=1)
