"""One process of the paired targets (``benchmarks.scen_targets``):
``python -m benchmarks._target_child`` reads ``{"kind", "url", "json", ...}`` (JSON) on
stdin and prints one JSON line of results.

``json`` is ``"json"`` or ``"orjson"``: with ``"json"`` the module ``orjson`` is made
unimportable before asyncsdk is imported, exactly as if the ``speedups`` extra were not
installed, and the floor parses with ``json.loads``; with ``"orjson"`` both use orjson.
A fresh process per call also keeps peak memory (``ru_maxrss``) that run's own.

Kinds:
* ``check``: for each level c, ``repeats`` pairs of (raw aiohttp, ``validation.check``),
  each ``requests`` checks by c workers -> req/s and client CPU us per request.
* ``many``: the same pairs for ``check_many(concurrency=c)`` against c raw workers.
* ``many_mem``: ``check_many`` alone over ``count`` addresses from a generator -> peak RSS.
* ``rows``: one of ``floor`` (iter_chunked + csv.reader), ``rows`` or ``download`` over a
  job of ``job_id`` -> rows/s, CPU, peak RSS growth over the RSS before the read.
* ``list``: ``repeats`` pairs of (aiohttp read + pydantic ``validate_json``,
  ``contacts.list()``) -> client CPU ms per call.
"""

from __future__ import annotations

import asyncio
import gc
import json
import resource
import sys
import tempfile
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

from ._common import API_KEY, CLIENT_CPU, READS, USERNAME, Clock, pin, settle_allocator

Result = dict[str, Any]


def _loads(lib: str) -> Callable[[Any], Any]:
    if lib == "orjson":
        import orjson

        return orjson.loads
    sys.modules["orjson"] = None  # type: ignore[assignment]  # as if not installed
    return json.loads


def _session() -> Any:
    import aiohttp

    return aiohttp.ClientSession(connector=aiohttp.TCPConnector(limit=100, limit_per_host=0))


def _client(url: str, **kwargs: Any) -> Any:
    import asyncsdk

    return asyncsdk.Client(api_key=API_KEY, username=USERNAME, base_url=url, **kwargs)


async def _check(a: Result, loads: Callable[[Any], Any]) -> Result:
    from .floors import alternate, check_call, drive

    emails = [f"user{i}@example.com" for i in range(a["requests"])]
    out: Result = {}
    async with _session() as session, _client(a["url"]) as client:
        sides = {"floor": check_call(session, a["url"], loads), "sdk": client.validation.check}
        if loads is not json.loads:  # also the floor with the standard library's parser
            sides["std"] = check_call(session, a["url"], json.loads)
        for level in a["levels"]:
            got: dict[str, list[float]] = {f"{side}_{what}": [] for side in sides
                                           for what in ("rps", "cpu", "faults")}
            for repeat in range(a["repeats"]):
                for side in alternate(repeat, list(sides)):
                    clock = await drive(sides[side], emails, level)
                    got[f"{side}_rps"].append(len(emails) / clock.wall)
                    got[f"{side}_cpu"].append(clock.cpu / len(emails) * 1e6)
                    got[f"{side}_faults"].append(clock.faults / len(emails))
            out[str(level)] = got
    return out


async def _many(a: Result, loads: Callable[[Any], Any]) -> Result:
    from .floors import alternate, check_call, drive

    emails = [f"user{i}@example.com" for i in range(a["count"])]
    out: Result = {}
    async with _session() as session, _client(a["url"]) as client:
        floor = check_call(session, a["url"], loads)

        async def sdk(level: int) -> Clock:
            async for _ in client.validation.check_many(emails[:level], concurrency=level):
                pass  # warm-up: the connections
            gc.collect()  # as ``drive`` does for the floor: no garbage of the last run
            with Clock() as clock:
                async for outcome in client.validation.check_many(emails, concurrency=level):
                    if not outcome.ok:
                        raise RuntimeError(f"check_many failed: {outcome}")
            return clock

        for level in a["levels"]:
            got: dict[str, list[float]] = {"floor": [], "sdk": []}
            for repeat in range(a["repeats"]):
                for side in alternate(repeat, ["floor", "sdk"]):
                    clock = await (drive(floor, emails, level) if side == "floor"
                                   else sdk(level))
                    got[side].append(len(emails) / clock.wall)
            out[str(level)] = got
    return out


def _addresses(count: int) -> Iterator[str]:
    return (f"user{i}@example.com" for i in range(count))


async def _many_mem(a: Result, loads: Callable[[Any], Any]) -> Result:
    async with _client(a["url"]) as client:
        done = 0
        async for outcome in client.validation.check_many(_addresses(a["count"]),
                                                          concurrency=a["level"]):
            done += outcome.ok
    return {"done": done}


def _rss_kib() -> int:
    with open("/proc/self/statm") as f:
        pages = int(f.read().split()[1])
    return pages * resource.getpagesize() // 1024


async def _rows(a: Result, loads: Callable[[Any], Any]) -> Result:
    from .floors import rows_floor

    url, job_id, method = a["url"], a["job_id"], a["method"]
    warm = 3 if job_id == 1 else 4  # the same shape, 100 rows
    async with _session() as session, _client(url, timeout=600) as client:
        with tempfile.TemporaryDirectory(prefix="asyncsdk-bench-") as folder:
            target = Path(folder) / "emaillist.csv"

            async def run(job: int) -> int:
                if method == "floor":
                    return await rows_floor(session, url, job)
                handle = client.validation.job(job)
                if method == "download":
                    await handle.download(target)
                    return -1  # counted after the clock stops
                count = 0
                async for _ in handle.rows():
                    count += 1
                return count

            await run(warm)
            base = _rss_kib()
            with Clock() as clock:
                count = await run(job_id)
            if count == -1:
                with target.open("rb") as f:
                    count = sum(1 for _ in f) - 1  # less the header
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return {"rows": count, "wall": clock.wall, "cpu": clock.cpu,
            "growth_kib": max(0, peak - base)}


async def _list(a: Result, loads: Callable[[Any], Any]) -> Result:
    from .floors import alternate, pydantic_contact_lists, records_in

    validate = pydantic_contact_lists()
    url = a["url"] + f"/n{a['records']}"

    async with _session() as session, _client(url) as client:
        async def floor() -> Any:
            async with session.get(url + "/api/v1/contact/",
                                   params={"api_key": API_KEY}) as response:
                return validate(await response.read())

        sides = {"floor": floor, "sdk": client.contacts.list}
        for side, call in sides.items():  # warm-up and a check that both decode all
            got = records_in(await call())
            if got != a["records"]:
                raise RuntimeError(f"{side} decoded {got} records of {a['records']}")
        out: dict[str, list[float]] = {"floor": [], "sdk": []}
        for repeat in range(a["repeats"]):
            for side in alternate(repeat, ["floor", "sdk"]):
                with Clock() as clock:
                    await sides[side]()
                out[side].append(clock.cpu * 1000)
    return out


KINDS = {"check": _check, "many": _many, "many_mem": _many_mem, "rows": _rows, "list": _list}


def main() -> None:
    args = json.loads(sys.stdin.read())
    pin(CLIENT_CPU)
    reads = settle_allocator(args.get("reads", READS))
    loads = _loads(args.get("json", "json"))
    result = asyncio.run(KINDS[args["kind"]](args, loads))
    result["maxrss_kib"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss  # KiB on Linux
    result["reads"] = reads
    print(json.dumps(result))


if __name__ == "__main__":
    main()
