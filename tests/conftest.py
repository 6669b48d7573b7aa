"""Shared fixtures: a client on a virtual clock, whose sleeps are recorded instead of slept."""

from __future__ import annotations

import logging
import os
from collections.abc import AsyncIterator, Iterator

import pytest
from aioresponses import aioresponses
from helpers import API_KEY, BASE, USERNAME
from hypothesis import HealthCheck, settings

import asyncsdk
import asyncsdk.testing

# The property tests draw the same examples on every run (a suite that passes passes
# again; one that fails, fails again and shows the same case) and keep no example
# database between runs. HYPOTHESIS_PROFILE=explore draws fresh ones, for a hunt.
# Nothing in it is timed (no per-example deadline, no "too slow" check): on a loaded
# machine those failed a drawn example that passes on any other run.
settings.register_profile("suite", derandomize=True, database=None, deadline=None,
                          suppress_health_check=[HealthCheck.too_slow])
settings.register_profile("explore", derandomize=False)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "suite"))


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
def clock() -> asyncsdk.testing.VirtualClock:
    """The clients' clock: sleeps recorded (``clock.sleeps``) and instant; the largest
    jittered delay (``random`` 1.0), so tests see the cap."""
    return asyncsdk.testing.VirtualClock(random=1.0)


@pytest.fixture
async def client(clock: asyncsdk.testing.VirtualClock) -> AsyncIterator[asyncsdk.Client]:
    async with asyncsdk.Client(API_KEY, USERNAME, base_url=BASE, clock=clock) as c:
        yield c


@pytest.fixture
def mocked() -> Iterator[aioresponses]:
    """aioresponses as the library ships it for its users (``asyncsdk.testing``)."""
    with asyncsdk.testing.aioresponses() as m:
        yield m
