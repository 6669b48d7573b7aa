"""The client's own connections read ``RECEIVE_BYTES`` at a time (``_session.SmallReads``):
asyncio asks for 256 KiB per read, above glibc's mmap threshold, and a small answer can
then cost a fresh mapping, page faults and an unmapping on every read (cpython#85451).
A caller's session is left as it was built."""

from __future__ import annotations

import asyncio
import functools
from typing import Any

import aiohttp
import pytest
import trustme
from aiohttp.client_proto import ResponseHandler
from helpers import tls_server, trusting

from asyncsdk import _constants as C
from asyncsdk._core.session import SmallReads, own_connector, read_in_small_pieces
from asyncsdk.testing import Sandbox

ASYNCIO_READ = 256 * 1024


@pytest.fixture
def transports(monkeypatch: pytest.MonkeyPatch) -> list[asyncio.BaseTransport]:
    """Every transport a protocol of aiohttp's (the library's included) is given."""
    made: list[asyncio.BaseTransport] = []
    original = ResponseHandler.connection_made

    def spy(self: ResponseHandler, transport: asyncio.BaseTransport) -> None:
        made.append(transport)
        original(self, transport)

    monkeypatch.setattr(ResponseHandler, "connection_made", spy)
    return made


def read_size(transport: asyncio.BaseTransport) -> Any:
    """What one read of ``transport`` asks for (the TLS layer's, for a TLS connection)."""
    return getattr(transport, "_ssl_protocol", transport).max_size  # type: ignore[attr-defined]


async def test_asyncio_and_aiohttp_still_have_what_the_setting_uses() -> None:
    """The version guard: asyncio's socket transport and TLS layer read ``max_size``
    (256 KiB), and aiohttp builds each connection's protocol with ``_factory``."""
    from asyncio import selector_events, sslproto

    assert selector_events._SelectorSocketTransport.max_size == ASYNCIO_READ
    assert sslproto.SSLProtocol.max_size == ASYNCIO_READ
    assert ASYNCIO_READ > C.RECEIVE_BYTES
    connector = own_connector(7)
    factory = connector._factory  # type: ignore[attr-defined]
    assert isinstance(factory, functools.partial) and factory.func is SmallReads
    assert connector.limit == 7 and connector.limit_per_host == 0
    plain = aiohttp.TCPConnector()
    assert plain._factory.func is ResponseHandler  # type: ignore[attr-defined]
    await asyncio.gather(connector.close(), plain.close())


async def test_own_connections_read_in_small_pieces(
        transports: list[asyncio.BaseTransport]) -> None:
    async with Sandbox() as sb, sb.client() as client:
        await asyncio.gather(*(client.validation.check(f"a{i}@example.com") for i in range(3)))
        assert await client.contacts.list() == []
    assert len(transports) >= 3
    assert {read_size(t) for t in transports} == {C.RECEIVE_BYTES}


async def test_a_big_answer_arrives_whole_in_small_reads(
        transports: list[asyncio.BaseTransport]) -> None:
    """A body of many reads: a 200,000-row job result, both streamed shapes."""
    for shape in ("csv", "json"):
        async with Sandbox(download_shape=shape) as sb, sb.client() as client:
            job = client.validation.job(sb.make_job(rows=200_000))
            count = 0
            async for row in job.rows():
                assert row.name == f"User {count}", row
                assert row.email.split("@")[0].endswith(str(count)), row
                count += 1
            assert count == 200_000
    assert transports and {read_size(t) for t in transports} == {C.RECEIVE_BYTES}


async def test_a_callers_session_is_left_as_built(
        transports: list[asyncio.BaseTransport]) -> None:
    async with Sandbox() as sb, aiohttp.ClientSession() as session, sb.client(
            session=session) as client:
        await client.validation.check("a@example.com")
    assert transports and {read_size(t) for t in transports} == {ASYNCIO_READ}


async def test_tls_connections_read_in_small_pieces_in_their_tls_layer(
        transports: list[asyncio.BaseTransport]) -> None:
    import asyncsdk

    ca = trustme.CA()
    big = [{"id": i, "name": "x" * 200} for i in range(2_000)]  # about 450 KB of JSON
    async with tls_server(ca, big) as (base, _), asyncsdk.Client(
            "k", "u", base_url=base, ssl=trusting(ca)) as client:
        listed = await client.contacts.list()
    assert [(c.id, c.name) for c in listed] == [(c["id"], c["name"]) for c in big]
    assert transports and all(hasattr(t, "_ssl_protocol") for t in transports)
    assert {read_size(t) for t in transports} == {C.RECEIVE_BYTES}


class _NoSetting:
    """A transport that reads with a buffer of its own (as uvloop's do)."""


class _Fixed:
    """A transport whose read size cannot be changed (a compiled loop's)."""

    @property
    def max_size(self) -> int:
        return ASYNCIO_READ


class _Small:
    max_size = 4096


@pytest.mark.parametrize("transport", [_NoSetting(), _Fixed(), _Small()],
                         ids=["no max_size", "read-only", "already small"])
def test_transports_it_cannot_or_need_not_change_are_left_alone(transport: Any) -> None:
    before = getattr(transport, "max_size", None)
    assert read_in_small_pieces(transport) is False
    assert getattr(transport, "max_size", None) == before
