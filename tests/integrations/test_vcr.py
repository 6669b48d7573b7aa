"""vcrpy and pytest-recording (the real packages) around asyncsdk: a cassette recorded
against the sandbox holds no credential in any form (URIs, the mail's form body, the
hops of a redirect), nor does vcrpy's INFO log; the service received every credential;
a replay sends nothing at all (the service is gone by then). ``vcr_config()`` also keeps
the credential fields out of a cassette of a request that was not the library's."""

from __future__ import annotations

import logging
import os
import subprocess
import sys
import textwrap
from pathlib import Path
from urllib.parse import quote

import aiohttp
import pytest
import vcr
import yaml
from aiohttp import web
from auth_helpers import serve
from integration_helpers import (
    KEY,
    USER,
    assert_the_service_got_them,
    credentials_in,
    sandbox,
)

import asyncsdk
from asyncsdk.testing import vcr_config
from asyncsdk.testing.plugin import threaded_sandbox


async def _calls(client: asyncsdk.Client, file_url: str) -> list[object]:
    """What is recorded, then replayed: every area, two mails, a job and its status."""
    got: list[object] = [await client.validation.check("ann@example.com")]
    for area in (client.contacts, client.leads, client.customers, client.products,
                 client.invoices):
        got.append(await area.list())
    for to in ("you@example.org", "them@example.org"):
        got.append(await client.mail.send(sender="me@example.com", to=to, subject="hi",
                                          html="<p>hi</p>"))
    job = await client.validation.create_job(file_url)
    got.append(await job.status())
    return [getattr(g, "to_dict", lambda g=g: g)() for g in got]


async def test_a_cassette_and_vcrs_log_hold_no_credential_and_replay_sends_nothing(
        tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.INFO, logger="vcr")
    cassette = tmp_path / "calls.yaml"
    async with sandbox() as sb:
        base = sb.base_url
        file_url = sb.host_file("email\nann@example.com\n")
        with vcr.use_cassette(str(cassette), **vcr_config(record_mode="once")):
            async with sb.client() as client:
                recorded = await _calls(client, file_url)
        served = assert_the_service_got_them(sb.requests)
    text = cassette.read_text()
    interactions = [i for i in yaml.safe_load(text)["interactions"]  # not the sandbox's
                    if "/files/" not in i["request"]["uri"]]      # own fetch of the file
    assert len(interactions) == served == 10
    mails = [i["request"]["body"] for i in interactions if "/mail/" in i["request"]["uri"]]
    assert [sorted(m) for m in mails] == [["from", "message", "subject", "to"]] * 2
    log = [r.getMessage() for r in caplog.records if r.name.startswith("vcr")]
    assert len(log) >= served
    assert not credentials_in(text, *log)

    caplog.clear()  # the sandbox is gone: a request that left would fail to connect
    with vcr.use_cassette(str(cassette), **vcr_config(record_mode="none")) as played:
        async with asyncsdk.Client(KEY, USER, base_url=base) as client:
            assert await _calls(client, file_url) == recorded
    assert played.play_count == served
    assert not credentials_in(*[r.getMessage() for r in caplog.records])


async def test_the_hops_of_a_redirect_are_recorded_without_credentials(
        tmp_path: Path) -> None:
    """vcrpy records each hop of a followed redirect from ``response.request_info``,
    which aiohttp builds below the library's middleware."""
    arrived: list[web.Request] = []

    async def moved_once(request: web.Request) -> web.Response:
        arrived.append(request)
        if request.path.endswith("/check"):
            raise web.HTTPFound("/api/v1/single/moved?email=a@b.com")
        return web.json_response({"status": "success", "email": "a@b.com",
                                  "result": "Valid", "role": False})

    cassette = tmp_path / "moved.yaml"
    async with serve(moved_once) as base:
        with vcr.use_cassette(str(cassette), **vcr_config(record_mode="once")):
            async with asyncsdk.Client(KEY, USER, base_url=base) as client:
                await client.validation.check("a@b.com")
    uris = [i["request"]["uri"] for i in yaml.safe_load(cassette.read_text())["interactions"]]
    assert [u.split("/", 3)[-1] for u in uris] == [
        "api/v1/single/check?email=a%40b.com&timeout=30", "api/v1/single/moved?email=a%40b.com"]
    assert not credentials_in(cassette.read_text())
    assert [(r.query["api"], r.query["username"]) for r in arrived] == [(KEY, USER)] * 2


async def test_vcr_config_drops_the_credential_fields_of_any_request(tmp_path: Path) -> None:
    """The second line: a request of the caller's own with the credentials in its query
    and form is recorded without them."""
    cassette = tmp_path / "mine.yaml"
    async with sandbox() as sb, aiohttp.ClientSession() as session:
        with vcr.use_cassette(str(cassette), **vcr_config(record_mode="once")):
            async with session.get(f"{sb.base_url}/api/v1/contact/",
                                   params={"api_key": KEY}) as r:
                assert r.status == 200
            async with session.post(f"{sb.base_url}/api/v1/mail/send/", data={
                    "api": KEY, "username": USER, "from": "me@example.com",
                    "to": "you@example.org", "subject": "s", "message": "m"}) as r:
                assert r.status == 200
    text = cassette.read_text()
    assert "api_key" not in text and "username=" not in text
    assert not credentials_in(text)


INNER_TEST = '''
import pytest

import asyncsdk
from asyncsdk.testing import vcr_config as asyncsdk_vcr_config


@pytest.fixture(scope="module")
def vcr_config():
    return asyncsdk_vcr_config()


@pytest.mark.vcr
async def test_recorded_then_replayed():
    async with asyncsdk.Client() as client:  # ASYNCSDK_* variables
        result = await client.validation.check("ann@example.com")
        sent = await client.mail.send(sender="me@example.com", to="you@example.org",
                                      subject="hi", html="<p>hi</p>")
    assert result.result is asyncsdk.Verdict.VALID and sent.status == "success"
'''


def test_pytest_recording_records_once_and_replays_without_the_service(
        tmp_path: Path) -> None:
    """pytest-recording in a user's project: ``--record-mode=once`` writes the
    cassette, then ``--record-mode=none`` replays it, nothing sent."""
    (tmp_path / "test_recorded.py").write_text(textwrap.dedent(INNER_TEST))

    def run_pytest(mode: str, base_url: str) -> None:
        env = {**os.environ, "ASYNCSDK_API_KEY": KEY, "ASYNCSDK_USERNAME": USER,
               "ASYNCSDK_BASE_URL": base_url}
        done = subprocess.run(
            [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider",
             "-o", "asyncio_mode=auto", f"--record-mode={mode}"],
            capture_output=True, text=True, cwd=tmp_path, env=env, check=False,
            timeout=120)
        assert done.returncode == 0, done.stdout + done.stderr
        assert "1 passed" in done.stdout

    with threaded_sandbox(api_key=KEY, username=USER, demo_data=True) as sb:
        run_pytest("once", sb.base_url)
        assert assert_the_service_got_them(sb.requests) == 2
        base = sb.base_url
    (cassette,) = (tmp_path / "cassettes").rglob("*.yaml")
    assert not credentials_in(cassette.read_text())
    run_pytest("none", base)  # the sandbox is closed: only the cassette answers


async def _echoing(request: web.Request) -> web.StreamResponse:
    """A service that quotes what it was sent: the query in a text body and a header, the
    form in a body that is not UTF-8 (recorded as base64), JSON fields by name."""
    if request.method == "POST":
        form = await request.read()
        return web.Response(status=400, body=b"\xff" + form,
                            content_type="application/octet-stream")
    if request.path.endswith("/check"):
        return web.json_response({"status": "fail", "error": "Oops",
                                  "api": request.query["api"],
                                  "username": request.query["username"]})
    return web.Response(status=404, text=f"no such page: {request.url}",
                        headers={"X-Requested": request.url.human_repr()})


async def test_credentials_echoed_by_the_service_are_not_recorded(tmp_path: Path) -> None:
    """What a service echoes (an error page quoting the URL, a header, the form, JSON
    fields) is recorded with the credential fields' values ``REDACTED``, in the YAML
    and in every body decoded from it; a ``before_record_response`` of the caller's
    still runs; the replay answers as recorded."""
    cassette, seen = tmp_path / "echo.yaml", []

    def mine(response: dict[str, object]) -> dict[str, object]:
        seen.append(response)
        return response

    async def calls(client: asyncsdk.Client) -> list[str]:
        refused = []
        for call in (lambda: client.contacts.get(7), lambda: client.validation.check("a@b.com"),
                     lambda: client.mail.send(sender="me@example.com", to="you@example.org",
                                              subject="s", html="h")):
            with pytest.raises(asyncsdk.APIError) as caught:
                await call()
            refused.append(type(caught.value).__name__)
        return refused

    async with serve(_echoing) as base:
        with vcr.use_cassette(str(cassette), **vcr_config(record_mode="once",
                                                          before_record_response=mine)):
            async with asyncsdk.Client(KEY, USER, base_url=base, max_retries=0) as client:
                recorded = await calls(client)
    assert len(seen) == 3
    text = cassette.read_text()
    bodies = [i["response"]["body"]["string"] for i in yaml.safe_load(text)["interactions"]]
    headers = [i["response"]["headers"] for i in yaml.safe_load(text)["interactions"]]
    decoded = [b.decode("utf-8", "replace") if isinstance(b, bytes) else b for b in bodies]
    assert all("REDACTED" in b for b in decoded)
    assert not credentials_in(text, *decoded, repr(bodies), *map(str, headers))
    with vcr.use_cassette(str(cassette), **vcr_config(record_mode="none")):
        async with asyncsdk.Client(KEY, USER, base_url=base, max_retries=0) as client:
            assert await calls(client) == recorded


async def _quoting(request: web.Request) -> web.StreamResponse:
    """A service that quotes the credentials by value, in no field of theirs: a JSON
    message (``ä`` written ``\\u00e4``), a text page, a body that is not UTF-8 and the
    user name percent-encoded inside a link."""
    key, user = request.query.get("api") or request.query["api_key"], request.query.get(
        "username", USER)
    if request.path.endswith("/check"):
        return web.json_response({"status": "fail", "error": f"unknown key {key} for {user}"})
    if request.path.endswith("/1"):
        return web.Response(status=403, text=f"key {key} may not read this",
                            headers={"X-Help": f"/help?who={quote(user)}"})
    return web.Response(status=404, body=b"\xfe" + key.encode() + b" \xff",
                        content_type="application/octet-stream")


async def test_credentials_a_service_quotes_by_value_are_not_recorded(tmp_path: Path) -> None:
    """The key and user name quoted in a sentence (no credential field names them) are
    recorded as ``REDACTED``, in whatever encoding the body has them: the cassette and
    every body decoded from it hold no form of them."""
    cassette = tmp_path / "quoted.yaml"

    async def calls(client: asyncsdk.Client) -> None:
        for call in (lambda: client.validation.check("a@b.com"),
                     lambda: client.contacts.get(1), lambda: client.contacts.get(2)):
            with pytest.raises(asyncsdk.APIError):
                await call()

    async with serve(_quoting) as base:
        with vcr.use_cassette(str(cassette), **vcr_config(record_mode="once")):
            async with asyncsdk.Client(KEY, USER, base_url=base, max_retries=0) as client:
                await calls(client)
    text = cassette.read_text()
    interactions = yaml.safe_load(text)["interactions"]
    assert len(interactions) == 3
    bodies = [i["response"]["body"]["string"] for i in interactions]
    decoded = [b.decode("utf-8", "surrogateescape") if isinstance(b, bytes) else b
               for b in bodies]
    headers = [str(i["response"]["headers"]) for i in interactions]
    assert sum("REDACTED" in b for b in decoded) == 3
    assert not credentials_in(text, *decoded, *headers)
    assert "unknown key REDACTED for REDACTED" in decoded[0]  # the rest of it kept
