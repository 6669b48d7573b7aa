"""Shared fixtures: a client whose sleeps are recorded instead of slept."""

from __future__ import annotations

import inspect
import logging
from collections.abc import AsyncIterator, Iterator
from types import SimpleNamespace
from typing import Any

import aiohttp
import aioresponses.core as aioresponses_core
import pytest
from aioresponses import aioresponses
from helpers import API_KEY, BASE, USERNAME, SleepRecorder

import asyncsdk


def _teach_aioresponses_new_aiohttp() -> None:
    """aioresponses 0.7.9 builds ClientResponse without the ``stream_writer`` argument
    that aiohttp 3.14 requires; give it a response class that supplies a no-op one.
    Does nothing on an aiohttp that does not need it."""
    if "stream_writer" not in inspect.signature(aiohttp.ClientResponse.__init__).parameters:
        return

    class CompatResponse(aiohttp.ClientResponse):
        def __init__(self, method: str, url: Any, **kwargs: Any) -> None:
            kwargs.setdefault("stream_writer", SimpleNamespace(output_size=0))
            super().__init__(method, url, **kwargs)

    aioresponses_core.ClientResponse = CompatResponse  # type: ignore[misc]


_teach_aioresponses_new_aiohttp()


@pytest.fixture(autouse=True)
def _library_logger_as_found() -> Iterator[None]:
    """Each test leaves the ``asyncsdk`` logger as it found it: the command line's
    ``--debug``, run in-process by its tests, sets it to DEBUG, and a later test's
    thousands of requests would then each leave a record in pytest's log capture."""
    logger = logging.getLogger("asyncsdk")
    level, handlers = logger.level, list(logger.handlers)
    yield
    logger.setLevel(level)
    logger.handlers[:] = handlers


@pytest.fixture
def sleeps() -> SleepRecorder:
    return SleepRecorder()


@pytest.fixture
async def client(sleeps: SleepRecorder) -> AsyncIterator[asyncsdk.Client]:
    async with asyncsdk.Client(API_KEY, USERNAME, base_url=BASE) as c:
        c._transport.sleep = sleeps
        c._transport.rand = lambda: 1.0  # the largest jittered delay, so tests see the cap
        yield c


@pytest.fixture
def mocked() -> AsyncIterator[aioresponses]:
    with aioresponses() as m:
        yield m
