"""client.mail.send, audited from the outside: what is refused before sending, and what
a 2xx answer that does not say ``success`` means (the mail may have been sent)."""

from __future__ import annotations

import re
from typing import Any

import pytest
from aioresponses import aioresponses
from helpers import API_KEY, BASE, USERNAME

import asyncsdk
from asyncsdk import MailState

SEND = re.compile("^" + re.escape(BASE + "/api/v1/mail/send/") + r"(\?.*)?$")
ARGS: dict[str, Any] = {"sender": "me@example.com", "to": "you@example.org",
                        "subject": "Hello there", "html": "<p>Hi</p>"}


def sent(m: aioresponses) -> int:
    return sum(len(calls) for calls in m.requests.values())


@pytest.mark.parametrize("field", ["sender", "to"])
@pytest.mark.parametrize("separator", ["\u2028", "\u2029"])
async def test_an_address_holding_a_line_separator_is_refused_before_sending(
    client: asyncsdk.Client, mocked: aioresponses, field: str, separator: str
) -> None:
    # A quoted local part may hold white space, but the addresses go into the mail's
    # From/To header lines: a Unicode line separator would end one, as in the subject.
    value = f'"ann{separator}Bcc: victim@example.net"@example.com'
    with pytest.raises(asyncsdk.InvalidInputError) as info:
        await client.mail.send(**{**ARGS, field: value})
    assert info.value.field == field
    assert "CR/LF" in str(info.value)
    assert not mocked.requests


async def test_a_list_of_recipients_is_refused_saying_to_send_one_mail_each(
    client: asyncsdk.Client, mocked: aioresponses
) -> None:
    # The interface sends a mail to one recipient; a list was sent as one ``to`` field,
    # for the service to refuse or to split and deliver to each. (More lists, and the
    # sender's: tests/resources/validation/test_mail.py.)
    with pytest.raises(asyncsdk.InvalidInputError, match=r"^to: expected one address like "
                       r"name@example.com, not a list \(send one mail per recipient\)"):
        await client.mail.send(**{**ARGS, "to": "ann@example.com,bob@example.org"})
    assert not mocked.requests


@pytest.mark.parametrize("to", [
    '"ann,lee;x@y"@example.org', "ann@[IPv6:2001:db8::1]", '"a\\"b,c"@example.org',
])
async def test_one_address_with_commas_or_at_signs_in_quotes_is_still_sent(
    client: asyncsdk.Client, mocked: aioresponses, to: str
) -> None:
    mocked.post(SEND, payload={"status": "success", "message": "Queued", "id": "m1"})
    await client.mail.send(**{**ARGS, "to": to})
    [[request]] = mocked.requests.values()
    assert request.kwargs["data"]["to"] == to


async def test_a_quoted_address_with_a_space_is_still_sent(
    client: asyncsdk.Client, mocked: aioresponses
) -> None:
    mocked.post(SEND, payload={"status": "success", "message": "Queued", "id": "m1"})
    await client.mail.send(**{**ARGS, "to": '"ann lee"@example.org'})
    assert sent(mocked) == 1


@pytest.mark.parametrize("body", [
    {"status": "error", "error": "Mail quota exceeded"},
    {"status": "", "message": "Queued", "id": "m1"},
    {"status": "pending"},
], ids=["error", "blank", "other"])
async def test_a_2xx_answer_that_does_not_say_success_may_have_been_sent(
    client: asyncsdk.Client, mocked: aioresponses, body: dict[str, Any]
) -> None:
    # Not "fail" (a refusal: nothing sent), not "success": the service answered without
    # saying what it did, so this is no MailResult to read as "sent", and never resent.
    mocked.post(SEND, payload=body, repeat=True)
    with pytest.raises(asyncsdk.ResponseDecodeError) as info:
        await client.mail.send(**ARGS)
    error = info.value
    assert error.may_have_been_sent is True
    assert error.operation == "mail.send"
    assert '$.status: expected "success"' in str(error)
    assert repr(body["status"]) in str(error)
    assert "the mail may have been sent" in str(error)
    assert sent(mocked) == 1


async def test_the_error_of_an_answer_not_saying_success_shows_no_credential(
    client: asyncsdk.Client, mocked: aioresponses
) -> None:
    # Long enough to be cut in the message: never a piece of a credential left there.
    echo = {"status": f"{'x' * 20} {API_KEY}", "error": f"user {USERNAME}"}
    mocked.post(SEND, payload=echo)
    with pytest.raises(asyncsdk.ResponseDecodeError) as info:
        await client.mail.send(**ARGS)
    shown = f"{info.value} {info.value.body} {info.value!r}"
    assert API_KEY[:12] not in shown and USERNAME not in shown


@pytest.mark.parametrize("status", ["success", "Success", " SUCCESS "])
async def test_success_in_any_case_is_a_result(
    client: asyncsdk.Client, mocked: aioresponses, status: str
) -> None:
    mocked.post(SEND, payload={"status": status, "message": "Send", "id": 7})
    result = await client.mail.send(**ARGS)
    assert (result.status, result.message, result.id) == (status, MailState.SEND, "7")
