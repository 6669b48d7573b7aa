"""``asyncsdk.testing.aioresponses`` however a user's test adds a response: by keyword,
by position, with a callback; each works on the installed aiohttp."""

from __future__ import annotations

import re
from typing import Any

import aiohttp
import pytest

from asyncsdk.testing import aioresponses

URL = "https://api.example.com/thing"
PAYLOAD = {"status": "success"}


@pytest.mark.parametrize(("add", "status"), [
    (lambda m: m.add(URL, "GET", 201, payload=PAYLOAD), 201),  # TypeError on aiohttp 3.14
    (lambda m: m.add(URL, "GET", 202, '{"status": "success"}'), 202),
    (lambda m: m.add(URL, "GET", 200, "", None, "application/json", PAYLOAD), 200),
    (lambda m: m.add(re.compile(r".*/thing$"), "GET", 203, payload=PAYLOAD), 203),
    (lambda m: m.add(URL, method="GET", status=204, payload=PAYLOAD), 204),
    (lambda m: m.get(URL, status=205, payload=PAYLOAD), 205),
])
async def test_a_response_added_any_way_is_answered(add: Any, status: int) -> None:
    with aioresponses() as mocked:
        add(mocked)
        async with aiohttp.ClientSession() as http, http.get(URL) as answer:
            assert answer.status == status
            if status not in (204, 205):
                assert await answer.json() == PAYLOAD


async def test_an_argument_aioresponses_does_not_take_is_its_own_typeerror() -> None:
    with aioresponses() as mocked, pytest.raises(TypeError):
        mocked.add(URL, "GET", 200, statuss=500)
