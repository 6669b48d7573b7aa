"""aiohttp silently resends an idempotent-method request when the connection drops; an
operation declared unsafe (jobs/create is a GET) must reach the server only once."""

from __future__ import annotations

import asyncio

import pytest

import asyncsdk
from asyncsdk._transport import Area, Operation


async def start_dropping_server() -> tuple[asyncio.AbstractServer, list[bytes], int]:
    """A server that reads each request line and closes without answering."""
    seen: list[bytes] = []

    async def handle(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        line = await reader.readline()
        seen.append(line)
        while (await reader.readline()) not in (b"\r\n", b""):
            pass
        writer.close()

    server = await asyncio.start_server(handle, "127.0.0.1", 0)
    port = server.sockets[0].getsockname()[1]
    return server, seen, port


@pytest.mark.parametrize(("safe", "expected_sends"), [(False, 1), (True, 2)])
async def test_unsafe_get_is_not_resent_by_aiohttp(safe: bool, expected_sends: int) -> None:
    server, seen, port = await start_dropping_server()
    op = Operation("validation.create_job", "GET", Area.VALIDATION, "/api/v1/jobs/create", safe)
    try:
        async with asyncsdk.Client("k", "u", base_url=f"http://127.0.0.1:{port}",
                                   max_retries=0) as client:
            with pytest.raises(asyncsdk.APIConnectionError) as info:
                await client._transport.request(op, params={"file_name": "x"})
    finally:
        server.close()
        await server.wait_closed()
    # The safe variant shows the hazard (aiohttp's own resend); the unsafe one avoids it.
    assert len(seen) == expected_sends
    assert all(line.startswith(b"GET /api/v1/jobs/create?") for line in seen)
    assert info.value.may_have_been_sent is True
