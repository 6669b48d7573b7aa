"""Helpers of the fleet tests: the repository's root, polling with a bound, a worker's
context as arq hands it to a task."""

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


async def until(check: Callable[[], Awaitable[bool]], *, timeout: float, what: str) -> None:
    """Poll ``check`` every 20 ms until it is true; fail the test after ``timeout`` s."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout
    while not await check():
        if loop.time() > deadline:
            raise AssertionError(f"timed out after {timeout} s waiting for {what}")
        await asyncio.sleep(0.02)


def tail(path: Path, lines: int = 30) -> str:
    """The last lines of a log file (for failure messages)."""
    if not path.exists():
        return ""
    return "\n".join(path.read_text(errors="replace").splitlines()[-lines:])


def worker(client: asyncsdk.Client, pool: ArqRedis, pid: int, *, job_try: int = 1,
           **config: Any) -> dict[str, Any]:
    """What arq gives a task on a worker whose on_startup made ``client`` and the
    fleet's pace (on ``pool``: each batch's ``check_many(pace=...)``)."""
    return {"client": client, "redis": pool, "config": FleetConfig(**config), "pid": pid,
            "job_try": job_try, "pace": SharedPace(pool)}


def checks(sb: Sandbox) -> list[str]:
    return [r.query["email"] for r in sb.requests if r.path == CHECK]
