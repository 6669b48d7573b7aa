"""The refusals just after a cut, in virtual time (issue 40 item 3): two paces on one
key (each its own ``RateFinder``, as two processes), driven by the in-memory pace against
the sandbox's bucket. The first sends after a cut find the bucket empty, so some of them
are refused whatever the new rate; read as new episodes without an estimate, each cut the
rate 10 % more (451 -> 197/s in 70 ms, traced). Read as the cut's own episode
(``cut_settle_seconds``), they refine its estimate."""

from __future__ import annotations

import asyncio
import random
import statistics

from test_pace import park
from test_rate_dark_and_cap import BURST, R, Service, run
from virtual_time import virtual_loop

from asyncsdk._core.pace import Pace
from asyncsdk.testing import RateLimit


def two_paces(seed: int, inputs: int) -> float:
    """Two paces share ``inputs`` checks on one key (R, burst 50, ``Retry-After: 1``):
    the goodput together, a share of R; every input answered once."""
    async def main() -> float:
        loop = asyncio.get_running_loop()
        service = Service(RateLimit(R, BURST, 1.0))
        paces = [Pace(loop.time, park, random.Random(seed * 10 + i).random)
                 for i in range(2)]
        await asyncio.gather(*(run(pace, service, inputs // 2) for pace in paces))
        assert len(service.answered) == inputs
        return inputs / max(service.answered) / R

    with virtual_loop() as loop:
        return loop.run_until_complete(main())


def test_two_short_paces_on_one_key_keep_the_rate_together() -> None:
    """1,200 checks (2.4 s at R) from two paces on one key, over 8 seeds: the median
    goodput together is at least 0.85 R (before: 0.79 R, the cascades of cuts after the
    start-up and after each failed probe)."""
    goodputs = [two_paces(seed, 1200) for seed in range(8)]
    assert statistics.median(goodputs) >= 0.85, goodputs
