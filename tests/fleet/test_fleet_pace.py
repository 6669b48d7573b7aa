"""The fleet's shared pace (``examples/fleet/pace.py``) on a real redis-server: the one
of the fleet tests (the oldest the fleet supports, 6.2, where the suite's server is),
and a token-bucket service on 127.0.0.1.

Two workers (two clients, two ``SharedPace``) on one key behave like one client: their
checks share one schedule, together near the service's rate, few 429s, none lost, none
answered twice; a service that takes nothing holds both for the wait it asked.
"""

from __future__ import annotations

import asyncio
import itertools
import time
from collections.abc import AsyncIterator

import pytest
from aiohttp import web
from arq.connections import ArqRedis
from helpers import TokenBucket

import asyncsdk
from examples.fleet.pace import CHECK_PATH, SharedPace, paced_client, retry_after_ms
from examples.fleet.store import PAUSE_KEY


async def test_the_script_runs_on_the_suites_redis(pool: ArqRedis) -> None:
    """Every command of the script exists on this server (6.2 in the suite)."""
    info = await pool.info("server")
    version = tuple(int(p) for p in str(info["redis_version"]).split(".")[:2])
    assert version >= (6, 2)
    pace = SharedPace(pool)
    moment = await pace.ready()
    await pace.refused(moment, 0)
    assert await pace.rate() > 0


async def test_two_workers_share_one_schedule(pool: ArqRedis) -> None:
    """Moments reserved by two workers in turn are one schedule at the fleet's rate:
    about one interval apart, whoever asks (not two schedules side by side)."""
    a, b = SharedPace(pool, rand=lambda: 0.5), SharedPace(pool, rand=lambda: 0.5)
    await pool.hset("fleet:pace", mapping={"rate": "200", "cut": "1", "probe": "1e18"})
    moments = []
    for i in range(10):
        _, moment = await (a if i % 2 else b)._call("ready", moments=1)
        moments.append(int(moment))
    gaps = [y - x for x, y in itertools.pairwise(moments)]
    assert all(4_900 <= g <= 5_100 for g in gaps), gaps  # 1 / 200 s, in microseconds


async def test_a_service_that_takes_nothing_pauses_the_fleet(pool: ArqRedis) -> None:
    a, b = SharedPace(pool), SharedPace(pool)
    moment = await a.ready()
    await a.refused(moment, 300)  # nothing answered lately: hold everyone 300 ms
    assert 200 < await pool.pttl(PAUSE_KEY) <= 300
    started = time.monotonic()
    await b.ready()  # the other worker waits for the pause's end
    assert time.monotonic() - started >= 0.2


def test_retry_after_is_read_in_milliseconds() -> None:
    assert [retry_after_ms(v) for v in ("1", "0.25", None, "", "soon", "nan")] == [
        1000, 250, 0, 0, 0, 0]



@pytest.fixture
async def bucket() -> AsyncIterator[tuple[TokenBucket, str]]:
    service = TokenBucket(rate=400, burst=10, retry_after="0.05")
    app = web.Application()
    app.router.add_get(CHECK_PATH, service.handle)
    runner = web.AppRunner(app, handle_signals=False, shutdown_timeout=0.1)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    port = site._server.sockets[0].getsockname()[1]  # type: ignore[union-attr]
    try:
        yield service, f"http://127.0.0.1:{port}"
    finally:
        await runner.cleanup()


async def test_two_workers_on_one_key_behave_like_one_client(
        pool: ArqRedis, bucket: tuple[TokenBucket, str],
        monkeypatch: pytest.MonkeyPatch) -> None:
    service, url = bucket
    monkeypatch.setenv("ASYNCSDK_API_KEY", "fleet-key")
    monkeypatch.setenv("ASYNCSDK_USERNAME", "fleet-user")
    monkeypatch.setenv("ASYNCSDK_BASE_URL", url)
    workers = [paced_client(SharedPace(pool), max_retries=0, max_connections=100)
               for _ in range(2)]

    async def run(client: asyncsdk.Client, prefix: str) -> list[asyncsdk.CheckOutcome]:
        emails = [f"{prefix}{i}@example.com" for i in range(300)]
        return [o async for o in client.validation.check_many(
            emails, concurrency=50, adaptive=False)]

    try:
        outcomes = await asyncio.gather(*(run(c, p) for (c, _), p in zip(
            workers, "ab", strict=True)))
    finally:
        for client, session in workers:
            await client.close()
            await session.close()
    assert all(o.ok for each in outcomes for o in each)
    assert len(service.answered) == 600 and set(service.answered.values()) == {1}
    # Few 429s: two workers at one pace. How near the limit they go is a figure of the
    # benchmark (benchmarks/scen_pace.py, the fleet row), not a wall-clock assert here.
    assert service.limited < 0.1 * 600
