"""The library's aiohttp client middleware: the last step of every request before the wire.

It runs after the caller's own middlewares, trace configs and any mock or recorder (it
is the last of the chain), and it is the boundary of the credentials:

* **Credentials are added last.** The transport marks its own requests (``OUTGOING``, a
  context variable set for the call to aiohttp); for such a request to the call's own
  origin the middleware adds the credentials where the area's placement says (the query,
  or the form body). A request without the mark (the caller's own, made through the same
  session), a result hosted elsewhere and a redirect to another origin get none.
* **A redirect's target carries none of them.** A service may answer with a ``Location``
  that echoes the query it was sent (nginx's ``$request_uri``), credentials included.
  aiohttp follows a redirect from the answer's ``headers`` (and the caller's trace
  configs and middlewares are shown those headers and the next request), so the answer
  of every request of the library shows its ``Location`` (and ``URI``) without
  credential fields (``BeforeCredentials``): aiohttp, the caller's tools and logs never
  see them, and the middleware adds them back, once, only where the next request goes to
  the call's own origin. Any other header of the answer that echoes a credential the
  request carried (a URL quoted in ``Content-Location``, ``Link``, ``X-Request-Url``; the
  key alone) shows it ``REDACTED`` (``BeforeCredentials.hide``), so that what captures
  answer headers (OpenTelemetry's ``OTEL_INSTRUMENTATION_HTTP_CAPTURE_HEADERS_*``,
  vcrpy) records none. Should a credential field reach the middleware all the same in
  the URL of a call that carries credentials (whose own query never holds one: extras
  refuse them), it is taken out before the credentials are added: never sent twice,
  never to another origin. Once
  the request is answered (or failed), its URL is the one without credentials again, so
  what the caller's tools and aiohttp's frames above hold shows none. The answer's
  ``request_info`` (read by trace configs' ``on_request_end`` and ``on_request_redirect``,
  by recorders such as vcrpy for each hop of a redirect, and by aiohttp's
  ``ClientResponseError``) shows the request as it was before the credentials: aiohttp
  builds it below this step, from the request with them, so the request's
  ``response_class`` (a public attribute) is, for that request only, the session's with
  ``BeforeCredentials`` mixed in, whose ``request_info`` shows the URL from before; an
  aiohttp ``ClientResponseError`` raised below gets that ``request_info`` too. What a trace config's
  ``on_request_headers_sent`` and ``on_request_chunk_sent`` are given is the wire itself,
  sent below this step: it carries the credentials (README, "Tracing, error tracking
  and recording").
* **No silent resend.** aiohttp resends an idempotent-method request once, unseen, when
  a kept-alive connection drops before the answer. The transport counts attempts itself
  (``max_retries`` is exact) and must never repeat an unsafe one, so such a drop leaves
  as ``DroppedConnection``, which aiohttp does not resend.
* **The library's ``User-Agent``**, where the session has none of its own, is set here
  too (one header set, not the session's headers merged into every request).
* **No credential leaves from below, no foreign frame is touched.** aiohttp's frames
  below this one hold the request with its credentials, and some of its errors quote
  that URL (``ConnectionTimeoutError``). Such an error is replaced by one of the
  library's own (a dropped or timed-out connection), raised outside the handler of the
  original, so that not even its ``__context__`` (which Python sets even where ``from
  None`` hides it) holds the original. An exception of the caller's code that aiohttp
  wrapped in a ``ClientConnectionError`` (a chunk-sent hook fails in aiohttp's body
  writer) leaves unwrapped, itself. Any other exception (aiohttp's, or one raised by
  the caller's trace hook or connector below this step) leaves as it is, its traceback
  and chained exceptions kept: only the locals of aiohttp's and the library's frames of
  the library's call are cleared, where credentials were added (``frames.clear_frames``);
  the caller's own frames keep theirs, and so do aiohttp's where the caller's code called
  it (a request of their own that their hook made).
"""

from __future__ import annotations

import contextvars
import os
from collections.abc import Awaitable, Mapping
from typing import Any

import aiohttp
from multidict import CIMultiDict, CIMultiDictProxy
from yarl import URL

from .credentials import (
    Echoes,
    SecretValue,
    may_name_a_credential,
    query_without_credential_fields,
    without_credential_fields,
)
from .failures import TRANSPORT_ERRORS, DroppedConnection
from .frames import LIBRARY_FOLDER, clear_frames

__all__ = ["OUTGOING", "BeforeCredentials", "Outgoing", "last_step"]


class Outgoing:
    """What the middleware adds to one call's requests: ``fields`` (name, credential)
    into the query or, ``in_form``, into the ``form`` sent, and the base URL's login
    (``authorization``); only to ``origin`` (scheme and authority). ``hidden``: more
    texts an answer's headers are not to show (the key in base64, a login's password)."""

    __slots__ = ("_unwatched", "authorization", "echoes", "fields", "form", "hidden",
                 "in_form", "origin", "query")

    def __init__(self, origin: URL | tuple[str, str], fields: tuple[tuple[str, SecretValue], ...],
                 *, in_form: bool, form: Mapping[str, Any] | None = None,
                 authorization: SecretValue | None = None,
                 hidden: tuple[SecretValue, ...] = (), echoes: Echoes | None = None) -> None:
        self.origin = (origin.scheme, origin.raw_authority) if isinstance(origin, URL) else origin
        self.fields = fields
        self.in_form = in_form
        self.form = form
        self.authorization = authorization
        self.hidden = hidden
        #: The fields as an encoded query part, made once (``add_to``).
        self.query = None if in_form else SecretValue(URL.build(
            query=[(name, value.reveal()) for name, value in fields]).raw_query_string)
        #: Every credential these requests carry (fields and login) and the other texts to
        #: hide, with their quick test: what an answer's headers may not echo. Made once
        #: (the transport keeps an ``Outgoing`` per area): an answer only tests.
        login = () if authorization is None else (authorization,)
        self.echoes = echoes if echoes is not None else Echoes(
            (*(value for _, value in fields), *login, *hidden))
        self._unwatched: Outgoing | None = None

    @property
    def unwatched(self) -> Outgoing:
        """These credentials for a request nothing outside the library watches (the
        library's own session, no trace config): its answer's headers are not tested
        for echoes (a test of every answer, for a reader that is not there)."""
        twin = self._unwatched
        if twin is None:
            twin = self._unwatched = Outgoing(
                self.origin, self.fields, in_form=self.in_form, form=self.form,
                authorization=self.authorization, hidden=self.hidden, echoes=_NO_ECHOES)
        return twin

    def with_form(self, form: Mapping[str, Any]) -> Outgoing:
        """The same credentials, for a call sending ``form``."""
        return Outgoing(self.origin, self.fields, in_form=self.in_form, form=form,
                        authorization=self.authorization, hidden=self.hidden,
                        echoes=self.echoes)

    def url_to_complete(self, request: aiohttp.ClientRequest) -> URL | None:
        """``request``'s URL the credentials are to be added to, or None where none go
        (a result hosted elsewhere, or a redirect to another origin). A credential field
        in its query (copied from a redirect's ``Location``: the call's own query holds
        none) is taken out of the request's URL for good first, whatever the origin."""
        if not self.fields:  # a result hosted elsewhere: its URL is the service's
            return None
        url = request.url
        raw_query = url.raw_query_string
        if may_name_a_credential(raw_query):  # nearly never
            query = query_without_credential_fields(raw_query)
            if query is not None:
                url = request.url = URL.build(
                    scheme=url.scheme, authority=url.raw_authority, path=url.raw_path,
                    query_string=query, fragment=url.raw_fragment, encoded=True)
        return url if (url.scheme, url.raw_authority) == self.origin else None

    def add_login(self, request: aiohttp.ClientRequest) -> None:
        """The base URL's login as ``Authorization``, unless the request has one."""
        if self.authorization is not None and "Authorization" not in request.headers:
            request.headers["Authorization"] = self.authorization.reveal()

    def add_to(self, request: aiohttp.ClientRequest, url: URL) -> Awaitable[None] | None:
        """The credentials added to ``request`` (whose URL is ``url``, of ``origin``)
        where the area's placement puts them: appended to the query at once (None: no
        coroutine per request), or to the form by the awaitable returned. The query's
        URL is built from its parts, already encoded (the credentials' part once per
        area), revealed inline: no local holds them."""
        if self.in_form:
            return self.add_to_form(request)
        assert self.query is not None
        if self.authorization is not None:
            self.add_login(request)
        query, (scheme, authority) = url.raw_query_string, self.origin
        added = self.query.reveal()
        request.url = URL.build(scheme=scheme, authority=authority, path=url.raw_path,
                                query_string=f"{query}&{added}" if query else added,
                                fragment=url.raw_fragment, encoded=True)
        return None

    async def add_to_form(self, request: aiohttp.ClientRequest) -> None:
        """The credentials added to the form sent."""
        self.add_login(request)
        await request.update_body({**(self.form or {}),
                                   **{name: value.reveal() for name, value in self.fields}})

    def take_from(self, request: aiohttp.ClientRequest, url: URL) -> Awaitable[None] | None:
        """Leave ``request`` as it was before the credentials were added: its URL and
        headers at once; a form's body by the awaitable returned (else None)."""
        request.url = url
        if self.authorization is not None and request.headers.get(
                "Authorization") == self.authorization.reveal():
            del request.headers["Authorization"]
        return request.update_body(dict(self.form or {})) if self.in_form else None


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
        if outgoing is None:  # not the library's request: as it is
            return await handler(request)
        if user_agent is not None:
            request.headers["User-Agent"] = user_agent
        url = outgoing.url_to_complete(request)  # None: none added (elsewhere)
        response_class = request.response_class
        request.response_class = _UNSEEN.get(response_class) or _unseen(response_class)
        replacement: BaseException | None = None
        try:
            if url is not None and (form := outgoing.add_to(request, url)) is not None:
                await form
            try:
                response = await handler(request)
            except BaseException as exc:
                replacement = _replacement(exc, url)
                if replacement is None:
                    _kept(exc, url)
                    raise
            else:
                if url is not None and isinstance(response, BeforeCredentials):
                    response.url_before_credentials = url
                    response.hide(outgoing.echoes)
                return response
        finally:
            request.response_class = response_class
            if url is not None and (form := outgoing.take_from(request, url)) is not None:
                await form
        try:  # outside the handler: ``replacement.__context__`` is not the original
            raise replacement
        finally:
            del replacement  # no cycle through this frame

    return middleware


class BeforeCredentials:
    """Mixed into the response class of the library's requests (``_unseen``): its
    ``request_info`` (aiohttp's, a public property) shows the URL the request had before
    the credentials, ``url_before_credentials``, which the middleware sets as the answer
    leaves it (until then, aiohttp's own); its ``headers`` and ``raw_headers`` (public
    properties, which aiohttp reads a redirect's target from) show ``Location`` and
    ``URI`` without credential fields."""

    url_before_credentials: URL | None = None
    #: The credentials the request carried (``hide``): an answer that echoes one in a
    #: header (a URL quoted in ``X-Request-Url``, ``Content-Location``, ``Link``) shows
    #: it ``REDACTED``, as trace configs capturing headers (OpenTelemetry) read them.
    #: Set by ``hide``, each cleared once its headers were tested (``headers``,
    #: ``raw_headers``): the test of an answer's headers is made once, when first read
    #: after it leaves the middleware.
    _echoes: Echoes | None = None
    _raw_echoes: Echoes | None = None
    _shown_headers: CIMultiDictProxy[str] | None = None
    _shown_raw_headers: tuple[tuple[bytes, bytes], ...] | None = None

    def hide(self, echoes: Echoes) -> None:
        """Show none of ``echoes`` in the headers from now on (set as the answer leaves
        the middleware, before anything above reads them)."""
        if echoes:
            self._echoes = self._raw_echoes = echoes

    @property
    def headers(self) -> CIMultiDictProxy[str]:
        """aiohttp's ``headers``, a redirect's target without credential fields."""
        shown = self._shown_headers
        if shown is None:
            headers: CIMultiDictProxy[str] | None = super().headers  # type: ignore[misc]
            if headers is None:  # not read yet: aiohttp's own answer
                return headers  # type: ignore[return-value]
            shown = self._shown_headers = _targets_shown(headers)
        echoes = self._echoes
        if echoes is not None:
            self._echoes = None
            shown = self._shown_headers = _echoes_hidden(shown, echoes)
        return shown

    @property
    def raw_headers(self) -> tuple[tuple[bytes, bytes], ...]:
        """aiohttp's ``raw_headers``, a redirect's target without credential fields."""
        shown = self._shown_raw_headers
        if shown is None:
            raw: tuple[tuple[bytes, bytes], ...] | None = super().raw_headers  # type: ignore[misc]
            if raw is None:
                return raw  # type: ignore[return-value]
            shown = self._shown_raw_headers = tuple(
                (name, _target_shown_raw(value) if name.lower() in _RAW_TARGETS else value)
                for name, value in raw)
        echoes = self._raw_echoes
        if echoes is not None:
            self._raw_echoes = None
            shown = self._shown_raw_headers = _raw_echoes_hidden(shown, echoes)
        return shown

    @property
    def request_info(self) -> aiohttp.RequestInfo:
        """aiohttp's ``request_info``, its URL the one from before the credentials."""
        info: aiohttp.RequestInfo = super().request_info  # type: ignore[misc]
        before = self.url_before_credentials
        if before is None:
            return info
        return aiohttp.RequestInfo(before, info.method, info.headers, info.real_url)


#: ``_unseen``'s subclass of each response class met.
_UNSEEN: dict[type[aiohttp.ClientResponse], type[aiohttp.ClientResponse]] = {}


def _unseen(base: type[aiohttp.ClientResponse]) -> type[aiohttp.ClientResponse]:
    """``base`` (the session's response class) with ``BeforeCredentials`` mixed in, made
    at its first request and kept in ``_UNSEEN`` (which every request looks in first)."""
    made = _UNSEEN[base] = type(base.__name__, (BeforeCredentials, base), {
        "__module__": __name__, "__doc__": base.__doc__})
    return made


#: The headers that name a redirect's target (aiohttp reads ``Location``, then ``URI``).
_TARGETS = frozenset(("location", "uri"))
_RAW_TARGETS = frozenset(name.encode() for name in _TARGETS)


def _targets_shown(headers: CIMultiDictProxy[str]) -> CIMultiDictProxy[str]:
    """``headers``, each redirect target without credential fields (``headers`` itself
    when none has one: nearly every answer)."""
    if "Location" not in headers and "URI" not in headers:  # C lookups, no generator
        return headers
    shown = CIMultiDict((name, without_credential_fields(value) or value
                         if name.lower() in _TARGETS else value)
                        for name, value in headers.items())
    return CIMultiDictProxy(shown) if shown != headers else headers


#: Nothing to test an answer's headers for (``Outgoing.unwatched``).
_NO_ECHOES = Echoes(())


def _echoes_hidden(headers: CIMultiDictProxy[str], echoes: Echoes) -> CIMultiDictProxy[str]:
    """``headers`` with each of ``echoes`` a value echoes, in any encoding, replaced by
    ``REDACTED`` (``headers`` itself when none does: nearly every answer)."""
    if not echoes.may_be_in("\n".join(headers.values())):
        return headers
    return CIMultiDictProxy(CIMultiDict(
        (name, echoes.scrubbed(value)) for name, value in headers.items()))


def _raw_echoes_hidden(raw: tuple[tuple[bytes, bytes], ...],
                       echoes: Echoes) -> tuple[tuple[bytes, bytes], ...]:
    """``_echoes_hidden`` for ``raw_headers``: each value read as aiohttp does (UTF-8,
    any other byte kept as it is)."""
    texts = [value.decode("utf-8", "surrogateescape") for _, value in raw]
    if not echoes.may_be_in("\n".join(texts)):
        return raw
    return tuple((name, echoes.scrubbed(text).encode("utf-8", "surrogateescape"))
                 for (name, _), text in zip(raw, texts, strict=True))


def _target_shown_raw(value: bytes) -> bytes:
    text = value.decode("latin-1")  # byte for byte, whatever the encoding
    shown = without_credential_fields(text)
    return value if shown is None else shown.encode("latin-1")


#: The folders whose frames below this step may hold the request with its credentials.
_BELOW = (LIBRARY_FOLDER, os.path.dirname(os.path.abspath(aiohttp.__file__)) + os.sep)


def _replacement(exc: BaseException, url: URL | None) -> BaseException | None:
    """What leaves the middleware instead of ``exc`` (module docstring): the library's
    own error, or the caller's exception that aiohttp wrapped; None: ``exc`` leaves
    itself (``_kept``). ``url``: as for ``_kept``."""
    callers = _callers_under(exc)
    if callers is not None:
        _kept(callers, url)
        return callers
    if isinstance(exc, aiohttp.ConnectionTimeoutError):
        # Its text quotes the URL with the credentials.
        return aiohttp.ConnectionTimeoutError("Connection timeout to host")
    if isinstance(exc, (aiohttp.ServerDisconnectedError, aiohttp.ClientOSError)) and not (
            isinstance(exc, aiohttp.ClientConnectorError)):  # never resent: kept
        return DroppedConnection(type(exc))
    return None


def _callers_under(exc: BaseException) -> BaseException | None:
    """The caller's own exception that ``exc`` wraps, or None. aiohttp writes a body in
    a task of its own, and what raises there (an ``on_request_chunk_sent`` hook of the
    caller's) comes back as a bare ``ClientConnectionError`` caused by it: the caller
    gets their exception itself, as from every other hook, not a connection failure."""
    cause = exc.__cause__
    if type(exc) is aiohttp.ClientConnectionError and isinstance(cause, Exception) and (
            not isinstance(cause, TRANSPORT_ERRORS)):  # a failure of the wire stays one
        return cause
    return None


def _kept(exc: BaseException, url: URL | None) -> None:
    """``exc`` made ready to leave as it is; ``url``: the request's URL before the
    credentials (None: none were added, nothing below holds one). Its traceback and
    chain stay whole: only aiohttp's and the library's frames in them are cleared."""
    if url is None:
        return
    if isinstance(exc, aiohttp.ClientResponseError):
        info = exc.request_info  # built below, from the request with the credentials
        exc.request_info = aiohttp.RequestInfo(url, info.method, info.headers, info.real_url)
    clear_frames(exc, _BELOW)
