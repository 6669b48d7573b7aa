"""Fault injection: which requests misbehave, and how.

A rule matches on the request path: exactly, or as a prefix when the pattern ends with
``*`` (``"/api/v1/jobs/*"``; ``"*"`` alone matches every path), optionally restricted to
one HTTP method. Rules are tried in the order they were added; the first one that matches
and still has calls left is used, once per request. ``times=None`` keeps a rule forever.
"""

from __future__ import annotations

import asyncio
import random as _random
from collections.abc import Awaitable, Callable, Iterable
from dataclasses import dataclass, field
from enum import Enum
from typing import Any

from aiohttp import web

from asyncsdk import InvalidInputError

from . import _texts

__all__ = ["Fault", "FaultKind", "Faults"]

Handler = Callable[[web.Request], Awaitable[web.StreamResponse]]


def request_key(name: str, value_type: type[Any]) -> Any:
    """A key for request storage: ``web.RequestKey`` where aiohttp has it (3.13+),
    a plain string before (where plain strings were the norm and warned nothing)."""
    maker = getattr(web, "RequestKey", None)
    return maker(name, value_type) if maker is not None else name


# Set on the request for streaming handlers, which cannot be altered after the fact.
FAULT_KEY: Any = request_key("asyncsdk_sandbox_fault", object)

# What a client reading JSON would choke on: a document cut in the middle.
INVALID_JSON_BODY = b'{"status": "success", "result": '
HTML_ERROR_PAGE = (
    b"<html><head><title>{status} Bad Gateway</title></head>"
    b"<body><center><h1>{status} Bad Gateway</h1></center><hr>"
    b"<center>sandbox-proxy</center></body></html>"
)


class FaultKind(str, Enum):
    """How a matched request misbehaves.

    Faults that *replace* the answer (``RESET``, ``STATUS``, ``RATE_LIMIT``,
    ``HTML_ERROR``) skip the real handler, so no state changes (``RESET`` accepts
    ``process=True`` to run the handler first: the change happens, the answer is lost).
    Faults that *spoil* the answer (``INVALID_JSON``, ``TRUNCATED``,
    ``WRONG_CONTENT_TYPE``) and ``DELAY`` run the real handler, so the change happens.
    """

    RESET = "reset"
    """Read the request, then abort the connection without any response."""
    STATUS = "status"
    """Answer ``status`` (default 503) with a JSON ``detail`` body."""
    RATE_LIMIT = "rate_limit"
    """Answer 429 with ``Retry-After: retry_after`` (seconds or an HTTP date)."""
    DELAY = "delay"
    """Sleep ``seconds`` on the server, then answer normally."""
    INVALID_JSON = "invalid_json"
    """Answer the handler's status with a JSON content type and a body cut mid-document."""
    HTML_ERROR = "html_error"
    """Answer ``status`` (default 502) with a ``text/html`` proxy error page."""
    TRUNCATED = "truncated"
    """Announce the full Content-Length, send half the body, then abort the connection
    (a streamed body: the first chunk, then abort)."""
    WRONG_CONTENT_TYPE = "wrong_content_type"
    """Answer the real body with ``content_type`` (default ``text/html``)."""


@dataclass
class Fault:
    """One injection rule; ``remaining`` is None for a rule that never runs out."""

    path: str
    kind: FaultKind
    remaining: int | None = 1
    method: str | None = None
    options: dict[str, Any] = field(default_factory=dict)
    hits: int = 0

    def matches(self, method: str, path: str) -> bool:
        """Return True if this rule applies to a request (ignoring how many are left)."""
        if self.method is not None and self.method.upper() != method.upper():
            return False
        return _path_matches(self.path, path)


def _path_matches(pattern: str, path: str) -> bool:
    if pattern.endswith("*"):
        return path.startswith(pattern[:-1])
    return path == pattern


@dataclass
class _RandomFaults:
    rate: float
    kinds: tuple[FaultKind, ...]
    path: str
    options: dict[str, Any]
    rng: _random.Random


class Faults:
    """The fault rules of one sandbox (``sb.faults``); see ``FaultKind`` for the kinds."""

    def __init__(self) -> None:
        self._rules: list[Fault] = []
        self._random: _RandomFaults | None = None
        self.applied: list[tuple[str, str, FaultKind]] = []
        """Every fault applied so far, as (method, path, kind)."""

    # -- adding rules ----------------------------------------------------------------
    def add(
        self,
        path: str,
        kind: FaultKind | str,
        times: int | None = 1,
        *,
        method: str | None = None,
        **options: Any,
    ) -> Fault:
        """Make the next ``times`` requests to ``path`` misbehave as ``kind``.

        Args:
            path: exact request path, or a prefix ending with ``*``.
            kind: a ``FaultKind`` or its value (``"reset"``, ``"status"``, ...).
            times: how many matching requests to spoil; None for all of them.
            method: only requests with this HTTP method (default: any).
            **options: per kind: ``status``, ``retry_after``, ``seconds``,
                ``content_type``, ``process``, ``body``.
        Returns:
            The rule, whose ``remaining`` and ``hits`` can be inspected.
        Raises:
            InvalidInputError (a ``ValueError``), naming the argument: an unknown
                ``kind``; a ``path`` that no request path can match (not ``*`` nor
                starting with ``/``, a query or ``#`` in it, ``*`` before its end);
                ``times`` not an int >= 0 nor None; an option the kind does not take,
                or a value it cannot use (a ``status`` outside 200 to 599, negative
                ``seconds`` or ``retry_after``).
        """
        chosen = _kind(kind)
        _check_path(path, "path")
        if times is not None and (type(times) is not int or times < 0):
            raise InvalidInputError(f"times: expected an int >= 0 (that many requests) or "
                                    f"None (all of them), got {times!r}", field="times")
        _check_method(method)
        _check_options(options, (chosen,))
        rule = Fault(path, chosen, times, method, dict(options))
        self._rules.append(rule)
        return rule

    def reset(
        self, path: str, times: int | None = 1, *, method: str | None = None, process: bool = False
    ) -> Fault:
        """Abort the connection after reading the request (``process=True``: after
        running the handler, so the request takes effect but its answer is lost)."""
        return self.add(path, FaultKind.RESET, times, method=method, process=process)

    def status(
        self,
        path: str,
        status: int = 503,
        times: int | None = 1,
        *,
        method: str | None = None,
        retry_after: float | str | None = None,
    ) -> Fault:
        """Answer ``status`` (e.g. 500, 502, 503) with a JSON body instead of the handler."""
        return self.add(
            path, FaultKind.STATUS, times, method=method, status=status, retry_after=retry_after
        )

    def rate_limit(
        self,
        path: str,
        retry_after: float | str | None = 1,
        times: int | None = 1,
        *,
        method: str | None = None,
    ) -> Fault:
        """Answer 429 with ``Retry-After`` (seconds, or an HTTP-date text; None: no header)."""
        return self.add(path, FaultKind.RATE_LIMIT, times, method=method, retry_after=retry_after)

    def delay(
        self, path: str, seconds: float, times: int | None = 1, *, method: str | None = None
    ) -> Fault:
        """Sleep ``seconds`` on the server before answering normally."""
        return self.add(path, FaultKind.DELAY, times, method=method, seconds=seconds)

    def invalid_json(self, path: str, times: int | None = 1, *, method: str | None = None) -> Fault:
        """Answer with a JSON content type and a body that is not valid JSON."""
        return self.add(path, FaultKind.INVALID_JSON, times, method=method)

    def html_error(
        self, path: str, status: int = 502, times: int | None = 1, *, method: str | None = None
    ) -> Fault:
        """Answer ``status`` with an HTML error page, as a proxy in front would."""
        return self.add(path, FaultKind.HTML_ERROR, times, method=method, status=status)

    def truncated(self, path: str, times: int | None = 1, *, method: str | None = None) -> Fault:
        """Send fewer body bytes than announced, then close the connection."""
        return self.add(path, FaultKind.TRUNCATED, times, method=method)

    def wrong_content_type(
        self,
        path: str,
        times: int | None = 1,
        *,
        method: str | None = None,
        content_type: str = "text/html",
    ) -> Fault:
        """Serve the real body under another content type (default ``text/html``)."""
        return self.add(
            path, FaultKind.WRONG_CONTENT_TYPE, times, method=method, content_type=content_type
        )

    def random(
        self,
        rate: float,
        kinds: Iterable[FaultKind | str] = (FaultKind.RESET, FaultKind.STATUS),
        *,
        seed: int = 0,
        path: str = "*",
        **options: Any,
    ) -> None:
        """Spoil each matching request with probability ``rate`` (soak tests).

        The kind is drawn uniformly from ``kinds`` by a ``random.Random(seed)``, so a run
        is reproducible for a given order of requests. Explicit rules take precedence.
        ``options`` are as for ``add`` (defaults: status 503, delay 0.01 s, retry_after 0).

        Raises:
            ValueError: if ``rate`` is outside [0, 1] or ``kinds`` is empty.
        """
        if isinstance(rate, bool) or not isinstance(rate, (int, float)) or not 0.0 <= rate <= 1.0:
            raise InvalidInputError(f"rate: expected a probability from 0 to 1, got {rate!r}",
                                    field="rate")
        chosen = tuple(_kind(k) for k in kinds)
        if not chosen:
            raise InvalidInputError("kinds: expected at least one FaultKind", field="kinds")
        _check_path(path, "path")
        _check_options(options, chosen)
        defaults: dict[str, Any] = {"status": 503, "seconds": 0.01, "retry_after": 0}
        self._random = _RandomFaults(
            rate, chosen, path, {**defaults, **options}, _random.Random(seed)
        )

    def clear(self) -> None:
        """Remove every rule, including a random one."""
        self._rules.clear()
        self._random = None

    @property
    def pending(self) -> list[Fault]:
        """The rules that still have calls left."""
        return [r for r in self._rules if r.remaining is None or r.remaining > 0]

    # -- used by the server ------------------------------------------------------------
    def take(self, method: str, path: str) -> Fault | None:
        """Return (and consume one call of) the fault for this request, if any."""
        for rule in self._rules:
            if (rule.remaining is None or rule.remaining > 0) and rule.matches(method, path):
                if rule.remaining is not None:
                    rule.remaining -= 1
                rule.hits += 1
                return rule
        chance = self._random
        if (
            chance is not None
            and _path_matches(chance.path, path)
            and chance.rng.random() < chance.rate
        ):
            kind = chance.rng.choice(chance.kinds)
            return Fault(path, kind, 0, None, chance.options, 1)
        return None


#: The options each kind reads (any other was silently ignored: a typo went unseen).
OPTIONS: dict[FaultKind, frozenset[str]] = {
    FaultKind.RESET: frozenset({"process"}),
    FaultKind.STATUS: frozenset({"status", "retry_after", "body"}),
    FaultKind.RATE_LIMIT: frozenset({"retry_after"}),
    FaultKind.DELAY: frozenset({"seconds"}),
    FaultKind.INVALID_JSON: frozenset(),
    FaultKind.HTML_ERROR: frozenset({"status"}),
    FaultKind.TRUNCATED: frozenset(),
    FaultKind.WRONG_CONTENT_TYPE: frozenset({"content_type"}),
}


def _kind(kind: object) -> FaultKind:
    try:
        return FaultKind(kind)
    except ValueError:
        names = ", ".join(repr(k.value) for k in FaultKind)
        raise InvalidInputError(f"kind: expected a FaultKind or one of {names}, got "
                                f"{kind!r}", field="kind") from None


def _check_path(path: object, field: str) -> None:
    """A pattern some request path can match: ``*``, or ``/...`` with at most a final
    ``*`` (one without the slash, with a query, or a full URL never matched)."""
    if not (isinstance(path, str) and (path == "*" or (
            path.startswith("/") and "*" not in path[:-1] and not set("?#") & set(path)))):
        raise InvalidInputError(f"{field}: expected a request path such as "
                                f"'/api/v1/single/check', or a prefix ending in '*' "
                                f"('/api/v1/jobs/*', '*'), got {path!r}", field=field)


def _check_method(method: object) -> None:
    if method is not None and not (isinstance(method, str) and method.isalpha()):
        raise InvalidInputError(f"method: expected an HTTP method such as 'GET', or None "
                                f"(any), got {method!r}", field="method")


def _check_options(options: dict[str, Any], kinds: tuple[FaultKind, ...]) -> None:
    taken = frozenset().union(*(OPTIONS[kind] for kind in kinds))
    for name in options:
        if name not in taken:
            allowed = ", ".join(sorted(taken)) or "none"
            raise InvalidInputError(f"{name}: not an option of {_names(kinds)} (its "
                                    f"options: {allowed})", field=name)
    _check_status(options)
    for name in ("seconds", "retry_after"):
        value = options.get(name)
        if value is None or (isinstance(value, str) and value.strip() and name != "seconds"):
            continue
        if isinstance(value, bool) or not isinstance(value, (int, float)) or not (
                0 <= value < float("inf")):
            also = " or an HTTP date's text, or None" if name == "retry_after" else ""
            raise InvalidInputError(f"{name}: expected a finite number of seconds >= 0"
                                    f"{also}, got {value!r}", field=name)


def _names(kinds: tuple[FaultKind, ...]) -> str:
    return " / ".join(repr(kind.value) for kind in kinds)


def _check_status(options: dict[str, Any]) -> None:
    status = options.get("status", 503)
    if isinstance(status, bool) or not isinstance(status, int) or not 200 <= status <= 599:
        # 1xx is no answer (the client waits for one), and aiohttp refuses others (500).
        raise InvalidInputError(f"status: expected an HTTP status 200 to 599, got "
                                f"{status!r}", field="status")


async def apply_fault(fault: Fault, request: web.Request, handler: Handler) -> web.StreamResponse:
    """Answer ``request`` as ``fault`` says, calling the real ``handler`` when it should."""
    kind = fault.kind
    opts = fault.options
    if kind is FaultKind.RESET:
        await request.read()
        if opts.get("process"):
            await handler(request)
        return _abort(request)
    if kind is FaultKind.STATUS:
        status = int(opts.get("status", 503))
        headers = retry_after_header(opts.get("retry_after"))
        body = opts.get("body", {"detail": f"Sandbox fault: HTTP {status}."})
        return web.json_response(body, status=status, headers=headers)
    if kind is FaultKind.RATE_LIMIT:
        headers = retry_after_header(opts.get("retry_after", 1))
        return web.json_response({"detail": _texts.THROTTLED}, status=429, headers=headers)
    if kind is FaultKind.HTML_ERROR:
        status = int(opts.get("status", 502))
        page = HTML_ERROR_PAGE.replace(b"{status}", str(status).encode())
        return web.Response(body=page, status=status, content_type="text/html")
    if kind is FaultKind.DELAY:
        await asyncio.sleep(float(opts.get("seconds", 0.01)))
        return await handler(request)
    # The spoiling kinds: let the handler run, then damage its answer.
    request[FAULT_KEY] = fault
    response = await handler(request)
    if response.prepared:  # a streamed answer, already damaged by the streaming code
        return response
    assert isinstance(response, web.Response)
    body = response.body if isinstance(response.body, bytes) else b""
    if kind is FaultKind.INVALID_JSON:
        status = 200 if response.status == 204 else response.status
        return web.Response(body=INVALID_JSON_BODY, status=status, content_type="application/json")
    if kind is FaultKind.WRONG_CONTENT_TYPE:
        ctype = str(opts.get("content_type", "text/html"))
        status = 200 if response.status == 204 else response.status
        # A header, not content_type=: aiohttp refuses one with a charset there (500).
        return web.Response(body=body, status=status, headers={"Content-Type": ctype})
    # TRUNCATED: announce everything, deliver half, hang up.
    out = web.StreamResponse(status=200 if response.status == 204 else response.status)
    out.content_type = response.content_type
    out.content_length = max(len(body), 2)
    await out.prepare(request)
    await out.write(body[: len(body) // 2])
    return _abort(request, out)


def _abort(request: web.Request, response: web.StreamResponse | None = None) -> web.StreamResponse:
    """Drop the connection at once; the returned object is never sent."""
    if request.transport is not None:
        request.transport.abort()
    return response if response is not None else web.Response(status=499)


def retry_after_header(value: float | str | None) -> dict[str, str]:
    """The ``Retry-After`` header for ``value`` (seconds, or an HTTP date's text; None:
    no header); whole seconds are written without a fraction."""
    if value is None:
        return {}
    if isinstance(value, (int, float)):
        text = str(int(value)) if float(value).is_integer() else str(value)
        return {"Retry-After": text}
    return {"Retry-After": str(value)}
