"""Scenario 1: ``validation.check`` at concurrency 1, 16 and 64 against raw aiohttp
(the baseline), httpx.AsyncClient and requests.Session (sequential).

Every contender sends the same GET (same query: api, username, email, timeout) to the
benchmark server in its own process, reads the body and parses the JSON; asyncsdk also
maps errors and decodes a ``CheckResult``. Each contender opens its connections
(warm-up) before the clock starts. Contenders alternate A B C ... A B C ...; each runs a
fixed number of requests per repeat.
"""

from __future__ import annotations

import asyncio
import gc
import itertools
import json
from collections.abc import Awaitable, Callable
from typing import Any

from ._common import API_KEY, USERNAME, Clock, Section, Target, has_module, median, ratio, spread

PATH = "/api/v1/single/check"
Contender = Callable[[str, list[str], int], Awaitable[tuple[float, float]]]


def _params(email: str) -> dict[str, Any]:
    return {"email": email, "timeout": 30, "api": API_KEY, "username": USERNAME}


async def _drive(call: Callable[[str], Awaitable[Any]], emails: list[str],
                 concurrency: int) -> tuple[float, float]:
    """Run ``call`` over ``emails`` with ``concurrency`` workers; (wall, cpu) seconds."""
    for email in emails[:concurrency]:  # warm-up: open the connections
        await call(email)
    await asyncio.gather(*(call(e) for e in emails[:concurrency]))
    counter = itertools.count()
    n = len(emails)

    async def worker() -> None:
        while (i := next(counter)) < n:
            await call(emails[i])

    gc.collect()
    with Clock() as clock:
        await asyncio.gather(*(worker() for _ in range(concurrency)))
    return clock.wall, clock.cpu


async def raw_aiohttp(base: str, emails: list[str], concurrency: int) -> tuple[float, float]:
    import aiohttp

    url = base + PATH
    connector = aiohttp.TCPConnector(limit=100, limit_per_host=0)
    async with aiohttp.ClientSession(connector=connector) as session:
        async def call(email: str) -> Any:
            async with session.get(url, params=_params(email)) as r:
                return json.loads(await r.read())

        return await _drive(call, emails, concurrency)


def asyncsdk_with(loads: Callable[[Any], Any]) -> Contender:
    async def run(base: str, emails: list[str], concurrency: int) -> tuple[float, float]:
        import asyncsdk
        from asyncsdk._core import answer as _answer

        saved = _answer._json_loads
        _answer._json_loads = loads
        try:
            async with asyncsdk.Client(api_key=API_KEY, username=USERNAME,
                                       base_url=base) as client:
                return await _drive(client.validation.check, emails, concurrency)
        finally:
            _answer._json_loads = saved

    return run


async def httpx_async(base: str, emails: list[str], concurrency: int) -> tuple[float, float]:
    import httpx

    url = base + PATH
    limits = httpx.Limits(max_connections=100, max_keepalive_connections=100)
    async with httpx.AsyncClient(limits=limits) as client:
        async def call(email: str) -> Any:
            r = await client.get(url, params=_params(email))
            return json.loads(r.content)

        return await _drive(call, emails, concurrency)


async def requests_sync(base: str, emails: list[str], concurrency: int) -> tuple[float, float]:
    import requests

    url = base + PATH
    with requests.Session() as s:
        for email in emails[:3]:
            json.loads(s.get(url, params=_params(email)).content)
        gc.collect()
        with Clock() as clock:
            for email in emails:  # what a sync SDK does: one after the other
                json.loads(s.get(url, params=_params(email)).content)
    return clock.wall, clock.cpu


def contenders() -> tuple[list[tuple[str, Contender]], list[str]]:
    """(name, contender) in running order, baseline first; and notes on the missing."""
    found: list[tuple[str, Contender]] = [
        ("raw aiohttp + json.loads (baseline)", raw_aiohttp),
        ("asyncsdk (json)", asyncsdk_with(json.loads)),
    ]
    notes = []
    if has_module("orjson"):
        import orjson

        found.append(("asyncsdk + orjson (speedups)", asyncsdk_with(orjson.loads)))
    else:
        notes.append("asyncsdk + orjson skipped: orjson not installed (extra `speedups`)")
    if has_module("httpx"):
        found.append(("httpx.AsyncClient + json.loads", httpx_async))
    else:
        notes.append("httpx skipped: not installed (extra `bench`)")
    if has_module("requests"):
        found.append(("requests.Session, sequential", requests_sync))
    else:
        notes.append("requests skipped: not installed (extra `bench`)")
    return found, notes


def run(base_url: str, *, requests_per_run: int, repeats: int,
        levels: tuple[int, ...] = (1, 16, 64)) -> Section:
    section = Section(
        "check", "Scenario 1 - validation.check: throughput and client CPU",
        f"{requests_per_run:,} requests per run, {repeats} runs per contender, contenders "
        "alternated; client and server in separate processes pinned to separate cores. "
        "Client CPU = process CPU time (user+sys) of the client / requests. Ratios are to "
        "the baseline's median at the same concurrency (higher req/s and lower CPU are "
        "better).",
        ["concurrency", "contender", "req/s median", "req/s min-max", "x baseline",
         "CPU us/req median", "CPU min-max", "CPU x baseline"])
    found, section.notes = contenders()
    emails = [f"user{i}@example.com" for i in range(requests_per_run)]
    for level in levels:
        rps: dict[str, list[float]] = {name: [] for name, _ in found}
        cpu: dict[str, list[float]] = {name: [] for name, _ in found}
        for _ in range(repeats):
            for name, contender in found:
                wall, used = asyncio.run(contender(base_url, emails, level))
                rps[name].append(len(emails) / wall)
                cpu[name].append(used / len(emails) * 1e6)
        base = found[0][0]
        for name, _ in found:
            section.rows.append([
                str(level), name, f"{median(rps[name]):,.0f}", spread(rps[name]),
                f"{ratio(median(rps[name]), median(rps[base])):.2f}",
                f"{median(cpu[name]):.0f}", spread(cpu[name]),
                f"{ratio(median(cpu[name]), median(cpu[base])):.2f}"])
        # Targets of issue 12: std json >= 0.95x the baseline's req/s and <= 1.05x its
        # CPU per request; with orjson (extra "speedups") >= 1.00x.
        sdk = "asyncsdk (json)"
        tput = ratio(median(rps[sdk]), median(rps[base]))
        cost = ratio(median(cpu[sdk]), median(cpu[base]))
        section.targets.append(Target(
            f"c={level}: asyncsdk >= 0.95x baseline req/s and <= 1.05x its CPU/req",
            tput >= 0.95 and cost <= 1.05, f"{tput:.2f}x req/s, {cost:.2f}x CPU"))
        fast = "asyncsdk + orjson (speedups)"
        if fast in rps:
            tput = ratio(median(rps[fast]), median(rps[base]))
            cost = ratio(median(cpu[fast]), median(cpu[base]))
            section.targets.append(Target(
                f"c={level}: asyncsdk + speedups >= 1.00x baseline (std json) req/s and "
                "<= 1.05x its CPU/req", tput >= 1.00 and cost <= 1.05,
                f"{tput:.2f}x req/s, {cost:.2f}x CPU"))
    return section
