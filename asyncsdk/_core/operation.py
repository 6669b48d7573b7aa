"""The records of a call: what a resource asks of the engine (``Operation``, of an area
described by ``AreaRules``) and the call in flight (``Call``). Made once, never changed.

A caller may add to one call's request (``extra_query=``, ``extra_headers=``, as in
openai-python and stripe-python): ``Extras`` checks them before anything is sent, and
refuses whatever would replace a credential (a field of ``CREDENTIAL_FIELDS``, in any
letter case; ``Authorization`` where the area's base URL has a login), the library's
``User-Agent`` (``Client(app_name=...)`` extends it) or the body's ``Content-Type`` and
``Content-Encoding`` (the body is the library's: JSON, or the mail's form), and
whatever aiohttp or yarl could not send as given (they would raise a bare ``ValueError``
at send time, or drop part).
"""

from __future__ import annotations

import math
import re
import sys
from collections.abc import Callable, Mapping
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
    an answer, not an error. ``check_answer`` says what else a 2xx answer must hold.
    """

    name: str
    method: str
    area: AreaRules = attrs.field(eq=False)
    path: str
    safe_to_repeat: bool
    bare_fail_is_state: bool = attrs.field(default=False, kw_only=True)
    #: Why a 2xx answer (its parsed JSON) is no answer of this operation, or None when
    #: it is one: read by the answer interpreter, so that the ``ResponseDecodeError``
    #: carries the answer's status, URL and body (a mail answer that does not say
    #: ``success``, a job answer without its id). The reason may quote the answer: it
    #: is shown scrubbed and cut.
    check_answer: Callable[[Any], str | None] | None = attrs.field(
        default=None, kw_only=True, eq=False, repr=False)
    #: The area's ``answers_in_body``, read by the answer interpreter on every answer:
    #: an attribute set once, not a property called per answer.
    fail_in_body: bool = attrs.field(init=False, eq=False, repr=False)

    @fail_in_body.default
    def _area_answers_in_body(self) -> bool:
        return self.area.answers_in_body


_FOLDED_FIELDS = frozenset(name.casefold() for name in CREDENTIAL_FIELDS)

#: A header name: an RFC 9110 token (aiohttp sends any text; a server refuses the rest).
_TOKEN = re.compile(r"[!#$%&'*+\-.^_`|~0-9A-Za-z]+")
#: Not in a header value: a control character (C0 but tab, DEL, C1), a line or paragraph
#: separator, a lone surrogate (aiohttp refuses the first, UTF-8 cannot write the last).
_NOT_IN_VALUE = re.compile("[\x00-\x08\x0a-\x1f\x7f-\x9f\u2028\u2029\ud800-\udfff]")
_SURROGATE = re.compile("[\ud800-\udfff]")
#: The message's framing, aiohttp's to set from the body: another value would desync the
#: connection (a GET announcing a body) or fail in aiohttp at send time.
_FRAMING = frozenset({"content-length", "transfer-encoding"})
#: How the body is encoded, the library's to say from it (JSON, or the mail's form):
#: another value would have the service read it otherwise, or not at all.
_BODY_ENCODING = frozenset({"content-type", "content-encoding"})


class Extras:
    """What a caller adds to one call's requests: ``query`` fields (after the
    operation's own, replacing one of the same name; each value kept as the text sent)
    and ``headers``; checked when made (``InvalidInputError`` naming the argument and
    the field): whatever is accepted here, aiohttp and yarl send as given."""

    __slots__ = ("headers", "query")

    def __init__(self, headers: Mapping[str, str] | None, query: Mapping[str, Any] | None,
                 ) -> None:
        # ``is not None``: an empty mapping adds nothing, but a falsy non-mapping ("",
        # [], 0, False) is a wrong type and is refused like any other.
        self.headers = None if headers is None else _checked_headers(headers) or None
        self.query = None if query is None else _checked_query(query) or None

    def refuse_login(self) -> None:
        """Refuse an ``Authorization`` header: here it would replace a base URL's login."""
        if self.headers and any(k.casefold() == "authorization" for k in self.headers):
            raise InvalidInputError(
                "extra_headers: 'Authorization' carries the login of this area's base URL;"
                " it cannot be replaced per call", field="extra_headers")


def _refused(argument: str, why: str) -> InvalidInputError:
    return InvalidInputError(f"{argument}: {why}", field=argument)


def _checked_query(query: Mapping[str, Any]) -> dict[str, str]:
    if not isinstance(query, Mapping):
        raise _refused("extra_query", "expected a mapping of field names to values")
    return {_query_name(name): _query_text(name, value) for name, value in query.items()}


def _query_name(name: object) -> str:
    if not isinstance(name, str) or not name:
        raise _refused("extra_query", f"field names are non-empty text, got {name!r}")
    text = str.__str__(name)  # a str subclass is checked and sent as its plain text
    if _SURROGATE.search(text):
        raise _refused("extra_query", f"{name!r}: a field name is text UTF-8 can encode "
                       "(no lone surrogate)")
    if text.casefold() in _FOLDED_FIELDS:
        raise _refused("extra_query", f"{name!r} is a credential field; the client adds "
                       "the credentials itself")
    return text


def _query_text(name: str, value: object) -> str:
    """``value`` as the text the query carries (as yarl writes it), or refused."""
    if isinstance(value, bool) or not isinstance(value, (str, int, float)):
        raise _refused("extra_query", f"{name!r}: expected text or a number, got "
                       f"{type(value).__name__}")
    if isinstance(value, str):
        text = str.__str__(value)
        if _SURROGATE.search(text):
            raise _refused("extra_query", f"{name!r}: expected text UTF-8 can encode "
                           "(no lone surrogate)")
        return text
    if isinstance(value, int):
        try:
            return int.__repr__(value)
        except ValueError:  # longer than Python writes out (sys.get_int_max_str_digits)
            raise _refused("extra_query", f"{name!r}: an integer has at most "
                           f"{_max_digits()} digits") from None
    if not math.isfinite(value):
        raise _refused("extra_query", f"{name!r}: a number is finite, got {value!r}")
    return float.__repr__(value)


def _max_digits() -> int:
    return int(getattr(sys, "get_int_max_str_digits", lambda: 4300)())


def _checked_headers(headers: Mapping[str, str]) -> dict[str, str]:
    if not isinstance(headers, Mapping):
        raise _refused("extra_headers", "expected a mapping of header names to text")
    return {_header_name(name): _header_value(name, value)
            for name, value in headers.items()}


def _header_name(name: object) -> str:
    if not isinstance(name, str) or not _TOKEN.fullmatch(name):
        raise _refused("extra_headers", f"{name!r} is not a header name (letters, digits "
                       "and !#$%&'*+-.^_`|~)")
    text = str.__str__(name)
    folded = text.lower()
    if folded == "user-agent":
        raise _refused("extra_headers", "'User-Agent' is the client's: extend it with "
                       "Client(app_name=...), or give a session that sets its own")
    if folded == "host":
        # The host is the area's base URL's: another would take this call (and its
        # credentials) to another site behind the same address.
        raise _refused("extra_headers", f"{name!r} is the base URL's host: give the "
                       "client another base_url (or <area>_url) instead")
    if folded in _FRAMING:
        raise _refused("extra_headers", f"{name!r} frames the message: aiohttp sets it "
                       "from the body")
    if folded in _BODY_ENCODING:
        raise _refused("extra_headers", f"{name!r} says how the body is encoded: the "
                       "client sets it (JSON, or a form for mail)")
    return text


def _header_value(name: str, value: object) -> str:
    if not isinstance(value, str):
        raise _refused("extra_headers", f"{name!r}: expected one line of text, got "
                       f"{type(value).__name__}")
    text = str.__str__(value)
    bad = _NOT_IN_VALUE.search(text)
    if bad is not None:  # the character, not the value: it may be a token of the caller's
        raise _refused("extra_headers", f"{name!r}: expected one line of text without "
                       f"control characters (tab aside), got U+{ord(bad.group()):04X} at "
                       f"index {bad.start()}")
    return text


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
