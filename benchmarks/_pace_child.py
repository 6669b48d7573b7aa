"""One client process of the pace benchmark (issue 31): ``python -m
benchmarks._pace_child ARGS`` reads ``{"url", "key", "contender", "prefix", "count",
"in_flight", "start_at"}`` and optionally ``{"drain", "drain_prefix", "blackout"}`` (JSON,
its argument), waits until ``start_at`` (wall clock: two processes start together),
checks ``count`` addresses and prints ``{"outcomes", "ok", "failed_429",
"failed_other", "most_per_input", "errors"}``.

Contenders:

* ``asyncsdk``: ``client.validation.check_many(addresses)`` with every default (the
  pace on, ``concurrency`` the default bound, ``max_retries`` and ``timeout`` the
  client's defaults); with ``drain`` (a fresh client once a blackout ends), it first
  spends the key's bucket with ``drain`` raw requests, whose start begins the service's
  blackout, and checks nothing until ``blackout`` seconds after it;
* ``floor``: raw aiohttp with a fixed semaphore of ``in_flight`` requests, hand-tuned
  to the limit (rate x answer time); a 429 is sent again after its ``Retry-After``
  (else a jittered 0.5 s), sleeping outside the semaphore: the best a hand-written loop
  does without knowing more.
"""

from __future__ import annotations

import asyncio
import json
import random
import sys
import time
from collections import Counter
from typing import Any

PATH = "/api/v1/single/check"
USERNAME = "bench-user"


def addresses(prefix: str, count: int) -> list[str]:
    return [f"{prefix}{i}@example.com" for i in range(count)]


async def with_asyncsdk(url: str, key: str, emails: list[str], start_at: float,
                        drain: list[str] | None = None, blackout: float = 0.0
                        ) -> Counter[str]:
    import asyncsdk

    seen: Counter[str] = Counter()
    async with asyncsdk.Client(api_key=key, username=USERNAME, base_url=url) as client:
        await _until(start_at)
        if drain:  # a fresh client, started as the service takes again
            await _until(await _drain(url, key, drain) + blackout)
        async for outcome in client.validation.check_many(emails):
            seen[outcome.email] += 1
            seen["ok" if outcome.ok else type(outcome.error).__name__] += 1
    return seen


async def with_floor(url: str, key: str, emails: list[str], in_flight: int,
                     start_at: float) -> Counter[str]:
    import aiohttp

    seen: Counter[str] = Counter()
    target = url + PATH
    source = iter(emails)
    gate = asyncio.Semaphore(in_flight)
    connector = aiohttp.TCPConnector(limit=100, limit_per_host=0)
    async with aiohttp.ClientSession(connector=connector) as session:
        async def worker() -> None:
            for email in source:
                params = {"email": email, "timeout": 30, "api": key, "username": USERNAME}
                while True:
                    async with gate, session.get(target, params=params) as response:
                        json.loads(await response.read())
                        wait = response.headers.get("Retry-After")
                        status = response.status
                    if status != 429:
                        break
                    await asyncio.sleep(float(wait) if wait else random.random() * 0.5)
                seen[email] += 1
                seen["ok"] += 1

        await _until(start_at)
        await asyncio.gather(*(worker() for _ in range(4 * in_flight)))
    return seen


async def _drain(url: str, key: str, emails: list[str]) -> float:
    """Spend ``key``'s bucket with raw requests of ``emails`` (all at once, beyond its
    burst), as a client that worked until the blackout left it. Returns when the first
    answer came (wall clock): the service's blackout began before it."""
    import aiohttp

    answered: list[float] = []
    async with aiohttp.ClientSession() as session:
        async def one(email: str) -> None:
            params = {"email": email, "timeout": 30, "api": key, "username": USERNAME}
            async with session.get(url + PATH, params=params) as response:
                await response.read()
            answered.append(time.time())

        await asyncio.gather(*(one(e) for e in emails))
    return min(answered)


async def _until(start_at: float) -> None:
    delay = start_at - time.time()
    if delay > 0:
        await asyncio.sleep(delay)


def main() -> None:
    args: dict[str, Any] = json.loads(sys.argv[1])
    emails = addresses(args["prefix"], args["count"])
    if args["contender"] == "asyncsdk":
        drain = (addresses(args["drain_prefix"], args["drain"]) if args.get("drain")
                 else None)
        seen = asyncio.run(with_asyncsdk(args["url"], args["key"], emails, args["start_at"],
                                         drain, args.get("blackout", 0.0)))
    else:
        seen = asyncio.run(with_floor(args["url"], args["key"], emails, args["in_flight"],
                                      args["start_at"]))
    per_input = [seen[e] for e in emails]
    errors = {k: v for k, v in seen.items() if "@" not in k and k != "ok"}
    print(json.dumps({
        "outcomes": sum(per_input), "ok": seen["ok"],
        "failed_429": errors.get("RateLimitError", 0),
        "failed_other": sum(v for k, v in errors.items() if k != "RateLimitError"),
        "most_per_input": max(per_input, default=0), "least_per_input": min(per_input,
                                                                             default=0),
        "errors": errors}))


if __name__ == "__main__":
    main()
