"""Bounds on what an answer may cost: the wait for a pooled connection, the decompressed
size of a body, and the time a large answer holds the event loop."""

from __future__ import annotations

import asyncio
import threading
from typing import Any

import pytest
from scripted_server import CHECK_PATH, DOWNLOAD_PATH, dumps, scripted_server

import asyncsdk
from asyncsdk import _constants
from asyncsdk._core import answer as _answer

HANG = 10.0  # only reached if the call hangs: the test then fails


async def test_a_stream_waiting_for_a_pooled_connection_times_out() -> None:
    async with scripted_server() as server:
        server.on(CHECK_PATH, server.stall())
        server.on(DOWNLOAD_PATH, server.answer({"status": "success", "result": "Email\n"}))
        async with asyncsdk.Client("k", "u", base_url=server.base_url, max_connections=1,
                                   max_retries=0) as client:
            holder = asyncio.ensure_future(client.validation.check("a@b.com"))
            await server.wait_for_hits(CHECK_PATH, 1)  # the only connection is taken

            async def rows() -> list[Any]:
                return [r async for r in client.validation.job(1).rows(request_timeout=0.2)]

            with pytest.raises(asyncsdk.APITimeoutError):
                await asyncio.wait_for(rows(), HANG)  # before: waited forever
            holder.cancel()
            with pytest.raises(asyncio.CancelledError):
                await holder


@pytest.mark.parametrize("encoding_path", ["check", "list"])
async def test_a_compressed_answer_is_capped_once_inflated(
    monkeypatch: pytest.MonkeyPatch, encoding_path: str
) -> None:
    cap = 256 * 1024
    monkeypatch.setattr(_constants, "MAX_JSON_BODY_BYTES", cap)
    big = dumps({"email": "a" * (4 * cap), "status": "success", "result": "Valid",
                 "role": False})
    async with scripted_server() as server:
        path = CHECK_PATH if encoding_path == "check" else "/api/v1/contact/"
        server.on(path, server.gzip_bomb(big))
        async with asyncsdk.Client("k", "u", base_url=server.base_url) as client:
            call = (client.validation.check("a@b.com") if encoding_path == "check"
                    else client.contacts.list())
            with pytest.raises(asyncsdk.ResponseDecodeError, match="cap"):
                await call  # before: inflated to 4x the cap and decoded


async def test_a_compressed_answer_under_the_cap_is_read() -> None:
    async with scripted_server() as server:
        server.on(CHECK_PATH, server.gzip_bomb(dumps(
            {"email": "a@b.com", "status": "success", "result": "Valid", "role": False})))
        async with asyncsdk.Client("k", "u", base_url=server.base_url) as client:
            assert (await client.validation.check("a@b.com")).email == "a@b.com"


def _contact_lists(n: int) -> list[dict[str, Any]]:
    return [{"id": i, "name": f"list {i}", "is_email": True, "is_push": False,
             "is_sms": False, "emaillist": []} for i in range(n)]


async def test_a_large_answer_is_decoded_off_the_loop_while_the_loop_ticks(
    monkeypatch: pytest.MonkeyPatch
) -> None:
    """Above ``OFFLOAD_DECODE_BYTES`` parse and decode run in a worker thread: a
    heartbeat task keeps ticking *during* the decode (the decode waits for it)."""
    monkeypatch.setattr(_constants, "OFFLOAD_DECODE_BYTES", 4096)
    ticks = 0
    ticked = threading.Event()
    threads: list[int] = []
    real = _answer.decode_list

    def decode_list(data: Any, model: Any, *rest: Any) -> Any:
        threads.append(threading.get_ident())
        ticked.wait(HANG)  # on the loop thread this would block the heartbeat: no ticks
        return real(data, model, *rest)

    monkeypatch.setattr(_answer, "decode_list", decode_list)

    async def heartbeat() -> None:
        nonlocal ticks
        while True:
            await asyncio.sleep(0)
            ticks += 1
            if ticks >= 3:
                ticked.set()

    async with scripted_server() as server:
        server.on("/api/v1/contact/", server.answer(_contact_lists(200)))
        async with asyncsdk.Client("k", "u", base_url=server.base_url) as client:
            beat = asyncio.ensure_future(heartbeat())
            try:
                lists = await client.contacts.list()
            finally:
                beat.cancel()
    assert len(lists) == 200
    assert threads and threads[0] != threading.get_ident()
    assert ticked.is_set()


async def test_a_small_answer_is_decoded_on_the_loop(monkeypatch: pytest.MonkeyPatch) -> None:
    threads: list[int] = []
    real = _answer.decode_list

    def decode_list(data: Any, model: Any, *rest: Any) -> Any:
        threads.append(threading.get_ident())
        return real(data, model, *rest)

    monkeypatch.setattr(_answer, "decode_list", decode_list)
    async with scripted_server() as server:
        server.on("/api/v1/contact/", server.answer(_contact_lists(2)))
        async with asyncsdk.Client("k", "u", base_url=server.base_url) as client:
            await client.contacts.list()
    assert threads == [threading.get_ident()]  # no thread hop for the common case
