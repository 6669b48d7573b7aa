"""The aiohttp session: who owns it, which event loop it belongs to, and how ``close()``
ends what is in flight. Nothing here knows about areas or operations.

* **Ownership**: without ``session=`` the owner creates its own session at first use,
  inside the running loop, and closes it on ``close()``. A caller's session is used
  with all its settings (headers, auth, cookies, trace configs, middlewares) and never
  closed or modified; once the caller closes it, calls raise ``UsageError``. Two of its
  settings are overridden per request, because the library reads every answer itself:
  ``raise_for_status`` (off) and ``auto_decompress`` (on).
* **The library's middleware** (``_core.middleware``: credentials added last, no silent
  resend) is the own session's middleware, and on a caller's session the last of each
  request's middlewares, after the session's own (``aiohttp_compat``).
* **Loop binding**: a client belongs to the loop of its first call; using or closing it
  from another loop raises ``UsageError``.
* **Close while in flight**: ``close()`` ends every call in flight promptly by ending
  what the client owns, never a task of the caller's: the own session is closed (its
  connections, and the waits for one, end at once); on a caller's session each attempt
  runs in a task of the client's own, which ``close()`` cancels; a pause before a retry
  or between polls (``pause``) is woken; an open stream is aborted (``Abortable``).
  What ends that way raises ``ClosedInFlight`` to the transport, which reports it.
"""

from __future__ import annotations

import asyncio
import platform
import sys
from collections.abc import Callable, Coroutine
from typing import Any, Protocol, TypeVar

import aiohttp

from .. import _constants as C
from .._errors import UsageError
from .aiohttp_compat import session_middlewares
from .middleware import last_step

__all__ = ["Abortable", "ClosedInFlight", "SessionOwner", "user_agent"]

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

    __slots__ = ("_agent", "_attempts", "_loop", "_max_connections", "_pauses", "_session",
                 "_streams", "_trust_env", "closed", "owns_session", "request_options")

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
        """True while the owner's own session exists and is open (``__del__`` warns)."""
        return self.owns_session and self._session is not None and not self._session.closed

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
        elif session.closed:
            raise UsageError("the aiohttp session given to Client is closed; pass an open one")
        elif not self.owns_session and "middlewares" not in self.request_options:
            self.request_options.update(self._borrowed_options(session))
        return session

    def _bind(self, loop: asyncio.AbstractEventLoop) -> None:
        if self._loop is None:
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
        own = asyncio.get_running_loop().create_task(attempt)
        self._attempts.add(own)
        try:
            return await own
        except asyncio.CancelledError:
            if own.done() and not own.cancelled() and own.exception() is None:
                orphan(own.result())
            raise
        finally:
            self._attempts.discard(own)

    async def pause(self, seconds: float, waiter: asyncio.Future[None] | None = None) -> None:
        """Sleep ``seconds``, or until ``waiter`` (if given) is done; ``close()`` wakes it.

        Raises:
            ClosedInFlight: the client is (or got) closed.
        """
        if not self.closed:
            loop = asyncio.get_running_loop()
            if waiter is None:
                waiter = loop.create_future()
            timer = loop.call_later(seconds, _wake, waiter)
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

    async def close(self) -> None:
        """End everything in flight and release the own session (not a caller's).

        Raises ``UsageError`` when called from another event loop than the one the
        client was used in: connections can only be released on their own loop.
        """
        if self.closed:
            return
        if self._loop is not None and self._loop is not asyncio.get_running_loop():
            raise UsageError(
                "close() must be awaited in the event loop the Client was used in; "
                "its connections belong to that loop")
        self.closed = True
        for waiter in self._pauses:
            _wake(waiter)
        for stream in list(self._streams):
            stream.abort()
        for attempt in self._attempts:
            attempt.cancel()  # the client's own tasks
        self._streams.clear()
        session, self._session = self._session, None
        if self.owns_session and session is not None and not session.closed:
            await session.close()


def _wake(waiter: asyncio.Future[None]) -> None:
    if not waiter.done():
        waiter.set_result(None)
