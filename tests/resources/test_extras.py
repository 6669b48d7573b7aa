"""``extra_headers=`` and ``extra_query=`` on every public call (as in openai-python and
stripe-python): they reach the service beside the credentials, never replace one (a
credential field, in any case, or ``Authorization`` where the base URL has a login, is
refused with ``InvalidInputError`` before anything is sent), and never go to a result
hosted elsewhere."""

from __future__ import annotations

import inspect
import json
import math
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import pytest
from aiohttp import web
from auth_helpers import serve
from resource_cases import CASES, Case

import asyncsdk
from asyncsdk.testing import Sandbox

KEY, USER = "k3y", "us3r"
EXTRAS: dict[str, Any] = {"extra_headers": {"X-Tenant": "t-1"},
                          "extra_query": {"tag": "x y", "n": 2}}
CHECK_OK = {"email": "a@b.com", "status": "success", "result": "Valid", "role": False}


def _answering(cases: list[Case], seen: list[web.Request]) -> Callable[..., Any]:
    async def handle(request: web.Request) -> web.StreamResponse:
        seen.append(request)
        await request.read()
        path = request.path
        if path.startswith("/api/v1/single/"):
            return web.json_response(CHECK_OK)
        if path == "/api/v1/jobs/create":
            return web.json_response({"status": "success", "job_id": 5})
        if path == "/api/v1/jobs/status":
            return web.json_response({"status": "success"})
        if path == "/api/v1/mail/send/":
            return web.json_response({"status": "success", "message": "Queued", "id": "m"})
        (case,) = [c for c in cases if c.path == path and c.method == request.method]
        if case.answer is None:
            return web.Response(status=204)
        return web.json_response(case.answer)

    return handle


def _sent_with_extras(request: web.Request) -> None:
    assert request.headers["X-Tenant"] == "t-1"
    assert request.query["tag"] == "x y" and request.query["n"] == "2"


def _credentials_arrived(request: web.Request, form: dict[str, str]) -> None:
    if request.path.startswith(("/api/v1/single/", "/api/v1/jobs/")):
        assert (request.query["api"], request.query["username"]) == (KEY, USER)
    elif request.path.startswith("/api/v1/mail/"):
        assert (form["api"], form["username"]) == (KEY, USER)
    else:
        assert request.query["api_key"] == KEY


@pytest.mark.parametrize("case", CASES, ids=[c.name for c in CASES])
async def test_every_resource_call_sends_the_extras_beside_the_credentials(
        case: Case) -> None:
    seen: list[web.Request] = []
    async with serve(_answering(CASES, seen)) as base, \
            asyncsdk.Client(KEY, USER, base_url=base) as client:
        case.check(await case.call(client, **EXTRAS))
        (request,) = seen
    _sent_with_extras(request)
    _credentials_arrived(request, {})


OTHER_CALLS: dict[str, Callable[..., Awaitable[Any]]] = {
    "validation.check": lambda c, **x: c.validation.check("a@b.com", **x),
    "validation.create_job": lambda c, **x: c.validation.create_job("https://h/f.csv", **x),
    "mail.send": lambda c, **x: c.mail.send(sender="a@b.com", to="c@d.com", subject="s",
                                            html="<p>h</p>", **x),
    "job.status": lambda c, **x: c.validation.job(5).status(**x),
    "job.wait": lambda c, **x: c.validation.job(5).wait(**x),
}


@pytest.mark.parametrize("name", list(OTHER_CALLS))
async def test_validation_mail_and_job_calls_send_them_too(name: str) -> None:
    seen: list[web.Request] = []
    forms: list[dict[str, str]] = []
    async with serve(_answering(CASES, seen)) as base, \
            asyncsdk.Client(KEY, USER, base_url=base) as client:
        await OTHER_CALLS[name](client, **EXTRAS)
        (request,) = seen
        forms.append(dict(await request.post()) if request.method == "POST" else {})
    _sent_with_extras(request)
    _credentials_arrived(request, {k: str(v) for k, v in forms[0].items()})
    if name == "mail.send":  # the form itself is the interface's
        assert sorted(forms[0]) == ["api", "from", "message", "subject", "to", "username"]


async def test_check_many_sends_them_with_every_check() -> None:
    seen: list[web.Request] = []
    async with serve(_answering(CASES, seen)) as base, \
            asyncsdk.Client(KEY, USER, base_url=base) as client:
        outcomes = [o async for o in client.validation.check_many(
            ["a@b.com", "c@d.com"], concurrency=2, **EXTRAS)]
    assert all(o.ok for o in outcomes) and len(seen) == 2
    for request in seen:
        _sent_with_extras(request)
        _credentials_arrived(request, {})


@pytest.mark.asyncsdk_sandbox(download_shape="url", job_polls=0, api_key=KEY, username=USER)
@pytest.mark.parametrize("how", ["rows", "download"])
async def test_a_result_hosted_elsewhere_gets_no_extras(sandbox: Sandbox, tmp_path: Path,
                                                        how: str) -> None:
    async with sandbox.client() as client:
        job = await client.validation.create_job(sandbox.host_file("email\na@b.com\n"))
        await job.wait()
        if how == "rows":
            assert len([r async for r in job.rows(**EXTRAS)]) == 1
        else:
            assert await job.download(tmp_path / "r.csv", **EXTRAS) == 1
    download, hosted = sandbox.requests[-2:]
    assert download.path == "/api/v1/jobs/download" and hosted.path.startswith("/files/")
    assert download.headers["X-Tenant"] == "t-1" and download.query["tag"] == "x y"
    assert "X-Tenant" not in hosted.headers and not hosted.query


def _public_methods() -> list[tuple[str, Callable[..., Any]]]:
    """Every method of the public areas that sends a request, and the job's."""
    from asyncsdk.resources.validation.jobs import ValidationJob

    client = asyncsdk.Client("k", "u", base_url="https://h")  # makes no session
    found = [(c.name, getattr(getattr(client, c.name.split(".")[0]), c.name.split(".")[1]))
             for c in CASES]
    found += [(f"validation.{m}", getattr(client.validation, m))
              for m in ("check", "check_many", "create_job")]
    found += [("mail.send", client.mail.send)]
    found += [(f"job.{m}", getattr(ValidationJob, m))
              for m in ("status", "wait", "rows", "download")]
    return found


@pytest.mark.parametrize(("name", "method"), _public_methods(),
                         ids=[n for n, _ in _public_methods()])
def test_every_public_call_takes_them(name: str, method: Callable[..., Any]) -> None:
    parameters = inspect.signature(method).parameters
    for extra in ("extra_headers", "extra_query"):
        assert parameters[extra].kind is inspect.Parameter.KEYWORD_ONLY, name
        assert parameters[extra].default is None, name


REFUSED: list[tuple[dict[str, Any], str]] = [
    ({"extra_query": {"api_key": "x"}}, "'api_key' is a credential field"),
    ({"extra_query": {"API": "x"}}, "'API' is a credential field"),
    ({"extra_query": {"username": "x"}}, "'username' is a credential field"),
    ({"extra_query": {"flag": True}}, "expected text or a number"),
    ({"extra_query": ["tag"]}, "expected a mapping"),
    ({"extra_headers": {"User-Agent": "me"}}, "app_name"),
    ({"extra_headers": {"X-A": "1\r\nX-B: 2"}}, "one line"),
    ({"extra_headers": {"Bad Name": "1"}}, "not a header name"),
    ({"extra_headers": {"Host": "other.example"}}, "'Host' is the base URL's host"),
    ({"extra_headers": {"hOST": "other.example"}}, "'hOST' is the base URL's host"),
]


#: Issue 38: what aiohttp or yarl would refuse (a bare ``ValueError``) or change at send
#: time, once after something was sent: refused when the call is made, naming the field.
HOSTILE: list[tuple[dict[str, Any], str]] = [
    *[({"extra_headers": {"X-A": f"a{c}b"}}, rf"'X-A': .*U\+{ord(c):04X} at index 1")
      for c in ("\x00", "\x0b", "\x7f", "\x1b", "\x0c", "\x85", "\u2028", "\ud800")],
    ({"extra_headers": {"X(": "1"}}, r"'X\(' is not a header name"),
    ({"extra_headers": {"X\x00": "1"}}, r"'X\\x00' is not a header name"),
    ({"extra_headers": {"Tënant": "1"}}, "'Tënant' is not a header name"),
    ({"extra_headers": {"Content-Length": "5"}}, "'Content-Length' frames the message"),
    ({"extra_headers": {"transfer-encoding": "chunked"}}, "'transfer-encoding' frames"),
    # The body is the library's, JSON or the mail's form: another Content-Type had the
    # mail's form go out labelled JSON (or a JSON body as text/plain), Content-Encoding
    # a body the service cannot inflate (it answered 500).
    ({"extra_headers": {"Content-Type": "application/json"}},
     "'Content-Type' says how the body is encoded"),
    ({"extra_headers": {"content-type": "text/plain"}}, "'content-type' says how the body"),
    ({"extra_headers": {"Content-Encoding": "gzip"}}, "'Content-Encoding' says how"),
    ({"extra_headers": {"X-A": 5}}, "'X-A': expected one line of text, got int"),
    ({"extra_query": {"n": math.nan}}, "'n': a number is finite, got nan"),
    ({"extra_query": {"n": math.inf}}, "'n': a number is finite, got inf"),
    ({"extra_query": {"n": -math.inf}}, "'n': a number is finite, got -inf"),
    ({"extra_query": {"n": 10**5000}}, "'n': an integer has at most"),
    ({"extra_query": {"n": None}}, "'n': expected text or a number, got NoneType"),
    ({"extra_query": {"n": "a\ud800"}}, "'n': expected text UTF-8 can encode"),
    # yarl drops a lone surrogate: this name would arrive as the credential field.
    ({"extra_query": {"api_key\udc80": "x"}}, r"'api_key\\udc80': a field name is text"),
]


@pytest.mark.parametrize(("extras", "why"), REFUSED + HOSTILE,
                         ids=[w for _, w in REFUSED + HOSTILE])
@pytest.mark.parametrize("name", ["contacts.list", "validation.check", "mail.send",
                                  "job.status", "check_many", "job.rows"])
async def test_refused_extras_raise_before_anything_is_sent(
        extras: dict[str, Any], why: str, name: str) -> None:
    """Given once to ``check_many``, they are refused at the call like its other
    arguments: they would fail every input alike."""
    seen: list[web.Request] = []
    async with serve(_answering(CASES, seen)) as base, \
            asyncsdk.Client(KEY, USER, base_url=base) as client:
        async def call() -> None:
            made = {
                "contacts.list": lambda: client.contacts.list(**extras),
                "validation.check": lambda: OTHER_CALLS["validation.check"](client, **extras),
                "mail.send": lambda: OTHER_CALLS["mail.send"](client, **extras),
                "job.status": lambda: client.validation.job(5).status(**extras),
                "check_many": lambda: client.validation.check_many(["a@b.com"], **extras),
                "job.rows": lambda: client.validation.job(5).rows(**extras),
            }[name]()  # check_many and rows refuse when called, the others when awaited
            if inspect.isawaitable(made):
                await made

        with pytest.raises(asyncsdk.InvalidInputError, match=why) as info:
            await call()
        field = "extra_query" if "extra_query" in extras else "extra_headers"
        assert info.value.field == field and str(info.value).startswith(f"{field}: ")
    assert seen == []


async def test_authorization_is_refused_only_where_the_base_url_has_a_login() -> None:
    seen: list[web.Request] = []
    async with serve(_answering(CASES, seen)) as base:
        login = base.replace("http://", "http://me:pw@")
        async with asyncsdk.Client(KEY, USER, base_url=login) as client:
            with pytest.raises(asyncsdk.InvalidInputError, match="login"):
                await client.contacts.list(extra_headers={"authorization": "Bearer t"})
            assert seen == []
        async with asyncsdk.Client(KEY, USER, base_url=base) as client:  # a gateway's
            await client.contacts.list(extra_headers={"Authorization": "Bearer t"})
    assert seen[0].headers["Authorization"] == "Bearer t"


async def test_extra_query_goes_after_the_operations_own_fields() -> None:
    seen: list[web.Request] = []
    async with serve(_answering(CASES, seen)) as base, \
            asyncsdk.Client(KEY, USER, base_url=base) as client:
        raw = await client.with_raw_response.validation.check(
            "a@b.com", extra_query={"timeout": 5, "z": "1"})
    assert seen[0].query["timeout"] == "5" and seen[0].query["z"] == "1"
    assert "z=1" in raw.url and "api=REDACTED" in raw.url  # the URL as it was sent
    assert json.dumps(dict(seen[0].query))


async def _rows(job: asyncsdk.ValidationJob, **extras: Any) -> None:
    async for _ in job.rows(**extras):
        pass


#: Each call's own query field, set from its checked argument (the address, the file's
#: URL, the job): an ``extra_query`` of that name replaced it, unchecked, and the answer
#: about another address, file or job was read as the argument's. Each call is given the
#: client and a folder (where a download would go).
OWN_FIELDS: list[tuple[str, str, Callable[..., Awaitable[Any]]]] = [
    ("email", "email", lambda c, _, **x: OTHER_CALLS["validation.check"](c, **x)),
    ("file_name", "file_url", lambda c, _, **x: OTHER_CALLS["validation.create_job"](c, **x)),
    ("job_id", "the job", lambda c, _, **x: OTHER_CALLS["job.status"](c, **x)),
    ("job_id", "the job", lambda c, _, **x: OTHER_CALLS["job.wait"](c, **x)),
    ("job_id", "the job", lambda c, _, **x: _rows(c.validation.job(5), **x)),
    ("job_id", "the job", lambda c, folder, **x: c.validation.job(5).download(
        folder / "emaillist.csv", **x)),
]


@pytest.mark.parametrize(("field", "argument", "call"), OWN_FIELDS,
                         ids=["check", "create_job", "status", "wait", "rows", "download"])
async def test_extra_query_cannot_replace_the_field_a_call_sets_from_its_argument(
        field: str, argument: str, call: Callable[..., Awaitable[Any]],
        tmp_path: Path) -> None:
    seen: list[web.Request] = []
    async with serve(_answering(CASES, seen)) as base, \
            asyncsdk.Client(KEY, USER, base_url=base) as client:
        with pytest.raises(asyncsdk.InvalidInputError) as info:
            await call(client, tmp_path, extra_query={field: "ftp://elsewhere/9@x"})
    assert info.value.field == "extra_query"
    assert str(info.value).startswith(
        f"extra_query: {field!r} is this call's own field, set from {argument}")
    assert seen == []
    assert list(tmp_path.iterdir()) == []
