"""Single check and validation jobs: every verdict, every error text, every shape."""

from __future__ import annotations

import csv
import io
import json

import pytest
from sandbox_helpers import Api

from asyncsdk.testing import Sandbox, ValidationRules

AUTH = "User authentication failed. Wrong API Key or username."
REQUIRED = "Required parameter missing or invalid."
NO_CREDIT = "The request was refused due to insufficent credit."


def fail(error: str) -> dict[str, str]:
    return {"status": "fail", "error": error}


@pytest.mark.parametrize(
    ("email", "verdict", "role"),
    [
        ("ada@example.com", "Valid", False),
        ("sales@example.com", "Valid", True),
        ("support+eu@example.com", "Valid", True),
        ("x@mailinator.com", "Disposable", False),
        ("admin@trashmail.com", "Disposable", True),
        ("bounce-me@example.com", "Bounce", False),
        ("ada@bounce.example", "Bounce", False),
        ("ada@unknown.example", "Unknown", False),
        ("info@catchall.example", "CatchAll", True),
    ],
)
async def test_every_verdict_and_role(api: Api, email: str, verdict: str, role: bool) -> None:
    assert await api.check(email) == {
        "email": email,
        "status": "success",
        "result": verdict,
        "role": role,
    }


@pytest.mark.parametrize(("role_format", "yes", "no"), [("str", "True", "False"), ("int", 1, 0)])
async def test_role_formats(api: Api, sandbox: Sandbox, role_format: str, yes: object, no: object):
    sandbox.settings.role_format = role_format  # type: ignore[assignment]
    assert (await api.check("info@example.com"))["role"] == yes
    assert (await api.check("ada@example.com"))["role"] == no


async def test_rules_are_configurable() -> None:
    rules = ValidationRules(catch_all_domains=frozenset({"Corp.Example"}))
    async with Sandbox(rules=rules) as sb:
        assert sb.rules.verdict("a@corp.example") == "CatchAll"
        assert sb.rules.verdict("a@catchall.example") == "Valid"


@pytest.mark.parametrize(
    ("params", "error"),
    [
        ({"email": None}, REQUIRED),
        ({"timeout": None}, REQUIRED),
        ({"timeout": "soon"}, REQUIRED),
        # float() takes these; a client's number never looks like them (before: accepted)
        ({"timeout": "\u0665"}, REQUIRED), ({"timeout": "5_0"}, REQUIRED),
        ({"timeout": " 5"}, REQUIRED), ({"timeout": "nan"}, REQUIRED),
        ({"api": None}, REQUIRED),
        ({"api": "wrong"}, AUTH),
        ({"username": "someone-else"}, AUTH),
        ({"email": "not-an-address"}, "Email Format is not correct."),
        ({"email": "a..b@example.com"}, "Email Format is not correct."),
    ],
)
async def test_check_errors(api: Api, params: dict[str, str | None], error: str) -> None:
    query = {"email": "ada@example.com", **params}
    email = query.pop("email")
    assert await api.check(email, **query) == fail(error)


@pytest.mark.asyncsdk_sandbox(credit=2)
async def test_credit_runs_out(api: Api, sandbox: Sandbox) -> None:
    assert (await api.check("a@example.com"))["status"] == "success"
    assert (await api.check("bad syntax"))["status"] == "fail"  # refused: costs nothing
    assert (await api.check("b@example.com"))["status"] == "success"
    assert sandbox.credit == 0
    assert await api.check("c@example.com") == fail(NO_CREDIT)
    assert await api.create_job(sandbox.host_file("a@example.com\n")) == fail(NO_CREDIT)


# -- jobs -------------------------------------------------------------------------------------
LIST_CSV = "Name,Email\nAda,ada@example.com\nSupport,support@catchall.example\n,bad address\n"


async def test_job_lifecycle_and_csv_download(api: Api, sandbox: Sandbox) -> None:
    created = await api.create_job(sandbox.host_file(LIST_CSV))
    assert created == {"status": "success", "job_id": 1}
    assert await api.validation("jobs/download", job_id=1) == fail(
        "List is currently Processing. Please wait some times."
    )
    assert [await api.status(1) for _ in range(3)] == [
        {"status": "processing"},
        {"status": "processing"},
        {"status": "success"},
    ]
    query = {"api": sandbox.api_key, "username": sandbox.username, "job_id": "1"}
    async with api.http.get("/api/v1/jobs/download", params=query) as resp:
        assert resp.content_type == "text/csv"
        assert resp.headers["Content-Disposition"] == 'attachment; filename="emaillist.csv"'
        text = await resp.text()
    assert list(csv.reader(io.StringIO(text))) == [
        ["Email", "Name", "Status", "Role Based Emails"],
        ["ada@example.com", "Ada", "Valid", "False"],
        ["support@catchall.example", "Support", "CatchAll", "True"],
        ["bad address", "", "Bounce", "False"],
    ]
    assert sandbox.account().credit is None  # unlimited by default


@pytest.mark.asyncsdk_sandbox(job_polls=0, credit=5)
async def test_plain_address_list_spends_one_credit_per_address(api: Api, sandbox: Sandbox):
    job = await api.create_job(sandbox.host_file("a@example.com\r\nb@example.com\n\n"))
    assert await api.status(job["job_id"]) == {"status": "success"}
    assert sandbox.credit == 3
    too_many = sandbox.host_file("\n".join(f"u{i}@example.com" for i in range(4)))
    assert await api.create_job(too_many) == fail(NO_CREDIT)
    assert sandbox.credit == 3


async def test_job_fail_has_no_error_text(api: Api, sandbox: Sandbox) -> None:
    sandbox.fail_next_job()
    job_id = (await api.create_job(sandbox.host_file(LIST_CSV)))["job_id"]
    sandbox.finish_job(job_id, "fail")
    assert await api.status(job_id) == {"status": "fail"}
    failed = await api.validation("jobs/download", job_id=job_id)
    assert failed["status"] == "fail"
    assert "error" in failed  # a request error (the document shows no text for this case)
    next_job = (await api.create_job(sandbox.host_file(LIST_CSV)))["job_id"]
    sandbox.finish_job(next_job)
    assert await api.status(next_job) == {"status": "success"}


@pytest.mark.asyncsdk_sandbox(job_outcome="fail", job_polls=1)
async def test_job_outcome_setting(api: Api, sandbox: Sandbox) -> None:
    job_id = (await api.create_job(sandbox.host_file(LIST_CSV)))["job_id"]
    assert await api.status(job_id) == {"status": "processing"}
    assert await api.status(job_id) == {"status": "fail"}


@pytest.mark.asyncsdk_sandbox(job_seconds=0.0)
async def test_job_timer(api: Api, sandbox: Sandbox) -> None:
    job_id = (await api.create_job(sandbox.host_file(LIST_CSV)))["job_id"]
    assert await api.status(job_id) == {"status": "success"}
    sandbox.settings.job_seconds = 3600
    job_id = (await api.create_job(sandbox.host_file(LIST_CSV)))["job_id"]
    assert [await api.status(job_id) for _ in range(5)] == [{"status": "processing"}] * 5


@pytest.mark.parametrize("path", ["jobs/status", "jobs/download"])
async def test_job_request_errors(api: Api, sandbox: Sandbox, path: str) -> None:
    missing = "Required parameter missing or invalid"  # these two spell it without a dot
    theirs = sandbox.add_account("sk_other", "other-user")
    their_job = sandbox.make_job(rows=3, api_key=theirs.api_key)
    assert await api.validation(path, job_id=their_job) == fail(
        "This Job Id not associated to your users."
    )
    assert await api.validation(path, job_id=999) == fail(
        "This Job Id not associated to your users."
    )
    assert await api.validation(path) == fail(missing)
    assert await api.validation(path, job_id="x1") == fail(missing)
    # Digits of other scripts, superscripts, 5,000 digits: not ids (before: job 1, or a
    # 500 with a ValueError in the server's log).
    job = sandbox.make_job(rows=1)
    for odd in ("\u0661", "\uff11", "\u00b2", "\u2460", "1" * 5000, str(job) + " "):
        assert await api.validation(path, job_id=odd) == fail(missing), odd
    assert await api.validation(path, job_id=their_job, api="sk_other") == fail(AUTH)
    assert await api.status(their_job, api="sk_other", username="other-user") == {
        "status": "success"
    }


async def test_job_create_errors(api: Api, sandbox: Sandbox) -> None:
    listing = sandbox.host_file(LIST_CSV)
    assert await api.create_job(None) == fail(REQUIRED)
    assert await api.create_job(listing, timeout=None) == fail(REQUIRED)
    assert await api.create_job(listing, timeout="-1") == fail(REQUIRED)
    assert await api.create_job(listing, username="nobody") == fail(AUTH)
    not_downloadable = fail("File is not downloadable.")
    assert await api.create_job("https://example.com/list.csv") == not_downloadable
    assert await api.create_job("ftp://127.0.0.1/list.csv") == not_downloadable
    assert await api.create_job(f"{sandbox.base_url}/files/f999/list.csv") == not_downloadable
    assert await api.create_job("http://127.0.0.1:1/list.csv") == not_downloadable
    sandbox.faults.status("/files/*", 500)
    assert await api.create_job(listing) == not_downloadable
    bad_format = fail("File Format is not correct.")
    for content in (b"", b"\x00\x01\x02@\xff", b"name\nno addresses here\n", b"\xff\xfe@x"):
        assert await api.create_job(sandbox.host_file(content)) == bad_format
    assert not sandbox.state.jobs


async def test_other_account_owns_its_jobs(api: Api, sandbox: Sandbox) -> None:
    sandbox.add_account("sk_second", "second", credit=10)
    job = await api.create_job(sandbox.host_file(LIST_CSV), api="sk_second", username="second")
    assert job["status"] == "success"
    assert sandbox.account("sk_second").credit == 7
    assert await api.status(job["job_id"]) == fail("This Job Id not associated to your users.")
    assert await api.status(job["job_id"], api="sk_second", username="second") == {
        "status": "processing"
    }


async def _download(api: Api, job_id: int) -> tuple[str, bytes]:
    query = {"api": api.sb.api_key, "username": api.sb.username, "job_id": str(job_id)}
    async with api.http.get("/api/v1/jobs/download", params=query) as resp:
        return resp.content_type, await resp.read()


async def test_json_download_shape(api: Api, sandbox: Sandbox) -> None:
    sandbox.settings.download_shape = "json"
    job_id = sandbox.make_job(rows=5)
    ctype, body = await _download(api, job_id)
    assert ctype == "application/json"
    document = json.loads(body)
    assert document["status"] == "success"
    rows = list(csv.DictReader(io.StringIO(document["result"])))
    assert [r["Email"] for r in rows] == [f"{p}{i}@{d}" for i, (p, d) in enumerate(
        [("user", "example.com"), ("user", "example.org"), ("support+", "example.com"),
         ("user", "catchall.example"), ("user", "example.net")])]  # fmt: skip
    assert [r["Status"] for r in rows] == ["Valid", "Valid", "Valid", "CatchAll", "Valid"]
    assert [r["Role Based Emails"] for r in rows] == ["False", "False", "True", "False", "False"]


async def test_url_download_shape_serves_without_credentials(api: Api, sandbox: Sandbox):
    sandbox.settings.download_shape = "url"
    sandbox.settings.role_format = "int"
    job_id = sandbox.make_job(rows=3)
    _, body = await _download(api, job_id)
    document = json.loads(body)
    assert document == {
        "status": "success",
        "result": f"{sandbox.base_url}/files/job{job_id}/emaillist.csv",
    }
    async with api.http.get(document["result"]) as resp:
        assert resp.status == 200
        assert resp.content_type == "text/csv"
        text = await resp.text()
    assert text.splitlines()[1:] == [
        "user0@example.com,User 0,Valid,0",
        "user1@example.org,User 1,Valid,0",
        "support+2@example.com,User 2,Valid,1",
    ]
    fetch = sandbox.requests[-1]
    assert fetch.path == f"/files/job{job_id}/emaillist.csv"
    assert fetch.query == {}


@pytest.mark.asyncsdk_sandbox(record=False, chunk_size=16 * 1024)
async def test_large_synthetic_job_streams_every_row(api: Api, sandbox: Sandbox) -> None:
    rows = 200_000
    job_id = sandbox.make_job(rows=rows)
    verdicts: dict[str, int] = {}
    lines = 0
    query = {"api": sandbox.api_key, "username": sandbox.username, "job_id": str(job_id)}
    async with api.http.get("/api/v1/jobs/download", params=query) as resp:
        assert resp.headers.get("Transfer-Encoding") == "chunked"
        tail = b""
        async for chunk in resp.content.iter_chunked(64 * 1024):
            *complete, tail = (tail + chunk).split(b"\r\n")
            for line in complete:
                lines += 1
                status = line.rsplit(b",", 2)[1].decode()
                verdicts[status] = verdicts.get(status, 0) + 1
    assert tail == b""
    assert lines == rows + 1  # the header
    assert set(verdicts) == {"Status", "Valid", "CatchAll", "Unknown", "Disposable", "Bounce"}
    assert sandbox.requests == []


async def test_synthetic_rows_match_the_generic_writer(sandbox: Sandbox) -> None:
    from asyncsdk.testing._validation import csv_chunks

    job = sandbox.state.jobs[sandbox.make_job(rows=1234)]
    assert job.render is not None
    for role_format in ("bool", "int"):
        fast = "".join(job.render(role_format, 100))
        assert fast == "".join(csv_chunks(job.rows(), role_format, 100))
