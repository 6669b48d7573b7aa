"""Start the fleet's parts on 127.0.0.1: a throwaway redis-server and arq workers.

Used by the end-to-end test and by ``bench.py``; every process is started with
``subprocess.Popen`` and stopped by its pid (``stop``).
"""

from __future__ import annotations

import os
import shutil
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Mapping
from pathlib import Path

from redis import Redis
from redis.exceptions import ConnectionError as RedisConnectionError

ROOT = Path(__file__).resolve().parents[2]


def free_port() -> int:
    """A TCP port free on 127.0.0.1 now."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def redis_server_path() -> str | None:
    """The ``redis-server`` binary, or None when it is not installed."""
    return shutil.which("redis-server")


def start_redis(workdir: Path, *, timeout: float = 20.0) -> tuple[subprocess.Popen[bytes], str]:
    """Start a redis-server without persistence on a free port; return it and its URL.

    Blocks until it answers PING.

    Raises:
        RuntimeError: not installed, exited, or no answer within ``timeout`` seconds.
    """
    binary = redis_server_path()
    if binary is None:
        raise RuntimeError("redis-server is not installed")
    port = free_port()
    proc = subprocess.Popen(  # noqa: S603 - a fixed binary and fixed arguments
        [binary, "--port", str(port), "--bind", "127.0.0.1", "--save", "", "--appendonly",
         "no", "--dir", str(workdir), "--loglevel", "warning"],
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    url = f"redis://127.0.0.1:{port}/0"
    deadline = time.monotonic() + timeout
    try:
        with Redis.from_url(url) as redis:
            while True:
                if proc.poll() is not None:
                    raise RuntimeError(f"redis-server exited with {proc.returncode}")
                try:
                    if redis.ping():
                        return proc, url
                except RedisConnectionError:
                    if time.monotonic() > deadline:
                        raise RuntimeError(f"redis-server silent after {timeout} s") from None
                    time.sleep(0.02)  # not listening yet
    except BaseException:
        stop(proc)
        raise


def start_worker(env: Mapping[str, str], log: Path | None = None) -> subprocess.Popen[bytes]:
    """Start one arq worker process (``python -m arq examples.fleet.worker.WorkerSettings``).

    Args:
        env: variables on top of this process's (``FLEET_*``, ``ASYNCSDK_*``).
        log: a file for the worker's output (default: discarded).
    """
    out = log.open("ab") if log is not None else subprocess.DEVNULL
    try:
        return subprocess.Popen(
            [sys.executable, "-m", "arq", "examples.fleet.worker.WorkerSettings"],
            cwd=ROOT, env={**os.environ, **env}, stdout=out, stderr=subprocess.STDOUT)
    finally:
        if log is not None and not isinstance(out, int):
            out.close()  # the child holds its own descriptor


def stop(proc: subprocess.Popen[bytes], *, grace: float = 5.0) -> None:
    """Stop ``proc`` by its pid: SIGTERM, then SIGKILL after ``grace`` seconds."""
    if proc.poll() is None:
        proc.send_signal(signal.SIGTERM)
        try:
            proc.wait(grace)
        except subprocess.TimeoutExpired:
            proc.kill()
    proc.wait()
