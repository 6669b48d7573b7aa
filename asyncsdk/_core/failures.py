"""What can go wrong on the wire, described without secrets: aiohttp's and the OS's
exceptions turned into a ``Failure`` (never chained: they may hold the URL), the
and the service's message found in an error body. (An ``SDKError`` leaving the
transport goes through ``Credentials.clean`` at its edge, ``_send_handling_retries``.)"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Callable
from typing import Any

import aiohttp
import attrs

from .frames import LIBRARY_FOLDER, clear_frames

__all__ = [
    "ATTEMPT_TIMED_OUT",
    "CLOSED_IN_FLIGHT",
    "TIME_RAN_OUT",
    "TRANSPORT_ERRORS",
    "DroppedConnection",
    "Failure",
    "describe_exception",
    "forget_own_frames",
    "message_from_body",
    "message_from_data",
]

#: Exceptions of one attempt that mean "no usable answer", not a bug.
TRANSPORT_ERRORS = (aiohttp.ClientError, asyncio.TimeoutError, OSError)


@attrs.frozen
class Failure:
    """Why an attempt gave no usable answer (already redacted)."""

    message: str
    may_have_been_sent: bool
    retry_unsafe: bool  # True only when the request surely never left
    fatal: bool = False  # retrying cannot help (TLS verification, the client closed)
    timeout: bool = False
    dropped: bool = False  # the connection closed before any answer (may be stale)


class DroppedConnection(aiohttp.ClientConnectionError):
    """The connection dropped before the answer: raised by the library's middleware
    instead of aiohttp's own error, so that aiohttp does not resend the request by
    itself. ``original`` is the type of that error."""

    def __init__(self, original: type[BaseException]) -> None:
        super().__init__(original.__name__)
        self.original = original


#: An attempt that passed its time bound after its connection was made: the request
#: may have arrived.
ATTEMPT_TIMED_OUT = Failure("timed out waiting for the answer", True, False, timeout=True)

#: The failure of a call that ``Client.close()`` ended while it was in flight.
CLOSED_IN_FLIGHT = Failure(
    "the Client was closed while this call was in flight", True, False, fatal=True)

#: The call's budget ended before another attempt could start.
TIME_RAN_OUT = Failure("the call's time ran out", False, False, timeout=True)

_TLS_FAILURES = (aiohttp.ClientConnectorCertificateError, aiohttp.ClientConnectorSSLError,
                 aiohttp.ClientSSLError)
#: aiohttp's errors for redirects that cannot be followed (loop, bad or non-HTTP target).
_REDIRECT_FAILURES = (aiohttp.TooManyRedirects, aiohttp.RedirectClientError)


def _tls_failure(exc: BaseException, name: str) -> Failure:
    return Failure(f"TLS verification failed ({name}); pass ssl= or a session that trusts "
                   "the server's certificate authority",
                   may_have_been_sent=False, retry_unsafe=False, fatal=True)


def _redirect_failure(exc: BaseException, name: str) -> Failure:
    # The same request would be sent the same way again: no retry (one attempt,
    # however many hops).
    return Failure(f"the answer's redirects could not be followed ({name})",
                   may_have_been_sent=True, retry_unsafe=False, fatal=True)


def _connect_failure(exc: BaseException, name: str) -> Failure:
    assert isinstance(exc, aiohttp.ClientConnectorError)
    return Failure(f"could not connect ({name}: {exc.host}:{exc.port}: "
                   f"{exc.strerror or exc.os_error})", False, True)


def _fixed(failure: Failure) -> Callable[[BaseException, str], Failure]:
    return lambda exc, name: failure


def _named(message: str, **flags: bool) -> Callable[[BaseException, str], Failure]:
    return lambda exc, name: Failure(message.format(name=name), **flags)


_NOT_SENT_TIMEOUT = Failure("timed out connecting", False, True, timeout=True)
#: aiohttp's and the OS's exceptions, most specific first, and how each is described.
#: The two after which aiohttp would resend by itself (a connection that may have been
#: a stale keep-alive one) are ``dropped``.
_DESCRIPTIONS: tuple[tuple[type[BaseException] | tuple[type[BaseException], ...],
                           Callable[[BaseException, str], Failure]], ...] = (
    (_TLS_FAILURES, _tls_failure),
    (_REDIRECT_FAILURES, _redirect_failure),
    (aiohttp.ConnectionTimeoutError, _fixed(_NOT_SENT_TIMEOUT)),
    (aiohttp.ClientConnectorError, _connect_failure),
    ((aiohttp.ServerTimeoutError, asyncio.TimeoutError), _fixed(ATTEMPT_TIMED_OUT)),
    (aiohttp.ClientPayloadError, _named("the answer was cut short",
                                        may_have_been_sent=True, retry_unsafe=False)),
    (aiohttp.ServerDisconnectedError, _named(
        "the server closed the connection without an answer",
        may_have_been_sent=True, retry_unsafe=False, dropped=True)),
    (aiohttp.ClientOSError, _named("connection broken ({name})", may_have_been_sent=True,
                                   retry_unsafe=False, dropped=True)),
    (OSError, _named("connection broken ({name})", may_have_been_sent=True,
                     retry_unsafe=False)),
)


def describe_exception(exc: BaseException) -> Failure:
    """An aiohttp/OS exception as a redacted description (never chained): only the
    exception's class and, for a failed connect, the host, port and OS error."""
    if isinstance(exc, DroppedConnection):
        return attrs.evolve(describe_exception(exc.original()), dropped=True)
    name = type(exc).__name__
    for kinds, describe in _DESCRIPTIONS:
        if isinstance(exc, kinds):
            return describe(exc, name)
    return Failure(f"request failed ({name})", True, False)


def message_from_body(raw: bytes) -> str | None:
    """The service's message in an error body, if there is one to be found."""
    try:
        data = json.loads(raw) if raw.strip() else None
    except (ValueError, RecursionError):
        text = raw[:200].decode("utf-8", "replace").strip()
        return text if text and not text.lstrip().startswith("<") else None
    return message_from_data(data)


_MESSAGE_KEYS = ("error", "detail", "message", "errors", "non_field_errors")


def message_from_data(data: Any) -> str | None:
    """The service's message in an error body already parsed (``message_from_body``)."""
    if isinstance(data, str) and data:
        return data
    if not isinstance(data, dict):
        return None
    for key in _MESSAGE_KEYS:
        value = data.get(key)
        if isinstance(value, str) and value:
            return value
        if isinstance(value, list) and value and isinstance(value[0], str):
            return "; ".join(str(v) for v in value)
    parts = [f"{k}: {'; '.join(map(str, v)) if isinstance(v, list) else v}"
             for k, v in data.items() if isinstance(v, (list, str)) and k != "status"]
    return ", ".join(parts)[:500] or None


# --- the transport's edge -----------------------------------------------------------------
def forget_own_frames(exc: BaseException) -> None:
    """Clear the locals of the library's own finished frames that ``exc`` (and the
    exceptions chained to it) passed through (they may hold a body or a URL); the frames
    of others are left as they are (``frames.clear_frames``)."""
    clear_frames(exc, (LIBRARY_FOLDER,))
