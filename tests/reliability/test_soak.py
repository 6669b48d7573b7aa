"""Soak: ``check_many`` over many addresses with 2 % injected faults, concurrency 100.

Every input gets exactly one outcome, the server never sees more than 100 requests in
flight, and at the end the process holds no more objects (gc-tracked containers: a
per-input leak would show as thousands) and little more resident memory than at the
start. CI runs a modest size; the full run is::

    ASYNCSDK_SOAK_SIZE=50000 python -m pytest tests/reliability -m slow
"""

from __future__ import annotations

import gc
import os
import resource
import time
from collections import Counter

import pytest
from reliability_helpers import FIGURES, instant, sandbox

from asyncsdk.testing import FaultKind

SIZE = int(os.environ.get("ASYNCSDK_SOAK_SIZE", "3000"))
CONCURRENCY = 100
#: Growth allowed after the run: outcomes are consumed and dropped as they come, so
#: nothing may grow with the number of inputs. Objects: gc-tracked containers (each
#: outcome is several); resident memory: coarse, the allocator keeps freed pages.
OBJECT_SLACK = 500
RSS_SLACK = 24 * 1024 * 1024
FAULT_KINDS = [FaultKind.RESET, FaultKind.STATUS, FaultKind.RATE_LIMIT, FaultKind.TRUNCATED,
               FaultKind.INVALID_JSON, FaultKind.HTML_ERROR]


@pytest.mark.slow
async def test_check_many_soak() -> None:
    emails = (f"user{i}@example.com" for i in range(SIZE))  # lazy, like a real feed
    seen: Counter[str] = Counter()
    errors: Counter[str] = Counter()
    async with sandbox(record=False) as sb, sb.client(max_connections=CONCURRENCY,
                                                      clock=instant()) as client:
        # Warm up (pool, caches, converter hooks) before measuring.
        async for _ in client.validation.check_many([f"w{i}@example.com" for i in range(200)],
                                                    concurrency=CONCURRENCY):
            pass
        sb.reset_stats()
        sb.faults.random(rate=0.02, kinds=FAULT_KINDS, seed=20240601,
                         path="/api/v1/single/check", retry_after=0)
        gc.collect()
        objects_before, rss_before = len(gc.get_objects()), rss()
        started = time.monotonic()
        async for outcome in client.validation.check_many(emails, concurrency=CONCURRENCY):
            seen[outcome.email] += 1
            if outcome.error is not None:
                errors[type(outcome.error).__name__] += 1
            else:
                assert outcome.result is not None
        elapsed = time.monotonic() - started
        del outcome
        gc.collect()
        objects_after, rss_after = len(gc.get_objects()), rss()
        faults = len(sb.faults.applied)
        max_in_flight = sb.max_in_flight
        # Concurrency under load: every check held 100 ms at the server (long enough for
        # connections the faults closed to be opened again on a busy 2-core machine).
        sb.faults.clear()
        sb.faults.delay("/api/v1/single/check", 0.1, times=None)
        sb.reset_stats()
        # The bound itself, without the pace (which finds what the service takes below
        # it: this one takes any number, but took 429s above).
        held = [o async for o in client.validation.check_many(
            [f"h{i}@example.com" for i in range(300)], concurrency=CONCURRENCY,
            adaptive=False)]
        held_max_in_flight = sb.max_in_flight
    FIGURES["calls made"] += SIZE + 300 + 200
    FIGURES["faults injected"] += faults
    FIGURES["soak inputs"] += SIZE
    print(f"\nsoak: {SIZE} inputs in {elapsed:.1f} s, {faults} faults injected, "
          f"errors {dict(errors)}, max in flight {max_in_flight} "
          f"(held phase: {held_max_in_flight}), objects {objects_after - objects_before:+d}, "
          f"RSS {(rss_after - rss_before) / 1024:+.0f} KiB")
    assert len(seen) == SIZE and set(seen.values()) == {1}
    assert faults >= SIZE * 0.01  # faults really were injected
    assert max_in_flight <= CONCURRENCY
    assert len(held) == 300 and all(o.ok for o in held)
    assert held_max_in_flight == CONCURRENCY  # reached, never passed
    assert objects_after - objects_before < OBJECT_SLACK
    assert rss_after - rss_before < RSS_SLACK


def rss() -> int:
    """Resident memory of this process, in bytes."""
    with open("/proc/self/statm") as statm:
        return int(statm.read().split()[1]) * resource.getpagesize()
