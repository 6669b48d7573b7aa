"""Client configuration, session ownership, loop binding and the unclosed warning."""

from __future__ import annotations

import asyncio
import contextlib
import gc
import re
import types
import warnings
from collections.abc import Iterator, Mapping

import aiohttp
import pytest
from aiohttp import web
from auth_helpers import serve
from helpers import API_KEY, USERNAME

import asyncsdk
import asyncsdk.testing
from asyncsdk._core.credentials import Credentials, SecretValue
from asyncsdk.resources._areas import Area
from asyncsdk.testing import Sandbox

ENV_VARS = ["ASYNCSDK_API_KEY", "ASYNCSDK_USERNAME", "ASYNCSDK_BASE_URL",
            "ASYNCSDK_CONTACTS_URL", "ASYNCSDK_CRM_URL", "ASYNCSDK_INVOICING_URL",
            "ASYNCSDK_VALIDATION_URL", "ASYNCSDK_MAIL_URL"]


@pytest.fixture(autouse=True)
def clean_env(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ENV_VARS:
        monkeypatch.delenv(name, raising=False)


def urls(client: asyncsdk.Client) -> dict[Area, str | None]:
    """Each area's URL as the client shows it (``contacts_url`` and the others)."""
    return {area: getattr(client, area.argument) for area in Area}


async def first_call(client: asyncsdk.Client, base: str = "https://h") -> None:
    """A call (mocked): the client's session is made and the client bound to this loop."""
    with asyncsdk.testing.aioresponses() as mocked:
        mocked.get(f"{base}/api/v1/contact/", payload=[])
        assert await client.contacts.list() == []


def test_constructed_outside_a_loop_without_a_session() -> None:
    client = asyncsdk.Client("k", "u", base_url="https://h")
    assert client._session is None  # nothing created until the first call


def test_credentials_and_urls_from_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ASYNCSDK_API_KEY", "env-key")
    monkeypatch.setenv("ASYNCSDK_USERNAME", "env-user")
    monkeypatch.setenv("ASYNCSDK_BASE_URL", "https://base.env/")
    monkeypatch.setenv("ASYNCSDK_MAIL_URL", "https://mail.env")
    client = asyncsdk.Client()
    assert urls(client)[Area.MAIL] == "https://mail.env"
    assert urls(client)[Area.CONTACTS] == "https://base.env"


async def test_credentials_from_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ASYNCSDK_API_KEY", "env-key")
    monkeypatch.setenv("ASYNCSDK_USERNAME", "env-user")
    async with Sandbox(api_key="env-key", username="env-user") as sb, asyncsdk.Client(
            base_url=sb.base_url) as client:
        await client.validation.check("ann@example.com")  # the key and the user name


def test_arguments_beat_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ASYNCSDK_API_KEY", "env-key")
    monkeypatch.setenv("ASYNCSDK_MAIL_URL", "https://mail.env")
    monkeypatch.setenv("ASYNCSDK_CRM_URL", "https://crm.env")
    client = asyncsdk.Client("arg-key", base_url="https://base.arg", crm_url="https://crm.arg")
    # base_url= is never redirected by an area variable of the environment
    assert urls(client)[Area.MAIL] == "https://base.arg"
    assert urls(client)[Area.CRM] == "https://crm.arg"


def test_area_variable_beats_global_variable(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ASYNCSDK_BASE_URL", "https://base.env")
    monkeypatch.setenv("ASYNCSDK_INVOICING_URL", "https://inv.env")
    client = asyncsdk.Client("k")
    assert urls(client)[Area.INVOICING] == "https://inv.env"
    assert urls(client)[Area.VALIDATION] == "https://base.env"


def test_missing_api_key_names_argument_and_variable() -> None:
    with pytest.raises(asyncsdk.ConfigurationError) as info:
        asyncsdk.Client(base_url="https://h")
    assert "api_key=" in str(info.value) and "ASYNCSDK_API_KEY" in str(info.value)
    assert isinstance(info.value, asyncsdk.InvalidInputError)


async def test_missing_area_url_is_reported_on_call(mocked: object) -> None:
    async with asyncsdk.Client("k", "u", contacts_url="https://c") as client:
        with pytest.raises(asyncsdk.ConfigurationError) as info:
            await client.validation.check("a@b.com")
    message = str(info.value)
    assert "validation_url=" in message and "ASYNCSDK_VALIDATION_URL" in message


async def test_missing_username_is_reported_on_validation_call(mocked: object) -> None:
    async with asyncsdk.Client("k", base_url="https://h") as client:
        with pytest.raises(asyncsdk.ConfigurationError, match="ASYNCSDK_USERNAME"):
            await client.validation.check("a@b.com")


@pytest.mark.parametrize("bad", ["ftp://h", "h.example.com", "https://", "https:///path",
                                 "https://h:99999", "https://h:abc", "https://h\ud800",
                                 "https://h/x?tenant=1", "https://h/x#frag", "https://h?"])
def test_bad_urls_are_refused(bad: str) -> None:
    with pytest.raises(asyncsdk.ConfigurationError, match="base_url"):
        asyncsdk.Client("k", base_url=bad)


URL_ARGUMENTS = ["base_url", "contacts_url", "crm_url", "invoicing_url", "validation_url",
                 "mail_url"]


@pytest.mark.parametrize("argument", URL_ARGUMENTS)
@pytest.mark.parametrize("bad", ["", False, 0, [], b"https://h.example", 1.5])
def test_a_url_argument_given_is_checked_never_taken_for_not_given(
    monkeypatch: pytest.MonkeyPatch, argument: str, bad: object
) -> None:
    """An empty or non-text URL argument was read as "not given": the environment (or
    nothing) then chose where the requests went, silently. It is refused, naming the
    argument, whether or not another argument would have been used before it."""
    monkeypatch.setenv("ASYNCSDK_BASE_URL", "https://from-the-environment.example")
    given = {area: "https://h.example" for area in URL_ARGUMENTS[1:]}
    given[argument] = bad  # type: ignore[assignment]
    with pytest.raises(asyncsdk.ConfigurationError) as info:
        asyncsdk.Client("k", **given)  # type: ignore[arg-type]
    assert info.value.field == f"the {argument} argument"
    assert str(info.value).startswith(f"the {argument} argument: expected an absolute "
                                      "http(s) URL")


@pytest.mark.parametrize("bad", ["https://me:s3cr3tPw@h.example ", "htps://me:s3cr3tPw@h",
                                 "https://me:s3cr3t Pw@h"])
def test_a_refused_url_does_not_show_its_password(bad: str) -> None:
    with pytest.raises(asyncsdk.ConfigurationError, match="base_url") as info:
        asyncsdk.Client("k", base_url=bad)
    assert "s3cr3t" not in str(info.value) and "me:REDACTED@" in str(info.value)


@pytest.mark.parametrize(("kwargs", "field"), [
    ({"proxy": 123}, "proxy"), ({"proxy": "not a url"}, "proxy"),
    ({"proxy": "http://p:99999"}, "proxy"), ({"ssl": "yes"}, "ssl"), ({"ssl": 1}, "ssl"),
    ({"trust_env": "no"}, "trust_env"), ({"trust_env": None}, "trust_env"),
])
def test_bad_connection_settings_are_refused_at_construction(
    kwargs: dict[str, object], field: str
) -> None:
    """Before: accepted, then a TypeError or an APIConnectionError at the first call (or
    ``trust_env="no"`` read as true)."""
    with pytest.raises(asyncsdk.InvalidInputError) as info:
        asyncsdk.Client("k", base_url="https://h", **kwargs)  # type: ignore[arg-type]
    assert info.value.field == field


def test_connection_settings_aiohttp_takes_are_accepted() -> None:
    import ssl

    for kwargs in ({"proxy": "http://proxy.example:3128"}, {"ssl": False},
                   {"ssl": ssl.create_default_context()}, {"ssl": None},
                   {"trust_env": True}):
        asyncsdk.Client("k", base_url="https://h", **kwargs)  # type: ignore[arg-type]


@pytest.mark.parametrize(("kwargs", "field"), [
    ({"timeout": 0}, "timeout"), ({"timeout": -1.0}, "timeout"),
    ({"timeout": float("nan")}, "timeout"), ({"max_retries": -1}, "max_retries"),
    ({"max_connections": 0}, "max_connections"), ({"max_retries": True}, "max_retries"),
    ({"timeout": 10**400}, "timeout"), ({"attempt_timeout": 10**400}, "attempt_timeout"),
])
def test_bad_numbers_are_refused(kwargs: dict[str, object], field: str) -> None:
    with pytest.raises(asyncsdk.InvalidInputError) as info:
        asyncsdk.Client("k", base_url="https://h", **kwargs)  # type: ignore[arg-type]
    assert info.value.field == field


async def test_base_url_path_is_kept_as_prefix() -> None:
    client = asyncsdk.Client("k", "u", base_url="https://h/x/")

    assert client.validation_url == "https://h/x"
    with asyncsdk.testing.aioresponses() as mocked:
        mocked.get(re.compile(r"https://h/x/api/v1/single/check\?.*"),
                   payload={"email": "a@b.com", "status": "success", "result": "Valid",
                            "role": False})
        await client.validation.check("a@b.com")
    await client.close()


def test_repr_hides_credentials() -> None:
    client = asyncsdk.Client(API_KEY, USERNAME, base_url="https://h")
    text = repr(client) + repr(Credentials(api_key=API_KEY, username=USERNAME))
    assert API_KEY not in text and USERNAME not in text


async def test_own_session_is_lazy_limited_and_closed() -> None:
    client = asyncsdk.Client("k", base_url="https://h", max_connections=7)
    await first_call(client)
    session = client._session
    assert isinstance(session, aiohttp.ClientSession)
    assert session.connector is not None and session.connector.limit == 7
    await client.close()
    assert session.closed and client.closed
    await client.close()  # twice is fine
    with pytest.raises(asyncsdk.UsageError, match="closed"):
        await client.contacts.list()


async def test_injected_session_is_never_closed() -> None:
    async with aiohttp.ClientSession() as session:
        async with asyncsdk.Client("k", base_url="https://h", session=session) as client:
            await first_call(client)
            assert client._session is session
        assert not session.closed


def test_unclosed_client_warns_once() -> None:
    async def use() -> None:
        client = asyncsdk.Client("k", base_url="https://h")
        await first_call(client)
        session = client._session
        assert session is not None
        del client
        gc.collect()
        await session.close()  # the session itself is closed here, cleanly

    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        asyncio.run(use())
        gc.collect()
    ours = [w for w in caught if "unclosed asyncsdk.Client" in str(w.message)]
    assert len(ours) == 1 and issubclass(ours[0].category, ResourceWarning)


def test_closed_client_does_not_warn() -> None:
    async def use() -> None:
        async with asyncsdk.Client("k", base_url="https://h") as client:
            await first_call(client)

    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        asyncio.run(use())
        gc.collect()
    assert not [w for w in caught if issubclass(w.category, ResourceWarning)]


def test_client_used_from_another_loop_raises_clearly() -> None:
    client = asyncsdk.Client("k", "u", base_url="https://h")

    async def first() -> None:
        await first_call(client)

    async def second() -> None:
        with pytest.raises(asyncsdk.UsageError, match="another event loop"):
            await client.validation.check("a@b.com")

    loop1 = asyncio.new_event_loop()
    try:
        loop1.run_until_complete(first())
        asyncio.run(second())
    finally:
        session = client._session
        assert session is not None
        loop1.run_until_complete(session.close())
        loop1.close()
        asyncio.run(client.close())  # its loop has ended: the client is just marked closed


# --- issue 38, item 8: no secret in any repr reachable from the client ---------------------
PASSWORD = "pa55-w0rd-zq"


def _attributes(value: object) -> list[tuple[str, object]]:
    """``value``'s attributes: its ``__dict__`` and the slots of its classes."""
    found = list(getattr(value, "__dict__", {}).items())
    for cls in type(value).__mro__:
        slots = cls.__dict__.get("__slots__", ())
        for name in (slots,) if isinstance(slots, str) else slots:
            if name in ("__dict__", "__weakref__"):
                continue
            stored = f"_{cls.__name__.lstrip('_')}{name}" if name.startswith("__") else name
            with contextlib.suppress(AttributeError):
                found.append((name, object.__getattribute__(value, stored)))
    return found


def _reachable(value: object, path: str, depth: int,
               seen: set[int]) -> Iterator[tuple[str, object]]:
    """``value`` and what its attributes and items hold, ``depth`` levels down. The
    credentials themselves (``Credentials``, each a ``SecretValue``: their reprs say
    ``REDACTED``) are where the secrets live: their reprs are checked, not their
    insides."""
    if id(value) in seen or isinstance(value, (type, types.ModuleType)):
        return
    seen.add(id(value))
    yield path, value
    if depth == 0 or isinstance(value, (str, bytes, int, float, Credentials, SecretValue)):
        return
    inside: list[tuple[str, object]] = []
    if isinstance(value, Mapping):
        inside = [(f"[{key!r}]", item) for key, item in value.items()]
        inside += [(f"<key {i}>", key) for i, key in enumerate(value)]
    elif isinstance(value, (list, tuple, set, frozenset)):
        inside = [(f"[{i}]", item) for i, item in enumerate(value)]
    inside += [(f".{name}", item) for name, item in _attributes(value)]
    for step, item in inside:
        yield from _reachable(item, path + step, depth - 1, seen)


async def test_no_repr_reachable_from_vars_shows_a_secret() -> None:
    """Before: ``Client._urls`` and ``_base_url`` held the configured text, so
    ``repr(vars(client))`` showed a base URL's password."""
    async def answer(request: web.Request) -> web.Response:
        return web.json_response([])

    async with serve(answer) as base:
        login = base.replace("http://", f"http://me:{PASSWORD}@")
        async with asyncsdk.Client(API_KEY, USERNAME, base_url=login,
                                   mail_url=f"http://mailer:{PASSWORD}@m.example") as client:
            await client.contacts.list()
            await client.with_raw_response.contacts.list()
            copy = client.with_options(timeout=5)
            reached = list(_reachable(vars(client), "vars(client)", 8, set()))
            assert len(reached) > 100  # the walk got as far as the session's insides
            for path, value in reached:
                shown = repr(value)
                for secret in (API_KEY, USERNAME, PASSWORD):
                    assert secret not in shown, (path, shown[:200])
            assert client.base_url == login.replace(PASSWORD, "REDACTED")
            assert copy.mail_url == "http://mailer:REDACTED@m.example"
            assert copy.base_url == client.base_url
