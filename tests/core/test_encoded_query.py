"""The pre-encoded URL and query of the request path (``_transport.build_call``) sends what
aiohttp would have sent from ``params``, and keeps every credential out of sight."""

from __future__ import annotations

import contextlib

import pytest
from yarl import URL

from asyncsdk import APIError
from asyncsdk._core import answer as _answer
from asyncsdk._core import urls as _url
from asyncsdk._core.answer import Call
from asyncsdk._core.credentials import Area, Credentials, encode_query
from asyncsdk._core.urls import wire_url
from asyncsdk.resources.validation.resource import CHECK
from asyncsdk.testing import Sandbox

VALUES = ["someone@example.com", "a b+c&d=e;f%g/h?i:j@k#l", "ünï€ode😀", "'\"!$()*,~", "",
          0, 20, 2**70, -5, -(2**70), 1.5, 20.0, 1e-7, 1e20, -2.5e+300]
BASES = ["http://127.0.0.1:8080/api/v1/single/check", "https://h.example/p%20q/ä b/x",
         "http://[::1]:9/a", "https://u:p%40ss@h.example:443/x", "http://Bücher.example",
         "http://h.example/a/./b/../c", "http://h.example:80/x%2Fy"]


@pytest.fixture(params=["probed", "public"])
def url_builder(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> str:
    """Both ways ``Call.target`` builds its URL: yarl's uncached constructor (the one
    the probe chose) and ``URL.build`` (the fallback)."""
    if request.param == "public":
        monkeypatch.setattr(_answer, "url_from_parts", _url.built_url)
    return str(request.param)


def test_uncached_url_constructor_is_live() -> None:
    """The probe accepts this yarl's uncached constructor (else every check pays a
    cache miss in ``URL.build``; the equivalence tests would pass either way)."""
    import yarl._url

    assert _url.url_from_parts is yarl._url.from_parts_uncached


@pytest.mark.parametrize("base", BASES)
@pytest.mark.parametrize("value", VALUES)
def test_encoded_url_equals_what_aiohttp_builds(base: str, value: object,
                                                url_builder: str) -> None:
    creds = Credentials("k&y+ /ä%", "us=er")
    params = {"email": value, "tim e": value}
    wire = wire_url(base)
    tail = encode_query(params)
    assert wire is not None and tail is not None
    ours = Call(CHECK, base, params, wire, tail + "&" if tail else "",
                creds.query_part(Area.VALIDATION, "x")).target()
    theirs = URL(base).extend_query({**params, "api": creds.api_key, "username": creds.username})
    assert isinstance(ours, URL)
    assert ours == theirs and str(ours) == str(theirs)
    assert (ours.scheme, ours.raw_authority, ours.raw_path, ours.raw_query_string) == (
        theirs.scheme, theirs.raw_authority, theirs.raw_path, theirs.raw_query_string)
    assert list(ours.query.items()) == list(theirs.query.items())


@pytest.mark.parametrize("value", [True, None, float("inf"), float("nan"), [1, 2], b"x"])
def test_values_aiohttp_must_judge_are_left_to_it(value: object) -> None:
    assert encode_query({"a": value}) is None


@pytest.mark.parametrize("base", ["http://h/p?x=1", "http://h/p#f", "/relative", "http://h/p?"])
def test_urls_of_their_own_shape_are_left_to_aiohttp(base: str) -> None:
    assert wire_url(base) is None


def test_query_part_is_redacted_and_call_shows_no_credential() -> None:
    creds = Credentials("s3cr3tkey", "s3cr3tuser")
    part = creds.query_part(Area.VALIDATION, "validation.check")
    assert "s3cr3t" not in repr(part) + str(part)
    assert part.reveal() == "api=s3cr3tkey&username=s3cr3tuser"
    assert creds.query_part(Area.MAIL, "mail.send").reveal() == ""  # form area
    call = Call(CHECK, "http://h/api/v1/single/check", {"email": "a@b.c"},
                ("http", "h", "/api/v1/single/check"), "email=a%40b.c&", part)
    shown = call.shown_url + repr(call)
    assert "s3cr3t" not in shown
    assert call.shown_url == ("http://h/api/v1/single/check?email=a%40b.c&api=REDACTED"
                              "&username=REDACTED")


@pytest.mark.parametrize("email", ['"a b+c&d=e"@exämple.com', "x%41;y@h.io", "ü+@[IPv6:::1]"])
@pytest.mark.parametrize("validity", [7, 2.5])
async def test_the_service_receives_exactly_what_check_was_given(
        email: str, validity: float) -> None:
    key, user = "k &+=%ä/y", "u?s#er"
    async with Sandbox(api_key=key, username=user) as sb:
        async with sb.client() as client:
            with contextlib.suppress(APIError):  # the sandbox may judge it invalid
                await client.validation.check(email, validity_timeout=validity)
        (seen,) = sb.requests
    assert seen.query == {"email": email, "timeout": str(validity), "api": key,
                          "username": user}


@pytest.mark.parametrize("email", ["someone@example.com", '"a b+c&d=e"@exämple.com',
                                   "a+b&c=d;e/f?g:h%41@k.io", "ünï€ode😀@x", "'!$()*,~@y",
                                   "x@y@z", "ü+@[IPv6:::1]"])
async def test_a_check_with_the_default_validity_timeout_sends_what_aiohttp_would(
        email: str) -> None:
    """``check`` encodes its default query itself (the address alone changes): what the
    service receives is what the general encoding sends."""
    from asyncsdk import _constants
    from asyncsdk._core.credentials import quote_value
    from asyncsdk.resources.validation.resource import _DEFAULT_CHECK_QUERY_TAIL

    timeout = _constants.DEFAULT_VALIDITY_TIMEOUT
    assert ("email=" + quote_value(email) + _DEFAULT_CHECK_QUERY_TAIL
            == encode_query({"email": email, "timeout": timeout}))
    key, user = "k &+=%ä/y", "u?s#er"
    async with Sandbox(api_key=key, username=user) as sb:
        async with sb.client() as client:
            with contextlib.suppress(APIError):  # the sandbox may judge it invalid
                await client.validation.check(email)
        (seen,) = sb.requests
    assert seen.query == {"email": email, "timeout": str(timeout), "api": key,
                          "username": user}


def test_the_address_alone_encoded_is_what_encode_query_gives() -> None:
    """Any text at all (hypothesis), not only addresses: ``check``'s own encoding of its
    default query equals ``encode_query``'s."""
    from hypothesis import given
    from hypothesis import strategies as st

    from asyncsdk import _constants
    from asyncsdk._core.credentials import quote_value
    from asyncsdk.resources.validation.resource import _DEFAULT_CHECK_QUERY_TAIL

    @given(st.text(max_size=80))
    def same(email: str) -> None:
        expected = encode_query({"email": email, "timeout": _constants.DEFAULT_VALIDITY_TIMEOUT})
        assert "email=" + quote_value(email) + _DEFAULT_CHECK_QUERY_TAIL == expected

    same()
