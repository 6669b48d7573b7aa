"""Lifecycle, recording, concurrency counting, the plugin's fixtures and options."""

from __future__ import annotations

import asyncio
import errno
import socket
import subprocess
import sys

import aiohttp
import pytest
from sandbox_helpers import Api

from asyncsdk.testing import DEFAULT_API_KEY, DEFAULT_USERNAME, Sandbox


async def test_lifecycle_and_defaults() -> None:
    sb = Sandbox()
    with pytest.raises(RuntimeError):
        sb.base_url  # noqa: B018
    with pytest.raises(RuntimeError):
        sb.host_file("a@b.co")
    await sb.start()
    try:
        assert sb.base_url == f"http://127.0.0.1:{sb.port}"
        assert sb.port > 0
        assert (sb.api_key, sb.username) == (DEFAULT_API_KEY, DEFAULT_USERNAME)
        with pytest.raises(RuntimeError):
            await sb.start()
    finally:
        await sb.close()
        await sb.close()  # idempotent
    with pytest.raises(aiohttp.ClientConnectionError):
        async with aiohttp.ClientSession() as http:
            await http.get(sb.base_url + "/api/v1/contact/")


async def started_on_a_port_asked_for(api_key: str, username: str) -> tuple[Sandbox, int]:
    """A sandbox started on a port given by number: one found free, then freed for it.
    Another process (an xdist worker, a connection's local port) may take it between,
    so a port found taken by then is picked again (three times at most). The sandbox,
    and the port it was asked for."""
    for left in reversed(range(3)):
        with socket.socket() as probe:
            probe.bind(("127.0.0.1", 0))
            port = probe.getsockname()[1]
        sb = Sandbox(port=port, api_key=api_key, username=username)
        try:
            return await sb.start(), port
        except OSError as error:
            if error.errno != errno.EADDRINUSE or not left:
                raise
    raise AssertionError("unreachable")


async def test_given_port_and_credentials() -> None:
    sb, port = await started_on_a_port_asked_for(api_key="sk_mine", username="me")
    try:
        assert sb.base_url == f"http://127.0.0.1:{port}"
        async with aiohttp.ClientSession() as http:
            url = sb.base_url + "/api/v1/contact/"
            async with http.get(url, params={"api_key": "sk_mine"}) as resp:
                assert resp.status == 200
        assert "sk_mine" in sb.banner()
    finally:
        await sb.close()


async def test_requests_are_recorded_with_secrets(api: Api, sandbox: Sandbox) -> None:
    await api.check("a@example.com")
    await api.resource("POST", "/mysite/api/v1/products/", {"name": "P", "selling_price": "1"})
    check, create = sandbox.requests
    assert (check.method, check.path, check.status) == ("GET", "/api/v1/single/check", 200)
    assert check.query["api"] == sandbox.api_key
    assert check.query["username"] == sandbox.username
    assert create.json == {"name": "P", "selling_price": "1"}
    assert create.headers["Content-Type"] == "application/json"
    assert create.status == 201
    assert check.time <= create.time
    sandbox.reset_stats()
    assert sandbox.requests == []


async def test_unknown_routes_answer_json(api: Api) -> None:
    assert await api.resource("GET", "/api/v2/nothing/") == (404, {"detail": "Not found."})
    status, body = await api.resource("PATCH", "/api/v1/contact/1/")
    assert status == 405
    assert body == {"detail": 'Method "PATCH" not allowed.'}


async def test_max_in_flight_counts_concurrent_requests(api: Api, sandbox: Sandbox) -> None:
    sandbox.faults.delay("/api/v1/single/check", seconds=0.05, times=None)
    results = await asyncio.gather(*(api.check(f"u{i}@example.com") for i in range(8)))
    assert all(r["status"] == "success" for r in results)
    assert sandbox.max_in_flight == 8
    assert sandbox.in_flight == 0
    sandbox.reset_stats()
    assert sandbox.max_in_flight == 0
    await api.check("a@example.com")
    assert sandbox.max_in_flight == 1


@pytest.mark.asyncsdk_sandbox(record=False)
async def test_recording_can_be_off(api: Api, sandbox: Sandbox) -> None:
    await api.check("a@example.com")
    assert sandbox.requests == []
    assert sandbox.max_in_flight == 1


@pytest.mark.asyncsdk_sandbox(username="marked-user")
async def test_marker_options_reach_the_fixture(sandbox: Sandbox) -> None:
    assert sandbox.username == "marked-user"


async def test_remote_files_are_refused_by_default(api: Api, sandbox: Sandbox) -> None:
    assert sandbox.settings.allow_remote_files is False
    # A loopback URL that is not the sandbox (nothing listens on port 1): still "fetched",
    # so it fails as not downloadable rather than being refused up front.
    assert (await api.create_job("http://localhost:1/x.csv"))["error"] == (
        "File is not downloadable."
    )
    before = len(sandbox.requests)
    await api.create_job("http://10.0.0.1/x.csv")
    assert len(sandbox.requests) == before + 1  # no fetch was attempted


def test_import_needs_neither_pytest_nor_pytest_asyncio() -> None:
    code = (
        "import sys; sys.modules['pytest'] = sys.modules['pytest_asyncio'] = None; "
        "import asyncsdk.testing as t; assert t.Sandbox"
    )
    subprocess.run([sys.executable, "-c", code], check=True)


async def test_close_ends_an_answer_held_for_a_client_that_went_away() -> None:
    """A delay fault holds an answer; its client gives up. ``close()`` cancels the held
    handler, so no task of the sandbox outlives it (before: 'Task was destroyed but it
    is pending' once the loop was closed, e.g. by ``threaded_sandbox``)."""
    sb = await Sandbox().start()
    sb.faults.delay("/api/v1/single/check", 3600.0)

    async def call() -> None:
        async with aiohttp.ClientSession() as session, session.get(
            f"{sb.base_url}/api/v1/single/check",
            params={"email": "a@example.com", "timeout": "5", "api": DEFAULT_API_KEY,
                    "username": DEFAULT_USERNAME}) as response:
            await response.read()

    caller = asyncio.create_task(call())
    while sb.state.in_flight == 0:  # the request reached its (held) handler
        await asyncio.sleep(0)
    held = set(sb.state.handlers)
    assert len(held) == 1
    caller.cancel()
    with pytest.raises(asyncio.CancelledError):
        await caller
    await sb.close()
    assert all(task.done() for task in held)
    assert sb.state.handlers == set()


CLOSE_WHILE_FETCHING = """
import asyncio, gc, aiohttp
from asyncsdk.testing import Sandbox

async def main():
    sb = await Sandbox().start()
    url = sb.host_file(b"ann@example.com\\n")
    sb.faults.delay("/files/*", 3600.0, times=None)  # the job's file never comes
    async with aiohttp.ClientSession() as session:
        query = {"api": sb.api_key, "username": sb.username, "file_name": url,
                 "timeout": "30"}
        create = asyncio.create_task(session.get(f"{sb.base_url}/api/v1/jobs/create",
                                                 params=query))
        while sb.in_flight < 2:  # jobs/create is fetching the file, which is held
            await asyncio.sleep(0)
        await sb.close()
        try:
            (await create).release()
        except aiohttp.ClientError:
            pass
    assert sb.in_flight == 0 and not sb.state.handlers

asyncio.run(main())
gc.collect()  # a socket left open warns when it is collected
print("closed")
"""


def test_close_while_a_job_fetches_its_file_leaves_no_socket_open() -> None:
    """``close()`` closed the sandbox's own HTTP session first: the fetch of a job's
    file lost its connection, aiohttp sent the GET again on a new one, and the closing
    server accepted it and never closed it (ResourceWarning: unclosed transport)."""
    done = subprocess.run(
        [sys.executable, "-X", "dev", "-W", "error::ResourceWarning", "-c",
         CLOSE_WHILE_FETCHING],
        capture_output=True, text=True, check=False, timeout=60,
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "closed"
    assert "ResourceWarning" not in done.stderr and "unclosed" not in done.stderr, done.stderr
