"""Where ``validation.check``'s client CPU above raw aiohttp goes, measured in the real
mix rather than under a profiler: ``python -m benchmarks.ablate_check [--concurrency C]
[--repeats R] [--requests N]``.

Five contenders send the same GET to the benchmark server (its own process, pinned to
the other core), alternating in one client process, each repeat in the opposite order
of the last; the figure is the median over the repeats of the client's CPU time per
request, and the ratio the median of per-repeat ratios to the floor:

* ``raw``: the issue's floor, ``session.get(url, params=)`` + ``json.loads``.
* ``raw_prebuilt``: the same with the URL pre-encoded (``URL.build(encoded=True)``):
  what building the URL costs the floor.
* ``wire``: the library's own session (its ``User-Agent``), per-attempt
  ``ClientTimeout`` and pre-encoded URL, + ``json.loads``: the wire arguments alone.
* ``one_coroutine``: everything the library does per check, written as one coroutine:
  the address check, the call marked in flight, the body-size cap, ``status: fail`` in
  the body, the ``CheckResult`` decode.
* ``+url``, ``+timeout``, ``+answer``, ``+in_flight``: ``one_coroutine`` with one of its
  steps done by the library's own code instead (``build_call`` and ``Call.target``; the
  budget and ``client_timeout`` per call; ``Transport.finish``, i.e. the interpreter and
  the raw-response capture; ``Sessions.begin``/``leave``), and ``+all_four``: all of them.
* ``asyncsdk``: ``client.validation.check``.

``one_coroutine`` against ``raw`` is what the checks themselves cost; the ``+`` rows
split what the library's layers cost on top, and ``asyncsdk`` is the whole of it.
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import itertools
import json
import statistics
import time
from collections.abc import Awaitable, Callable
from typing import Any

from ._common import API_KEY, CLIENT_CPU, USERNAME, pin, server_process, settle_allocator

PATH = "/api/v1/single/check"
Call = Callable[[str], Awaitable[Any]]


async def _cpu_per_request(call: Call, emails: list[str], concurrency: int) -> float:
    counter = itertools.count()
    n = len(emails)

    async def worker() -> None:
        while (i := next(counter)) < n:
            await call(emails[i])

    started = time.process_time()
    await asyncio.gather(*(worker() for _ in range(concurrency)))
    return (time.process_time() - started) / n * 1e6


async def _contenders(base: str, stack: Any) -> dict[str, Call]:
    import aiohttp
    from yarl import URL

    import asyncsdk
    from asyncsdk._checks import check_email
    from asyncsdk._core import answer as _answer
    from asyncsdk._core.transport import build_call
    from asyncsdk._serde.converter import decode
    from asyncsdk.models.validation import CheckResult
    from asyncsdk.resources.validation.resource import CHECK

    _answer._json_loads = json.loads  # the same JSON function on every side
    authority = base.split("//", 1)[1]
    session = await stack.enter_async_context(aiohttp.ClientSession(
        connector=aiohttp.TCPConnector(limit=100, limit_per_host=0)))
    client = await stack.enter_async_context(
        asyncsdk.Client(api_key=API_KEY, username=USERNAME, base_url=base))
    await client.validation.check("warm@example.com")  # the client's session now exists
    own = client._transport.sessions.current
    limits = client._transport.limits
    budget, per_attempt = limits.for_call(None, None, True)
    timeout = limits.client_timeout(budget, per_attempt, budget, False)
    credentials = f"&timeout=30&api={API_KEY}&username={USERNAME}"

    def url_of(email: str) -> URL:
        return URL.build(scheme="http", authority=authority, path=PATH, encoded=True,
                         query_string="email=" + email.replace("@", "%40") + credentials)

    async def raw(email: str) -> Any:
        params = {"email": email, "timeout": 30, "api": API_KEY, "username": USERNAME}
        async with session.get(base + PATH, params=params) as response:
            return json.loads(await response.read())

    async def raw_prebuilt(email: str) -> Any:
        async with session.get(url_of(email)) as response:
            return json.loads(await response.read())

    async def wire(email: str) -> Any:
        async with own.request("GET", url_of(email), timeout=timeout) as response:
            return json.loads(await response.read())

    in_flight: dict[Any, int] = {}
    transport = client._transport

    answer_call, _ = build_call(transport.urls.shape(CHECK),
                                {"email": "warm@example.com", "timeout": 30}, None,
                                transport.credentials)

    def layered(*library: str) -> Call:
        """Every check of the library in one coroutine; the steps named in ``library``
        done by the library's own code (see the module's docstring)."""
        async def check(email: str) -> Any:
            check_email(email, "email")
            call = answer_call  # ``+answer`` alone: a record built once, not per request
            if "url" in library:
                call, _ = build_call(transport.urls.shape(CHECK), {"email": email, "timeout": 30},
                                     None, transport.credentials)
            target = call.target() if "url" in library else url_of(email)
            attempt = timeout
            if "timeout" in library:
                call_budget, call_attempt = limits.defaults[True]
                begun = transport.clock()
                attempt = limits.client_timeout(call_budget - (transport.clock() - begun),
                                                call_attempt, call_budget, False)
            if "in_flight" in library:
                session, task = transport.sessions.begin()
            else:
                session, task = own, asyncio.current_task()
                in_flight[task] = in_flight.get(task, 0) + 1
            try:
                response = await session.request("GET", target, timeout=attempt)
                try:
                    length = response.content_length
                    if (length is None or length > 1 << 18
                            or "Content-Encoding" in response.headers):
                        raise RuntimeError("not a small answer")
                    body = await response.read()
                finally:
                    response.release()
                if "answer" in library:
                    return transport.finish(call, response, body, 1, 0.0, CheckResult, False)
                data = json.loads(body)
                if isinstance(data, dict) and str(data.get("status", "")).lower() == "fail":
                    raise RuntimeError(data.get("error"))
                if not 200 <= response.status < 300:
                    raise RuntimeError(response.status)
                return decode(data, CheckResult)
            finally:
                if "in_flight" in library:
                    transport.sessions.leave(task)
                elif in_flight.pop(task, 1) > 1:
                    in_flight[task] = 1

        return check

    steps = ("url", "timeout", "answer", "in_flight")
    return {"raw": raw, "raw_prebuilt": raw_prebuilt, "wire": wire,
            "one_coroutine": layered(),
            **{f"+{step}": layered(step) for step in steps},
            "+all_four": layered(*steps), "asyncsdk": client.validation.check}


async def _run(base: str, concurrency: int, repeats: int, requests: int) -> None:
    import contextlib

    emails = [f"user{i}@example.com" for i in range(requests)]
    async with contextlib.AsyncExitStack() as stack:
        contenders = await _contenders(base, stack)
        for call in contenders.values():  # connections opened, caches filled
            await asyncio.gather(*(call(e) for e in emails[:concurrency]))
        cpu: dict[str, list[float]] = {name: [] for name in contenders}
        gc.collect()
        for repeat in range(repeats):
            order = list(contenders.items())
            for name, call in order if repeat % 2 == 0 else reversed(order):
                cpu[name].append(await _cpu_per_request(call, emails, concurrency))
    print(f"validation.check, concurrency {concurrency}, {repeats} alternated repeats of "
          f"{requests} requests: client CPU per request")
    print(f"{'contender':15} {'us/req':>8} {'ratio to raw':>13}")
    for name, values in cpu.items():
        ratio = statistics.median(a / b for a, b in zip(values, cpu["raw"], strict=True))
        print(f"{name:15} {statistics.median(values):8.1f} {ratio:12.3f}x")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--concurrency", type=int, default=16)
    parser.add_argument("--repeats", type=int, default=21)
    parser.add_argument("--requests", type=int, default=3000)
    args = parser.parse_args()
    pin(CLIENT_CPU)
    settle_allocator()
    with server_process(contacts=10) as server:
        asyncio.run(_run(server.url, args.concurrency, args.repeats, args.requests))


if __name__ == "__main__":
    main()
