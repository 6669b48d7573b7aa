"""The sandbox's own errors, as a user meets them: an argument it cannot use is refused
when it is made, naming it, and a closed sandbox says it is closed."""

from __future__ import annotations

import socket
from typing import Any

import pytest

import asyncsdk
from asyncsdk.testing import Sandbox


@pytest.mark.parametrize(("options", "field"), [
    ({"verified_domains": "example.com"}, "verified_domains"),  # each letter verified
    ({"verified_domains": b"example.com"}, "verified_domains"),
    ({"verified_domains": 3}, "verified_domains"),
    ({"verified_domains": ["ann@example.com"]}, "verified_domains"),
    ({"verified_domains": [""]}, "verified_domains"),
    ({"verified_domains": [None]}, "verified_domains"),
    ({"rules": "strict"}, "rules"),  # every check answered 500
    ({"rules": {"disposable_domains": []}}, "rules"),
    ({"port": -1}, "port"),
    ({"port": 65536}, "port"),
    ({"port": "8080"}, "port"),
    ({"port": 80.0}, "port"),
    ({"port": True}, "port"),
    ({"host": ""}, "host"),
    ({"host": None}, "host"),
])
def test_an_argument_the_sandbox_cannot_use_is_refused_when_made(
        options: dict[str, Any], field: str) -> None:
    with pytest.raises(asyncsdk.InvalidInputError) as caught:
        Sandbox(**options)
    assert caught.value.field == field
    assert str(caught.value).startswith(f"{field}: expected ")


async def test_verify_domain_refuses_what_is_no_domain() -> None:
    sb = Sandbox()
    for bad in ("", ".", "a b.example", "x@example.com", 5):
        with pytest.raises(asyncsdk.InvalidInputError, match="expected a domain name"):
            sb.verify_domain(bad)  # type: ignore[arg-type]
    sb.verify_domain("Example.COM")
    assert sb.state.verified_domains == {"example.com"}


async def test_a_port_in_use_is_an_oserror_naming_it() -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        sb = Sandbox(port=port)
        with pytest.raises(OSError, match=str(port)):
            await sb.start()
    with pytest.raises(RuntimeError, match="not started"):
        sb.client()  # the failed start left nothing half-open


async def test_a_closed_sandbox_says_so_where_it_is_used() -> None:
    sb = Sandbox()
    async with sb:
        served = sb.base_url
    await sb.close()  # twice: nothing more
    assert sb.base_url == served  # still says where it served
    for use in (sb.client, lambda: sb.host_file(b"ann@example.com\n")):
        with pytest.raises(RuntimeError, match="the sandbox is closed"):
            use()
    async with sb:  # started again: usable again
        async with sb.client() as client:
            await client.validation.check("ann@example.com")
        assert sb.host_file(b"ann@example.com\n").startswith(sb.base_url)
