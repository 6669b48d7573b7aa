"""Constants and small fakes shared by the tests."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncGenerator
from typing import Any

API_KEY = "sk_live_SECRET_key_0123456789"
USERNAME = "secret-user-name"
BASE = "https://api.test"


class SleepRecorder:
    """Stands in for asyncio.sleep: records the delays, returns at once."""

    def __init__(self) -> None:
        self.delays: list[float] = []

    async def __call__(self, delay: float) -> None:
        self.delays.append(delay)


def rows_of(pieces: list[str]) -> list[Any]:
    """The ``EmailRow``s that ``rows()`` makes of CSV text arriving in ``pieces`` (its
    hot loop, ``_rows.email_rows``, driven without a server); a malformed text raises
    the ``StreamDecodeError`` itself."""
    from asyncsdk._rows import email_rows

    async def texts() -> AsyncGenerator[str, None]:
        for piece in pieces:
            yield piece

    async def collect() -> list[Any]:
        return [row async for row in email_rows(texts(), lambda error: error)]

    return asyncio.run(collect())
