"""Helpers for the sandbox's own tests: a raw aiohttp session against the sandbox."""

from __future__ import annotations

from collections.abc import AsyncIterator

import aiohttp
import pytest
from sandbox_helpers import Api

from asyncsdk.testing import Sandbox


@pytest.fixture
async def http(sandbox: Sandbox) -> AsyncIterator[aiohttp.ClientSession]:
    async with aiohttp.ClientSession(base_url=sandbox.base_url) as session:
        yield session


@pytest.fixture
def api(sandbox: Sandbox, http: aiohttp.ClientSession) -> Api:
    return Api(sandbox, http)
