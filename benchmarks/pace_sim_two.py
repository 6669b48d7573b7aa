"""Issue 40: two processes on one key, each its own Pace, simulated on the virtual clock.
``python -m benchmarks.pace_sim_two`` (1,200 and 5,000 inputs, 10 seeds each)."""
from __future__ import annotations

import asyncio
import random
import statistics

from asyncsdk._core.pace import Pace
from asyncsdk.testing import RateLimit
from benchmarks import pace_sim as p
from benchmarks.pace_sim import virtual_loop


def two(seed: int, total: int = 1200) -> dict[str, float]:
    out: dict[str, float] = {}

    async def main() -> None:
        loop = asyncio.get_running_loop()
        service = p.service_of(lambda t: RateLimit(p.R, p.BURST, 1.0), [], 0.02)
        paces = [Pace(loop.time, p.park, random.Random(seed * 10 + i).random)
                 for i in range(2)]
        await asyncio.gather(*(p.client(pc, service, total // 2) for pc in paces))
        end = max(service.answered)
        out["goodput"] = total / end / p.R
        out["429%"] = 100 * sum(1 for e in service.log if not e[1]) / len(service.log)

    with virtual_loop() as loop:
        loop.run_until_complete(main())
    return out


def main() -> None:
    for total in (1200, 5000):
        runs = [two(s, total) for s in range(10)]
        print(total, {k: (round(statistics.median(r[k] for r in runs), 3),
                          round(min(r[k] for r in runs), 3),
                          round(max(r[k] for r in runs), 3)) for k in runs[0]})


if __name__ == "__main__":
    main()
