"""The aiohttp session: who owns it, which event loop it belongs to, and how ``close()``
ends what is in flight. Nothing here knows about areas or operations.

* **Ownership**: without ``session=`` the owner creates its own session at first use,
  inside the running loop, and closes it on ``close()``. A caller's session is used
  with all its settings (headers, auth, cookies, trace configs, middlewares) and never
  closed or modified; once the caller closes it, calls raise ``UsageError``. Two of its
  settings are overridden per request, because the library reads every answer itself:
  ``raise_for_status`` (off) and ``auto_decompress`` (on).
* **A fresh connection for what must not be repeated**: the owner's own side has a
  second session whose connector never reuses a connection (``fresh_session``), made at
  the first create, ``mail.send`` or ``jobs/create``, released with the first.
* **The library's middleware** (``_core.middleware``: credentials added last, no silent
  resend) is the own session's middleware, and on a caller's session the last of each
  request's middlewares, after the session's own (``aiohttp_compat``).
* **Loop binding**: a client belongs to the loop of its first call; using it from
  another loop raises ``UsageError``, and so does closing it from another loop while its
  own still runs (its connections can only be released there), or a first call on a
  caller's session made in another loop than the call's.
* **The end of the loop**: the own session is released when its loop is shut down by
  ``asyncio.run`` (or any runner that finalises async generators: ``asyncio.Runner``,
  pytest-asyncio), through an async generator of the owner's that the loop closes at its
  end (``loop.shutdown_asyncgens``; no task, nothing patched). A client used under one
  ``asyncio.run`` and never closed leaves no connection open, and ``close()`` afterwards,
  from another loop, finds the old one closed and just marks the client closed
  (releasing what a loop closed without that step left, as far as can be done without
  it: the session is marked closed; its sockets are the closed loop's).
* **Copies** (``Client.with_options``): ``SharedSession`` is a copy's view of its
  parent's session: requests go through the parent's session (the same pool, created
  at the first call of either); the copy's ``close()`` ends the copy's calls in flight
  and refuses its later calls, and releases nothing shared; the parent's ``close()``
  releases the session and closes every copy.
* **Close while in flight**: ``close()`` ends every call in flight promptly by ending
  what the client owns, never a task of the caller's: the own session is closed (its
  connections, and the waits for one, end at once); on a caller's session each attempt
  runs in a task of the client's own, which ``close()`` cancels; a pause before a retry
  or between polls (``pause``) is woken; an open stream is aborted (``Abortable``).
  What ends that way raises ``ClosedInFlight`` to the transport, which reports it.
"""

from __future__ import annotations

import asyncio
import contextlib
import platform
import sys
import weakref
from collections.abc import AsyncGenerator, Awaitable, Callable, Coroutine
from typing import Any, Protocol, TypeVar

import aiohttp

from .. import _constants as C
from .._errors import UsageError
from .aiohttp_compat import session_loop, session_middlewares
from .middleware import last_step

__all__ = ["Abortable", "ClosedInFlight", "SessionOwner", "SharedSession", "user_agent"]

T = TypeVar("T")


class ClosedInFlight(Exception):
    """``close()`` ended this wait, attempt or pause (the transport reports it)."""


def user_agent(app_name: str | None = None) -> str:
    """``asyncsdk/<version> python/<x.y> aiohttp/<version>``, then ``app_name`` if any."""
    python = ".".join(platform.python_version_tuple()[:2])
    agent = f"asyncsdk/{C.VERSION} python/{python} aiohttp/{aiohttp.__version__}"
    return f"{agent} {app_name}" if app_name else agent


class Abortable(Protocol):
    """Something in flight that ``close()`` must end (an open stream)."""

    def abort(self) -> None:
        """End it now: its pending and later reads raise an SDK error."""


def _cancelling(task: asyncio.Task[Any] | None) -> int:
    """How many cancellations of ``task`` are pending (0 where Python cannot tell)."""
    if task is None or sys.version_info < (3, 11):
        return 0
    return task.cancelling()


class SessionOwner:
    """Owns (or borrows) the session, binds the loop, ends what is in flight on close."""

    __slots__ = ("__weakref__", "_agent", "_attempts", "_copies", "_fresh", "_fresh_watch",
                 "_loop", "_max_connections", "_pauses", "_session", "_streams", "_trust_env",
                 "_watch", "closed", "library_session", "owns_session", "request_options")

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
        #: True when the session is the client's own (``close()`` closes it).
        self.owns_session = session is None
        #: True when the session is the library's own (no caller's trace config or
        #: middleware on it): also true for a copy (``SharedSession``) of such a client.
        self.library_session = session is None
        #: The async generator that releases the own session at the end of its loop.
        self._watch: AsyncGenerator[None, None] | None = None
        #: The own session of the operations not safe to repeat (``fresh_session``) and
        #: the async generator that releases it, made at the first such call.
        self._fresh: aiohttp.ClientSession | None = None
        self._fresh_watch: AsyncGenerator[None, None] | None = None
        #: The ``SharedSession`` of each copy of the client (closed with it).
        self._copies: weakref.WeakSet[SharedSession] = weakref.WeakSet()
        self._max_connections = max_connections
        self._trust_env = trust_env
        self._agent = user_agent(app_name)
        self._loop: asyncio.AbstractEventLoop | None = None
        self._attempts: set[asyncio.Task[Any]] = set()  # on a caller's session
        self._pauses: set[asyncio.Future[None]] = set()
        self._streams: set[Abortable] = set()
        self.closed = False
        #: Keyword arguments of every request that differ from aiohttp's defaults:
        #: ``proxy=``, ``ssl=``; on a caller's session also the overrides and
        #: ``middlewares=`` (see the module docstring).
        self.request_options: dict[str, Any] = {}
        if proxy is not None:
            self.request_options["proxy"] = proxy
        if ssl is not True:
            self.request_options["ssl"] = ssl

    @property
    def current(self) -> aiohttp.ClientSession | None:
        """The session now in use, if any (None before the first call or after close)."""
        return self._session

    @property
    def owns_open_session(self) -> bool:
        """True while the owner's own session exists and ``close()`` has not released it
        or its loop's end released it (``Client.__del__`` warns). Judged from the
        owner's own state, not the session's ``closed`` alone: a client collected in a
        reference cycle is finalised in one pass with its session, in no set order, and
        aiohttp's connector closes itself as it warns; had it gone first, the client
        would say nothing."""
        session, loop = self._session, self._loop
        if not self.owns_session or session is None or self.closed:
            return False
        # Released with its loop (``_released_at_the_end_of_the_loop``): nothing is open.
        return not (loop is not None and loop.is_closed() and session.closed)

    def _borrowed_options(self, session: aiohttp.ClientSession) -> dict[str, Any]:
        agent = None if "User-Agent" in session.headers else self._agent  # theirs is kept
        return {"raise_for_status": False, "auto_decompress": True,
                "middlewares": (*session_middlewares(session), last_step(agent))}

    def session(self) -> aiohttp.ClientSession:
        """The session for a request now; the client's own is created at first use.

        Raises:
            UsageError: the client is closed, or used outside its event loop, or the
                caller's session is closed.
        """
        if self.closed:
            raise UsageError("this Client is closed; create a new one")
        try:
            loop = asyncio.get_running_loop()
        except RuntimeError:
            raise UsageError("Client calls must be awaited inside a running event loop") from None
        if loop is not self._loop:
            self._bind(loop)
        session = self._session
        if session is None:
            session = self._session = aiohttp.ClientSession(
                connector=aiohttp.TCPConnector(limit=self._max_connections, limit_per_host=0),
                trust_env=self._trust_env, middlewares=(last_step(self._agent),))
            self._watch = _released_at_the_end_of_the_loop(session)
        elif session.closed:
            raise UsageError("the aiohttp session given to Client is closed; pass an open one")
        elif not self.owns_session and "middlewares" not in self.request_options:
            self.request_options.update(self._borrowed_options(session))
        return session

    def fresh_session(self) -> aiohttp.ClientSession:
        """The session for a request that must not be repeated (a create, ``mail.send``,
        ``jobs/create``), after ``session()``: on the own session's side, one whose
        connector never reuses a connection (``force_close``). A pooled keep-alive
        connection that the server closes as the request goes out fails it with "may
        have been sent", and such a request cannot be retried (DESIGN §3); a fresh
        connection has no such race. On a caller's session: that session (its pool is
        the caller's)."""
        if not self.owns_session:
            return self.session()
        self.session()  # the checks (closed, loop) and the caller-facing session first
        session = self._fresh
        if session is None:
            session = self._fresh = aiohttp.ClientSession(
                connector=aiohttp.TCPConnector(limit=self._max_connections, limit_per_host=0,
                                               force_close=True),
                trust_env=self._trust_env, middlewares=(last_step(self._agent),))
            self._fresh_watch = _released_at_the_end_of_the_loop(session)
        return session

    def _bind(self, loop: asyncio.AbstractEventLoop) -> None:
        if self._loop is None:
            # A caller's session of another loop would fail deep inside aiohttp, with an
            # error that names neither the client nor the session: refuse it here.
            theirs = None if self.owns_session or self._session is None else session_loop(
                self._session)
            if theirs is not None and theirs is not loop:
                raise UsageError(
                    "the aiohttp session given to Client belongs to another event loop; "
                    "create the session inside the event loop that awaits the client's calls")
            self._loop = loop
        elif self._loop is not loop:
            raise UsageError(
                "this Client belongs to another event loop; create one Client per event "
                "loop (for example inside each asyncio.run())")

    # --- what close() ends ----------------------------------------------------------
    def cancellations(self) -> int:
        """The current task's pending cancellations now (for ``closed_under``)."""
        if sys.version_info < (3, 11):
            return 0
        task = asyncio.current_task()
        return 0 if task is None else task.cancelling()

    def closed_under(self, cancellations: int) -> bool:
        """True when a ``CancelledError`` the current task just got came from
        ``close()`` ending what it waited on, not from a cancellation of the task (it
        had ``cancellations`` pending when its call began)."""
        return self.closed and _cancelling(asyncio.current_task()) <= cancellations

    async def in_own_task(self, attempt: Coroutine[Any, Any, T],
                          orphan: Callable[[T], object]) -> T:
        """Run an attempt on a caller's session in a task of the client's own, which
        ``close()`` cancels. ``orphan``: what to do with a result no one will take (the
        caller was cancelled as the attempt ended): release what it holds."""
        cancellations = self.cancellations()
        own = asyncio.get_running_loop().create_task(attempt)
        self._attempts.add(own)
        try:
            return await own
        except asyncio.CancelledError:
            if own.done() and not own.cancelled() and own.exception() is None:
                orphan(own.result())
            self._refuse_a_cancellation_not_the_callers(cancellations)
            raise
        finally:
            self._attempts.discard(own)

    def _refuse_a_cancellation_not_the_callers(self, cancellations: int) -> None:
        """The caller's session closed by its owner cancels what waits on it (a pooled
        connection): that cancellation is not the caller's task's, and must not end it
        as if it were (a bare ``CancelledError``): ``UsageError`` instead."""
        session = self.current
        if (not self.closed and session is not None and session.closed
                and self.cancellations() <= cancellations):
            raise UsageError("the aiohttp session given to Client was closed while this "
                             "call was in flight") from None

    async def pause(self, seconds: float, waiter: asyncio.Future[None] | None = None,
                    sleep: Callable[[float], Awaitable[None]] | None = None) -> None:
        """Sleep ``seconds``, or until ``waiter`` (if given) is done; ``close()`` wakes it.
        ``sleep``: a clock's own sleep (``_core.clock``; None: the loop's timer), run in a
        task of the owner's that the wake-up ends.

        Raises:
            ClosedInFlight: the client is (or got) closed.
        """
        if not self.closed:
            loop = asyncio.get_running_loop()
            if waiter is None:
                waiter = loop.create_future()
            timer: asyncio.TimerHandle | asyncio.Task[None] = (
                loop.call_later(seconds, _wake, waiter) if sleep is None
                else loop.create_task(_slept(sleep(seconds), waiter)))
            self._pauses.add(waiter)
            try:
                await waiter
            finally:
                timer.cancel()
                self._pauses.discard(waiter)
        if self.closed:
            raise ClosedInFlight

    def add_stream(self, stream: Abortable) -> None:
        """Track an open stream until ``discard_stream``; aborted at once if closed."""
        if self.closed:
            stream.abort()
        self._streams.add(stream)

    def discard_stream(self, stream: Abortable) -> None:
        """Stop tracking ``stream``."""
        self._streams.discard(stream)

    def shared(self) -> SharedSession:
        """A copy's view of this session (``SharedSession``), closed with this owner."""
        copy = SharedSession(self)
        if self.closed:
            copy.end_in_flight()
        self._copies.add(copy)
        return copy

    def end_in_flight(self) -> None:
        """Mark closed and end what is in flight: pauses woken, streams aborted, the
        client's own attempt tasks cancelled (never a caller's task)."""
        self.closed = True
        for waiter in self._pauses:
            _wake(waiter)
        for stream in list(self._streams):
            stream.abort()
        for attempt in self._attempts:
            attempt.cancel()  # the client's own tasks
        self._streams.clear()

    async def close(self) -> None:
        """End everything in flight and release the own session (not a caller's), and
        close every copy (``shared``).

        From another event loop than the one the client was used in: ``UsageError``
        while that loop is still open (its connections can only be released there);
        once it is closed, the client is marked closed (see the module docstring).
        """
        if self.closed:
            return
        loop = self._loop
        if loop is not None and loop is not asyncio.get_running_loop() and not loop.is_closed():
            raise UsageError(
                "close() must be awaited in the event loop the Client was used in; "
                "its connections belong to that loop")
        self.end_in_flight()
        for copy in list(self._copies):
            copy.end_in_flight()
        owned = ((self._session, self._watch), (self._fresh, self._fresh_watch))
        self._session = self._fresh = None
        self._watch = self._fresh_watch = None
        for session, watch in owned:
            if self.owns_session and session is not None and not session.closed:
                await session.close()
            if watch is not None and (loop is None or not loop.is_closed()):
                await watch.aclose()


def _wake(waiter: asyncio.Future[None]) -> None:
    if not waiter.done():
        waiter.set_result(None)


async def _slept(sleep: Awaitable[None], waiter: asyncio.Future[None]) -> None:
    """``sleep``, then ``waiter`` woken; a failure of the clock's is the pause's."""
    try:
        await sleep
    except Exception as exc:
        if not waiter.done():
            waiter.set_exception(exc)
        return
    _wake(waiter)


def _released_at_the_end_of_the_loop(
        session: aiohttp.ClientSession) -> AsyncGenerator[None, None]:
    """An async generator, started here and left suspended, that closes ``session``
    when it is closed: by ``close()``, or by the running loop's
    ``shutdown_asyncgens()`` at its end (``asyncio.run``), which finalises every async
    generator started in it. It holds the session, not its owner."""

    async def watch() -> AsyncGenerator[None, None]:
        try:
            yield
        finally:
            if not session.closed:
                await session.close()

    started = watch()
    with contextlib.suppress(StopIteration):  # the first step, to its ``yield``: the
        started.asend(None).send(None)  # running loop now finalises it at its end
    return started


class SharedSession(SessionOwner):
    """A copy's view (``Client.with_options``) of another owner's session: requests go
    through the parent's session; ``close()`` ends the copy's own calls in flight and
    refuses its later calls, releasing nothing shared. Its attempts run in tasks of its
    own (as on a caller's session), so that its ``close()`` can end them."""

    __slots__ = ("_parent",)

    def __init__(self, parent: SessionOwner) -> None:
        super().__init__(parent.current, max_connections=1, trust_env=False)
        self._parent = parent
        self.owns_session = False
        self.library_session = parent.library_session
        self.request_options = parent.request_options  # the same dict, filled by it

    @property
    def current(self) -> aiohttp.ClientSession | None:
        """The parent's session now in use, if any."""
        return None if self.closed else self._parent.current

    def session(self) -> aiohttp.ClientSession:
        """The parent's session (made at the first call of either).

        Raises:
            UsageError: this copy or its parent is closed, or used outside its loop.
        """
        if self.closed:
            raise UsageError("this Client is closed; create a new one")
        return self._parent.session()

    def fresh_session(self) -> aiohttp.ClientSession:
        """The parent's session for requests that must not be repeated."""
        if self.closed:
            raise UsageError("this Client is closed; create a new one")
        return self._parent.fresh_session()

    def shared(self) -> SharedSession:
        """A copy of a copy shares the first owner's session."""
        copy = self._parent.shared()
        if self.closed:
            copy.end_in_flight()
        return copy

    async def close(self) -> None:
        """End this copy's calls in flight; the session stays its parent's."""
        self.end_in_flight()
