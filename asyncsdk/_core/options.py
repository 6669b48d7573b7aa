"""``CallOptions``: everything one call asks of the engine, in one immutable record (as
openai-python's ``FinalRequestOptions``): a resource method builds it and hands it to
``Engine.request``. One per call, nothing copied: it is on every call's path.

A ``NamedTuple`` rather than a frozen attrs class: as immutable, and built in one step
(a frozen attrs class sets each of its eleven fields through ``object.__setattr__``:
about twice the time, measured, on every call). ``options._replace(...)`` is a copy
with other values."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, NamedTuple

from .operation import Extras, Operation
from .policy import SINGLE, SendPolicy

__all__ = ["CallOptions"]


class CallOptions(NamedTuple):
    """One call's options.

    Attributes:
        op: the operation.
        path_id: put into the operation's ``{id}``.
        query: the query fields (the credentials are added last, by the engine).
        json_body: the JSON body; form: the form fields instead.
        timeout: the call's whole budget (None: the client's); attempt_timeout: one
            attempt's bound of a safe operation (None: the client's).
        model: the type the answer is decoded as (None: the parsed JSON); many: a list
            of them.
        extras: what the caller adds to the requests (None: the engine's default).
        policy: when its attempts may leave (``SINGLE``; a bulk call's pace).
    """

    op: Operation
    path_id: str | int | None = None
    query: Mapping[str, Any] | None = None
    json_body: Any = None
    form: Mapping[str, Any] | None = None
    timeout: float | None = None
    attempt_timeout: float | None = None
    model: type[Any] | None = None
    many: bool = False
    extras: Extras | None = None
    policy: SendPolicy = SINGLE
