"""The records of a call: what a resource asks of the engine (``Operation``, of an area
described by ``AreaRules``) and the call in flight (``Call``). Made once, never changed.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Protocol

import attrs

from .credentials import REDACTED, Placement, redact_url

__all__ = ["AreaRules", "Call", "Operation"]


class AreaRules(Protocol):
    """What the engine reads of an area of the interface (``resources._areas.Area``)."""

    @property
    def argument(self) -> str:
        """The ``Client`` argument that sets the area's URL."""

    @property
    def env_var(self) -> str:
        """The environment variable that sets it."""

    @property
    def placement(self) -> Placement:
        """Where the area's requests carry the credentials."""

    @property
    def answers_in_body(self) -> bool:
        """True when the area says ``status: fail`` in the body, whatever the status."""


@attrs.frozen
class Operation:
    """What a resource method asks of the transport: which request, and its safety.

    ``safe_to_repeat`` is False for requests with an effect the service may apply twice:
    creates, ``mail.send`` and ``jobs/create`` (a GET that spends credit).

    Where the area answers in the body (``fail_in_body``), ``status: fail`` with an
    ``error`` text is a refused request (the mapped ``APIError`` subclass is raised). A
    ``fail`` *without* a text is an ``APIError`` too, except where ``bare_fail_is_state``:
    jobs/status uses the same field for the job's own state, so there a bare ``fail`` is
    an answer, not an error.
    """

    name: str
    method: str
    area: AreaRules = attrs.field(eq=False)
    path: str
    safe_to_repeat: bool
    bare_fail_is_state: bool = attrs.field(default=False, kw_only=True)

    @property
    def fail_in_body(self) -> bool:
        """The area's ``answers_in_body``: read by the answer interpreter."""
        return self.area.answers_in_body


class Call:
    """The call in flight: its operation, URL (no query), query and form, none of them
    holding a credential (the middleware adds those last, ``with_credentials``).

    ``with_credentials`` False: a request that must carry none (a result hosted
    elsewhere)."""

    __slots__ = ("form", "op", "query", "url", "with_credentials")

    def __init__(self, op: Operation, url: str, query: Mapping[str, Any] | None = None,
                 form: Mapping[str, Any] | None = None, *,
                 with_credentials: bool = True) -> None:
        self.op = op
        self.url = url
        self.query = query or {}
        self.form = form
        self.with_credentials = with_credentials

    @property
    def shown_url(self) -> str:
        """The URL with its query as the service receives it, every credential redacted."""
        placement = self.op.area.placement
        added = {} if placement.in_form or not self.with_credentials else dict.fromkeys(
            (name for name, _ in placement.fields), REDACTED)
        return redact_url(self.url, {**self.query, **added})

    def __repr__(self) -> str:  # a traceback's locals may show it: the URL redacted
        return f"Call({self.op.name}, {redact_url(self.url)})"
