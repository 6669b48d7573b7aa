"""What the read size costs a small answer, over HTTP and HTTPS, in each allocator state:
``python -m benchmarks.reads_check [--requests N] [--repeats R]``.

asyncio asks the socket (or, for TLS, the TLS layer) for 256 KiB per read; the client's
own connections of asyncsdk ask for 64 KiB (``_session.SmallReads``). Which costs more
depends on glibc's allocator (``_common.settle_allocator``): ``heap``, the state of most
long-running processes, where both come from the heap; ``mapped``, forced here, where
every 256 KiB read maps a fresh buffer and faults its pages in (cpython#85451). Each
(scheme, state) runs in a fresh client process pinned to the client core: raw aiohttp
``session.get(params=)`` + ``json.loads`` with aiohttp's default connector, the same
with the library's connector (64 KiB reads, nothing else changed), and
``client.validation.check``, alternated, at concurrency 16. Prints client CPU per
request and page faults per request (medians of the repeats).
"""

from __future__ import annotations

import argparse
import asyncio
import itertools
import json
import resource
import ssl
import statistics
import sys
import tempfile
from pathlib import Path
from typing import Any

from ._common import API_KEY, CLIENT_CPU, USERNAME, pin, run_child, server_process

PATH = "/api/v1/single/check"
CONCURRENCY = 16


async def _client(args: dict[str, Any]) -> dict[str, list[list[float]]]:
    import aiohttp

    import asyncsdk
    from asyncsdk._core.session import own_connector

    context = ssl.create_default_context()
    if args["ca"]:
        context.load_verify_locations(args["ca"])
    url, count = args["url"], args["requests"]
    plain = aiohttp.ClientSession(connector=aiohttp.TCPConnector(
        limit=100, limit_per_host=0, ssl=context))
    small = aiohttp.ClientSession(connector=own_connector(100))
    client = asyncsdk.Client(api_key=API_KEY, username=USERNAME, base_url=url, ssl=context)

    def raw(session: aiohttp.ClientSession) -> Any:
        async def call(email: str) -> Any:
            params = {"email": email, "timeout": 30, "api": API_KEY, "username": USERNAME}
            async with session.get(url + PATH, params=params, ssl=context) as response:
                return json.loads(await response.read())
        return call

    sides = {"raw aiohttp, default reads": raw(plain), "raw aiohttp, 64 KiB reads": raw(small),
             "client.validation.check": client.validation.check}
    got: dict[str, list[list[float]]] = {name: [] for name in sides}
    emails = [f"user{i}@example.com" for i in range(count)]
    try:
        for call in sides.values():  # connections open, caches filled
            await asyncio.gather(*(call(e) for e in emails[:CONCURRENCY]))
        for repeat in range(args["repeats"]):
            order = list(sides.items())
            for name, call in order if repeat % 2 == 0 else order[::-1]:
                counter = itertools.count()

                async def worker(call: Any = call, counter: Any = counter) -> None:
                    while (i := next(counter)) < count:
                        await call(emails[i])

                before = resource.getrusage(resource.RUSAGE_SELF)
                await asyncio.gather(*(worker() for _ in range(CONCURRENCY)))
                after = resource.getrusage(resource.RUSAGE_SELF)
                cpu = (after.ru_utime + after.ru_stime - before.ru_utime - before.ru_stime)
                got[name].append([cpu / count * 1e6,
                                  (after.ru_minflt - before.ru_minflt) / count])
    finally:
        await asyncio.gather(plain.close(), small.close(), client.close())
    return got


def child_main() -> None:
    """One measurement (``benchmarks._reads_child``): arguments as JSON on stdin."""
    from ._common import settle_allocator

    args = json.loads(sys.stdin.read())
    pin(CLIENT_CPU)
    state = settle_allocator(args["state"])
    result = asyncio.run(_client(args))
    print(json.dumps({"state": state, "sides": result}))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--requests", type=int, default=3000)
    parser.add_argument("--repeats", type=int, default=9)
    args = parser.parse_args()
    import trustme

    print(f"{'scheme':6} {'allocator':9} {'contender':28} {'CPU us/req':>10} "
          f"{'x default':>9} {'faults/req':>10}")
    with tempfile.TemporaryDirectory(prefix="asyncsdk-reads-") as folder:
        ca = trustme.CA()
        cert = ca.issue_cert("127.0.0.1")
        cert.private_key_pem.write_to_path(str(Path(folder) / "key.pem"))
        cert.cert_chain_pems[0].write_to_path(str(Path(folder) / "cert.pem"))
        ca.cert_pem.write_to_path(str(Path(folder) / "ca.pem"))
        for scheme, tls_dir in (("http", ""), ("https", folder)):
            with server_process(contacts=10, tls_dir=tls_dir) as server:
                for state in ("heap", "mapped"):
                    out = run_child("benchmarks._reads_child", {
                        "url": server.url, "ca": str(Path(folder) / "ca.pem") if tls_dir else "",
                        "state": state, "requests": args.requests, "repeats": args.repeats})
                    sides = out["sides"]
                    base = sides["raw aiohttp, default reads"]
                    for name, runs in sides.items():
                        cpu = statistics.median(r[0] for r in runs)
                        ratio = statistics.median(r[0] / b[0] for r, b in zip(runs, base,
                                                                              strict=True))
                        faults = statistics.median(r[1] for r in runs)
                        print(f"{scheme:6} {out['state']:9} {name:28} {cpu:10.1f} "
                              f"{ratio:8.2f}x {faults:10.2f}", flush=True)


if __name__ == "__main__":
    main()
