"""Where asyncsdk's extra time per ``validation.check`` goes, against raw aiohttp:
``python -m benchmarks.profile_check [--requests N] [--concurrency C]``.

Both run under cProfile against the benchmark server (its own process); the output lists
the functions whose own time (tottime) per request differs most between the two, i.e.
asyncsdk's layers (resource, transport, decoding) and whatever they make aiohttp do in
addition. cProfile inflates small functions roughly threefold: read the figures as
shares, not as absolute costs (``python -m benchmarks`` has the real CPU per request).
"""

from __future__ import annotations

import argparse
import asyncio
import cProfile
import json
import pstats
from typing import Any

from . import scen_check
from ._common import CLIENT_CPU, pin, server_process


def _profile(contender: Any, url: str, emails: list[str], concurrency: int) -> dict[str, Any]:
    asyncio.run(contender(url, emails[:200], concurrency))  # imports, caches, decoders
    profiler = cProfile.Profile()
    profiler.enable()
    asyncio.run(contender(url, emails, concurrency))
    profiler.disable()
    stats: Any = pstats.Stats(profiler)
    return {f"{k[0].rsplit('/', 1)[-1]}:{k[1]}({k[2]})": v for k, v in stats.stats.items()}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--requests", type=int, default=5_000)
    parser.add_argument("--concurrency", type=int, default=16)
    parser.add_argument("--top", type=int, default=30)
    args = parser.parse_args()
    pin(CLIENT_CPU)
    emails = [f"user{i}@example.com" for i in range(args.requests)]
    with server_process(contacts=10) as server:
        raw = _profile(scen_check.raw_aiohttp, server.url, emails, args.concurrency)
        sdk = _profile(scen_check.asyncsdk_with(json.loads), server.url, emails,
                       args.concurrency)
    n = args.requests
    rows = []
    for key in set(raw) | set(sdk):
        a = raw.get(key, (0, 0, 0.0, 0.0))
        b = sdk.get(key, (0, 0, 0.0, 0.0))
        rows.append(((b[2] - a[2]) / n * 1e6, (b[1] - a[1]) / n, key))
    rows.sort(reverse=True)
    total_raw = sum(v[2] for v in raw.values()) / n * 1e6
    total_sdk = sum(v[2] for v in sdk.values()) / n * 1e6
    print(f"profiled time per request at concurrency {args.concurrency}: raw aiohttp "
          f"{total_raw:.1f} us, asyncsdk {total_sdk:.1f} us (+{total_sdk - total_raw:.1f})")
    print(f"{'+us/req':>8} {'+calls/req':>10}  function (asyncsdk minus raw, own time)")
    for extra_us, extra_calls, key in rows[: args.top]:
        print(f"{extra_us:8.2f} {extra_calls:10.2f}  {key}")


if __name__ == "__main__":
    main()
