"""One measurement of scenario 2 in a fresh process: ``python -m benchmarks._many_child``
reads ``{"url", "contender", "count", "concurrency"}`` (JSON) on stdin and prints
``{"wall", "cpu", "maxrss_kib", "outcomes"}``. The addresses come from a generator, so
the input itself takes no memory; peak RSS (``ru_maxrss``) is this process's own.

Contenders: ``workers`` (the floor of issue 12: raw aiohttp driven by ``concurrency``
workers, each ``session.get(url, params=...)`` + ``json.loads(await resp.read())`` in a
loop over one shared iterator), ``asyncsdk`` (``check_many`` parsing with ``json.loads``
like the floor) and ``asyncsdk-orjson`` (``check_many`` with its orjson speedup)."""

from __future__ import annotations

import asyncio
import functools
import json
import resource
import sys
from collections.abc import Awaitable, Callable, Iterator
from typing import Any

from ._common import API_KEY, CLIENT_CPU, USERNAME, Clock, pin, settle_allocator

PATH = "/api/v1/single/check"
WARMUP = 64


def addresses(count: int, start: int = 0) -> Iterator[str]:
    return (f"user{i}@example.com" for i in range(start, start + count))


async def with_asyncsdk(url: str, count: int, concurrency: int, *, orjson: bool = False
                        ) -> tuple[Clock, int]:
    import asyncsdk
    from asyncsdk._core import answer as _answer

    if orjson:
        import orjson as _orjson

        _answer._json_loads = _orjson.loads
    else:
        _answer._json_loads = json.loads  # like-for-like with the floor's json.loads

    async with asyncsdk.Client(api_key=API_KEY, username=USERNAME, base_url=url) as client:
        async for _ in client.validation.check_many(addresses(WARMUP, 10**9),
                                                    concurrency=concurrency):
            pass
        done = 0
        with Clock() as clock:
            async for outcome in client.validation.check_many(addresses(count),
                                                              concurrency=concurrency):
                done += outcome.ok
    return clock, done


async def with_workers(url: str, count: int, concurrency: int) -> tuple[Clock, int]:
    """The floor: ``concurrency`` workers, each looping over one shared iterator."""
    import aiohttp

    target = url + PATH
    connector = aiohttp.TCPConnector(limit=100, limit_per_host=0)
    async with aiohttp.ClientSession(connector=connector) as session:
        done = 0

        async def worker(emails: Iterator[str]) -> None:
            nonlocal done
            for email in emails:
                params = {"email": email, "timeout": 30, "api": API_KEY, "username": USERNAME}
                async with session.get(target, params=params) as r:
                    data: Any = json.loads(await r.read())
                    done += data.get("status") == "success"

        async def run(emails: Iterator[str]) -> None:
            await asyncio.gather(*(worker(emails) for _ in range(concurrency)))

        await run(addresses(WARMUP, 10**9))
        done = 0
        with Clock() as clock:
            await run(addresses(count))
    return clock, done


def main() -> None:
    args = json.loads(sys.stdin.read())
    pin(CLIENT_CPU)
    settle_allocator()
    runners: dict[str, Callable[[str, int, int], Awaitable[tuple[Clock, int]]]] = {
        "asyncsdk": with_asyncsdk, "workers": with_workers,
        "asyncsdk-orjson": functools.partial(with_asyncsdk, orjson=True)}
    runner = runners[args["contender"]]
    clock, done = asyncio.run(runner(args["url"], args["count"], args["concurrency"]))
    maxrss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss  # KiB on Linux
    print(json.dumps({"wall": clock.wall, "cpu": clock.cpu, "maxrss_kib": maxrss,
                      "outcomes": done}))


if __name__ == "__main__":
    main()
