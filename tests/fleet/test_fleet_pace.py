"""The fleet's shared pace (``asyncsdk/fleet/pace.py``) on a real redis-server: the one
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
from asyncsdk.fleet.pace import CHECK_PATH, SharedPace, retry_after_ms
from asyncsdk.fleet.store import PAUSE_KEY
from asyncsdk.fleet.worker import paced_client


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


async def test_the_rate_is_found_from_send_moments(pool: ArqRedis) -> None:
    """The answered checks sent between two refused ones, over the time between their
    sends, are the rate the service took (500/s here), whenever the answers are told:
    before the 429s or after them (a worker tells its answers with its next call)."""
    pace = SharedPace(pool)
    await pool.hset("fleet:pace", mapping={"rate": "800", "cut": "1", "probe": "1e18"})
    (now,) = await pace._call("ready")
    start = now - 500_000
    answered = [start + 2_000 * i for i in range(1, 200)]  # one every 2 ms
    refused = [start + 1_000 + 100_000 * i for i in range(4)]  # 300 ms bracketed
    pace._answered = [repr(m) for m in answered[:100]]
    await pace._call("ready")
    for moment in refused:
        await pace.refused(moment, 0)
    pace._answered = [repr(m) for m in answered[100:]]
    await pace._call("ready")  # the rest of the answers, told late, complete it
    assert await pace.rate() == pytest.approx(0.97 * 500, rel=0.02)


async def test_the_start_up_grows_with_the_answers_not_with_time(pool: ArqRedis) -> None:
    """A second into its start-up, time alone would allow the fleet a million checks a
    second (it flooded the service while the batches were starting); answered at 100/s,
    it goes at most twice that."""
    pace = SharedPace(pool)
    (now,) = await pace._call("ready")
    await pool.hset("fleet:pace", mapping={"rate": "100", "start": repr(now - 1e6)})
    pace._answered = [repr(now - 200_000 + 10_000 * i) for i in range(20)]  # 100/s
    await pace._call("ready")
    assert 100 <= await pace.rate() <= 210


async def test_a_cut_never_falls_below_what_the_service_was_seen_to_take(
        pool: ArqRedis) -> None:
    """Brackets of an episode after a stall say 100/s; the fleet was answered at about
    340/s over the last half second: the rate is cut to 0.8 x that at least (half the
    rate refused, 200/s, was the only floor), and probes soon."""
    pace = SharedPace(pool)
    (now,) = await pace._call("ready")
    await pool.hset("fleet:pace", mapping={"rate": "400", "cut": "1", "probe": "1e18"})
    dense = [now - 600_000 + 2_000 * i for i in range(175)]  # 500/s until now - 250 ms
    sparse = [now - 250_000 + 10_000 * i for i in range(20)]  # then 100/s
    pace._answered = [repr(m) for m in dense + sparse]
    await pace._call("ready")
    await pace.refused(now - 240_000 + 5_000, 0)
    await pace.refused(now - 60_000 + 5_000, 0)
    rate = await pace.rate()
    assert 0.8 * 300 <= rate <= 0.8 * 380, rate
    probe = float(await pool.hget("fleet:pace", "probe"))  # type: ignore[misc]
    assert probe - now <= 250_000 + 200_000  # SOON after the cut (not PLATEAU, 4 s)


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
