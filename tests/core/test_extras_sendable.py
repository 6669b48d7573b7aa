"""``Extras`` (``_core.operation``) against what aiohttp and yarl send (issue 38): whatever
``extra_headers=`` / ``extra_query=`` a call accepts reaches a real server on 127.0.0.1
as given; whatever it refuses is an ``InvalidInputError`` naming the argument and the
key, and nothing is sent. Before, NUL/VT/DEL/ESC in a header value, NaN, infinities and
a 5,000-digit integer in the query passed the checks and failed in aiohttp or yarl with
a bare ``ValueError`` at send time."""

from __future__ import annotations

import asyncio
import re
from collections.abc import Iterator
from typing import Any

import pytest
from aiohttp import web
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st

import asyncsdk

#: Any character, surrogates and C0/C1 controls included (``st.text`` leaves surrogates
#: out), with those a header or a query treats specially.
_ANY_CHAR = st.one_of(
    st.characters(blacklist_categories=()),
    st.sampled_from(["\x00", "\t", "\x0b", "\x1b", "\x7f", "\x85", "\ud800", "\udfff",
                     "\u2028", "\r", "\n", " ", ":", "&", "=", "+", "%", "#", "\x9b"]))
#: Text without controls or surrogates: what a header value or query text may be.
_PLAIN = st.characters(blacklist_categories=("Cc", "Cs", "Zl", "Zp"))
_TOKEN = st.from_regex(r"[!#$%&'*+\-.^_`|~0-9A-Za-z]{1,12}", fullmatch=True)


def _mostly(good: st.SearchStrategy[Any], other: st.SearchStrategy[Any],
            ) -> st.SearchStrategy[Any]:
    """``good`` three times in four, else ``other``: with two keys, about half the drawn
    extras are acceptable, and the property holds for those as for refused ones."""
    return st.integers(0, 3).flatmap(lambda n: good if n else other)


_HEADER_NAMES = _mostly(_TOKEN, st.one_of(
    st.text(_ANY_CHAR, max_size=6),
    st.sampled_from(["X-Tenant", "Content-Length", "transfer-encoding", "User-Agent"])))
_HEADER_VALUES = _mostly(
    st.one_of(st.text(_PLAIN, max_size=16),
              st.sampled_from(["Bearer abc", " padded\t", "é€ 日本", "a\tb", ""])),
    st.one_of(st.text(_ANY_CHAR, max_size=6), st.integers(), st.none()))
#: Near Python's limit on the digits of an int written out (4300 by default).
_HUGE = st.builds(lambda n, less: 10**n - less, st.integers(4290, 5000), st.integers(0, 1))
_QUERY_VALUES = _mostly(
    st.one_of(st.text(_PLAIN, max_size=16), st.integers(), _HUGE.map(lambda n: n // 10),
              st.floats(allow_nan=False, allow_infinity=False)),
    st.one_of(st.text(_ANY_CHAR, min_size=1, max_size=8), _HUGE, st.floats(),
              st.booleans(), st.none(), st.binary(max_size=4)))
_QUERY_NAMES = _mostly(
    st.text(_PLAIN, min_size=1, max_size=8),
    st.one_of(st.text(_ANY_CHAR, max_size=8),
              st.sampled_from(["api_key", "API", "Username", "api_key\udc80"])))


class _Service:
    """A server that answers every request with ``[]`` (a contacts listing) and keeps
    it, on an event loop of its own (hypothesis runs the examples synchronously)."""

    def __init__(self) -> None:
        self.loop = asyncio.new_event_loop()
        self.seen: list[web.Request] = []
        # Large limits: a request the server refuses must be the checks' fault, never
        # that of two 4,300-digit values in one query line.
        self.runner = web.AppRunner(self._app(), max_line_size=1 << 16,
                                    max_field_size=1 << 16)
        self.loop.run_until_complete(self._start())

    def _app(self) -> web.Application:
        async def handle(request: web.Request) -> web.Response:
            self.seen.append(request)
            return web.json_response([])

        app = web.Application()
        app.router.add_route("*", "/{tail:.*}", handle)
        return app

    async def _start(self) -> None:
        await self.runner.setup()
        await web.TCPSite(self.runner, "127.0.0.1", 0).start()
        self.client = asyncsdk.Client(
            "k3y", "us3r", base_url=f"http://127.0.0.1:{self.runner.addresses[0][1]}")

    def call(self, headers: Any, query: Any) -> None:
        """``contacts.list`` with these extras (None where empty), to completion."""
        self.loop.run_until_complete(self.client.contacts.list(
            extra_headers=headers or None, extra_query=query or None))

    def close(self) -> None:
        async def stop() -> None:
            await self.client.close()
            await self.runner.cleanup()

        self.loop.run_until_complete(stop())
        self.loop.close()


@pytest.fixture(scope="module")
def service() -> Iterator[_Service]:
    running = _Service()
    yield running
    running.close()


def _sent_text(value: str | int | float) -> str:
    """A query value as yarl writes it (text as given, a number as ``str``)."""
    return value if isinstance(value, str) else str(value)


def _arrived(request: web.Request, headers: dict[Any, Any], query: dict[Any, Any]) -> None:
    # A server drops the white space around a value (aiohttp's from 3.12.x on; its
    # 3.12.2, the lowest declared, keeps a trailing tab): compared without it.
    arrived = {(n, v.strip(b" \t")) for n, v in request.raw_headers}
    for name, value in headers.items():
        assert (name.encode(), value.strip(" \t").encode()) in arrived
    for name, value in query.items():
        assert request.query.getall(name) == [_sent_text(value)]
    assert request.query.getall("api_key") == ["k3y"]  # the credential, once, the library's


def _refusal_names_a_key(error: asyncsdk.InvalidInputError, headers: dict[Any, Any],
                         query: dict[Any, Any]) -> None:
    assert error.field in ("extra_headers", "extra_query")
    message = str(error)
    assert message.startswith(f"{error.field}: ")
    keys = headers if error.field == "extra_headers" else query
    assert any(repr(key) in message for key in keys), message
    # A refused value is named by its key, never shown (it may be a token).
    shown = [v for v in headers.values() if isinstance(v, str) and len(v) > 3
             and v not in headers and not (v.isascii() and v.isprintable())]
    assert not any(repr(v) in message for v in shown), message


def _holds(service: _Service, headers: dict[Any, Any], query: dict[Any, Any]) -> None:
    """The property, for one call with these extras."""
    before = len(service.seen)
    try:
        service.call(headers, query)
    except asyncsdk.InvalidInputError as error:
        event(f"refused: {error.field}")
        _refusal_names_a_key(error, headers, query)
        assert len(service.seen) == before  # nothing sent
        return
    event("accepted")
    (request,) = service.seen[before:]  # sent once, and the server took it
    _arrived(request, headers, query)


_SETTINGS = settings(max_examples=200, deadline=None,
                     suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])


@_SETTINGS
@given(headers=st.dictionaries(_HEADER_NAMES, _HEADER_VALUES, min_size=1, max_size=2))
def test_accepted_headers_arrive_as_given_and_refused_ones_name_their_key(
        service: _Service, headers: dict[Any, Any]) -> None:
    _holds(service, headers, {})


@_SETTINGS
@given(query=st.dictionaries(_QUERY_NAMES, _QUERY_VALUES, min_size=1, max_size=2))
def test_accepted_query_fields_arrive_as_given_and_refused_ones_name_their_key(
        service: _Service, query: dict[Any, Any]) -> None:
    _holds(service, {}, query)


@_SETTINGS
@given(headers=st.dictionaries(_HEADER_NAMES, _HEADER_VALUES, max_size=2),
       query=st.dictionaries(_QUERY_NAMES, _QUERY_VALUES, max_size=2))
def test_both_at_once(service: _Service, headers: dict[Any, Any],
                      query: dict[Any, Any]) -> None:
    _holds(service, headers, query)


@pytest.mark.parametrize("value", ["a\x00", "\x0b", "x\x7f", "\x1b[31m"])
def test_each_control_character_aiohttp_refuses_is_refused_first(
        service: _Service, value: str) -> None:
    """The four header probes of the issue, by the property's path (a regression check
    that does not depend on the examples hypothesis draws)."""
    before = len(service.seen)
    with pytest.raises(asyncsdk.InvalidInputError, match=re.escape("'X-Tenant': ")):
        service.call({"X-Tenant": value}, None)
    assert len(service.seen) == before
