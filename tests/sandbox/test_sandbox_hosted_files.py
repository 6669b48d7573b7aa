"""jobs/create reads the whole hosted file: at every size, however the bytes arrive, up
to the size limit and not one byte past it (issue 38, item 2: one ``read(n)`` took what
was buffered, ~64 KiB, and dropped the rest without a word)."""

from __future__ import annotations

import asyncio
import csv
import io
from collections.abc import AsyncIterator, Sequence
from contextlib import asynccontextmanager

import pytest
from aiohttp import web
from auth_helpers import serve
from sandbox_helpers import Api

from asyncsdk.testing import Sandbox

# Finished at once, so a test downloads without polling.
pytestmark = pytest.mark.asyncsdk_sandbox(job_polls=0)

NOT_DOWNLOADABLE = {"status": "fail", "error": "File is not downloadable."}


def address_file(count: int, name: str = "User") -> bytes:
    """A CSV of ``count`` addresses ``user<i>@example.com`` named ``<name> <i>``."""
    rows = "".join(f"user{i}@example.com,{name} {i}\n" for i in range(count))
    return f"email,name\n{rows}".encode()


def addresses(count: int) -> list[str]:
    return [f"user{i}@example.com" for i in range(count)]


@asynccontextmanager
async def served_in_pieces(data: bytes, cuts: Sequence[int]) -> AsyncIterator[str]:
    """Serve ``data`` from a server of this test, cut at the offsets ``cuts``: chunked
    transfer (no Content-Length), each piece written and drained on its own, a gap
    between pieces so the reader takes each piece alone. Yields the file's URL."""

    async def pieces(request: web.Request) -> web.StreamResponse:
        response = web.StreamResponse(headers={"Content-Type": "text/csv"})
        await response.prepare(request)
        start = 0
        for end in [*cuts, len(data)]:
            await response.write(data[start:end])
            # A gap, not a wait for anything: the piece sent is already in the reader's
            # socket, so the reader (on this loop) takes it alone before the next is sent.
            await asyncio.sleep(0.001)
            start = end
        await response.write_eof()
        return response

    async with serve(pieces) as base:
        yield f"{base}/list.csv"


async def job_rows(api: Api, url: str) -> list[dict[str, str]]:
    """Submit ``url`` as a job and download its result: the rows the user gets."""
    created = await api.create_job(url)
    assert created["status"] == "success", created
    query = {"api": api.sb.api_key, "username": api.sb.username,
             "job_id": str(created["job_id"])}
    async with api.http.get("/api/v1/jobs/download", params=query) as resp:
        assert resp.status == 200
        text = await resp.text()
    return list(csv.DictReader(io.StringIO(text)))


@asynccontextmanager
async def hosted(sandbox: Sandbox, data: bytes, pieces_of: int | None) -> AsyncIterator[str]:
    """A URL of ``data``: the sandbox's own (``pieces_of=None``: sent with its
    Content-Length, in one write) or this test's server sending pieces of ``pieces_of``
    bytes (chunked: no length known before the end)."""
    if pieces_of is None:
        yield sandbox.host_file(data)
        return
    async with served_in_pieces(data, range(pieces_of, len(data), pieces_of)) as url:
        yield url


DELIVERIES = pytest.mark.parametrize(
    "pieces_of", [None, 64 * 1024], ids=["content-length", "chunked-64KiB"]
)


@pytest.mark.parametrize(
    ("count", "smallest", "largest"),
    [
        (3, 0, 1024),
        (2_200, 64 * 1024 + 1, 66 * 1024),  # just over 64 KiB: where addresses went missing
        (33_000, 1024 * 1024, 1100 * 1024),  # about 1 MiB
        (100_000, 3 * 1024 * 1024, 4 * 1024 * 1024),  # the README's first command at scale
    ],
    ids=["small", "just-over-64KiB", "about-1MiB", "100000-addresses"],
)
@DELIVERIES
async def test_every_address_of_a_hosted_file_comes_back_once(
    api: Api, sandbox: Sandbox, count: int, smallest: int, largest: int,
    pieces_of: int | None,
) -> None:
    data = address_file(count)
    assert smallest <= len(data) <= largest  # the size the test is named for
    async with hosted(sandbox, data, pieces_of) as url:
        rows = await job_rows(api, url)
    assert [row["Email"] for row in rows] == addresses(count)
    assert rows[-1]["Name"] == f"User {count - 1}"


@pytest.mark.parametrize(
    ("character", "bytes_before_the_cut"),
    [("ë", 1), ("€", 1), ("€", 2), ("😀", 1), ("😀", 3)],
    ids=["2-byte-cut-after-1", "3-byte-cut-after-1", "3-byte-cut-after-2",
         "4-byte-cut-after-1", "4-byte-cut-after-3"],
)
async def test_a_character_cut_between_two_pieces_is_read_whole(
    api: Api, character: str, bytes_before_the_cut: int
) -> None:
    data = address_file(3, name=f"Zo{character}")
    cut = data.index(character.encode()) + bytes_before_the_cut  # inside the character
    async with served_in_pieces(data, [cut]) as url:
        rows = await job_rows(api, url)
    assert [row["Name"] for row in rows] == [f"Zo{character} {i}" for i in range(3)]


@pytest.mark.parametrize("pieces_of", [None, 4096], ids=["content-length", "chunked-4KiB"])
async def test_the_size_limit_exactly_is_read_and_one_byte_over_is_refused(
    api: Api, sandbox: Sandbox, pieces_of: int | None
) -> None:
    data = address_file(4_000)  # > 64 KiB, so the limit is reached over several reads
    sandbox.settings.max_file_bytes = len(data)
    async with hosted(sandbox, data, pieces_of) as url:
        rows = await job_rows(api, url)
    assert [row["Email"] for row in rows] == addresses(4_000)
    sandbox.settings.max_file_bytes = len(data) - 1
    async with hosted(sandbox, data, pieces_of) as url:
        assert await api.create_job(url) == NOT_DOWNLOADABLE
    assert len(sandbox.state.jobs) == 1  # the refused file made no job
