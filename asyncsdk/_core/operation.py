"""The records of a call: what a resource asks of the engine (``Operation``, of an area
described by ``AreaRules``) and the call in flight (``Call``). Made once, never changed.

A caller may add to one call's request (``extra_query=``, ``extra_headers=``, as in
openai-python and stripe-python): ``Extras`` checks them before anything is sent, and
refuses whatever would replace a credential (a field of ``CREDENTIAL_FIELDS``, in any
letter case; ``Authorization`` where the area's base URL has a login) or the library's
``User-Agent`` (``Client(app_name=...)`` extends it).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Protocol

import attrs

from .._errors import InvalidInputError
from .credentials import CREDENTIAL_FIELDS, REDACTED, Placement, redact_url

__all__ = ["AreaRules", "Call", "Extras", "Operation"]


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


_FOLDED_FIELDS = frozenset(name.casefold() for name in CREDENTIAL_FIELDS)


class Extras:
    """What a caller adds to one call's requests: ``query`` fields (after the
    operation's own, replacing one of the same name) and ``headers``; checked when made
    (``InvalidInputError`` naming the argument and the field)."""

    __slots__ = ("headers", "query")

    def __init__(self, headers: Mapping[str, str] | None, query: Mapping[str, Any] | None,
                 ) -> None:
        self.headers = _checked_headers(headers) if headers else None
        self.query = _checked_query(query) if query else None

    def refuse_login(self) -> None:
        """Refuse an ``Authorization`` header: here it would replace a base URL's login."""
        if self.headers and any(k.casefold() == "authorization" for k in self.headers):
            raise InvalidInputError(
                "extra_headers: 'Authorization' carries the login of this area's base URL;"
                " it cannot be replaced per call", field="extra_headers")


def _checked_query(query: Mapping[str, Any]) -> dict[str, Any]:
    if not isinstance(query, Mapping):
        raise InvalidInputError("extra_query: expected a mapping of field names to values",
                                field="extra_query")
    for name, value in query.items():
        if not isinstance(name, str) or not name:
            raise InvalidInputError(f"extra_query: field names are non-empty text, got "
                                    f"{name!r}", field="extra_query")
        if name.casefold() in _FOLDED_FIELDS:
            raise InvalidInputError(
                f"extra_query: {name!r} is a credential field; the client adds the "
                "credentials itself", field="extra_query")
        if isinstance(value, bool) or not isinstance(value, (str, int, float)):
            raise InvalidInputError(f"extra_query: {name!r}: expected text or a number, got "
                                    f"{type(value).__name__}", field="extra_query")
    return dict(query)


def _checked_headers(headers: Mapping[str, str]) -> dict[str, str]:
    if not isinstance(headers, Mapping):
        raise InvalidInputError("extra_headers: expected a mapping of header names to text",
                                field="extra_headers")
    for name, value in headers.items():
        if not (isinstance(name, str) and name.isprintable() and name.isascii()
                and name and ":" not in name and " " not in name):
            raise InvalidInputError(f"extra_headers: {name!r} is not a header name",
                                    field="extra_headers")
        if not isinstance(value, str) or "\r" in value or "\n" in value:
            raise InvalidInputError(f"extra_headers: {name!r}: expected one line of text",
                                    field="extra_headers")
        if name.casefold() == "user-agent":
            raise InvalidInputError(
                "extra_headers: 'User-Agent' is the client's: extend it with "
                "Client(app_name=...), or give a session that sets its own",
                field="extra_headers")
    return dict(headers)


class Call:
    """The call in flight: its operation, URL (no query), query and form, none of them
    holding a credential (the middleware adds those last, ``with_credentials``), and
    the caller's ``Extras`` for it (None: none).

    ``with_credentials`` False: a request that must carry none (a result hosted
    elsewhere; no extras go there either)."""

    __slots__ = ("form", "headers", "op", "query", "url", "with_credentials")

    def __init__(self, op: Operation, url: str, query: Mapping[str, Any] | None = None,
                 form: Mapping[str, Any] | None = None, *,
                 with_credentials: bool = True, extras: Extras | None = None) -> None:
        self.op = op
        self.url = url
        self.query = query or {}
        self.form = form
        self.with_credentials = with_credentials
        self.headers: Mapping[str, str] | None = None
        if extras is not None and with_credentials:
            self.headers = extras.headers
            if extras.query:
                self.query = {**self.query, **extras.query}

    @property
    def shown_url(self) -> str:
        """The URL with its query as the service receives it, every credential redacted."""
        placement = self.op.area.placement
        added = {} if placement.in_form or not self.with_credentials else dict.fromkeys(
            (name for name, _ in placement.fields), REDACTED)
        return redact_url(self.url, {**self.query, **added})

    def __repr__(self) -> str:  # a traceback's locals may show it: the URL redacted
        return f"Call({self.op.name}, {redact_url(self.url)})"
