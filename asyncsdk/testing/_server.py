"""``Sandbox``: the in-process server, its middlewares, and the test-facing helpers."""

from __future__ import annotations

import asyncio
import contextlib
import socket
import sys
from collections.abc import Awaitable, Callable, Iterable, Iterator, Mapping
from types import TracebackType
from typing import TYPE_CHECKING, Any, TextIO

import aiohttp
from aiohttp import web

from . import _mail, _resources, _texts, _validation
from ._faults import Faults, apply_fault, request_key
from ._records import RecordedRequest, SentMail
from ._rules import ValidationRules
from ._state import (
    STATE_KEY,
    Account,
    DownloadShape,
    HostedFile,
    JobOutcome,
    MailState,
    RoleFormat,
    Row,
    SandboxState,
    Settings,
)

if TYPE_CHECKING:
    from asyncsdk import Client

__all__ = ["DEFAULT_API_KEY", "DEFAULT_USERNAME", "Sandbox", "run_standalone"]

DEFAULT_API_KEY = "sk_test_sandbox_key_123456"
DEFAULT_USERNAME = "sandbox-user"
DEMO_SENDER_DOMAIN = "example.com"

Handler = Callable[[web.Request], Awaitable[web.StreamResponse]]
_RECORD_KEY: Any = request_key("asyncsdk_sandbox_record", RecordedRequest)

# Synthetic result rows cycle through this pattern: (local part prefix, domain). The
# verdicts come from the sandbox's rules, computed once per pattern entry.
_SYNTHETIC_PATTERN: tuple[tuple[str, str], ...] = (
    ("user", "example.com"),
    ("user", "example.org"),
    ("support+", "example.com"),
    ("user", "catchall.example"),
    ("user", "example.net"),
    ("user", "unknown.example"),
    ("user", "mailinator.com"),
    ("bounce", "example.com"),
    ("info+", "example.org"),
    ("user", "example.com"),
)


class Sandbox:
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

    All switches live on ``sb.settings`` and may be changed while the server runs.
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
    ) -> None:
        self.host = host
        self.port = port
        self.api_key = api_key
        self.username = username
        self.faults = Faults()
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
        self._demo_data = demo_data
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
            middlewares=[self._track, self._inject_faults, _answer_errors],
            client_max_size=64 * 1024 * 1024,
        )
        app[STATE_KEY] = self.state
        _resources.add_routes(app)
        _validation.add_routes(app)
        _mail.add_routes(app)
        runner = web.AppRunner(app, access_log=None, shutdown_timeout=0.25)
        await runner.setup()
        try:
            site = web.TCPSite(runner, self.host, self.port)
            await site.start()
        except BaseException:
            await runner.cleanup()
            raise
        self._runner = runner
        self.port = int(runner.addresses[0][1])
        self._base_url = f"http://{_url_host(self.host)}:{self.port}"
        self.state.base_url = self._base_url
        # trust_env=False: never route the sandbox's own fetches through a proxy.
        self.state.http = aiohttp.ClientSession(
            timeout=aiohttp.ClientTimeout(total=30), trust_env=False
        )
        return self

    async def close(self) -> None:
        """Stop serving and release the port; safe to call twice."""
        http, self.state.http = self.state.http, None
        if http is not None:
            await http.close()
        runner, self._runner = self._runner, None
        if runner is not None:
            await runner.cleanup()

    async def __aenter__(self) -> Sandbox:
        return await self.start()

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        await self.close()

    async def serve_forever(self) -> None:
        """Serve until cancelled (starting first if needed)."""
        if self._runner is None:
            await self.start()
        await asyncio.Event().wait()

    @property
    def base_url(self) -> str:
        """``http://127.0.0.1:PORT`` (no trailing slash).

        Raises:
            RuntimeError: before ``start()``.
        """
        if self._base_url is None:
            raise RuntimeError("the sandbox is not started; use 'async with Sandbox()'")
        return self._base_url

    def client(self, **kwargs: Any) -> Client:
        """A ``asyncsdk.Client`` for the primary account; ``kwargs`` go to ``Client``."""
        from asyncsdk import Client

        return Client(
            api_key=self.api_key, username=self.username, base_url=self.base_url, **kwargs
        )

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
        if self.state.verified_domains:
            domains = ", ".join(sorted(self.state.verified_domains))
            lines.append(f"  verified sender domains: {domains}")
        return "\n".join(lines)

    # -- observation --------------------------------------------------------------------------
    @property
    def settings(self) -> Settings:
        """The behaviour switches (mutable)."""
        return self.state.settings

    @property
    def rules(self) -> ValidationRules:
        """The validation verdict rules."""
        return self.state.rules

    @property
    def requests(self) -> list[RecordedRequest]:
        """Requests received so far, oldest first (empty when ``record=False``)."""
        return self.state.requests

    @property
    def outbox(self) -> list[SentMail]:
        """Mails accepted so far, oldest first."""
        return self.state.outbox

    @property
    def in_flight(self) -> int:
        """Requests being handled right now."""
        return self.state.in_flight

    @property
    def max_in_flight(self) -> int:
        """The most requests handled at once since start (or ``reset_stats``)."""
        return self.state.max_in_flight

    def reset_stats(self) -> None:
        """Forget recorded requests and restart ``max_in_flight`` from now."""
        self.state.requests.clear()
        self.state.max_in_flight = self.state.in_flight

    # -- accounts, credit, domains -----------------------------------------------------------
    def add_account(self, api_key: str, username: str, *, credit: int | None = None) -> Account:
        """Add (or replace) an account; ``credit=None`` is unlimited.

        Returns:
            The account, whose ``credit`` can be read and changed.
        """
        account = Account(api_key, username, credit)
        self.state.accounts[api_key] = account
        return account

    def account(self, api_key: str | None = None) -> Account:
        """The account with ``api_key`` (default: the primary account).

        Raises:
            KeyError: for an unknown key.
        """
        return self.state.accounts[api_key or self.api_key]

    @property
    def credit(self) -> int | None:
        """The primary account's remaining credit (None: unlimited)."""
        return self.account().credit

    @credit.setter
    def credit(self, value: int | None) -> None:
        self.account().credit = value

    def verify_domain(self, domain: str) -> None:
        """Let mail be sent from addresses at ``domain`` (exact, case-insensitive)."""
        self.state.verified_domains.add(domain.lower())

    # -- files and jobs ------------------------------------------------------------------------
    def host_file(
        self, data: bytes | str, name: str = "list.csv", *, content_type: str = "text/csv"
    ) -> str:
        """Serve ``data`` from the sandbox, without credentials.

        Returns:
            Its URL, ``http://127.0.0.1:PORT/files/<token>/<name>``.
        Raises:
            RuntimeError: before ``start()``.
        """
        self.base_url  # noqa: B018 -- raises before start, when the URL has no port yet
        raw = data.encode() if isinstance(data, str) else bytes(data)
        return self.state.host(HostedFile(name, content_type, data=raw))

    def make_job(
        self, rows: int, *, api_key: str | None = None, status: JobOutcome = "success"
    ) -> int:
        """Create a finished job with ``rows`` synthetic result rows, made lazily.

        Row ``i`` has address ``<prefix><i>@<domain>`` from a fixed cycle of ten
        (verdicts Valid, CatchAll, Unknown, Disposable, Bounce; role every fifth row),
        and Name ``User <i>``. No credit is spent.

        Returns:
            The job id.
        """
        rules = self.rules
        pattern = [
            (prefix, domain, rules.verdict(f"{prefix}0@{domain}"), rules.is_role(f"{prefix}@x.y"))
            for prefix, domain in _SYNTHETIC_PATTERN
        ]

        def generate() -> Iterator[Row]:
            period = len(pattern)
            for i in range(rows):
                prefix, domain, verdict, role = pattern[i % period]
                yield (f"{prefix}{i}@{domain}", f"User {i}", verdict, role)

        def render(role_format: str, chunk_size: int) -> Iterator[str]:
            # Same rows as generate(), but written in batches: a million rows stream
            # without the csv module's per-row cost slowing the client under test.
            yes, no = _validation.role_texts(role_format)
            lines = [(p, d, v, yes if r else no) for p, d, v, r in pattern]
            period = len(lines)
            yield ",".join(_validation.RESULT_HEADER) + "\r\n"
            batch = max(1, chunk_size // 48)
            for start in range(0, rows, batch):
                yield "".join(
                    [
                        f"{p}{i}@{d},User {i},{v},{r}\r\n"
                        for i in range(start, min(start + batch, rows))
                        for p, d, v, r in (lines[i % period],)
                    ]
                )

        owner = self.account(api_key).api_key
        job = self.state.new_job(owner, generate, rows, 0.0)
        job.forced = status
        job.render = render
        return job.id

    def fail_next_job(self, count: int = 1) -> None:
        """Make the next ``count`` jobs created by jobs/create end in ``fail``."""
        self.state.fail_next_jobs += count

    def finish_job(self, job_id: int, status: JobOutcome = "success") -> None:
        """End a job now with ``status``, whatever its polls or timer say.

        Raises:
            KeyError: for an unknown job id.
        """
        self.state.jobs[job_id].forced = status

    # -- seeding (no validation: any shape may be planted) ---------------------------------
    def seed_contact_list(
        self,
        name: str,
        records: Iterable[Mapping[str, Any]] = (),
        *,
        is_email: bool = True,
        is_push: bool = False,
        is_sms: bool = False,
        app_id: str | None = None,
    ) -> int:
        """Add a contact list; each record gets the defaults and a uuid unless given one.

        Returns:
            The list id.
        """
        state = self.state
        list_id = state.next_id("contact_list")
        state.contact_lists[list_id] = {
            "name": name,
            "is_email": is_email,
            "is_push": is_push,
            "is_sms": is_sms,
            "app_id": app_id,
            "records": [_resources.new_contact_record(state, r) for r in records],
        }
        return list_id

    def seed_lead(self, data: Mapping[str, Any]) -> int:
        """Add a lead as given. Returns: its id."""
        return self._seed("lead", self.state.leads, data)

    def seed_customer(self, data: Mapping[str, Any]) -> int:
        """Add a customer as given. Returns: its id."""
        return self._seed("customer", self.state.customers, data)

    def seed_product(self, data: Mapping[str, Any]) -> int:
        """Add a product as given. Returns: its id."""
        return self._seed("product", self.state.products, data)

    def seed_invoice(self, data: Mapping[str, Any]) -> int:
        """Add an invoice (the interface cannot create them). Returns: its id."""
        return self._seed("invoice", self.state.invoices, data)

    def _seed(self, kind: str, store: dict[int, dict[str, Any]], data: Mapping[str, Any]) -> int:
        obj_id = self.state.next_id(kind)
        store[obj_id] = {k: v for k, v in data.items() if k != "id"}
        return obj_id

    def _seed_demo(self) -> None:
        self.verify_domain(DEMO_SENDER_DOMAIN)
        self.seed_contact_list(
            "Newsletter",
            [
                {"email": "ada@example.com", "customer_name": "Ada", "mobile": 447700900001},
                {"email": "grace@example.org", "customer_name": "Grace", "mobile": 447700900002},
                {"email": "info@example.net", "customer_name": "Info desk", "mobile": 447700900003},
            ],
        )
        self.seed_contact_list(
            "Push subscribers",
            [{"email": "linus@example.com", "mobile": 447700900004, "device_id": "tok-1"}],
            is_email=False,
            is_push=True,
        )
        lead = {"industry": 63, "source": 13, "funnel": "Default", "status": 1, "rating": 3}
        self.seed_lead({"name": "Ada Lovelace", "email": "ada@example.com",
                        "company": "Analytical Engines", **lead})  # fmt: skip
        self.seed_lead({"name": "Alan Turing", "email": "alan@example.org",
                        "company": "Bletchley Ltd", **lead, "rating": 2})  # fmt: skip
        first = self.seed_customer({"customer_type": 1, "first_name": "Grace",
                                    "last_name": "Hopper", "company_name": "Cobol Inc",
                                    "email": "grace@example.org", "currency": 4})  # fmt: skip
        self.seed_customer({"customer_type": 2, "first_name": "Linus", "last_name": None,
                            "email": "linus@example.com", "currency": 2})  # fmt: skip
        widget = self.seed_product({"product_type": 0, "name": "Widget", "unit": 4,
                                    "selling_price": "19.99", "sku": "W-1"})  # fmt: skip
        self.seed_product({"product_type": 1, "name": "Consulting hour", "unit": 6,
                           "selling_price": "150.00"})  # fmt: skip
        line = {"quantity": "3.00", "rate": "19.99", "discount": "0.00", "discount_unit": 0,
                "products": widget}  # fmt: skip
        for number in ("INV-0001", "INV-0002"):
            self.seed_invoice({"invoice_number": number, "order_number": "", "terms": 1,
                               "invoice_date": "2024-01-15", "due_date": "2024-02-14",
                               "subject": "Widgets", "status": 0, "invoice_type": 0,
                               "is_recurring_invoices": False, "customer": first,
                               "productinvoices": [line]})  # fmt: skip

    # -- middlewares ------------------------------------------------------------------------------
    @web.middleware
    async def _track(self, request: web.Request, handler: Handler) -> web.StreamResponse:
        """Count requests in flight and (unless ``record=False``) record them."""
        state = self.state
        state.in_flight += 1
        state.max_in_flight = max(state.max_in_flight, state.in_flight)
        try:
            record: RecordedRequest | None = None
            if state.settings.record:
                record = RecordedRequest(
                    method=request.method,
                    path=request.path,
                    query=dict(request.query),
                    headers=dict(request.headers),
                    body=await request.read() if request.body_exists else b"",
                    time=asyncio.get_running_loop().time(),
                )
                state.requests.append(record)
                request[_RECORD_KEY] = record
            response = await handler(request)
            if record is not None and not _closing(request):  # dropped: nothing answered
                record.status = response.status
            return response
        finally:
            state.in_flight -= 1

    @web.middleware
    async def _inject_faults(self, request: web.Request, handler: Handler) -> web.StreamResponse:
        fault = self.faults.take(request.method, request.path)
        if fault is None:
            return await handler(request)
        self.faults.applied.append((request.method, request.path, fault.kind))
        record: RecordedRequest | None = request.get(_RECORD_KEY)
        if record is not None:
            record.fault = fault.kind.value
        return await apply_fault(fault, request, handler)


def _closing(request: web.Request) -> bool:
    transport = request.transport
    return transport is None or transport.is_closing()


@web.middleware
async def _answer_errors(request: web.Request, handler: Handler) -> web.StreamResponse:
    """Turn handler refusals and router misses into JSON answers."""
    try:
        return await handler(request)
    except _resources.Reject as reject:
        return reject.response
    except web.HTTPNotFound:
        return web.json_response({"detail": _texts.NOT_FOUND_DETAIL}, status=404)
    except web.HTTPMethodNotAllowed as exc:
        detail = f'Method "{request.method}" not allowed.'
        return web.json_response(
            {"detail": detail}, status=405, headers={"Allow": ",".join(sorted(exc.allowed_methods))}
        )


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
