"""``asyncsdk.fleet.harness``: the redis-server it starts is the one that answers."""

from __future__ import annotations

import subprocess
from collections.abc import Callable, Iterator
from pathlib import Path
from urllib.parse import urlsplit

import pytest
from fleet_tools import RedisServer
from redis import Redis

from asyncsdk.fleet import harness


def _pid_at(url: str) -> int:
    with Redis.from_url(url) as redis:
        server = redis.info("server")
    assert isinstance(server, dict)
    return int(server["process_id"])


def test_a_port_another_server_holds_is_an_error_not_the_other_server(
    tmp_path: Path, redis_server: RedisServer,
    start_redis_server: Callable[[], tuple[subprocess.Popen[bytes], str]],
) -> None:
    """Before: the other server answered PING, so its URL came back as the new one's."""
    other, url = start_redis_server()
    with pytest.raises(RuntimeError, match="exited"):
        harness.start_redis(tmp_path, binary=redis_server.binary,
                            port=urlsplit(url).port)
    assert other.poll() is None and _pid_at(url) == other.pid


def test_a_free_port_taken_before_the_server_binds_it_is_replaced(
    tmp_path: Path, redis_server: RedisServer, monkeypatch: pytest.MonkeyPatch,
    start_redis_server: Callable[[], tuple[subprocess.Popen[bytes], str]],
) -> None:
    _, taken = start_redis_server()
    ports: Iterator[int] = iter([urlsplit(taken).port or 0, harness.free_port()])
    monkeypatch.setattr(harness, "free_port", lambda: next(ports))
    proc, url = harness.start_redis(tmp_path, binary=redis_server.binary)
    try:
        assert url != taken and _pid_at(url) == proc.pid
    finally:
        harness.stop(proc)
