"""The one place that reads something aiohttp offers no public API for.

The library's middleware (``_core.middleware``) must run after a caller's own
middlewares. On the client's own session it is the session's middleware (public:
``ClientSession(middlewares=...)``). On a caller's session a request's
``middlewares=`` replaces the session's list, so that list must be read to keep it in
front of the library's: aiohttp keeps it in ``ClientSession._middlewares`` (3.12 to 3.14,
pinned by ``tests/core/test_aiohttp_compat.py`` on each supported aiohttp). Where that
attribute is missing (a later aiohttp), the caller's middlewares cannot be kept: the
library's alone are used on its requests, and a ``RuntimeWarning`` says so once.

A caller's session also belongs to the event loop it was made in, which aiohttp shows
only through a deprecated property (``ClientSession.loop``, a ``DeprecationWarning`` at
each read): ``session_loop`` reads ``ClientSession._loop`` instead, so that a session of
another loop is refused with a clear error before any request (aiohttp would fail deep
inside with "Event loop is closed" or "Timeout context manager should be used inside a
task"). Where it is missing, that check is skipped.
"""

from __future__ import annotations

import asyncio
import warnings
from collections.abc import Sequence

import aiohttp

__all__ = ["TESTED_AIOHTTP", "session_loop", "session_middlewares"]

#: The aiohttp releases (major, minor) whose private attribute reads here were checked.
TESTED_AIOHTTP = ((3, 12), (3, 13), (3, 14))

_warned = False


def session_middlewares(
        session: aiohttp.ClientSession) -> Sequence[aiohttp.ClientMiddlewareType]:
    """The middlewares ``session`` was made with (empty where they cannot be read)."""
    global _warned
    found = getattr(session, "_middlewares", None)
    if isinstance(found, (tuple, list)):
        return tuple(found)
    if not _warned:
        _warned = True
        warnings.warn(
            f"asyncsdk cannot read the middlewares of your aiohttp {aiohttp.__version__} "
            "session: they are not applied to asyncsdk's requests (a newer aiohttp than "
            "asyncsdk was tested with)", RuntimeWarning, stacklevel=3)
    return ()


def session_loop(session: aiohttp.ClientSession) -> asyncio.AbstractEventLoop | None:
    """The event loop ``session`` was made in (None where it cannot be read)."""
    found = getattr(session, "_loop", None)
    return found if isinstance(found, asyncio.AbstractEventLoop) else None
