"""client.mail.send, audited from the outside: what is refused before sending."""

from __future__ import annotations

import re
from typing import Any

import pytest
from aioresponses import aioresponses
from helpers import BASE

import asyncsdk

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


async def test_a_quoted_address_with_a_space_is_still_sent(
    client: asyncsdk.Client, mocked: aioresponses
) -> None:
    mocked.post(SEND, payload={"status": "success", "message": "Queued", "id": "m1"})
    await client.mail.send(**{**ARGS, "to": '"ann lee"@example.org'})
    assert sent(mocked) == 1
