"""client.mail.send."""

from __future__ import annotations

from typing import Any

import aiohttp
import pytest
from aioresponses import aioresponses
from validation_tools import url_of

import asyncsdk
from asyncsdk import MailState

SEND = url_of("/api/v1/mail/send/")
ARGS: dict[str, Any] = {"sender": "me@example.com", "to": "you@example.org",
                        "subject": "Hello there", "html": "<p>Hi</p>"}


def sent(m: aioresponses) -> int:
    return sum(len(calls) for calls in m.requests.values())


async def test_send_posts_the_form_and_reads_the_result(
    client: asyncsdk.Client, mocked: aioresponses
) -> None:
    mocked.post(SEND, payload={"status": "success", "message": "Queued", "id": 991})
    result = await client.mail.send(**ARGS)
    assert isinstance(result, asyncsdk.MailResult)
    assert result.status == "success"
    assert result.message is MailState.QUEUED
    assert result.id == "991"
    (key, calls), = mocked.requests.items()
    assert key[0] == "POST"
    # What a mock sees carries no credential: the library's middleware adds them to the
    # form last, on the wire (tests/core/test_middleware.py).
    assert calls[0].kwargs["data"] == {
        "from": "me@example.com", "to": "you@example.org", "subject": "Hello there",
        "message": "<p>Hi</p>"}
    assert not key[1].query


async def test_send_keeps_an_unknown_state_as_text(
    client: asyncsdk.Client, mocked: aioresponses
) -> None:
    mocked.post(SEND, payload={"status": "success", "message": "Send", "id": "m1"})
    mocked.post(SEND, payload={"status": "success", "message": "Deferred", "id": "m2"})
    assert (await client.mail.send(**ARGS)).message is MailState.SEND
    assert (await client.mail.send(**ARGS)).message == "Deferred"


@pytest.mark.parametrize(("text", "cls"), [
    ("Request method is not correct.", asyncsdk.InvalidRequestError),
    ("Required parameter missing or invalid.", asyncsdk.InvalidRequestError),
    ("User authentication failed. Wrong API Key or username.", asyncsdk.AuthenticationError),
    ("Domain authentication failed. Unverified Sender found.",
     asyncsdk.UnverifiedSenderError),
    ("The request was refused due to insufficent credit.", asyncsdk.InsufficientCreditError),
])
async def test_every_error_text_of_mail_send(
    client: asyncsdk.Client, mocked: aioresponses, text: str, cls: type[Exception]
) -> None:
    mocked.post(SEND, payload={"status": "fail", "error": text})
    with pytest.raises(cls) as info:
        await client.mail.send(**ARGS)
    assert type(info.value) is cls


async def test_send_is_not_repeated_after_a_500(
    client: asyncsdk.Client, mocked: aioresponses
) -> None:
    mocked.post(SEND, status=500, body="oops", repeat=True)
    with pytest.raises(asyncsdk.ServerError):
        await client.mail.send(**ARGS)
    assert sent(mocked) == 1


async def test_unknown_outcome_says_it_may_have_been_sent(
    client: asyncsdk.Client, mocked: aioresponses
) -> None:
    mocked.post(SEND, exception=aiohttp.ServerDisconnectedError(), repeat=True)
    with pytest.raises(asyncsdk.APIConnectionError) as info:
        await client.mail.send(**ARGS)
    assert info.value.may_have_been_sent is True
    assert sent(mocked) == 1


@pytest.mark.parametrize(("field", "value"), [
    ("sender", "not-an-address"), ("sender", None), ("to", "you"), ("to", "a b@c.com"),
    ("subject", "Hi\r\nBcc: victim@example.com"), ("subject", "tab\there"),
    ("subject", "\x00"), ("subject", ""), ("subject", 5),
    ("html", ""), ("html", "   "), ("html", b"<p>"), ("html", None),
    # A list of addresses is no one address (the interface sends a mail to one).
    *[(field, listed) for field in ("sender", "to") for listed in (
        "ann@example.com,bob@example.org", "ann@example.com;bob@example.org",
        "ann,bob@example.org", "ann@example.com@example.org",
        '"quoted"@example.com,bob@example.org')],
])
async def test_bad_arguments_are_refused_before_sending(
    client: asyncsdk.Client, mocked: aioresponses, field: str, value: Any
) -> None:
    with pytest.raises(asyncsdk.InvalidInputError) as info:
        await client.mail.send(**{**ARGS, field: value})
    assert info.value.field == field
    assert not mocked.requests
