"""The aiohttp session: who owns it, which event loop it belongs to, and what is in
flight on it when the client closes.

The transport asks ``SessionOwner.session()`` for every call; nothing here knows about
areas or operations.

* **Ownership**: without ``session=`` the owner creates its own session at first use,
  inside the running loop, and closes it on ``close()``. A caller's session is used
  with all its settings (headers, auth, cookies, trace configs, middlewares) and never
  closed; once the caller closes it, calls raise ``UsageError``. Two settings are
  overridden per request, because the library reads every answer itself: its
  ``raise_for_status`` (off) and ``auto_decompress`` (on). The own session sends the
  library's ``User-Agent`` through its request class's default headers
  (``agent_request_class``), not as session headers merged into every request.
* **Loop binding**: a client belongs to the loop of its first call (or of the caller's
  session); using or closing it from another loop raises ``UsageError``.
* **No silent resend**: aiohttp resends an idempotent-method request once, unseen, when
  the connection drops before the answer. The transport counts attempts itself
  (``max_retries`` is exact) and must never repeat an unsafe one, so no request may be
  resent by aiohttp. The client's own session has aiohttp's switch for it off (set once,
  where the session is made: it costs nothing per request); a caller's session is never
  modified: each request carries the ``refuse_silent_resend`` client middleware after
  the caller's own middlewares (a request's list replaces the session's, so the
  caller's are read from the session). Both private attributes (``_retry_connection``,
  ``_middlewares``) are checked by ``tests/test_aiohttp_resend.py`` against the
  installed aiohttp.
* **Small reads**: the client's own connections read ``RECEIVE_BYTES`` (64 KiB) at a
  time, not asyncio's 256 KiB (``SmallReads``): a buffer that large can cost a fresh
  memory mapping, its page faults and its unmapping on every read, about a third of
  the CPU of a small answer. Set once per connection; a caller's session is left as
  built, and a loop whose transports read otherwise (uvloop) is left alone.
* **Close while in flight**: ``close()`` ends every call in flight promptly. A task
  inside the transport's attempt loop is cancelled and the transport turns that
  cancellation into an SDK error (``was_closed_under``); an open stream is aborted (its
  next or pending read raises, see ``Abortable``).
"""

from __future__ import annotations

import asyncio
import functools
import platform
import sys
from typing import Any, Protocol

import aiohttp
from aiohttp.client_proto import ResponseHandler

from .. import _constants as C
from .._errors import UsageError

#: ``ClientSession.request(middlewares=...)`` exists since aiohttp 3.12.
_HAS_MIDDLEWARES = hasattr(aiohttp, "ClientMiddlewareType")


class DroppedConnection(aiohttp.ClientConnectionError):
    """The connection dropped before the answer; raised instead of aiohttp's own error
    so that aiohttp does not resend the request by itself. ``original`` is that error."""

    def __init__(self, original: BaseException) -> None:
        super().__init__(type(original).__name__)
        self.original = original


async def refuse_silent_resend(
    request: aiohttp.ClientRequest, handler: Any
) -> aiohttp.ClientResponse:
    """Client middleware: a dropped connection ends the attempt (no hidden resend)."""
    try:
        return await handler(request)  # type: ignore[no-any-return]
    except aiohttp.ClientConnectorError:
        raise  # never resent by aiohttp anyway, and tells "surely not sent" apart
    except (aiohttp.ServerDisconnectedError, aiohttp.ClientOSError) as exc:
        raise DroppedConnection(exc) from exc


def user_agent(app_name: str | None = None) -> str:
    """``asyncsdk/<version> python/<x.y> aiohttp/<version>``, then ``app_name`` if any."""
    python = ".".join(platform.python_version_tuple()[:2])
    agent = f"asyncsdk/{C.VERSION} python/{python} aiohttp/{aiohttp.__version__}"
    return f"{agent} {app_name}" if app_name else agent


def read_in_small_pieces(transport: asyncio.BaseTransport) -> bool:
    """Make ``transport`` ask for at most ``RECEIVE_BYTES`` per read; True if it now does.

    A plain connection reads in the socket transport; a TLS one in its TLS layer (the
    socket under it reads into one buffer kept for good). Both are asyncio's
    ``max_size``, 256 KiB: above glibc's mmap threshold, so a read may map a fresh
    256 KiB, fault its pages in, shrink and unmap it (cpython#85451). Transports
    without that setting (uvloop reads into a buffer of its own) are left alone.
    """
    reader = getattr(transport, "_ssl_protocol", transport)
    size = getattr(reader, "max_size", None)
    if type(size) is not int or size <= C.RECEIVE_BYTES:
        return False
    try:
        reader.max_size = C.RECEIVE_BYTES  # type: ignore[union-attr]
    except (AttributeError, TypeError):  # a read-only attribute (a compiled loop)
        return False
    return True


class SmallReads(ResponseHandler):
    """aiohttp's protocol, reading ``RECEIVE_BYTES`` at a time (``read_in_small_pieces``)."""

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        super().connection_made(transport)
        read_in_small_pieces(transport)


def own_connector(limit: int) -> aiohttp.TCPConnector:
    """The connector of the client's own session: ``limit`` connections in all, and
    connections that read in small pieces (``SmallReads``; aiohttp builds each
    connection's protocol with ``_factory``, checked by ``tests/test_session_reads.py``)."""
    connector = aiohttp.TCPConnector(limit=limit, limit_per_host=0)
    factory = getattr(connector, "_factory", None)
    if isinstance(factory, functools.partial) and factory.func is ResponseHandler:
        connector._factory = functools.partial(  # type: ignore[assignment,unused-ignore]
            SmallReads, *factory.args, **factory.keywords)
    return connector


@functools.lru_cache(maxsize=32)
def agent_request_class(agent: str) -> type[aiohttp.ClientRequest] | None:
    """aiohttp's request class with ``User-Agent: agent`` among the headers every request
    gets by default (``DEFAULT_HEADERS``), for the client's own session; None where
    aiohttp's class has no such table (the session's headers then carry it). One class
    per agent text (a class per client would pile up until a full collection).

    Why not the session's ``headers=``: aiohttp copies a session's headers into every
    request and adds them one by one in a Python loop, about a quarter of a microsecond
    a request; the class's defaults are set by the loop that adds ``Accept`` anyway.
    """
    defaults = getattr(aiohttp.ClientRequest, "DEFAULT_HEADERS", None)
    if not isinstance(defaults, dict):  # pragma: no cover - another aiohttp layout
        return None
    return type("AgentRequest", (aiohttp.ClientRequest,), {
        "DEFAULT_HEADERS": {**defaults, "User-Agent": agent}, "__module__": __name__})


class Abortable(Protocol):
    """Something in flight that ``close()`` must end (an open stream)."""

    def abort(self) -> None:
        """End it now: its pending and later reads raise an SDK error."""


class SessionOwner:
    """Owns (or borrows) the session, binds the loop, tracks what is in flight.

    A caller's session keeps its own ``User-Agent`` header if it sets one; otherwise
    the library's ``User-Agent`` is sent per request.
    """

    __slots__ = (
        "_aborted", "_agent", "_bases", "_in_flight", "_loop", "_max_connections", "_owns",
        "_session", "_streams", "_trust_env", "closed", "request_options",
    )

    def __init__(
        self,
        session: aiohttp.ClientSession | None,
        *,
        max_connections: int,
        trust_env: bool,
        app_name: str | None = None,
        proxy: str | None = None,
        ssl: Any = True,
    ) -> None:
        self._session = session
        self._owns = session is None
        self._max_connections = max_connections
        self._trust_env = trust_env
        self._agent = user_agent(app_name)
        self._loop: asyncio.AbstractEventLoop | None = None
        self._in_flight: dict[asyncio.Task[Any], int] = {}
        #: Tasks ``close()`` cancelled -> their cancellation count before that (a task
        #: may already be cancelling: a caller's clean-up after a cancel).
        self._aborted: dict[asyncio.Task[Any], int] = {}
        #: A task in flight -> its cancellation count when its call began, where not 0.
        self._bases: dict[asyncio.Task[Any], int] = {}
        self._streams: set[Abortable] = set()
        self.closed = False
        #: Extra keyword arguments of every request, only those that differ from
        #: aiohttp's defaults: ``proxy=``, ``ssl=``; on a caller's session also
        #: ``middlewares=`` and maybe ``headers=`` (the own session has them built in).
        self.request_options: dict[str, Any] = {}
        if proxy is not None:
            self.request_options["proxy"] = proxy
        if ssl is not True:
            self.request_options["ssl"] = ssl
        if session is not None:
            self._borrow(session)

    @property
    def current(self) -> aiohttp.ClientSession | None:
        """The session now in use, if any (None before the first call or after close)."""
        return self._session

    @property
    def owns_open_session(self) -> bool:
        """True while the owner's own session exists and is open (``__del__`` warns)."""
        return self._owns and self._session is not None and not self._session.closed

    def _borrow(self, session: aiohttp.ClientSession) -> None:
        if "User-Agent" not in session.headers:
            self.request_options["headers"] = {"User-Agent": self._agent}
        # The library reads every status and body itself (typed errors, retries, the
        # body cap): a session's ``raise_for_status`` would turn a 404 into aiohttp's
        # error with the body gone, and ``auto_decompress=False`` would hand gzip bytes
        # to the JSON parser. Both are set per request; the session is not modified.
        self.request_options["raise_for_status"] = False
        self.request_options["auto_decompress"] = True
        if _HAS_MIDDLEWARES:
            own = tuple(getattr(session, "_middlewares", ()) or ())
            self.request_options["middlewares"] = (*own, refuse_silent_resend)

    def session(self) -> aiohttp.ClientSession:
        """The session for a request now; the client's own is created at first use."""
        if self.closed:
            raise UsageError("this Client is closed; create a new one")
        try:
            loop = asyncio.get_running_loop()
        except RuntimeError:
            raise UsageError("Client calls must be awaited inside a running event loop") from None
        if self._loop is not loop:
            self._bind(loop)
        session = self._session
        if session is None:
            request_class = agent_request_class(self._agent)
            agent: dict[str, Any] = ({"headers": {"User-Agent": self._agent}}
                                     if request_class is None
                                     else {"request_class": request_class})
            session = self._session = aiohttp.ClientSession(
                connector=own_connector(self._max_connections), trust_env=self._trust_env,
                **agent)
            # aiohttp's hidden resend, off for the session the library owns (module doc).
            session._retry_connection = False  # type: ignore[attr-defined,unused-ignore]
        elif session.closed:
            raise UsageError("the aiohttp session given to Client is closed; pass an open one")
        return session

    def _bind(self, loop: asyncio.AbstractEventLoop) -> None:
        if self._loop is None:
            bound = getattr(self._session, "_loop", None) if self._session else None
            self._loop = bound if isinstance(bound, asyncio.AbstractEventLoop) else loop
        if self._loop is not loop:
            raise UsageError(
                "this Client (or its session) belongs to another event loop; create one "
                "Client per event loop (for example inside each asyncio.run())")

    # --- in flight -----------------------------------------------------------------
    def begin(self) -> tuple[aiohttp.ClientSession, asyncio.Task[Any] | None]:
        """The session for a call, and the current task marked in flight until
        ``leave`` (``session()``'s errors are raised before anything is marked)."""
        session = self._session
        # ``session()``'s checks, inline on the hot path: open, this loop, a session. (A
        # session closed by its owner meanwhile is not looked for per call, two property
        # reads: aiohttp refuses it before sending and the transport says so.)
        if self.closed or session is None or (
                self._loop is not asyncio.get_running_loop()):
            session = self.session()  # raises the right UsageError, or makes the session
        task = asyncio.current_task(self._loop)
        if task is not None:
            flight = self._in_flight
            flight[task] = flight.get(task, 0) + 1
            if sys.version_info >= (3, 11) and task.cancelling():
                self._bases.setdefault(task, task.cancelling())
        return session, task

    def leave(self, task: asyncio.Task[Any] | None) -> None:
        """Undo one ``begin``."""
        if task is not None:
            flight = self._in_flight
            depth = flight.pop(task, 1) - 1
            if depth > 0:
                flight[task] = depth
            elif self._bases:
                self._bases.pop(task, None)

    def was_closed_under(self, task: asyncio.Task[Any] | None) -> bool:
        """True when ``task``'s cancellation came from ``close()`` (and only from it):
        the caller then raises an SDK error instead of ``CancelledError``."""
        if task is None or task not in self._aborted:
            return False
        before = self._aborted.pop(task)
        if sys.version_info >= (3, 11):
            return task.uncancel() <= before  # a cancel of someone else's is kept
        return True  # pragma: no cover - 3.10 cannot tell two cancels apart

    def add_stream(self, stream: Abortable) -> None:
        """Track an open stream until ``discard_stream``; aborted at once if closed."""
        if self.closed:
            stream.abort()
        self._streams.add(stream)

    def discard_stream(self, stream: Abortable) -> None:
        """Stop tracking ``stream``."""
        self._streams.discard(stream)

    async def close(self) -> None:
        """End everything in flight and release the own session (not a caller's).

        Raises ``UsageError`` when called from another event loop than the one the
        client was used in: connections can only be released on their own loop.
        """
        if self.closed:
            return
        loop = asyncio.get_running_loop()
        if self._loop is not None and self._loop is not loop:
            raise UsageError(
                "close() must be awaited in the event loop the Client was used in; "
                "its connections belong to that loop")
        self.closed = True
        current = asyncio.current_task()
        for task in list(self._in_flight):
            if task is not current and not task.done():
                # Counted from the task's count when its call began (it may have been
                # cancelling already: a call in a clean-up after a cancel), as
                # asyncio.timeout counts: a cancellation of someone else's is kept.
                self._aborted[task] = self._bases.get(task, 0)
                task.cancel()
        for stream in list(self._streams):
            stream.abort()
        self._in_flight.clear()
        self._bases.clear()
        self._streams.clear()
        session, self._session = self._session, None
        if self._owns and session is not None and not session.closed:
            await session.close()
