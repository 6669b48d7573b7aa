"""Scenario 5: ``job.wait()`` with its defaults on a job that finishes after 60 s.

Simulated time: the client is given a clock (``Client(clock=...)``) that advances only
when ``wait()`` sleeps, so nothing really waits. The
benchmark server answers ``processing`` to ``jobs/status?job_id=60`` while the request's
``X-Bench-Clock`` header (the fake time, set on the session before each poll) is below
60 s, then ``success``. Jitter is drawn from ``rand``: the run is repeated for the
extremes (0 and 0.999...) and for seeded random draws; the worst case is reported.
"""

from __future__ import annotations

import asyncio
import random
from collections.abc import Callable
from typing import Any

from ._common import API_KEY, USERNAME, Paired, Section, Target

FINISH = 60.0


async def _one(url: str, rand: Callable[[], float]) -> tuple[int, float]:
    """(status requests, detection delay in simulated seconds)."""
    import aiohttp

    import asyncsdk

    polls = 0

    async def count(*_: object) -> None:
        nonlocal polls
        polls += 1

    trace = aiohttp.TraceConfig()
    trace.on_request_start.append(count)
    async with aiohttp.ClientSession(headers={"X-Bench-Clock": "0"},
                                     trace_configs=[trace]) as session:
        clock = _BenchClock(session, rand)
        async with asyncsdk.Client(api_key=API_KEY, username=USERNAME, base_url=url,
                                   session=session, clock=clock) as client:
            await client.validation.job(int(FINISH)).wait()
    return polls, clock.now() - FINISH


class _BenchClock:
    """Simulated time (``Client(clock=...)``): a sleep moves it on at once, and the
    server is told the time through a header of the session."""

    def __init__(self, session: Any, rand: Callable[[], float]) -> None:
        self._session = session
        self._now = 0.0
        self.random = rand

    def now(self) -> float:
        return self._now

    async def sleep(self, seconds: float) -> None:
        self._now += seconds
        self._session.headers["X-Bench-Clock"] = repr(self._now)


def run(url: str, *, seeds: int) -> Section:
    section = Section(
        "wait", "Scenario 5 - job.wait(): polls and detection delay (simulated time)",
        f"A job that finishes {FINISH:.0f} s after wait() starts; default interval, "
        "max_interval (30 s) and factor. Jitter draws: always 0, always 0.999..., and "
        f"{seeds} seeded random sequences.",
        ["jitter draws", "status requests", "detected after (s)", "delay (s)"])
    cases: list[tuple[str, Callable[[], float]]] = [
        ("always 0 (longest pauses)", lambda: 0.0),
        ("always 0.999... (shortest pauses)", lambda: 0.999999),
    ]
    results = [(label, *asyncio.run(_one(url, rand))) for label, rand in cases]
    seeded = [asyncio.run(_one(url, random.Random(seed).random)) for seed in range(seeds)]
    for label, polls, delay in results:
        section.rows.append([label, str(polls), f"{FINISH + delay:.2f}", f"{delay:.2f}"])
    if seeded:
        section.rows.append([
            f"{seeds} seeded sequences (min-max)",
            f"{min(p for p, _ in seeded)}-{max(p for p, _ in seeded)}",
            f"{FINISH + min(d for _, d in seeded):.2f}-{FINISH + max(d for _, d in seeded):.2f}",
            f"{min(d for _, d in seeded):.2f}-{max(d for _, d in seeded):.2f}"])
    every = [(p, d) for _, p, d in results] + seeded
    worst_delay = max(d for _, d in every)
    section.pairs.append(Paired(f"job.wait() on a {FINISH:.0f} s job: status polls", "polls",
                                [float(p) for p, _ in every], None, "", "<=", 12,
                                f"{len(every)} jitter sequences"))
    section.targets.append(Target("detection delay <= max_interval (30 s)", worst_delay <= 30.0,
                                  f"worst {worst_delay:.2f} s"))
    return section
