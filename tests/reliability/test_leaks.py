"""No leaks: connections, file descriptors, sessions, tasks.

A long run of calls with faults mixed in ends with no connection checked out after
each call, the process's file descriptors back at their starting level once the client
is closed, and no "Unclosed client session/connector" (pytest turns ResourceWarning and
unraisable exceptions into errors). ``rows()`` abandoned half-way (break, exception,
cancellation) gives its connection back.
"""

from __future__ import annotations

import asyncio
import gc
import logging
import os
from collections import Counter
from contextlib import aclosing
from pathlib import Path

import pytest
from reliability_helpers import (
    FIGURES,
    OPS,
    World,
    acquired,
    instant,
    library_tasks,
    open_fds,
    pooled,
    prepare,
    sandbox,
)

import asyncsdk
from asyncsdk.testing import FaultKind

LEAK_CALLS = int(os.environ.get("ASYNCSDK_LEAK_CALLS", "2000"))


async def settle(fds_at_most: int | None = None) -> None:
    """Let closed transports finish closing: a few loop turns, and with ``fds_at_most``
    more turns (bounded, about a second) until the open descriptors are down to it. A
    real leak never gets there; a loaded machine only needs longer to close sockets."""
    for _ in range(5):
        await asyncio.sleep(0)
    await asyncio.sleep(0.01)
    if fds_at_most is None:
        return
    for _ in range(100):
        if open_fds() <= fds_at_most:
            return
        await asyncio.sleep(0.01)


async def test_long_run_with_faults_leaks_nothing(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.WARNING)
    # Deletes would turn every later get/update of their object into a 404; wait and
    # download are covered by the fault matrix.
    ops = [op for op in OPS
           if "delete" not in op.tags and op.name not in ("job.wait", "job.download")]
    await settle()
    fds_before = open_fds()
    async with sandbox(record=False) as sb:
        world: World = prepare(sb, tmp_path)
        fds_start = open_fds()
        sb.faults.random(rate=0.05, kinds=[
            FaultKind.RESET, FaultKind.STATUS, FaultKind.RATE_LIMIT, FaultKind.TRUNCATED,
            FaultKind.INVALID_JSON, FaultKind.HTML_ERROR, FaultKind.WRONG_CONTENT_TYPE,
        ], seed=7, retry_after=0)
        ok = failed = 0
        errors: Counter[str] = Counter()
        async with sb.client(max_connections=10, clock=instant()) as client:
            for i in range(LEAK_CALLS):
                op = ops[i % len(ops)]
                try:
                    await op.call(client, world, None)
                    ok += 1
                except asyncsdk.SDKError as exc:
                    failed += 1
                    errors[f"{op.name}:{type(exc).__name__}"] += 1
                assert acquired(client) == 0, f"{op.name} kept a connection (call {i})"
                assert pooled(client) <= 10
            assert library_tasks() == []
            fds_open = open_fds()
        # The server's own sockets (and the sandbox's keep-alive fetches of hosted
        # files) close with the sandbox: compare once both are gone.
    await settle(fds_before)
    fds_after = open_fds()
    FIGURES["calls made"] += LEAK_CALLS
    FIGURES["faults injected"] += len(sb.faults.applied)
    print(f"\nleak run: {LEAK_CALLS} calls, {ok} ok, {failed} failed, "
          f"{len(sb.faults.applied)} faults, fds {fds_before} -> {fds_after} "
          f"(+{fds_open - fds_start} while open)\n{errors.most_common()}")
    assert ok + failed == LEAK_CALLS
    assert len(sb.faults.applied) > LEAK_CALLS // 50  # faults really were mixed in
    FIGURES["leaks found"] += fds_after > fds_before
    assert fds_after <= fds_before, f"file descriptors: {fds_before} -> {fds_after}"
    gc.collect()
    assert not [r for r in caplog.records if "Unclosed" in r.getMessage()]


async def test_unclosed_client_warns(tmp_path: Path) -> None:
    """The detector works: a client dropped unclosed warns (ResourceWarning)."""
    async with sandbox() as sb:
        client = sb.client()
        await client.contacts.list()
        session = client._session
        with pytest.warns(ResourceWarning, match="unclosed asyncsdk.Client"):
            client.__del__()
        await client.close()
        assert session is not None and session.closed


# --- rows() abandoned half-way ------------------------------------------------------------
ROWS = 200_000  # far more than one chunk: the stream is open when abandoned


async def test_rows_break_with_aclosing_releases_at_once() -> None:
    async with sandbox() as sb, sb.client() as client:
        job = client.validation.job(sb.make_job(rows=ROWS))
        async with aclosing(job.rows()) as rows:
            async for _ in rows:
                assert acquired(client) == 1
                break
        assert acquired(client) == 0
        assert library_tasks() == []
        assert len(await client.contacts.list()) == 0  # and the client still works


async def test_rows_break_without_aclosing_releases_when_collected() -> None:
    async with sandbox() as sb, sb.client() as client:
        job = client.validation.job(sb.make_job(rows=ROWS))
        rows = job.rows()
        async for _ in rows:
            break
        del rows
        gc.collect()  # the loop's asyncgen hook closes the abandoned generator
        for _ in range(20):
            if acquired(client) == 0:
                break
            await asyncio.sleep(0)
        assert acquired(client) == 0


async def test_rows_exception_in_the_loop_body_releases() -> None:
    async with sandbox() as sb, sb.client() as client:
        job = client.validation.job(sb.make_job(rows=ROWS))


        async def fail_in_the_loop() -> None:
            async with aclosing(job.rows()) as rows:
                async for _ in rows:
                    raise ZeroDivisionError

        with pytest.raises(ZeroDivisionError):
            await fail_in_the_loop()
        assert acquired(client) == 0


async def test_rows_cancelled_mid_stream_releases() -> None:
    async with sandbox() as sb, sb.client() as client:
        job = client.validation.job(sb.make_job(rows=ROWS))
        started = asyncio.Event()

        async def consume() -> int:
            n = 0
            async with aclosing(job.rows()) as rows:
                async for _ in rows:
                    n += 1
                    if n == 100:
                        started.set()
                    await asyncio.sleep(0)
            return n

        task = asyncio.create_task(consume())
        await asyncio.wait_for(started.wait(), 5)
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
        assert acquired(client) == 0
        assert library_tasks() == []
        assert (await job.status()) is asyncsdk.JobStatus.SUCCESS


async def test_download_failing_half_way_removes_its_temporary_file(tmp_path: Path) -> None:
    async with sandbox() as sb, sb.client(clock=instant()) as client:
        job = client.validation.job(sb.make_job(rows=ROWS))
        sb.faults.truncated("/api/v1/jobs/download", times=None)
        target = tmp_path / "out.csv"
        with pytest.raises(asyncsdk.APIConnectionError):
            await job.download(target)
        assert acquired(client) == 0
        assert list(tmp_path.iterdir()) == []


async def test_result_url_is_fetched_without_credentials() -> None:
    """DESIGN §2: a ``result`` URL is streamed without sending credentials there."""
    async with sandbox(download_shape="url") as sb, sb.client() as client:
        job = client.validation.job(sb.make_job(rows=50))
        rows = [row async for row in job.rows()]
        assert len(rows) == 50
        (fetch,) = [r for r in sb.requests if r.path.startswith("/files/")]
        shown = repr(fetch.query) + repr(fetch.headers) + fetch.path
        assert sb.api_key not in shown and sb.username not in shown
        assert not {"api", "api_key", "username"} & set(fetch.query)
