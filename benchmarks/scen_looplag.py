"""Loop-lag probe: the longest stretch the event loop is blocked while ``contacts.list()``
of 10,000 and of 50,000 records is fetched and decoded (issues 11, 12, 27 and 39: no stretch
over 100 ms, so an async web backend keeps answering while a big listing is decoded).

A probe task on the same loop sleeps 1 ms at a time and records the largest gap between
its wake-ups, less the 1 ms it asked for: that is the longest time any other task would
have waited for the loop. The listing comes from the benchmark server (its own process,
the other core) at ``/n<records>/api/v1/contact/``; one warm-up call per size first (it
opens the connection and lets the server build the body). For reference, the same probe
around raw aiohttp + ``json.loads`` (dicts, no models: what a naive client stalls), and
around raw aiohttp reading the body without parsing it (the floor: what the machine
stalls anyway while 37 MB arrive).
The probe measures wall time: on a loaded machine a gap also holds the time the process
waited for its core, so read the stall against the naive client's of the same run.
The answer is kept until the probe has stopped: freeing 50,000 models (or dicts) is one
C call of tens of ms wherever the caller drops them, the caller's cost, not the call's.
Beside each asyncsdk stall, the longest full (generation 2) collection of the cyclic
collector during the call, observed with ``gc.callbacks`` (the benchmark observes; the
library never touches the collector): it holds the GIL, and so the loop, throughout.
"""

from __future__ import annotations

import asyncio
import gc
import json
import time
from collections.abc import Awaitable, Callable
from typing import Any

from ._common import API_KEY, USERNAME, Paired, Section, median

TICK = 0.001
STALL_LIMIT_MS = 100.0  # issue 39 (issue 27 asked 50 ms, with the collector paused)


async def stalled_ms(work: Callable[[], Awaitable[Any]]) -> float:
    """Run ``work`` while a probe ticks every ``TICK`` s; the longest block in ms."""
    done = asyncio.Event()
    worst = 0.0

    async def probe() -> None:
        nonlocal worst
        last = time.perf_counter()
        while not done.is_set():
            await asyncio.sleep(TICK)
            now = time.perf_counter()
            worst = max(worst, now - last - TICK)
            last = now

    ticker = asyncio.create_task(probe())
    await asyncio.sleep(0)  # let the probe start its clock
    kept: Any = None
    try:
        kept = await work()
    finally:
        done.set()
        await ticker
    del kept  # freed after the probe: dropping the listing is the caller's own work
    return max(0.0, worst) * 1000


class FullCollections:
    """The longest full collection since ``reset`` (ms), seen through ``gc.callbacks``."""

    def __init__(self) -> None:
        self.longest = 0.0
        self._began = 0.0

    def __enter__(self) -> FullCollections:
        gc.callbacks.append(self._seen)
        return self

    def __exit__(self, *exc: object) -> None:
        gc.callbacks.remove(self._seen)

    def reset(self) -> None:
        self.longest = 0.0

    def _seen(self, phase: str, info: dict[str, int]) -> None:
        if info["generation"] != 2:
            return
        if phase == "start":
            self._began = time.perf_counter()
        else:
            self.longest = max(self.longest, (time.perf_counter() - self._began) * 1000)


async def _measure(url: str, records: int, repeats: int) -> dict[str, list[float]]:
    import aiohttp

    import asyncsdk

    base = f"{url}/n{records}"
    out: dict[str, list[float]] = {"sdk": [], "naive": [], "read": [], "full_gc": []}
    async with aiohttp.ClientSession() as session, asyncsdk.Client(
            api_key=API_KEY, username=USERNAME, base_url=base) as client:
        async def naive() -> Any:
            async with session.get(base + "/api/v1/contact/",
                                   params={"api_key": API_KEY}) as response:
                return json.loads(await response.read())

        async def read_only() -> int:  # the floor of this machine: reading, no parsing
            size = 0
            async with session.get(base + "/api/v1/contact/",
                                   params={"api_key": API_KEY}) as response:
                async for chunk in response.content.iter_chunked(64 * 1024):
                    size += len(chunk)
            return size

        await naive()
        await client.contacts.list()  # warm-up: connections, the server's body
        with FullCollections() as collections:
            for _ in range(repeats):
                collections.reset()
                out["sdk"].append(await stalled_ms(client.contacts.list))
                out["full_gc"].append(collections.longest)
                out["naive"].append(await stalled_ms(naive))
                out["read"].append(await stalled_ms(read_only))
    return out


def run(url: str, *, sizes: tuple[int, ...], repeats: int) -> Section:
    section = Section(
        "looplag", "Loop lag while contacts.list() decodes a big listing",
        f"Longest block of the event loop (a 1 ms ticker's largest gap, less 1 ms) during "
        f"`await client.contacts.list()`, {repeats} run(s) per size; for reference the "
        "same around raw aiohttp + `json.loads` (dicts, no models), and around raw aiohttp "
        "reading the body in 64 KiB pieces without parsing it (what this machine stalls "
        "anyway: scheduling, the socket; the floor of the figure).",
        ["records", "asyncsdk max stall ms (median / worst)",
         "its longest full collection ms (median / worst)",
         "raw aiohttp + json.loads ms (median / worst)",
         "raw aiohttp, read only ms (median / worst)"])
    for records in sizes:
        got = asyncio.run(_measure(url, records, repeats))
        section.rows.append([f"{records:,}", *(f"{median(got[k]):.1f} / {max(got[k]):.1f}"
                                               for k in ("sdk", "full_gc", "naive", "read"))])
        section.pairs.append(Paired(
            f"contacts.list {records:,} records: longest event-loop stall", "ms", got["sdk"],
            None, "", "<=", STALL_LIMIT_MS,
            f"raw aiohttp + json.loads stalls {max(got['naive']):.0f} ms"))
    return section
