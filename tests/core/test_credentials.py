"""asyncsdk._core.credentials: the one credentials table, SecretValue, the scrubber and
redact_url."""

from __future__ import annotations

import contextlib
import re
import string
from urllib.parse import parse_qs

import aiohttp
import pytest
import yarl
from aiohttp import web
from auth_helpers import ENCODINGS, leaks, serve
from hypothesis import HealthCheck, assume, example, given, settings
from hypothesis import strategies as st

import asyncsdk
from asyncsdk import _constants as C
from asyncsdk._core.credentials import (
    CREDENTIAL_FIELDS,
    REDACTED,
    Credentials,
    Echoes,
    Part,
    Secret,
    SecretValue,
    redact_url,
    scrub,
)
from asyncsdk.resources._areas import Area

KEY = "kÖ+y/Z=9=="  # base64 punctuation and a non-ASCII letter
USER = "o"  # a one-letter user name must not garble messages


# --- the table ---------------------------------------------------------------------------
def test_everything_about_credentials_derives_from_the_area_table() -> None:
    fields = {a: dict(a.placement.fields) for a in Area}
    assert fields[Area.CONTACTS] == {"api_key": Secret.API_KEY}
    assert fields[Area.CRM] == fields[Area.INVOICING] == fields[Area.CONTACTS]
    assert fields[Area.VALIDATION] == {"api": Secret.API_KEY, "username": Secret.USERNAME}
    assert fields[Area.MAIL] == fields[Area.VALIDATION]
    assert Area.MAIL.placement.part is Part.FORM
    assert {a for a in Area if a.placement.part is Part.QUERY} == set(Area) - {Area.MAIL}
    assert {name for f in fields.values() for name in f} == CREDENTIAL_FIELDS
    assert {a for a in Area if a.answers_in_body} == {Area.VALIDATION, Area.MAIL}
    # Environment variables (DESIGN §1) follow from the same rows.
    assert [a.env_var for a in Area] == [
        "ASYNCSDK_CONTACTS_URL", "ASYNCSDK_CRM_URL", "ASYNCSDK_INVOICING_URL",
        "ASYNCSDK_VALIDATION_URL", "ASYNCSDK_MAIL_URL"]
    assert (Secret.API_KEY.env_var, Secret.USERNAME.env_var) == (C.ENV_API_KEY, C.ENV_USERNAME)
    assert all(v.startswith(C.ENV_PREFIX) for v in (C.ENV_API_KEY, C.ENV_USERNAME,
                                                    C.ENV_BASE_URL, C.ENV_LOG))


@pytest.mark.parametrize("area", list(Area))
def test_the_fields_a_placement_adds_are_secret_values(area: Area) -> None:
    creds = Credentials(api_key=KEY, username=USER)
    fields = creds.fields(area.placement, "op")
    assert [name for name, _ in fields] == [name for name, _ in area.placement.fields]
    for (_, value), (_, secret) in zip(fields, area.placement.fields, strict=True):
        assert isinstance(value, SecretValue)
        assert value.reveal() == creds.get(secret)
    shown = repr(fields) + str(fields) + f"{fields}"
    assert KEY not in shown and "'o'" not in shown and REDACTED in shown


@pytest.mark.parametrize("area", [Area.VALIDATION, Area.MAIL])
def test_a_missing_credential_names_argument_and_variable(area: Area) -> None:
    with pytest.raises(asyncsdk.ConfigurationError, match=r"username=.*ASYNCSDK_USERNAME") as e:
        Credentials(api_key=KEY, username=None).fields(area.placement, "op")
    assert e.value.field == "username"


async def test_credentials_reach_the_wire_intact_in_every_placement() -> None:
    """The SecretValue is revealed where aiohttp encodes the request: the server gets the
    key byte for byte (``+`` not a space), in exactly the fields the table names."""
    seen: list[tuple[str, dict[str, list[str]], dict[str, list[str]]]] = []

    async def handler(request: web.Request) -> web.Response:
        body = await request.text()
        seen.append((request.path, parse_qs(request.query_string),
                     parse_qs(body) if body and not body.startswith("{") else {}))
        if request.path.startswith("/api/v1/single"):
            return web.json_response({"status": "success", "email": "a@b.com",
                                      "result": "Valid", "role": False})
        if request.path.startswith("/api/v1/mail"):
            return web.json_response({"status": "success", "message": "ok"})
        return web.json_response([])

    async with serve(handler) as base, asyncsdk.Client(KEY, USER, base_url=base) as client:
        await client.contacts.list()
        await client.validation.check("a@b.com")
        with contextlib.suppress(asyncsdk.ResponseDecodeError):  # shape: not the point
            await client.mail.send(sender="s@example.com", to="t@example.org",
                                   subject="hi", html="<p>x</p>")
    contacts, check, mail = seen
    assert contacts[1]["api_key"] == [KEY] and "username" not in contacts[1]
    assert check[1]["api"] == [KEY] and check[1]["username"] == [USER]
    assert mail[2]["api"] == [KEY] and mail[2]["username"] == [USER]
    assert "api" not in mail[1] and "username" not in mail[1]


# --- the scrubber --------------------------------------------------------------------------
def test_a_short_user_name_does_not_garble_messages() -> None:
    creds = Credentials(api_key=KEY, username=USER)
    for text in ("Not found.", "Domain authentication failed. Unverified Sender found.",
                 '{"detail": "Not found."}', "bounce@example.org"):
        assert creds.scrub(text) == text
    assert creds.scrub('{"username": "o"}') == '{"username": "REDACTED"}'
    assert creds.scrub("?api=x&username=o&e=1") == "?api=x&username=REDACTED&e=1"
    assert creds.scrub("user o is unknown") == "user REDACTED is unknown"


@pytest.mark.parametrize("name", list(ENCODINGS))
@pytest.mark.parametrize("secret", [KEY, "ab+c/d=", "o", "a b", "p\U0001f600w", 'q"\\\'<&'])
def test_every_encoding_is_scrubbed(name: str, secret: str) -> None:
    form = ENCODINGS[name](secret)
    for text in (form, f"api={form}&x=1", f'{{"detail": "bad key {form}"}}',
                 f"key:%20{form}", f"line\\n{form}\\t"):
        out = scrub(text, [secret])
        assert not leaks(out, [secret]), (text, out)
        assert REDACTED in out


def test_a_credential_inside_a_longer_word_is_left_alone() -> None:
    assert scrub("cabbage abc_d abc9", ["abc"]) == "cabbage abc_d abc9"
    assert scrub("xab+c/d= ab+c/d=z", ["ab+c/d="]) == "xab+c/d= ab+c/d=z"


def test_preview_never_shows_part_of_a_credential_at_the_cut() -> None:
    creds = Credentials(api_key="K" * 30, username=None)
    for at in range(40):
        body = ("x" * at + " " + "K" * 30 + " tail").encode()
        shown = creds.preview(body, 20)
        assert "K" not in shown.replace(REDACTED, ""), (at, shown)
        assert len(shown) <= 20 or shown.endswith(REDACTED)


_SECRETS = st.text(st.characters(codec="utf-8", exclude_categories=("Cs", "Cc", "Zl", "Zp")),
                   min_size=1, max_size=12).filter(lambda s: s.isprintable() and s == s.strip())
_SEPARATORS = st.sampled_from([" ", "=", "&", '"', ":", "/", "?", "(", ",", "\n", "'", "<"])


@settings(max_examples=500, deadline=None, derandomize=True,
          suppress_health_check=[HealthCheck.too_slow])
@given(secret=_SECRETS, name=st.sampled_from(list(ENCODINGS)), prefix=st.text(max_size=15),
       suffix=st.text(max_size=15), before=_SEPARATORS, after=_SEPARATORS)
@example(secret="o", name="raw", prefix="Not", suffix="found.", before=" ", after=" ")
@example(secret="a+b", name="plus-read-as-space", prefix="", suffix="", before="=",
         after="&")
def test_property_any_encoding_of_a_credential_is_gone(
    secret: str, name: str, prefix: str, suffix: str, before: str, after: str
) -> None:
    text = prefix + before + ENCODINGS[name](secret) + after + suffix
    out = scrub(text, [secret])
    assert not leaks(out, [secret]), (text, out)


_PLAIN = st.text(string.printable + "äöü€😀%\\&#+", max_size=40)


@settings(max_examples=500, deadline=None, derandomize=True)
@given(secret=_SECRETS, text=_PLAIN)
def test_property_text_without_the_credential_is_unchanged(secret: str, text: str) -> None:
    assume(not any(encode(secret) in text for encode in ENCODINGS.values()))
    assume(not re.search("%[0-9a-fA-F]{2}|\\\\[ux]|&#", text))  # no mixed encodings
    assert scrub(text, [secret]) == text


@given(secrets=st.lists(_SECRETS, max_size=4), text=_PLAIN,
       encoding=st.sampled_from(sorted(ENCODINGS)))
def test_property_echoes_may_be_in_wherever_scrub_replaces(
        secrets: list[str], text: str, encoding: str) -> None:
    """The quick pre-test of answer headers (``Echoes``, made once per call's
    credentials) never lets a credential through, in any encoding; it scrubs as
    ``scrub`` does; its repr shows none."""
    echoes = Echoes(SecretValue(secret) for secret in secrets)
    shown = [text, *(text + ENCODINGS[encoding](secret) + text for secret in secrets)]
    for candidate in shown:
        scrubbed = scrub(candidate, secrets)
        if scrubbed != candidate:
            assert echoes.may_be_in(candidate)
        assert echoes.scrubbed(candidate) == scrubbed
    assert repr(echoes) == "REDACTED" and bool(echoes) == bool(secrets)


# --- URLs ---------------------------------------------------------------------------------
def test_redact_url_hides_credential_fields_and_userinfo_passwords() -> None:
    shown = redact_url("https://me:pa55+w%2Frd@h.example:8443/x",
                       {"api": SecretValue(KEY), "username": "o", "email": "a@b.com"})
    assert shown == ("https://me:REDACTED@h.example:8443/x"
                     "?api=REDACTED&username=REDACTED&email=a%40b.com")
    assert redact_url("https://h/x?y=a@b") == "https://h/x?y=a@b"
    assert redact_url("https://user@h/x") == "https://user@h/x"


@pytest.mark.parametrize(("url", "shown"), [
    ("https://h/api/v1/single/check?email=a%40b.com&timeout=30&api=k%2By&username=o",
     "https://h/api/v1/single/check?email=a%40b.com&timeout=30&api=REDACTED&username=REDACTED"),
    ("https://h/api/v1/contact/?api_key=k", "https://h/api/v1/contact/?api_key=REDACTED"),
    # any letter case, a percent-encoded name, an empty value; the rest byte for byte
    ("http://me:pw@h:81/p?API_KEY=k&x=%7e+1&api%5Fkey=&keep#f?api=1",
     "http://me:REDACTED@h:81/p?API_KEY=REDACTED&x=%7e+1&api%5Fkey=REDACTED&keep#f?api=1"),
    # a name without a value, a field that merely contains a credential name: kept
    ("https://h/p?api_key&my_api=1&apikey=2", "https://h/p?api_key&my_api=1&apikey=2"),
    ("https://h/p", "https://h/p"),
])
def test_redact_url_works_on_a_full_url(url: str, shown: str) -> None:
    assert asyncsdk.redact_url(url) == shown
    assert asyncsdk.redact_url(yarl.URL(url, encoded=True)) == shown  # OpenTelemetry's url_filter
    assert asyncsdk.redact_url is redact_url


def test_credential_fields_are_public_and_cover_every_placement() -> None:
    assert {"api_key", "api", "username"} == asyncsdk.CREDENTIAL_FIELDS
    assert isinstance(asyncsdk.CREDENTIAL_FIELDS, frozenset)
    assert asyncsdk.redact_url("https://h/?" + "&".join(
        f"{name}={KEY}" for name in sorted(asyncsdk.CREDENTIAL_FIELDS))).count("REDACTED") == 3


async def test_userinfo_password_is_redacted_in_error_url_and_debug_log(
    caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level("DEBUG", logger="asyncsdk")
    async with asyncsdk.Client(KEY, USER, base_url="http://me:Pa55word@127.0.0.1:9",
                               max_retries=0) as client:
        with pytest.raises(asyncsdk.APIConnectionError) as info:
            await client.contacts.list()
    # The login travels as ``Authorization``, added last: the URL shown has none.
    assert "Pa55word" not in str(info.value.url) and "@" not in str(info.value.url)
    lines = [r.getMessage() for r in caplog.records if r.name == "asyncsdk"]
    assert lines and not any("Pa55word" in line for line in lines)


def test_secret_value_never_shows_itself() -> None:
    value = SecretValue(KEY)
    assert repr(value) == str(value) == f"{value}" == REDACTED
    assert value == SecretValue(KEY) and value != SecretValue("other")
    assert isinstance(aiohttp.ClientSession, type)  # aiohttp imported for the wire test


class _CallersError(asyncsdk.SDKError):
    """A caller's own subclass: a read-only ``url``, a message of their own."""

    @property
    def url(self) -> str:
        return "the caller's"


def test_clean_rewrites_the_librarys_errors_never_a_callers() -> None:
    """``clean`` (the transport's edge) scrubs the library's own exceptions; one of the
    caller's classes passing through (raised by their trace hook) is theirs: not
    rewritten, and a read-only attribute of theirs is no reason to fail."""
    creds = Credentials(api_key="s3cret-key", username="jsmith")
    ours = asyncsdk.APIError("refused for s3cret-key", operation="op", body="jsmith said no")
    creds.clean(ours)
    assert "s3cret-key" not in str(ours) and ours.body == f"{REDACTED} said no"
    args = ("the caller's text, jsmith's",)
    theirs = _CallersError(*args)
    creds.clean(theirs)  # the old code: AttributeError (the property has no setter)
    assert theirs.args == args and theirs.url == "the caller's"
