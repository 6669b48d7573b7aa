"""``close()`` ending a call in flight: the ``APIConnectionError`` it gets shows no
credential, even in a traceback rendered with its local variables (as Sentry, rich and
loguru render them). The call may be ended while it holds the previous attempt's answer
(a retry's backoff sleep), whose repr carries the full request URL."""

from __future__ import annotations

import asyncio
import traceback

import pytest
from auth_helpers import leaks
from helpers import Sleeper
from scripted_server import CHECK_PATH, scripted_server

import asyncsdk

KEY = "kÖ+y/Z=9==Qx"  # base64 punctuation and a non-ASCII letter
USER = "user_Q9z"
HANG = 10.0  # only reached if the call hangs: the test then fails


def _shown(exc: BaseException) -> str:
    rendered = "".join(traceback.TracebackException(
        type(exc), exc, exc.__traceback__, capture_locals=True).format())
    return "\n".join([rendered, str(exc), repr(exc), str(getattr(exc, "url", ""))])


@pytest.mark.parametrize("status", [503, 429])
async def test_a_call_ended_in_its_retry_sleep_shows_no_credential(status: int) -> None:
    clock = Sleeper(hold=3600)  # ended only by close()
    clock.long = True

    async with scripted_server() as server:
        server.on(CHECK_PATH, server.answer({"detail": f"busy {KEY}"}, status=status))
        client = asyncsdk.Client(KEY, USER, base_url=server.base_url, clock=clock)
        task = asyncio.ensure_future(client.validation.check("a@b.com"))
        await asyncio.wait_for(clock.sleeping.wait(), HANG)
        await client.close()
        with pytest.raises(asyncsdk.APIConnectionError) as info:
            await asyncio.wait_for(task, HANG)
    assert "closed" in str(info.value)
    shown = _shown(info.value)
    assert not leaks(shown, (KEY, USER)), leaks(shown, (KEY, USER))
