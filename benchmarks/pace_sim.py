"""Issue 40 item 3, a simulation (white-box: the library's own Pace, not its public API):
the pace on a virtual clock against the sandbox's bucket
(asyncsdk.testing.RateLimits on the loop's clock). Workers have the transport's bulk
shape: a 429 with Retry-After waits it, one without waits backoff_delay(free 429s so far).

    python -m benchmarks.pace_sim SCENARIO [SEEDS]

SCENARIO: cap, one, nora (no Retry-After), slow (100 ms), drop (R -> R/3 -> R),
recovery (2 s blackout), all.
"""
from __future__ import annotations

import asyncio
import math
import os
import random
import statistics
import sys
from collections.abc import Callable
from pathlib import Path

# The tests' simulated service and workers, and their virtual clock.
_TESTS = Path(__file__).resolve().parents[1] / "tests"
sys.path.insert(0, str(_TESTS))
sys.path.insert(0, str(_TESTS / "core"))
from test_pace import park  # noqa: E402
from test_rate_dark_and_cap import Service, back_after, run  # noqa: E402
from virtual_time import virtual_loop  # noqa: E402

import asyncsdk  # noqa: E402
from asyncsdk._core.pace import Pace  # noqa: E402
from asyncsdk.testing import RateLimit  # noqa: E402

R, BURST = 500.0, 50
VERBOSE = bool(os.environ.get("VERBOSE"))


def service_of(limit_at: Callable[[float], RateLimit], changes: list[float],
               service: float) -> Service:
    """The tests' simulated service, each change of the limit at its own moment, and
    0.5 ms on the wire back for every answer."""
    return Service(limit_at(0.0), tuple((t, limit_at(t)) for t in sorted(changes)),
                   service, way_back=0.0005)


async def client(pace: Pace, service: Service, count: int, workers: int = 64) -> None:
    """The tests' check_many-shaped workers, 0.5 ms on the wire for every send, the
    pace told the inputs left (check_many's over a list)."""
    await run(pace, service, count, workers, on_the_way=0.0005, seed=7, counted=True)


def watch(pace: Pace, until: float, states: list) -> asyncio.Task:
    async def run() -> None:
        loop = asyncio.get_running_loop()
        while loop.time() < until:
            f = pace.finder
            states.append((round(loop.time(), 2), round(f.rate, 1), f.window,
                           round(f.estimate, 1), f.phase.value, pace.in_flight))
            await asyncio.sleep(0.1)
    return asyncio.get_running_loop().create_task(run())


def simulate(limit_at, changes, count, service_time, seed, offered, extra=None):
    out: dict[str, float] = {}

    async def main() -> None:
        loop = asyncio.get_running_loop()
        service = service_of(limit_at, changes, service_time)
        pace = Pace(loop.time, park, random.Random(seed).random)
        states: list = []
        w = watch(pace, 30.0, states)
        await client(pace, service, count)
        w.cancel()
        end = max(service.answered)
        out["goodput"] = count / offered(end)
        out["429%"] = 100 * sum(1 for e in service.log if not e[1]) / len(service.log)
        if extra is not None:
            out.update(extra(service))
        if VERBOSE:
            for s in states:
                print(s)

    with virtual_loop() as loop:
        loop.run_until_complete(main())
    return out


def cap(seed: int, n: int = 8, service: float = 0.02, count: int = 1000) -> dict[str, float]:
    return simulate(lambda t: RateLimit(100 * R, BURST, None, n), [], count, service, seed,
                    lambda end: end * n / service)


def cap4(seed):
    return cap(seed, 4)


def cap12(seed):
    return cap(seed, 12)


def cap30(seed):
    return cap(seed, 30, count=3000)


def capslow(seed):
    return cap(seed, 8, 0.1, 400)


def one(seed: int, retry_after: float | None = 1.0, service: float = 0.02):
    return simulate(lambda t: RateLimit(R, BURST, retry_after), [], 1200, service, seed,
                    lambda end: end * R)


def nora(seed: int):
    return one(seed, None)


def slow(seed: int):
    return one(seed, 1.0, 0.1)


def drop(seed: int):
    at, length = 1.0, 2.0

    def limit_at(t):
        return RateLimit(R / 3 if at <= t < at + length else R, BURST, 1.0)

    def offered(end):
        return R * end - R * (2 / 3) * max(0.0, min(end, at + length) - at)

    def extra(service):
        return {"back": back_after(service.answered, at + length),
                "429% in drop+1..restore": 100 * sum(
                    1 for t, ok in service.log if at + 1 <= t < at + length and not ok)
                / max(1, sum(1 for t, _ in service.log if at + 1 <= t < at + length))}

    return simulate(limit_at, [at, at + length], 2200, 0.02, seed, offered, extra)


def recovery(seed: int):
    at, length = 1.0, 2.0
    restore = at + length

    def limit_at(t):
        return RateLimit(0.0 if at <= t < restore else R, BURST, 1.0)

    def offered(end):
        return R * (end - length)

    def extra(service):
        after = sorted(t for t in service.answered if t >= restore)
        return {"back": back_after(after, restore),
                "next1s": sum(1 for t in after if t < restore + 1) / R,
                "first200": after[199] - restore if len(after) >= 200 else math.nan}

    return simulate(limit_at, [at, restore], 1500, 0.02, seed, offered, extra)


SCENARIOS = {"cap": cap, "cap4": cap4, "cap12": cap12, "cap30": cap30,
             "capslow": capslow, "one": one, "nora": nora, "slow": slow, "drop": drop,
             "recovery": recovery}


def smallburst(seed: int):
    """A rate limit whose burst (8) is below the start-up's window: its first 429s come
    before any answer, as a cap's do."""
    return simulate(lambda t: RateLimit(R, 8, None), [], 1200, 0.02, seed,
                    lambda end: end * R)


SCENARIOS["smallburst"] = smallburst


if __name__ == "__main__":
    what = sys.argv[1]
    seeds = range(int(sys.argv[2]) if len(sys.argv) > 2 else 10)
    print("code:", os.path.dirname(asyncsdk.__file__))
    for name in (SCENARIOS if what == "all" else what.split(",")):
        runs = [SCENARIOS[name](s) for s in seeds]
        cells = []
        for k in runs[0]:
            vals = [r[k] for r in runs]
            cells.append(f"{k} {statistics.median(vals):.3f} ({min(vals):.3f}-{max(vals):.3f})")
        print(f"{name}: " + "; ".join(cells), flush=True)
