"""``Sandbox``: the in-process server (lifecycle, client, observation); what a test plants
is in ``_seeding``, the middlewares in ``_middleware``."""

from __future__ import annotations

import asyncio
import contextlib
import socket
import sys
from collections.abc import Iterable
from typing import TYPE_CHECKING, Any, TextIO

import aiohttp
from aiohttp import web

from asyncsdk import InvalidInputError

from . import _mail, _resources, _validation
from ._control import LIMIT_PATH, limit_routes
from ._faults import Faults
from ._limits import RateLimit, RateLimits, check_limit
from ._middleware import answer_errors, inject_faults, limit_rates, track
from ._records import RecordedRequest, SentMail
from ._rules import ValidationRules
from ._seeding import SandboxData
from ._state import (
    STATE_KEY,
    DownloadShape,
    JobOutcome,
    MailState,
    RoleFormat,
    SandboxState,
    Settings,
    StateView,
    not_serving,
)

if TYPE_CHECKING:
    from asyncsdk import Client

__all__ = ["DEFAULT_API_KEY", "DEFAULT_USERNAME", "Sandbox", "run_standalone"]

DEFAULT_API_KEY = "sk_test_sandbox_key_123456"
DEFAULT_USERNAME = "sandbox-user"


class Sandbox(SandboxData):
    """An in-process server of the whole wire interface, for tests and demos.

    Use ``async with Sandbox() as sb:`` (or ``await sb.start()`` / ``await sb.close()``).
    Every keyword is optional:

    Args:
        host: interface to bind (default 127.0.0.1).
        port: port to bind; 0 (default) picks a free one.
        api_key, username: credentials of the primary account.
        credit: the primary account's credit; None (default) is unlimited.
        rules: verdict rules of validation (``ValidationRules``).
        role_format: how single check sends ``role``: ``"bool"`` (JSON true/false),
            ``"str"`` ("True"/"False") or ``"int"`` (1/0; also 1/0 in result CSVs).
        download_shape: jobs/download answers ``"csv"`` (a streamed text/csv
            attachment), ``"json"`` (``{"status": "success", "result": "<csv>"}``,
            streamed) or ``"url"`` (``result`` is a credential-free URL of the CSV).
        job_polls: a job answers ``processing`` to this many status polls first.
        job_seconds: if set, a job is ``processing`` for this many seconds instead.
        job_outcome: how jobs end: ``"success"`` or ``"fail"``.
        allow_remote_files: let jobs/create fetch non-loopback URLs (default False, so
            the sandbox never reaches the network nor serves as an SSRF relay).
        mail_state: the ``message`` of a sent mail: ``"Queued"`` or ``"Send"``.
        verified_domains: sender domains mail accepts from the start.
        record: keep ``sb.requests`` (turn off for benchmarks and soak tests).
        demo_data: seed demo lists, leads, customers, products, invoices and verify the
            sender domain ``example.com``.
        chunk_size: size of the streamed pieces of result files, in characters.
        rate_limit: the service's limit of each API key (``RateLimit``: a token bucket
            of ``rate`` and ``burst``, the 429's ``Retry-After``, a cap in flight); None
            (default) limits nothing. ``sb.limits`` changes it while the server runs.

    All switches live on ``sb.settings`` and may be changed while the server runs; a
    value a switch (or ``credit``) does not take is refused where it is set
    (``InvalidInputError`` naming it).
    A method a route does not take answers 405 ``{"detail": ...}``; an unknown path 404
    ``{"detail": "Not found."}``. The sandbox's own fetch of a hosted file for
    jobs/create is a request like any other: recorded, counted in flight, faultable.
    """

    def __init__(
        self,
        *,
        host: str = "127.0.0.1",
        port: int = 0,
        api_key: str = DEFAULT_API_KEY,
        username: str = DEFAULT_USERNAME,
        credit: int | None = None,
        rules: ValidationRules | None = None,
        role_format: RoleFormat = "bool",
        download_shape: DownloadShape = "csv",
        job_polls: int = 2,
        job_seconds: float | None = None,
        job_outcome: JobOutcome = "success",
        allow_remote_files: bool = False,
        mail_state: MailState = "Queued",
        verified_domains: Iterable[str] = (),
        record: bool = True,
        demo_data: bool = False,
        chunk_size: int = 64 * 1024,
        rate_limit: RateLimit | None = None,
    ) -> None:
        _check_server_options(host, port, rules, verified_domains)
        self.host = host
        self.port = port
        self.api_key = api_key
        self.username = username
        self.faults = Faults()
        check_limit(rate_limit, "rate_limit")
        self.limits = RateLimits(rate_limit)
        """The rate limits per API key: ``sb.limits.set(RateLimit(...))`` (every key's,
        or ``key=``'s own) from now on, ``sb.limits.stats(key)`` what they did. Every
        request carrying a key counts (validation, mail, the resource areas)."""
        settings = Settings(
            download_shape=download_shape,
            role_format=role_format,
            job_polls=job_polls,
            job_seconds=job_seconds,
            job_outcome=job_outcome,
            allow_remote_files=allow_remote_files,
            mail_state=mail_state,
            chunk_size=chunk_size,
            record=record,
        )
        self.state = SandboxState(settings=settings, rules=rules or ValidationRules())
        """Everything the server holds, for inspection (``sb.state.leads`` etc.)."""
        self.add_account(api_key, username, credit=credit)
        for domain in verified_domains:
            self.verify_domain(domain)
        if demo_data:
            self._seed_demo()
        self._runner: web.AppRunner | None = None
        self._base_url: str | None = None

    # -- lifecycle ------------------------------------------------------------------------
    async def start(self) -> Sandbox:
        """Bind and start serving.

        Returns:
            self, started.
        Raises:
            RuntimeError: if already started. OSError: if the port cannot be bound.
        """
        if self._runner is not None:
            raise RuntimeError("the sandbox is already started")
        app = web.Application(
            middlewares=[
                track(self.state), limit_rates(self.limits), inject_faults(self.faults),
                answer_errors,
            ],
            client_max_size=64 * 1024 * 1024,
        )
        app[STATE_KEY] = self.state
        app.add_routes([*_resources.ROUTES, *_validation.ROUTES, *_mail.ROUTES,
                        *limit_routes(self.limits)])
        runner = web.AppRunner(app, access_log=None, shutdown_timeout=0.25)
        await runner.setup()
        try:
            site = web.TCPSite(runner, self.host, self.port)
            await site.start()
        except BaseException:
            await runner.cleanup()
            raise
        self._runner, self.state.closed = runner, False
        self.port = int(runner.addresses[0][1])
        self._base_url = f"http://{_url_host(self.host)}:{self.port}"
        self.state.base_url = self._base_url
        # trust_env=False: never route the sandbox's own fetches through a proxy.
        self.state.http = aiohttp.ClientSession(
            timeout=aiohttp.ClientTimeout(total=30), trust_env=False
        )
        return self

    async def close(self) -> None:
        """Stop serving and release the port; safe to call twice. Answers still being
        made (a delay fault holding one whose client went away) are cancelled, so that
        no task of the sandbox outlives it."""
        runner, self._runner = self._runner, None
        if runner is not None:
            # Its URL leads nowhere now: client() and host_file() say so.
            self.state.closed = True
            await runner.cleanup()  # closes the connections: most handlers end with them
            # Cancelled only now: before, a handler writing to a connection that then
            # broke would leave its "Connection lost" unretrieved (aiohttp 3.12).
            handlers = [t for t in self.state.handlers if not t.done()]
            for task in handlers:
                task.cancel()
            await asyncio.gather(*handlers, return_exceptions=True)
        # Closed last: closed first, a jobs/create fetching a hosted file saw its
        # connection dropped and aiohttp sent the GET again on a new one, which the
        # closing server accepted and never closed (a ResourceWarning).
        http, self.state.http = self.state.http, None
        if http is not None:
            await http.close()

    async def __aenter__(self) -> Sandbox:
        return await self.start()

    async def __aexit__(self, *exc_info: object) -> None:
        await self.close()

    async def serve_forever(self) -> None:
        """Serve until cancelled (starting first if needed)."""
        if self._runner is None:
            await self.start()
        await asyncio.Event().wait()

    @property
    def base_url(self) -> str:
        """``http://127.0.0.1:PORT`` (no trailing slash); after ``close()``, the URL it
        served (``client()`` and ``host_file()`` then refuse, saying it is closed).

        Raises:
            RuntimeError: before ``start()``.
        """
        if self._base_url is None:
            raise RuntimeError(not_serving(self.state))
        return self._base_url

    def _serving_url(self) -> str:
        """``base_url`` while the sandbox serves; else RuntimeError saying why not."""
        if self.state.closed:
            raise RuntimeError(not_serving(self.state))
        return self.base_url

    def client(self, **kwargs: Any) -> Client:
        """A ``asyncsdk.Client`` of this sandbox; ``kwargs`` go to ``Client`` and win over
        the defaults: the primary account's ``api_key`` and ``username``, the sandbox's
        ``base_url`` (``sb.client(api_key="key-2", username="u2")`` for another account
        made with ``add_account``).

        Raises:
            RuntimeError: before ``start()`` or after ``close()``, saying which.
        """
        from asyncsdk import Client

        defaults = {"api_key": self.api_key, "username": self.username,
                    "base_url": self._serving_url()}
        return Client(**{**defaults, **kwargs})

    def banner(self) -> str:
        """What the CLI prints: base URL and credentials."""
        lines = [
            f"asyncsdk sandbox listening on {self.base_url}",
            f"  api_key:  {self.api_key}",
            f"  username: {self.username}",
            f"  export ASYNCSDK_BASE_URL={self.base_url}",
            f"  export ASYNCSDK_API_KEY={self.api_key}",
            f"  export ASYNCSDK_USERNAME={self.username}",
        ]
        limit = self.limits.get()
        if limit is not None:
            lines.append(f"  rate limit per API key: {describe(limit)}")
            lines.append(f"  change it: PUT {self.base_url}{LIMIT_PATH} "
                         '{"rate": R, "burst": B} (null: none)')
        if self.state.verified_domains:
            domains = ", ".join(sorted(self.state.verified_domains))
            lines.append(f"  verified sender domains: {domains}")
        return "\n".join(lines)

    # -- observation: read-only views of ``self.state`` ---------------------------------------
    settings = StateView[Settings]("The behaviour switches (mutable).")
    rules = StateView[ValidationRules]("The validation verdict rules.")
    requests = StateView[list[RecordedRequest]](
        "Requests received so far, oldest first (empty when ``record=False``)."
    )
    outbox = StateView[list[SentMail]]("Mails accepted so far, oldest first.")
    in_flight = StateView[int]("Requests being handled right now.")
    max_in_flight = StateView[int](
        "The most requests handled at once since start (or ``reset_stats``)."
    )

    def reset_stats(self) -> None:
        """Forget recorded requests and restart ``max_in_flight`` from now."""
        self.state.requests.clear()
        self.state.max_in_flight = self.state.in_flight


def _check_server_options(host: object, port: object, rules: object,
                          verified_domains: object) -> None:
    """Refuse at once what would fail later, or silently: a port bind() refuses, a str
    of domains (each of its letters verified instead), rules that are no rules (every
    check answered 500)."""
    if not isinstance(host, str) or not host:
        raise InvalidInputError(f"host: expected an interface to bind, such as "
                                f"'127.0.0.1', got {host!r}", field="host")
    if type(port) is not int or not 0 <= port <= 65535:
        raise InvalidInputError(f"port: expected an int from 0 (a free port) to 65535, "
                                f"got {port!r}", field="port")
    if rules is not None and not isinstance(rules, ValidationRules):
        raise InvalidInputError(f"rules: expected an asyncsdk.testing.ValidationRules or "
                                f"None, got {type(rules).__name__}", field="rules")
    if isinstance(verified_domains, (str, bytes)) or not isinstance(verified_domains, Iterable):
        raise InvalidInputError(f"verified_domains: expected a list of domain names "
                                f"(['example.com']), got {verified_domains!r}",
                                field="verified_domains")


def describe(limit: RateLimit) -> str:
    """``limit`` in a line: ``500/s, burst 50, 429 with Retry-After: 1 s, 8 in flight``."""
    retry = ("429 without Retry-After" if limit.retry_after is None
             else f"429 with Retry-After: {limit.retry_after:.15g} s")
    text = f"{limit.rate:.15g}/s, burst {limit.burst}, {retry}"
    if limit.max_in_flight is not None:
        text += f", at most {limit.max_in_flight} in flight"
    return text


def _url_host(host: str) -> str:
    """The host to put in URLs: loopback for wildcard binds, brackets for IPv6."""
    if host in ("", "0.0.0.0"):  # noqa: S104 -- comparing, not binding
        return "127.0.0.1"
    if host == "::":
        return "[::1]"
    try:
        socket.inet_pton(socket.AF_INET6, host)
    except OSError:
        return host
    return f"[{host}]"


def run_standalone(
    port: int = 8080,
    host: str = "127.0.0.1",
    *,
    demo_data: bool = True,
    out: TextIO | None = None,
    **options: Any,
) -> None:
    """Run a sandbox until Ctrl-C, printing its base URL and credentials first.

    Args:
        port: port to bind (0: a free one).
        host: interface to bind.
        demo_data: seed the demo data set.
        out: where to print the banner (default stdout).
        **options: further ``Sandbox`` keywords.
    Raises:
        OSError: if the port cannot be bound.
    """

    async def main() -> None:
        async with Sandbox(host=host, port=port, demo_data=demo_data, **options) as sb:
            stream = out if out is not None else sys.stdout
            print(sb.banner(), file=stream, flush=True)
            print("Press Ctrl-C to stop.", file=stream, flush=True)
            await sb.serve_forever()

    with contextlib.suppress(KeyboardInterrupt):
        asyncio.run(main())
