"""``aioresponses`` for the aiohttp installed: aioresponses 0.7.x builds its responses
without the ``stream_writer`` argument that aiohttp 3.14 requires, so every mocked
request fails there. ``asyncsdk.testing.aioresponses`` is aioresponses' own class with
responses that supply it (nothing of aioresponses or aiohttp is patched beyond what
aioresponses itself does): a drop-in, as a context manager or a decorator.

What a mock sees of asyncsdk's requests carries no credential: the library adds them
last, in its aiohttp middleware, which a mock replaces. Mock the URL without them.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable
from typing import Any

import aiohttp
from aioresponses import CallbackResult
from aioresponses import aioresponses as _aioresponses

__all__ = ["aioresponses"]

#: aiohttp 3.14 and later require ``stream_writer`` (aioresponses 0.7.x omits it).
NEEDS_STREAM_WRITER = "stream_writer" in inspect.signature(
    aiohttp.ClientResponse.__init__).parameters


class _SentAlready:
    """The writer of a request already sent, as aiohttp reads it (its size only)."""

    output_size = 0


class MockedResponse(aiohttp.ClientResponse):
    """``aiohttp.ClientResponse`` as aioresponses builds it, given the writer that
    aiohttp 3.14 requires."""

    def __init__(self, method: str, url: Any, **kwargs: Any) -> None:
        if NEEDS_STREAM_WRITER:
            kwargs.setdefault("stream_writer", _SentAlready())
        super().__init__(method, url, **kwargs)


def _completed(result: Any) -> Any:
    if isinstance(result, CallbackResult) and result.response_class is None:
        result.response_class = MockedResponse
    return result


def _callback(callback: Callable[..., Any]) -> Callable[..., Any]:
    """``callback`` whose ``CallbackResult`` gets ``MockedResponse`` when it names no
    response class (aioresponses tells a coroutine function by its kind: kept)."""
    if inspect.iscoroutinefunction(callback):
        async def completed_async(url: Any, **kwargs: Any) -> Any:
            return _completed(await callback(url, **kwargs))

        return completed_async

    def completed(url: Any, **kwargs: Any) -> Any:
        return _completed(callback(url, **kwargs))

    return completed


class aioresponses(_aioresponses):  # the name it stands in for
    """aioresponses' mock of every aiohttp request, working on the installed aiohttp::

        from asyncsdk.testing import aioresponses

        with aioresponses() as mocked:
            mocked.get(re.compile(r".*/api/v1/single/check\\?.*"), payload={...})
            ...

    Each response (``add``, ``get``, ``post``..., a callback's ``CallbackResult``)
    is built as ``MockedResponse`` unless it names its own ``response_class``.
    """

    def add(self, url: Any, method: str = "GET", *args: Any, **kwargs: Any) -> None:
        """aioresponses' ``add``, with ``response_class`` defaulting to
        ``MockedResponse`` (its keyword arguments: ``status``, ``body``, ``payload``,
        ``headers``, ``exception``, ``repeat``, ``callback``...)."""
        # Bound by name first: a status, body... given by position used to skip the
        # default (every such mock failed on aiohttp 3.14 with a TypeError).
        given = _ADD.bind(self, url, method, *args, **kwargs).arguments
        given.pop("self")
        if given.get("response_class") is None:
            given["response_class"] = MockedResponse
        if given.get("callback") is not None:
            given["callback"] = _callback(given["callback"])
        super().add(**given)


_ADD = inspect.signature(_aioresponses.add)
