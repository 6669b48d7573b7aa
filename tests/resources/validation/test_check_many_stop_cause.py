"""``check_many``: the error that stopped a run is compared with None, never judged by
its truth. A caller's pace (``pace=``, the public seam) may raise any ``SDKError``,
its own subclass included, and such a class may define ``__bool__`` or ``__len__``.
Before: ``self.stopped or ...`` read a falsy one as "not stopped", and every input
after it was dropped without an outcome (DESIGN §2: one outcome for every input)."""

from __future__ import annotations

import asyncio

import pytest

import asyncsdk
from asyncsdk.pacing import Admission

BOUND = 10  # a deadlock fails the test instead of hanging it


class FalseRefusal(asyncsdk.UsageError):
    """A refusal whose truth is False (a class of the caller's)."""

    def __bool__(self) -> bool:
        return False


class EmptyRefusal(asyncsdk.UsageError):
    """A refusal whose length is 0, so its truth is False too."""

    def __len__(self) -> int:
        return 0


class RefusingPace:
    """A caller's pace that refuses every check with ``refusal``: nothing is sent."""

    held_until = 0.0

    def __init__(self, refusal: type[asyncsdk.UsageError]) -> None:
        self.refusal = refusal
        self.asked = 0

    async def admit(self, deadline: float) -> Admission | None:
        self.asked += 1
        raise self.refusal("the caller's pace refuses")

    def report(self, admission: Admission, status: int | None,
               retry_after: float | None) -> None:
        raise AssertionError("nothing was let out, so nothing is reported")

    def resends_free(self, status: int) -> bool:
        return False


@pytest.mark.parametrize("refusal", [FalseRefusal, EmptyRefusal])
@pytest.mark.parametrize("concurrency", [1, 3])
async def test_a_falsy_error_that_stops_the_run_still_accounts_for_every_input(
        refusal: type[asyncsdk.UsageError], concurrency: int) -> None:
    inputs = [f"p{i}@example.com" for i in range(12)]
    pace = RefusingPace(refusal)
    async with asyncsdk.Client("k", "u", base_url="http://127.0.0.1:9") as client:

        async def run() -> list[asyncsdk.CheckOutcome]:
            return [o async for o in client.validation.check_many(
                inputs, concurrency=concurrency, pace=pace)]

        outcomes = await asyncio.wait_for(run(), BOUND)
    assert sorted(o.email for o in outcomes) == sorted(inputs)  # before: 1 to 3 of 12
    assert all(isinstance(o.error, refusal) for o in outcomes)
    assert not any(o.attempted for o in outcomes)
    assert 1 <= pace.asked <= concurrency  # the run stopped sending at the first refusal
    skipped = [o for o in outcomes if "not attempted" in str(o.error)]
    assert len(skipped) == len(inputs) - pace.asked
    assert all(o.error is not None and isinstance(o.error.__cause__, refusal)
               for o in skipped)
