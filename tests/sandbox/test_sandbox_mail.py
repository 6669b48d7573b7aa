"""Transactional mail: success, each error text, credit, outbox."""

from __future__ import annotations

import pytest
from sandbox_helpers import Api

from asyncsdk.testing import SentMail

pytestmark = pytest.mark.asyncsdk_sandbox(verified_domains=["Example.com"], credit=2)


def fail(error: str) -> dict[str, str]:
    return {"status": "fail", "error": error}


async def test_mail_is_queued_and_lands_in_the_outbox(api: Api) -> None:
    assert await api.mail() == {"status": "success", "message": "Queued", "id": "msg-000001"}
    api.sb.settings.mail_state = "Send"
    assert (await api.mail(subject="Again"))["message"] == "Send"
    assert api.sb.outbox[0] == SentMail(
        id="msg-000001",
        sender="news@example.com",
        to="ada@example.org",
        subject="Hello",
        message="<p>Hi</p>",
        username=api.sb.username,
        state="Queued",
    )
    assert api.sb.requests[0].form["from"] == "news@example.com"
    assert api.sb.credit == 0
    assert await api.mail() == fail("The request was refused due to insufficent credit.")
    assert len(api.sb.outbox) == 2


@pytest.mark.parametrize("method", ["GET", "PUT", "DELETE"])
async def test_other_methods_are_refused(api: Api, method: str) -> None:
    assert await api.mail(method) == fail("Request method is not correct.")


@pytest.mark.parametrize(
    "fields",
    [
        {"from": None},
        {"to": None},
        {"subject": ""},
        {"message": None},
        {"api": None},
        {"username": None},
        {"to": "not an address"},
    ],
)
async def test_missing_or_invalid_fields(api: Api, fields: dict[str, str | None]) -> None:
    assert await api.mail(**fields) == fail("Required parameter missing or invalid.")


async def test_json_body_is_not_a_form(api: Api) -> None:
    async with api.http.post("/api/v1/mail/send/", json={"api": api.sb.api_key}) as resp:
        assert await resp.json() == fail("Required parameter missing or invalid.")


async def test_wrong_credentials_and_unverified_sender(api: Api) -> None:
    assert await api.mail(api="sk_wrong") == fail(
        "User authentication failed. Wrong API Key or username."
    )
    assert await api.mail(**{"from": "news@other.example"}) == fail(
        "Domain authentication failed. Unverified Sender found."
    )
    api.sb.verify_domain("other.example")
    assert (await api.mail(**{"from": "news@other.example"}))["status"] == "success"
