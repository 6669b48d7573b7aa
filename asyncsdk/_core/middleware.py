"""The library's aiohttp client middleware: the last step of every request before the wire.

It runs after the caller's own middlewares, trace configs and any mock or recorder (it
is the last of the chain), and it is the boundary of the credentials:

* **Credentials are added last.** The transport marks its own requests (``OUTGOING``, a
  context variable set for the call to aiohttp); for such a request to the call's own
  origin the middleware adds the credentials where the area's placement says (the query,
  or the form body). A request without the mark (the caller's own, made through the same
  session), a result hosted elsewhere and a redirect to another origin get none. Once
  the request is answered (or failed), its URL is the one without credentials again, so
  what the caller's tools and aiohttp's frames above hold shows none. The answer's
  ``request_info`` (read by trace configs' ``on_request_end`` and ``on_request_redirect``,
  by recorders such as vcrpy for each hop of a redirect, and by aiohttp's
  ``ClientResponseError``) shows the request as it was before the credentials: aiohttp
  builds it below this step, from the request with them, so the request's
  ``response_class`` (a public attribute) is, for that request only, a subclass of the
  session's that takes the URL from before (``_Unseen``). What a trace config's
  ``on_request_headers_sent`` and ``on_request_chunk_sent`` are given is the wire itself,
  sent below this step: it carries the credentials (README, "Tracing, error tracking
  and recording").
* **No silent resend.** aiohttp resends an idempotent-method request once, unseen, when
  a kept-alive connection drops before the answer. The transport counts attempts itself
  (``max_retries`` is exact) and must never repeat an unsafe one, so such a drop leaves
  as ``DroppedConnection``, which aiohttp does not resend.
* **The library's ``User-Agent``**, where the session has none of its own, is set here
  too (one header set, not the session's headers merged into every request).
* **Nothing below it leaves.** aiohttp's frames below this one hold the request with its
  credentials, and some of its errors quote that URL (``ConnectionTimeoutError``). An
  exception leaving here is replaced by one of the library's own (a dropped or timed-out
  connection) or leaves without its traceback below this frame and without chained
  exceptions from there; the exception itself is kept. A replacement is raised outside
  the handler of the original, so that not even its ``__context__`` (which Python sets
  even where ``from None`` hides it) holds the original.
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
    into the query or, ``in_form``, into the ``form`` sent, and the base URL's login
    (``authorization``); only to ``origin`` (scheme and authority)."""

    __slots__ = ("authorization", "fields", "form", "in_form", "origin", "query")

    def __init__(self, origin: URL | tuple[str, str], fields: tuple[tuple[str, SecretValue], ...],
                 *, in_form: bool, form: Mapping[str, Any] | None = None,
                 authorization: SecretValue | None = None) -> None:
        self.origin = (origin.scheme, origin.raw_authority) if isinstance(origin, URL) else origin
        self.fields = fields
        self.in_form = in_form
        self.form = form
        self.authorization = authorization
        #: The fields as an encoded query part, made once (``add_to_query``).
        self.query = None if in_form else SecretValue(URL.build(
            query=[(name, value.reveal()) for name, value in fields]).raw_query_string)

    def with_form(self, form: Mapping[str, Any]) -> Outgoing:
        """The same credentials, for a call sending ``form``."""
        return Outgoing(self.origin, self.fields, in_form=self.in_form, form=form,
                        authorization=self.authorization)

    def applies_to(self, url: URL) -> bool:
        """True for a request to the call's own origin (not a redirect elsewhere)."""
        return bool(self.fields) and (url.scheme, url.raw_authority) == self.origin

    def add_login(self, request: aiohttp.ClientRequest) -> None:
        """The base URL's login as ``Authorization``, unless the request has one."""
        if self.authorization is not None and "Authorization" not in request.headers:
            request.headers["Authorization"] = self.authorization.reveal()

    def add_to_query(self, request: aiohttp.ClientRequest) -> None:
        """The credentials appended to the query (revealed inline: no local holds them)."""
        assert self.query is not None
        self.add_login(request)
        url = request.url
        query = url.raw_query_string
        request.url = URL.build(
            scheme=url.scheme, authority=url.raw_authority, path=url.raw_path,
            query_string=f"{query}&{self.query.reveal()}" if query else self.query.reveal(),
            fragment=url.raw_fragment, encoded=True)

    async def add_to_form(self, request: aiohttp.ClientRequest) -> None:
        """The credentials added to the form sent."""
        self.add_login(request)
        await request.update_body({**(self.form or {}),
                                   **{name: value.reveal() for name, value in self.fields}})

    async def take_from(self, request: aiohttp.ClientRequest, url: URL) -> None:
        """Leave ``request`` as it was before the credentials were added."""
        request.url = url
        if self.authorization is not None and request.headers.get(
                "Authorization") == self.authorization.reveal():
            del request.headers["Authorization"]
        if self.in_form:
            await request.update_body(dict(self.form or {}))


#: The credentials the transport's request now in ``session.request`` is to carry (none
#: for a result hosted elsewhere); None outside the library's own requests.
OUTGOING: contextvars.ContextVar[Outgoing | None] = contextvars.ContextVar(
    "asyncsdk_outgoing", default=None)


def last_step(user_agent: str | None) -> aiohttp.ClientMiddlewareType:
    """The library's middleware (module docstring), sending ``user_agent`` as the
    ``User-Agent`` of the library's requests (None: the session's own is kept)."""

    async def middleware(request: aiohttp.ClientRequest,
                         handler: aiohttp.ClientHandlerType) -> aiohttp.ClientResponse:
        outgoing = OUTGOING.get()
        url = request.url
        adding = None
        if outgoing is not None:  # the library's own request
            if user_agent is not None:
                request.headers["User-Agent"] = user_agent
            if outgoing.applies_to(url):  # else none (elsewhere, or none to add)
                adding = outgoing
                response_class = request.response_class
                request.response_class = _unseen(response_class)
                before = _BEFORE.set(url)
                if outgoing.in_form:
                    await outgoing.add_to_form(request)
                else:
                    outgoing.add_to_query(request)
        try:
            return await handler(request)
        except BaseException as exc:
            leaving = _leaving(exc)
        finally:
            if adding is not None:
                _BEFORE.reset(before)
                request.response_class = response_class
                await adding.take_from(request, url)
        try:  # outside the handler: ``leaving.__context__`` is not ``exc``
            raise leaving
        finally:
            del leaving  # no cycle through this frame

    return middleware


#: The URL of the request now being sent, as it was before the credentials were added
#: (read by ``_Unseen`` while aiohttp builds the answer, below the middleware).
_BEFORE: contextvars.ContextVar[URL | None] = contextvars.ContextVar(
    "asyncsdk_before_credentials", default=None)


#: ``_unseen``'s subclass of each response class met.
_UNSEEN: dict[type[aiohttp.ClientResponse], type[aiohttp.ClientResponse]] = {}


def _unseen(base: type[aiohttp.ClientResponse]) -> type[aiohttp.ClientResponse]:
    """``base`` (the session's response class), whose ``request_info`` shows the URL
    from before the credentials (one subclass per class, made once)."""
    made = _UNSEEN.get(base)
    if made is None:
        made = _UNSEEN[base] = _unseen_subclass(base)
    return made


def _unseen_subclass(base: type[aiohttp.ClientResponse]) -> type[aiohttp.ClientResponse]:

    class _Unseen(base):  # type: ignore[valid-type,misc]
        def __init__(self, method: str, url: URL, *,
                     request_info: aiohttp.RequestInfo, **kwargs: Any) -> None:
            before = _BEFORE.get()
            if before is not None:
                request_info = aiohttp.RequestInfo(before, request_info.method,
                                                   request_info.headers, request_info.real_url)
            super().__init__(method, url, request_info=request_info, **kwargs)

    return _Unseen


def _leaving(exc: BaseException) -> BaseException:
    """What leaves the middleware for ``exc`` (module docstring)."""
    if isinstance(exc, aiohttp.ConnectionTimeoutError):
        # Its text quotes the URL with the credentials.
        return aiohttp.ConnectionTimeoutError("Connection timeout to host")
    if isinstance(exc, (aiohttp.ServerDisconnectedError, aiohttp.ClientOSError)) and not (
            isinstance(exc, aiohttp.ClientConnectorError)):  # never resent: kept
        return DroppedConnection(type(exc))
    exc.__traceback__ = None
    exc.__context__ = None
    return exc
