"""TLS: certificates are verified by default; a private CA is trusted by ``ssl=`` or by a
session whose connector trusts it (README, "Private certificate authorities").

The server is an aiohttp.web app on 127.0.0.1 with a certificate from a trustme CA.
"""

from __future__ import annotations

import logging

import aiohttp
import pytest
import trustme
from helpers import API_KEY, USERNAME, tls_server, trusting
from reliability_helpers import assert_no_secrets, exception_text, instant

import asyncsdk


@pytest.fixture(scope="module")
def ca() -> trustme.CA:
    return trustme.CA()


async def test_unknown_ca_is_a_clear_connection_error_not_retried(
    ca: trustme.CA, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG, logger="asyncsdk")
    async with tls_server(ca) as (base, seen), asyncsdk.Client(
            API_KEY, USERNAME, base_url=base, max_retries=2, clock=instant()) as client:
        with pytest.raises(asyncsdk.APIConnectionError) as info:
            await client.contacts.list()
    error = info.value
    assert not isinstance(error, asyncsdk.APITimeoutError)
    assert error.may_have_been_sent is False
    assert "TLS" in str(error) and "certificate" in str(error)
    assert seen == []
    attempts = [r for r in caplog.records
                if r.name == "asyncsdk" and r.levelno == logging.DEBUG]
    assert len(attempts) == 1, [r.getMessage() for r in attempts]  # not retried
    assert_no_secrets(exception_text(error), *(r.getMessage() for r in caplog.records))


async def test_unknown_ca_refused_for_unsafe_operations_too(ca: trustme.CA) -> None:
    async with tls_server(ca) as (base, _), asyncsdk.Client(
            API_KEY, USERNAME, base_url=base) as client:
        with pytest.raises(asyncsdk.APIConnectionError) as info:
            await client.mail.send(sender="a@example.com", to="b@example.com",
                                   subject="s", html="<p>h</p>")
    assert info.value.may_have_been_sent is False


async def test_ssl_context_trusting_the_private_ca(ca: trustme.CA) -> None:
    async with tls_server(ca) as (base, seen), asyncsdk.Client(
            API_KEY, USERNAME, base_url=base, ssl=trusting(ca)) as client:
        lists = await client.contacts.list()
    assert [x.name for x in lists] == ["Newsletter"]
    assert seen == ["/api/v1/contact/"]


async def test_session_whose_connector_trusts_the_private_ca(ca: trustme.CA) -> None:
    async with tls_server(ca) as (base, seen):
        connector = aiohttp.TCPConnector(ssl=trusting(ca))
        async with aiohttp.ClientSession(connector=connector) as session:
            async with asyncsdk.Client(API_KEY, USERNAME, base_url=base,
                                       session=session) as client:
                lists = await client.contacts.list()
            assert not session.closed  # a caller's session stays the caller's
    assert [x.name for x in lists] == ["Newsletter"]
    assert seen == ["/api/v1/contact/"]
