"""Helpers of the fleet tests: the repository's root, polling with a bound, a worker's
context as arq hands it to a task, and closing a pool after the paces made on it."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import attrs
from arq.connections import ArqRedis

import asyncsdk
from asyncsdk.fleet.config import FleetConfig
from asyncsdk.fleet.shared_pace import SharedPace
from asyncsdk.testing import Sandbox

CHECK = "/api/v1/single/check"
ROOT = Path(__file__).resolve().parents[2]


@attrs.frozen
class RedisServer:
    """The redis-server binary the fleet tests run, its version and where it came from."""

    binary: str
    version: str
    source: str


async def until(check: Callable[[], Awaitable[bool]], *, timeout: float, what: str,
                progress: Callable[[], Awaitable[int]] | None = None) -> None:
    """Poll ``check`` every 20 ms until it is true; fail the test after ``timeout`` s.
    With ``progress`` (a count that grows as the work goes on), after ``timeout`` s in
    which that count did not grow: a long run on a loaded machine is slow, not stuck."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout
    done = None if progress is None else await progress()
    while not await check():
        if loop.time() > deadline:
            now_done = None if progress is None else await progress()
            if done is None or now_done is None or now_done <= done:
                stuck = "" if done is None else f" ({done} done, none more in that time)"
                raise AssertionError(f"timed out after {timeout} s waiting for {what}{stuck}")
            done, deadline = now_done, loop.time() + timeout
        await asyncio.sleep(0.02)


def tail(path: Path, lines: int = 30) -> str:
    """The last lines of a log file (for failure messages)."""
    if not path.exists():
        return ""
    return "\n".join(path.read_text(errors="replace").splitlines()[-lines:])


#: The paces ``worker`` made and ``close_pool`` has not closed yet, by their pool's id.
_OPEN_PACES: dict[int, list[SharedPace]] = {}


def worker(client: asyncsdk.Client, pool: ArqRedis, pid: int, *, job_try: int = 1,
           **config: Any) -> dict[str, Any]:
    """What arq gives a task on a worker whose on_startup made ``client`` and the
    fleet's pace (on ``pool``: each batch's ``check_many(pace=...)``). The pace is
    closed by ``close_pool(pool)``, as the worker's shutdown closes it before arq
    closes the pool."""
    pace = SharedPace(pool)
    _OPEN_PACES.setdefault(id(pool), []).append(pace)
    return {"client": client, "redis": pool, "config": FleetConfig(**config), "pid": pid,
            "job_try": job_try, "pace": pace}


async def close_pool(pool: ArqRedis) -> None:
    """Close the paces ``worker`` made on ``pool``, then ``pool``.

    In that order: a pace tells its last events a moment after a batch ends (its
    flusher), and one told once the pool was closed opened a connection in it that
    nothing closed: an "unclosed Connection" ResourceWarning failed whichever test the
    collector next ran in (twice in CI, in test_fleet_stop)."""
    paces = _OPEN_PACES.pop(id(pool), [])
    try:
        closed = await asyncio.gather(*(pace.aclose() for pace in paces),
                                      return_exceptions=True)
    finally:
        await pool.aclose()
    for outcome in closed:
        if isinstance(outcome, BaseException):
            raise outcome


def paces_left_open() -> int:
    """How many paces ``worker`` made whose pool was not closed by ``close_pool``
    (forgotten here: each test starts with none)."""
    count = sum(map(len, _OPEN_PACES.values()))
    _OPEN_PACES.clear()
    return count


def checks(sb: Sandbox) -> list[str]:
    return [r.query["email"] for r in sb.requests if r.path == CHECK]
