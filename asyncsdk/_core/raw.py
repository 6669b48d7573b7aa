"""The raw answer of a call: ``client.with_raw_response.<area>.<method>(...)``.

The accessor sets a context variable for the one call it wraps; the transport fills it
in when the final answer arrives (one ``ContextVar.get`` per call otherwise, so a call
without it pays nothing measurable).
"""

from __future__ import annotations

import inspect
from collections.abc import Awaitable, Callable, Mapping
from contextvars import ContextVar
from typing import Any

from multidict import CIMultiDict, CIMultiDictProxy

from .._errors import UsageError
from .._response import RawResponse


class RawCapture:
    """Filled in by the transport for the last request of the wrapped call."""

    __slots__ = ("attempts", "elapsed", "headers", "status", "url")

    def __init__(self) -> None:
        self.status: int | None = None
        self.headers: Mapping[str, str] = {}
        self.elapsed = 0.0
        self.url = ""
        self.attempts = 0


#: The capture of the call being wrapped by ``with_raw_response``, if any.
RAW_CAPTURE: ContextVar[RawCapture | None] = ContextVar("asyncsdk_raw_capture", default=None)


def shown_headers(headers: Mapping[str, str],
                  scrub: Callable[[str], str]) -> Mapping[str, str]:
    """``headers`` as ``RawResponse.headers`` shows them: each value scrubbed (a service
    may echo the request in a header: ``X-Request-Id``, ``X-Echo``).

    The values are scrubbed once, joined: ``headers`` themselves (aiohttp's) are kept
    unless that finds a credential; then a copy with each value scrubbed (read-only and
    case-insensitive, as aiohttp's own). Only the ``with_raw_response`` path pays this.
    """
    values = "\n".join(headers.values())
    if scrub(values) == values:
        return headers
    return CIMultiDictProxy(CIMultiDict((k, scrub(v)) for k, v in headers.items()))


class _RawArea:
    __slots__ = ("_area",)

    def __init__(self, area: object) -> None:
        self._area = area

    def __getattr__(self, name: str) -> Callable[..., Awaitable[RawResponse[Any]]]:
        method = getattr(self._area, name) if not name.startswith("_") else None
        if not callable(method):
            raise AttributeError(f"with_raw_response: {name!r} is not a method of this area")

        async def call(*args: Any, **kwargs: Any) -> RawResponse[Any]:
            capture = RawCapture()
            token = RAW_CAPTURE.set(capture)
            try:
                result = method(*args, **kwargs)
                if not inspect.isawaitable(result):
                    if inspect.isasyncgen(result):
                        await result.aclose()
                    raise UsageError(
                        f"with_raw_response: {name}() makes no single request (it is not a "
                        "coroutine); call it directly")
                parsed = await result
            finally:
                RAW_CAPTURE.reset(token)
            status = capture.status
            if status is None:  # pragma: no cover - every awaitable area method sends
                raise UsageError(f"with_raw_response: {name}() sent no request")
            return RawResponse(
                parsed=parsed, status_code=status, headers=capture.headers,
                request_id=capture.headers.get("X-Request-Id"), elapsed=capture.elapsed,
                url=capture.url, attempts=capture.attempts)

        return call


class WithRawResponse:
    """``client.with_raw_response``: the same areas, whose methods return a
    ``RawResponse`` (``.parsed`` is the usual result). Errors are raised as usual; an
    ``APIError`` already carries ``status_code``, ``request_id`` and the body."""

    __slots__ = ("_client",)

    def __init__(self, client: object) -> None:
        self._client = client

    def __getattr__(self, name: str) -> Any:
        if name.startswith("_") or name in ("close", "closed", "with_raw_response"):
            raise AttributeError(f"with_raw_response: no area {name!r}")
        return _RawArea(getattr(self._client, name))
