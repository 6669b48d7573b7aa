"""Instructions per ``validation.check`` and per ``check_many`` input, counted, not timed:
``python -m benchmarks.count_check [--concurrency C] [--contenders a,b,...]``.

Why: on a shared 2-core machine the client CPU per request moves 10-20% between runs,
more than the differences being looked for. The user-space instructions a request costs
do not: each contender runs in a client process under valgrind's callgrind (the server
runs natively, in its own process), twice, with ``SMALL`` and ``LARGE`` requests; the
difference divided by ``LARGE - SMALL`` is the count per request, start-up and warm-up
cancelled out. Repeated runs agree within 0.3%.

What it cannot see: system time (the sockets' syscalls, the same on every side) and
memory stalls; time ratios are larger than these counts' ratios (``RESULTS.md``).

Contenders: ``raw`` (the floor: raw aiohttp ``session.get(params=)`` + ``json.loads``),
``asyncsdk`` (``client.validation.check``), and for ``check_many``: ``workers`` (the
issue's floor, raw aiohttp driven by C workers), ``check_workers`` (C workers awaiting
``client.validation.check``) and ``check_many``. Needs ``valgrind`` on PATH.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import itertools
import json
import os
import shutil
import subprocess
import sys
import tempfile
from typing import Any

from ._common import API_KEY, ROOT, USERNAME, server_process

SMALL, LARGE = 300, 1300
MANY = ("workers", "check_workers", "check_many")
DEFAULT = ("raw", "asyncsdk", "workers", "check_workers", "check_many")


async def _client(name: str, base: str, count: int, concurrency: int) -> None:
    """One contender: warm-up, then ``count`` requests (run under callgrind)."""
    from . import _many_child

    if name in MANY:
        if name == "workers":
            await _many_child.with_workers(base, count, concurrency)
        elif name == "check_many":
            await _many_child.with_asyncsdk(base, count, concurrency)
        else:
            await _check_workers(base, count, concurrency)
        return
    emails = [f"user{i}@example.com" for i in range(count)]
    async with contextlib.AsyncExitStack() as stack:
        call = await _single(name, base, stack)
        for _ in range(3):
            await asyncio.gather(*(call(e) for e in emails[:concurrency]))
        counter = itertools.count()

        async def worker() -> None:
            while (i := next(counter)) < count:
                await call(emails[i])

        await asyncio.gather(*(worker() for _ in range(concurrency)))


async def _single(name: str, base: str, stack: contextlib.AsyncExitStack) -> Any:
    """``raw`` (the floor) or ``asyncsdk``: one check, as an awaitable function."""
    import aiohttp

    import asyncsdk
    from asyncsdk._core import answer as _answer

    from .floors import check_call

    if name == "raw":
        session = await stack.enter_async_context(aiohttp.ClientSession())
        return check_call(session, base, json.loads)
    _answer._json_loads = json.loads  # like the floor
    client = await stack.enter_async_context(
        asyncsdk.Client(api_key=API_KEY, username=USERNAME, base_url=base))
    return client.validation.check


async def _check_workers(base: str, count: int, concurrency: int) -> None:
    import asyncsdk
    from asyncsdk._core import answer as _answer

    from . import _many_child

    _answer._json_loads = json.loads  # like the floor
    async with asyncsdk.Client(api_key=API_KEY, username=USERNAME, base_url=base) as client:
        check = client.validation.check

        async def worker(emails: Any) -> None:
            for email in emails:
                await check(email)

        warm = _many_child.addresses(_many_child.WARMUP, 10**9)
        await asyncio.gather(*(worker(warm) for _ in range(concurrency)))
        emails = _many_child.addresses(count)
        await asyncio.gather(*(worker(emails) for _ in range(concurrency)))


def _instructions(name: str, base: str, count: int, concurrency: int, out: str) -> int:
    subprocess.run(
        ["valgrind", "--tool=callgrind", "--cache-sim=no", f"--callgrind-out-file={out}",
         sys.executable, "-m", "benchmarks.count_check", "--child", name, base, str(count),
         str(concurrency)],
        cwd=ROOT, check=True, capture_output=True, timeout=1800)
    with open(out, encoding="utf-8") as lines:
        for line in lines:
            if line.startswith(("totals:", "summary:")):
                return int(line.split()[1])
    raise RuntimeError(f"no instruction total in {out}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--concurrency", type=int, default=16)
    parser.add_argument("--contenders", default=",".join(DEFAULT))
    parser.add_argument("--child", nargs=4, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        name, base, count, concurrency = args.child
        asyncio.run(_client(name, base, int(count), int(concurrency)))
        return
    if shutil.which("valgrind") is None:
        sys.exit("count_check needs valgrind (apt-get install valgrind)")
    names = args.contenders.split(",")
    print(f"user-space instructions per request, concurrency {args.concurrency} "
          f"(callgrind, {LARGE} minus {SMALL} requests)")
    print(f"{'contender':15} {'kIr/req':>8} {'ratio':>7}  (check: to raw; check_many "
          "contenders: to workers)")
    counts: dict[str, float] = {}
    with server_process(contacts=10) as server, tempfile.TemporaryDirectory() as tmp:
        for name in names:
            small, large = (_instructions(name, server.url, n, args.concurrency,
                                          os.path.join(tmp, f"{name}.{n}"))
                            for n in (SMALL, LARGE))
            counts[name] = (large - small) / (LARGE - SMALL)
            floor = counts.get("workers" if name in MANY else "raw")
            ratio = f"{counts[name] / floor:6.3f}x" if floor else "      -"
            print(f"{name:15} {counts[name] / 1000:8.1f} {ratio}", flush=True)


if __name__ == "__main__":
    main()
