"""A result that fails part way: the error says how much had been read (a cut after a
megabyte is not a refusal at the start), and download() leaves the destination as it
was. Before, a cut, a short body or a stall said only "the answer was cut short" /
"timed out", and a byte that is not UTF-8 did not say where it was."""

from __future__ import annotations

import asyncio
import json
import os
from pathlib import Path

import pytest
from aiohttp import web
from validation_tools import Handler, LocalServer, stalling, streaming

import asyncsdk

DOWNLOAD_PATH = "/api/v1/jobs/download"
HEADER = "Email,Name,Status,Role Based Emails\r\n"
ROW = "a@b.com,A,Valid,True\r\n"
CSV_TEXT = HEADER + ROW * 40


def shapes(text: str) -> list[tuple[bytes, str]]:
    return [(text.encode(), "text/csv"),
            (json.dumps({"status": "success", "result": text}).encode(), "application/json")]


def cut_after(body: bytes, content_type: str, *, claimed: int | None = None) -> Handler:
    """Sends ``body`` (with a ``Content-Length`` of ``claimed`` when given), then drops
    the connection."""
    async def handle(request: web.Request) -> web.StreamResponse:
        response = web.StreamResponse()
        response.content_type = content_type
        if claimed is not None:
            response.content_length = claimed
        await response.prepare(request)
        await response.write(body)
        assert request.transport is not None
        request.transport.close()  # what was written goes first
        return response
    return handle


async def read_into(got: list[asyncsdk.EmailRow], job: asyncsdk.ValidationJob) -> None:
    async for row in job.rows():
        got.append(row)


@pytest.mark.parametrize("claimed", [None, 10**6])
@pytest.mark.parametrize("shape", [0, 1])
async def test_a_cut_says_how_many_bytes_had_arrived(
    local: LocalServer, local_client: asyncsdk.Client, tmp_path: Path, shape: int,
    claimed: int | None,
) -> None:
    """The connection dropped after a part (chunked, or shorter than its
    ``Content-Length``): rows() and download() say so, with the bytes read."""
    body, content_type = shapes(CSV_TEXT)[shape]
    part = body[:len(body) // 2]
    local.routes[DOWNLOAD_PATH] = cut_after(part, content_type, claimed=claimed)
    job = local_client.validation.job(4)
    got: list[asyncsdk.EmailRow] = []
    with pytest.raises(asyncsdk.APIConnectionError) as info:
        await read_into(got, job)
    assert 0 < len(got) < 40
    assert f"after {len(part):,} bytes of the result" in str(info.value)

    target = tmp_path / "emaillist.csv"
    target.write_text("previous result")
    with pytest.raises(asyncsdk.APIConnectionError) as info:
        await job.download(target)
    assert f"after {len(part):,} bytes of the result" in str(info.value)
    assert info.value.message in info.value.args
    assert target.read_text() == "previous result"  # untouched
    assert os.listdir(tmp_path) == ["emaillist.csv"]  # the temporary file removed


async def test_a_stall_says_how_many_bytes_had_arrived(
    local: LocalServer, local_client: asyncsdk.Client
) -> None:
    started = asyncio.Event()
    sent = (HEADER + ROW * 3).encode()
    local.routes[DOWNLOAD_PATH] = stalling(sent, started)
    with pytest.raises(asyncsdk.APITimeoutError) as info:
        async for _ in local_client.validation.job(4).rows(request_timeout=0.2):
            pass
    assert f"after {len(sent):,} bytes of the result" in str(info.value)


async def test_a_failure_before_any_byte_says_nothing_of_bytes(
    local: LocalServer, local_client: asyncsdk.Client
) -> None:
    local.routes[DOWNLOAD_PATH] = cut_after(b"", "text/csv", claimed=100)
    with pytest.raises(asyncsdk.APIConnectionError) as info:
        async for _ in local_client.validation.job(4).rows():
            pass
    assert "bytes of the result" not in str(info.value)


@pytest.mark.parametrize("piece", [1, 2, 5, 64, 1 << 16])
@pytest.mark.parametrize("bom", [b"", b"\xef\xbb\xbf"])
async def test_a_byte_that_is_not_utf8_is_named_by_its_offset(
    local: LocalServer, local_client: asyncsdk.Client, tmp_path: Path, piece: int,
    bom: bytes,
) -> None:
    good = bom + (HEADER + ROW * 3).encode() + "b\u00e9\u20ac@x.y,".encode()
    body = good + b"\xff,Valid,1\r\n"
    local.routes[DOWNLOAD_PATH] = streaming(body, "text/csv", piece)
    job = local_client.validation.job(4)
    with pytest.raises(asyncsdk.ResponseDecodeError, match=f"at byte {len(good):,}"):
        async for _ in job.rows():
            pass
    with pytest.raises(asyncsdk.ResponseDecodeError, match=f"at byte {len(good):,}"):
        await job.download(tmp_path / "o.csv")
    assert os.listdir(tmp_path) == []


def refusing(status: int, body: bytes = b"<Error>Request has expired</Error>") -> Handler:
    async def handle(request: web.Request) -> web.StreamResponse:
        return web.Response(status=status, body=body, content_type="application/xml")
    return handle


@pytest.mark.parametrize(("status", "error"), [
    (401, asyncsdk.APIError), (403, asyncsdk.APIError), (404, asyncsdk.NotFoundError),
    (429, asyncsdk.RateLimitError), (503, asyncsdk.ServerError)])
async def test_a_refusal_of_the_hosted_result_file_is_that_hosts(
    local: LocalServer, local_client: asyncsdk.Client, tmp_path: Path, status: int,
    error: type[asyncsdk.APIError],
) -> None:
    """The JSON answer points to a result file elsewhere, whose host refuses it (an
    expired link: 403). Before: ``AuthenticationError`` "HTTP 403", as if the API key
    were wrong, though no credential went there; every refusal read as the service's."""
    local.routes[DOWNLOAD_PATH] = streaming(json.dumps(
        {"status": "success", "result": f"{local.url}/files/emaillist.csv"}).encode(),
        "application/json")
    local.routes["/files/emaillist.csv"] = refusing(status)
    job = local_client.validation.job(4)
    for attempt in (lambda: job.rows().__anext__(), lambda: job.download(tmp_path / "o.csv")):
        with pytest.raises(asyncsdk.APIError) as info:
            await attempt()
        assert type(info.value) is error
        assert info.value.status_code == status
        assert "result file hosted elsewhere could not be fetched" in str(info.value)
        assert info.value.url is not None and "/files/emaillist.csv" in info.value.url
    assert os.listdir(tmp_path) == []


async def test_the_services_own_refusal_is_still_its_own(
    local: LocalServer, local_client: asyncsdk.Client
) -> None:
    local.routes[DOWNLOAD_PATH] = refusing(403, b"")
    with pytest.raises(asyncsdk.AuthenticationError) as info:
        await local_client.validation.job(4).rows().__anext__()
    assert "hosted" not in str(info.value)


PROCESSING = "List is currently Processing. Please wait some times."


@pytest.mark.parametrize("rows", [0, 10, 5_000])  # 5,000 rows: past the 64 KiB kept
@pytest.mark.parametrize("result_first", [True, False])
@pytest.mark.parametrize("piece", [7, 1 << 16])
async def test_a_json_refusal_is_the_mapped_error_whatever_the_result_before_it(
    local: LocalServer, local_client: asyncsdk.Client, tmp_path: Path, rows: int,
    result_first: bool, piece: int,
) -> None:
    """Before: a ``result`` longer than the start kept for the interpreter, ahead of
    ``"status": "fail"``, made the refusal "answer is not JSON" (ResponseDecodeError)
    instead of the service's error (here JobNotReadyError)."""
    members = [("result", HEADER + ROW * rows), ("status", "fail"), ("error", PROCESSING)]
    if not result_first:
        members.reverse()
    local.routes[DOWNLOAD_PATH] = streaming(json.dumps(dict(members)).encode(),
                                            "application/json", piece)
    job = local_client.validation.job(4)
    with pytest.raises(asyncsdk.JobNotReadyError, match="currently Processing"):
        await read_into([], job)
    with pytest.raises(asyncsdk.JobNotReadyError):
        await job.download(tmp_path / "o.csv")
    assert os.listdir(tmp_path) == []
