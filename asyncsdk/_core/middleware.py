"""The library's aiohttp client middleware: the last step of every request before the wire.

It runs after the caller's own middlewares, trace configs and any mock or recorder (it
is the last of the chain), and it is the boundary of the credentials:

* **Credentials are added last.** The transport marks its own requests (``OUTGOING``, a
  context variable set for the call to aiohttp); for such a request to the call's own
  origin the middleware adds the credentials where the area's placement says (the query,
  or the form body). A request without the mark (the caller's own, made through the same
  session), a result hosted elsewhere and a redirect to another origin get none. Once
  the request is answered (or failed), its URL is the one without credentials again, so
  what the caller's tools and aiohttp's frames above hold shows none.
* **No silent resend.** aiohttp resends an idempotent-method request once, unseen, when
  a kept-alive connection drops before the answer. The transport counts attempts itself
  (``max_retries`` is exact) and must never repeat an unsafe one, so such a drop leaves
  as ``DroppedConnection``, which aiohttp does not resend.
* **Nothing below it leaves.** aiohttp's frames below this one hold the request with its
  credentials, and some of its errors quote that URL (``ConnectionTimeoutError``). An
  exception leaving here is replaced by one of the library's own (a dropped or timed-out
  connection) or leaves without its traceback below this frame and without chained
  exceptions from there; the exception itself is kept.
"""

from __future__ import annotations

import contextvars
from collections.abc import Mapping
from typing import Any

import aiohttp
from yarl import URL

from .credentials import SecretValue
from .failures import DroppedConnection

__all__ = ["OUTGOING", "Outgoing", "last_step"]


class Outgoing:
    """What the middleware adds to one call's requests: ``fields`` (name, credential)
    into the query or, ``in_form``, into the ``form`` sent; only to ``origin``."""

    __slots__ = ("fields", "form", "in_form", "origin")

    def __init__(self, url: str | tuple[str, str | None, int | None],
                 fields: tuple[tuple[str, SecretValue], ...], *, in_form: bool,
                 form: Mapping[str, Any] | None) -> None:
        if isinstance(url, str):
            parsed = URL(url)
            url = (parsed.scheme, parsed.host, parsed.port)
        self.origin = url
        self.fields = fields
        self.in_form = in_form
        self.form = form

    def with_form(self, form: Mapping[str, Any]) -> Outgoing:
        """The same credentials, for a call sending ``form``."""
        return Outgoing(self.origin, self.fields, in_form=self.in_form, form=form)

    def applies_to(self, url: URL) -> bool:
        """True for a request to the call's own origin (not a redirect elsewhere)."""
        return bool(self.fields) and (url.scheme, url.host, url.port) == self.origin

    async def add_to(self, request: aiohttp.ClientRequest) -> None:
        """Put the credentials into ``request`` (revealed inline: no local holds them)."""
        if self.in_form:
            await request.update_body({**(self.form or {}),
                                       **{name: value.reveal() for name, value in self.fields}})
        else:
            request.url = request.url.extend_query(
                [(name, value.reveal()) for name, value in self.fields])

    async def take_from(self, request: aiohttp.ClientRequest, url: URL) -> None:
        """Leave ``request`` as it was before ``add_to``."""
        request.url = url
        if self.in_form:
            await request.update_body(dict(self.form or {}))


#: The credentials the transport's request now in ``session.request`` is to carry; None
#: outside the library's own requests.
OUTGOING: contextvars.ContextVar[Outgoing | None] = contextvars.ContextVar(
    "asyncsdk_outgoing", default=None)


async def last_step(request: aiohttp.ClientRequest,
                    handler: aiohttp.ClientHandlerType) -> aiohttp.ClientResponse:
    """The middleware (module docstring)."""
    outgoing = OUTGOING.get()
    if outgoing is None or not outgoing.applies_to(request.url):
        return await _guarded(request, handler)
    url = request.url
    await outgoing.add_to(request)
    try:
        return await _guarded(request, handler)
    finally:
        await outgoing.take_from(request, url)


async def _guarded(request: aiohttp.ClientRequest,
                   handler: aiohttp.ClientHandlerType) -> aiohttp.ClientResponse:
    try:
        return await handler(request)
    except aiohttp.ConnectionTimeoutError:
        # Its text quotes the URL with the credentials.
        raise aiohttp.ConnectionTimeoutError("Connection timeout to host") from None
    except aiohttp.ClientConnectorError as exc:
        # Never resent by aiohttp, and it tells "surely not sent" apart: kept.
        raise _detached(exc) from None
    except (aiohttp.ServerDisconnectedError, aiohttp.ClientOSError) as exc:
        raise DroppedConnection(type(exc)) from None
    except BaseException as exc:
        raise _detached(exc) from None


def _detached(exc: BaseException) -> BaseException:
    """``exc`` without what ties it to the frames below this one (module docstring)."""
    exc.__traceback__ = None
    exc.__context__ = None
    return exc
