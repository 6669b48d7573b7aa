"""A small answer is read whole, however the server cut it into writes, and a caller's
session's trace configs see the body read."""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager

import aiohttp
import pytest

import asyncsdk

BODY = json.dumps({"email": "a@b.com", "status": "success", "result": "Valid",
                   "role": False, "pad": "x" * 3000}).encode()
HEAD = (b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n"
        b"Content-Length: " + str(len(BODY)).encode() + b"\r\n\r\n")

#: How the server writes one answer: pieces, with loop turns between them.
Writes = Callable[[], list[bytes]]
CUTS: dict[str, Writes] = {
    "one write": lambda: [HEAD + BODY],
    "head, then the body": lambda: [HEAD, BODY],
    "head and a byte, then the rest": lambda: [HEAD + BODY[:1], BODY[1:]],
    "many small pieces": lambda: [HEAD[:7], HEAD[7:]]
    + [BODY[i:i + 97] for i in range(0, len(BODY), 97)],
}


@asynccontextmanager
async def cutting_server(writes: Writes,
                         connections: list[int] | None = None) -> AsyncIterator[str]:
    async def serve(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        if connections is not None:
            connections.append(1)
        try:
            while await reader.readuntil(b"\r\n\r\n"):
                for piece in writes():
                    writer.write(piece)
                    await writer.drain()
                    for _ in range(3):  # let the client run between pieces
                        await asyncio.sleep(0)
        except (asyncio.IncompleteReadError, ConnectionError):
            pass
        finally:
            writer.close()

    server = await asyncio.start_server(serve, "127.0.0.1", 0)
    port = server.sockets[0].getsockname()[1]
    try:
        yield f"http://127.0.0.1:{port}"
    finally:
        server.close()
        await server.wait_closed()


@pytest.mark.parametrize("cut", list(CUTS))
async def test_the_whole_small_answer_is_read_however_it_was_cut(cut: str) -> None:
    """...and the connection goes back to the pool each time (the answer is released,
    or closed by aiohttp at its end): one connection serves every check."""
    connections: list[int] = []
    async with cutting_server(CUTS[cut], connections) as base, asyncsdk.Client(
            api_key="k", username="u", base_url=base) as client:
        for _ in range(4):  # a fresh connection, then the pooled one
            result = await client.validation.check("a@b.com")
            assert result.email == "a@b.com" and result.extra == {"pad": "x" * 3000}
    assert len(connections) == 1


async def test_a_callers_session_traces_see_the_body_read() -> None:
    """On a caller's session the body is read by aiohttp's ``read``: their
    ``on_response_chunk_received`` traces see it."""
    chunks: list[bytes] = []

    async def on_chunk(session: object, context: object,
                       params: aiohttp.TraceResponseChunkReceivedParams) -> None:
        chunks.append(params.chunk)

    trace = aiohttp.TraceConfig()
    trace.on_response_chunk_received.append(on_chunk)
    async with (cutting_server(CUTS["one write"]) as base,
                aiohttp.ClientSession(trace_configs=[trace]) as session,
                asyncsdk.Client(api_key="k", username="u", base_url=base,
                                session=session) as client):
        await client.validation.check("a@b.com")
    assert b"".join(chunks) == BODY
