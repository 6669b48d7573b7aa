"""download() and rows() at their bounds: long file names, leading blank lines, and a
client closed while they stream."""

from __future__ import annotations

import asyncio
import os
import tracemalloc
from pathlib import Path

import pytest
from helpers import API_KEY, USERNAME
from validation_tools import LocalServer, stalling, streaming

import asyncsdk
from asyncsdk.resources.validation.destination import temporary_name

DOWNLOAD_PATH = "/api/v1/jobs/download"
CSV_TEXT = "Email,Name,Status,Role Based Emails\r\na@b.com,A,Valid,True\r\n"


def name_max(folder: Path) -> int:
    return os.pathconf(folder, "PC_NAME_MAX")


@pytest.mark.parametrize("char", ["x", "é", "😀"])
async def test_download_to_the_longest_valid_file_name(
    local: LocalServer, local_client: asyncsdk.Client, tmp_path: Path, char: str
) -> None:
    """Regression: the temporary name added 15 characters, so a valid 250-character
    name failed with "File name too long"."""
    limit = name_max(tmp_path)
    name = char * (limit // len(char.encode()))
    assert len(os.fsencode(name)) <= limit
    local.routes[DOWNLOAD_PATH] = streaming(CSV_TEXT.encode(), "text/csv")
    target = tmp_path / name
    assert await local_client.validation.job(4).download(target) == 1
    assert target.read_bytes() == CSV_TEXT.encode()
    assert os.listdir(tmp_path) == [name]


def test_temporary_names_stay_within_the_limit_and_differ(tmp_path: Path) -> None:
    limit = name_max(tmp_path)
    for length in (1, 200, 240, 250, limit):
        target = str(tmp_path / ("n" * length))
        first, second = temporary_name(target), temporary_name(target)
        assert first != second
        for temp in (first, second):
            assert os.path.dirname(temp) == str(tmp_path)
            assert len(os.fsencode(os.path.basename(temp))) <= limit
            assert os.path.basename(temp).startswith(".n") and temp.endswith(".part")


@pytest.mark.parametrize("content_type", ["text/plain", "application/json"])
async def test_leading_blank_lines_are_not_buffered(
    local: LocalServer, local_client: asyncsdk.Client, content_type: str
) -> None:
    """Regression: blank lines before the header were gathered whole before reading
    (8 MiB of line ends took 305 MiB). Memory now stays within a few chunks."""
    blank = b"\r\n" * (4 * 1024 * 1024)  # 8 MiB
    rest = CSV_TEXT.encode()
    if content_type == "application/json":
        rest = b'{"status": "success", "result": "' + CSV_TEXT.replace(
            "\r\n", "\\r\\n").encode() + b'"}'
    local.routes[DOWNLOAD_PATH] = streaming(blank + rest, content_type, 65536)
    tracemalloc.start()
    try:
        rows = [r async for r in local_client.validation.job(4).rows()]
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert [r.email for r in rows] == ["a@b.com"]
    assert peak < 6 * 1024 * 1024


async def test_leading_blank_lines_of_a_csv_body_are_blank_records(
    local: LocalServer, local_client: asyncsdk.Client, tmp_path: Path
) -> None:
    """A body known to be CSV keeps its blank lines (csv reads them as empty records,
    which hold no row), read chunk by chunk: download() writes the body as sent."""
    body = b"\r\n" * 300_000 + CSV_TEXT.encode()
    local.routes[DOWNLOAD_PATH] = streaming(body, "text/csv", 65536)
    job = local_client.validation.job(4)
    assert [r.email async for r in job.rows()] == ["a@b.com"]
    assert await job.download(tmp_path / "o.csv") == 1
    assert (tmp_path / "o.csv").read_bytes() == body


@pytest.mark.parametrize("call", ["rows", "download"])
async def test_close_while_streaming_ends_the_stream_with_an_sdk_error(
    local: LocalServer, tmp_path: Path, call: str
) -> None:
    """Regression: close() while rows()/download() streamed ended them with a bare
    RuntimeError (or left them waiting forever) and left the .part file behind."""
    started = asyncio.Event()
    local.routes[DOWNLOAD_PATH] = stalling(CSV_TEXT.encode(), started)
    client = asyncsdk.Client(API_KEY, USERNAME, base_url=local.url)
    job = client.validation.job(4)

    async def consume() -> None:
        if call == "rows":
            async for _ in job.rows():
                pass
        else:
            await job.download(tmp_path / "o.csv")

    task = asyncio.ensure_future(consume())
    await started.wait()
    await client.close()
    done, _ = await asyncio.wait({task}, timeout=5.0)  # a guard against the old hang
    if not done:
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
        pytest.fail("the stream did not end after close()")
    with pytest.raises((asyncsdk.UsageError, asyncsdk.APIConnectionError)):
        await task
    assert os.listdir(tmp_path) == []


async def test_a_file_that_cannot_be_written_is_an_os_error(
    local: LocalServer, local_client: asyncsdk.Client, tmp_path: Path
) -> None:
    """The stream's failures become SDK errors; the file's own stay OSError."""
    local.routes[DOWNLOAD_PATH] = streaming(CSV_TEXT.encode(), "text/csv")
    with pytest.raises(FileNotFoundError):
        await local_client.validation.job(4).download(tmp_path / "missing" / "o.csv")
    assert os.listdir(tmp_path) == []
