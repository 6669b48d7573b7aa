"""What can go wrong on the wire, described without secrets: aiohttp's and the OS's
exceptions turned into a ``Failure`` (never chained: they hold the full URL), the
service's message found in an error body, and the transport's edge: ``clean_errors``
(an ``SDKError`` through ``Credentials.clean``) and ``forget_frames`` (an exception
re-raised as it is loses the locals of the finished frames below)."""

from __future__ import annotations

import asyncio
import functools
import json
import traceback
from collections.abc import Awaitable, Callable
from typing import Any, Concatenate, ParamSpec, Protocol, TypeVar

import aiohttp
import attrs

from .._errors import SDKError
from .session import DroppedConnection

#: Exceptions of one attempt that mean "no usable answer", not a bug.
TRANSPORT_ERRORS = (aiohttp.ClientError, asyncio.TimeoutError, OSError)


@attrs.frozen
class Failure:
    """Why an attempt gave no usable answer (already redacted)."""

    message: str
    may_have_been_sent: bool
    retry_unsafe: bool  # True only when the request surely never left
    fatal: bool = False  # retrying cannot help (TLS verification)
    timeout: bool = False
    dropped: bool = False  # the connection closed before any answer (may be stale)


#: aiohttp's errors for redirects that cannot be followed (loop, bad or non-HTTP target).
_REDIRECT_FAILURES: tuple[type[BaseException], ...] = tuple(
    error for error in (getattr(aiohttp, "TooManyRedirects", None),
                        getattr(aiohttp, "RedirectClientError", None),
                        getattr(aiohttp, "InvalidUrlRedirectClientError", None),
                        getattr(aiohttp, "NonHttpUrlRedirectClientError", None))
    if isinstance(error, type))


def describe_exception(exc: BaseException, scrub: Callable[[str], str]) -> Failure:
    """Turn an aiohttp/OS exception into a redacted description (never chained)."""
    if isinstance(exc, DroppedConnection):
        return attrs.evolve(describe_exception(exc.original, scrub), dropped=True)
    name = type(exc).__name__
    if isinstance(
        exc,
        (aiohttp.ClientConnectorCertificateError, aiohttp.ClientConnectorSSLError,
         aiohttp.ClientSSLError),
    ):
        return Failure(
            f"TLS verification failed ({name}); pass ssl= or a session that trusts the "
            "server's certificate authority",
            may_have_been_sent=False, retry_unsafe=False, fatal=True,
        )
    if isinstance(exc, _REDIRECT_FAILURES):
        # A redirect loop or a redirect to a URL that cannot be fetched: the same request
        # would be sent the same way again, so no retry (one attempt, however many hops).
        return Failure(f"the answer's redirects could not be followed ({name})",
                       may_have_been_sent=True, retry_unsafe=False, fatal=True)
    if isinstance(exc, aiohttp.ConnectionTimeoutError):
        return Failure("timed out connecting", False, True, timeout=True)
    if isinstance(exc, aiohttp.ClientConnectorError):
        detail = scrub(f"{exc.host}:{exc.port}: {exc.strerror or exc.os_error}")
        return Failure(f"could not connect ({name}: {detail})", False, True)
    if isinstance(exc, (aiohttp.ServerTimeoutError, asyncio.TimeoutError)):
        return Failure("timed out waiting for the answer", True, False, timeout=True)
    if isinstance(exc, aiohttp.ClientPayloadError):
        return Failure("the answer was cut short", True, False)
    # The two failures after which aiohttp would resend by itself (a connection that
    # may have been a stale keep-alive one): ``dropped``.
    if isinstance(exc, aiohttp.ServerDisconnectedError):
        return Failure("the server closed the connection without an answer", True, False,
                       dropped=True)
    if isinstance(exc, aiohttp.ClientOSError):
        return Failure(f"connection broken ({name})", True, False, dropped=True)
    if isinstance(exc, OSError):
        return Failure(f"connection broken ({name})", True, False)
    return Failure(f"request failed ({name})", True, False)


#: An attempt that passed its deadline (``_timeouts.AttemptDeadlines``) after its
#: connection was made: the request may have arrived.
ATTEMPT_TIMED_OUT = Failure("timed out waiting for the answer", True, False, timeout=True)

#: The failure of a call that ``Client.close()`` ended while it was in flight.
CLOSED_IN_FLIGHT = Failure(
    "the Client was closed while this call was in flight", True, False, fatal=True)


def message_from_body(raw: bytes) -> str | None:
    """The service's message in an error body, if there is one to be found."""
    try:
        data = json.loads(raw) if raw.strip() else None
    except (ValueError, RecursionError):
        text = raw[:200].decode("utf-8", "replace").strip()
        return text if text and not text.lstrip().startswith("<") else None
    return message_from_data(data)


def message_from_data(data: Any) -> str | None:
    """The service's message in an error body already parsed (``message_from_body``)."""
    if isinstance(data, dict):
        for key in ("error", "detail", "message", "errors", "non_field_errors"):
            value = data.get(key)
            if isinstance(value, str) and value:
                return value
            if isinstance(value, list) and value and isinstance(value[0], str):
                return "; ".join(str(v) for v in value)
        parts = [
            f"{k}: {'; '.join(map(str, v)) if isinstance(v, list) else v}"
            for k, v in data.items()
            if isinstance(v, (list, str)) and k != "status"
        ]
        return ", ".join(parts)[:500] or None
    if isinstance(data, str) and data:
        return data
    return None


# --- the transport's edge -----------------------------------------------------------------
def forget_frames(exc: BaseException) -> None:
    """Clear the local variables of the frames ``exc`` has passed through below the
    frame handling it (finished frames: aiohttp's hold the full URL, the form and the
    answer; a frame still running is skipped). For an exception re-raised as it is (a
    cancellation, a bug), whose texts are not the library's to scrub; cheap, and only
    ever called on the way out of an ``except``."""
    tb = exc.__traceback__
    if tb is not None and tb.tb_next is not None:
        traceback.clear_frames(tb.tb_next)


class _Cleans(Protocol):
    def clean(self, exc: BaseException) -> None: ...


class _HasCredentials(Protocol):
    @property
    def credentials(self) -> _Cleans: ...  # ``_auth.Credentials`` (_wire imports no _auth)


P = ParamSpec("P")
T = TypeVar("T")
S = TypeVar("S", bound=_HasCredentials)


def clean_errors(
    method: Callable[Concatenate[S, P], Awaitable[T]],
) -> Callable[Concatenate[S, P], Awaitable[T]]:
    """Decorate a coroutine method of an object with ``credentials``: an ``SDKError``
    leaving it goes through ``Credentials.clean``, any other exception through
    ``forget_frames``. The wrapper's own locals are its arguments (no credential reaches
    a transport method as an argument; a hosted result's URL, which may carry one, is
    cleared by its caller, ``_results.csv_text``)."""

    @functools.wraps(method)
    async def wrapper(self: S, /, *args: P.args, **kwargs: P.kwargs) -> T:
        try:
            return await method(self, *args, **kwargs)
        except SDKError as exc:
            self.credentials.clean(exc)
            raise
        except BaseException as exc:
            forget_frames(exc)
            raise

    return wrapper
