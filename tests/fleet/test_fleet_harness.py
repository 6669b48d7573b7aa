"""``asyncsdk.fleet.harness``: the redis-server it starts is the one that answers (its
servers started through conftest's ``start_redis_server``, which calls ``start_redis``)."""

from __future__ import annotations

import subprocess
from collections.abc import Callable, Iterator
from typing import Any
from urllib.parse import urlsplit

import pytest
from redis import Redis

from asyncsdk.fleet import harness

Start = Callable[..., tuple[subprocess.Popen[Any], str]]


def _pid_at(url: str) -> int:
    with Redis.from_url(url) as redis:
        server = redis.info("server")
    assert isinstance(server, dict)
    return int(server["process_id"])


def test_a_port_another_server_holds_is_an_error_not_the_other_server(
    start_redis_server: Start,
) -> None:
    """Before: the other server answered PING, so its URL came back as the new one's."""
    other, url = start_redis_server()
    with pytest.raises(RuntimeError, match="exited"):
        start_redis_server(same_as=url)  # its port, while it still runs
    assert other.poll() is None and _pid_at(url) == other.pid


def test_a_free_port_taken_before_the_server_binds_it_is_replaced(
    start_redis_server: Start, monkeypatch: pytest.MonkeyPatch,
) -> None:
    _, taken = start_redis_server()
    ports: Iterator[int] = iter([urlsplit(taken).port or 0, harness.free_port()])
    monkeypatch.setattr(harness, "free_port", lambda: next(ports))
    proc, url = start_redis_server()
    assert url != taken and _pid_at(url) == proc.pid
