"""The fleet example lives in examples/ beside the package: make it importable. The
fixtures of the tests that run the fleet's tasks in this process: a redis-server for the
module, and a pool on it emptied for each test."""

from __future__ import annotations

import sys
from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from arq.connections import ArqRedis, RedisSettings, create_pool  # noqa: E402

from examples.fleet.harness import redis_server_path, start_redis, stop  # noqa: E402


@pytest.fixture(scope="module")
def redis_url(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    if redis_server_path() is None:
        pytest.skip("redis-server is not installed (apt-get install redis-server; .ci/run does)")
    proc, url = start_redis(tmp_path_factory.mktemp("redis"))
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
        await pool.aclose()
