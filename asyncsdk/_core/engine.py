"""``Engine``: the engine as the resources see it, and all they see of it.

A resource method checks its arguments, builds one ``CallOptions`` and awaits
``request``; a download reads ``stream``; a wait between polls ``pause``s and counts its
``deadline`` on the engine's clock (``now``, ``jitter``); a bulk call carries the
policy ``bulk_policy`` gives (a bulk run asks first whether a call could be sent at all:
``usable``). Errors a resource builds from an answer are made here too
(``decode_error``), and text or errors that may quote an answer pass ``scrub`` /
``clean`` (every credential out). No session, credentials object, clock or internal
exception of the engine reaches a resource. ``_core.transport.Transport`` is the one
implementation.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping
from contextlib import AbstractAsyncContextManager
from typing import Any, Protocol

from .._errors import ResponseDecodeError, SDKError
from .backlog import Backlog
from .operation import Extras, Operation
from .options import CallOptions
from .pace_state import PaceState
from .policy import SendPolicy
from .streamed import StreamedResponse

__all__ = ["Deadline", "Engine"]


class Deadline:
    """A moment ``seconds`` from when it was made, on the engine's clock."""

    __slots__ = ("_now", "ends_at", "seconds")

    def __init__(self, now: Callable[[], float], seconds: float) -> None:
        self._now = now
        self.seconds = seconds
        self.ends_at = now() + seconds

    def left(self) -> float:
        """Seconds until the deadline (<= 0: passed)."""
        return self.ends_at - self._now()

    def __repr__(self) -> str:
        return f"Deadline(seconds={self.seconds:g}, left={self.left():g})"


class Engine(Protocol):
    """What a resource may ask of the engine (see the module docstring)."""

    def request(self, options: CallOptions) -> Awaitable[Any]:
        """Send the call; the awaitable gives its data (decoded as ``options.model``)
        or raises its error. Bad arguments raise at once (``InvalidInputError``,
        ``ConfigurationError``)."""
        ...

    def stream(self, op: Operation, *, query: Mapping[str, Any] | None = None,
               timeout: float | None = None, absolute_url: str | None = None,
               deadline: Deadline | None = None,
               ) -> AbstractAsyncContextManager[StreamedResponse]:
        """Send ``op`` and hand out its 2xx answer unread (``absolute_url``: a result
        hosted elsewhere, sent there without credentials or extras; ``deadline``:
        instead of ``timeout``, a budget begun before, shared with earlier streams)."""
        ...

    def usable(self) -> None:
        """Nothing if a call could be sent now; else the ``UsageError`` every call would
        raise (the client is closed, or used outside its event loop)."""
        ...

    async def pause(self, seconds: float, *, operation: str) -> None:
        """Wait ``seconds`` on the engine's clock. ``UsageError`` when the client is
        closed already; ``APIConnectionError`` (nothing sent, naming ``operation``)
        when ``close()`` ends the wait."""
        ...

    def deadline(self, seconds: float) -> Deadline:
        """A deadline ``seconds`` from now, on the engine's clock."""
        ...

    def now(self) -> float:
        """The engine's clock, in seconds."""
        ...

    def jitter(self) -> float:
        """A random float in [0, 1] from the engine's clock."""
        ...

    def budget(self, request_timeout: float | None) -> float:
        """A call's time budget: ``request_timeout`` (checked) or the client's."""
        ...

    def decode_error(self, op: Operation, data: Any, why: str) -> ResponseDecodeError:
        """The ``ResponseDecodeError`` for ``data`` (parsed JSON) ``op`` cannot use."""
        ...

    def scrub(self, text: str) -> str:
        """``text`` with every credential replaced."""
        ...

    def clean(self, exc: SDKError) -> None:
        """Scrub ``exc``'s texts once more and clear the engine's frames it passed."""
        ...

    def with_extras(self, extras: Extras | None) -> Engine:
        """This engine, whose requests and streams carry ``extras`` by default."""
        ...

    def bulk_policy(self, op: Operation, *, adaptive: bool,
                    backlog: Backlog | None = None) -> SendPolicy:
        """The send policy of a bulk call of ``op`` (its area's pace on this client;
        ``adaptive``: its rate and window too, not only its holds; ``backlog``: the
        run's inputs not yet sent, counted down by the run, which tells its pace when
        the end is near)."""
        ...

    def pace_state(self, op: Operation) -> PaceState:
        """What the pace of ``op``'s area for this client's key is doing now (read
        only; ``PaceState()`` while no bulk call has used it, and none is made)."""
        ...
