"""Constants and small fakes shared by the tests."""

from __future__ import annotations

API_KEY = "sk_live_SECRET_key_0123456789"
USERNAME = "secret-user-name"
BASE = "https://api.test"


class SleepRecorder:
    """Stands in for asyncio.sleep: records the delays, returns at once."""

    def __init__(self) -> None:
        self.delays: list[float] = []

    async def __call__(self, delay: float) -> None:
        self.delays.append(delay)
