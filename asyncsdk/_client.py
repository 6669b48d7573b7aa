"""``Client``: configuration, ownership of the HTTP session, and the resource attributes."""

from __future__ import annotations

import asyncio
import os
import warnings
from collections.abc import Mapping
from functools import cached_property
from types import TracebackType
from typing import TYPE_CHECKING, Any

import aiohttp

from . import _constants as C
from ._auth import Area, Credentials
from ._checks import check_count, check_http_url, check_seconds
from ._errors import ConfigurationError, InvalidInputError, UsageError
from ._logging import setup_logging_from_env
from ._transport import Transport

if TYPE_CHECKING:
    from .resources.contacts import Contacts
    from .resources.customers import Customers
    from .resources.invoices import Invoices
    from .resources.leads import Leads
    from .resources.mail import Mail
    from .resources.products import Products
    from .resources.validation import Validation


def _resolve_urls(
    base_url: str | None, area_args: Mapping[Area, str | None], environ: Mapping[str, str]
) -> dict[Area, str | None]:
    """Each area's URL: its argument, ``base_url``, its variable, ``ASYNCSDK_BASE_URL``."""
    resolved: dict[Area, str | None] = {}
    for area, own in area_args.items():
        candidates = (
            (own, f"the {area.argument} argument"),
            (base_url, "the base_url argument"),
            (environ.get(area.env_var), area.env_var),
            (environ.get(C.ENV_BASE_URL), C.ENV_BASE_URL),
        )
        resolved[area] = None
        for value, source in candidates:
            if value:
                resolved[area] = _check_url(value, source)
                break
    return resolved


def _check_url(value: str, source: str) -> str:
    return check_http_url(value, source, error=ConfigurationError,
                          what="an absolute http(s) URL such as https://api.example.com"
                          ).rstrip("/")


class Client:
    """An asyncio client for the whole interface. Share one per process and event loop.

    Args:
        api_key: the account's key (default: ``ASYNCSDK_API_KEY``).
        username: the account's user name, needed by validation and mail
            (default: ``ASYNCSDK_USERNAME``).
        base_url: one URL for every area (default: ``ASYNCSDK_BASE_URL``).
        contacts_url, crm_url, invoicing_url, validation_url, mail_url: an area's own URL
            (default: ``ASYNCSDK_<AREA>_URL``). Precedence per area: its argument,
            ``base_url``, its variable, ``ASYNCSDK_BASE_URL``. A path is kept as prefix.
        timeout: seconds one call may take in all, retries and their sleeps included.
        max_retries: retries after the first attempt (see README, "Retries").
        max_connections: connections kept open at most (the connector's limit).
        session: your own ``aiohttp.ClientSession``; the client never closes it.
        proxy: proxy URL for every request; trust_env: read proxies from the environment.
        ssl: passed to aiohttp per request: False, an ``ssl.SSLContext`` that trusts a
            private CA, or True (default: verify certificates).

    Raises:
        ConfigurationError: no API key anywhere, or a URL that is not absolute http(s).
        InvalidInputError: a timeout or count out of range.

    Use ``async with Client(...) as client:`` or ``await client.close()``. The client's own
    session is created at first use, inside the running loop; a client is bound to that
    loop and refuses, with ``UsageError``, to be used from another.
    """

    def __init__(
        self,
        api_key: str | None = None,
        username: str | None = None,
        *,
        base_url: str | None = None,
        contacts_url: str | None = None,
        crm_url: str | None = None,
        invoicing_url: str | None = None,
        validation_url: str | None = None,
        mail_url: str | None = None,
        timeout: float = C.DEFAULT_TIMEOUT,
        max_retries: int = C.DEFAULT_MAX_RETRIES,
        max_connections: int = C.DEFAULT_MAX_CONNECTIONS,
        session: aiohttp.ClientSession | None = None,
        proxy: str | None = None,
        trust_env: bool = False,
        ssl: Any = True,
    ) -> None:
        setup_logging_from_env()  # ASYNCSDK_LOG, read once per process
        environ = os.environ
        key = api_key if api_key is not None else environ.get(C.ENV_API_KEY)
        user = username if username is not None else environ.get(C.ENV_USERNAME)
        if not key:
            raise ConfigurationError(
                f"no API key: pass api_key= to Client or set {C.ENV_API_KEY}", field="api_key")
        for name, value in (("api_key", key), ("username", user)):
            if value is not None and (not isinstance(value, str) or not value.isprintable()
                                      or value != value.strip()):
                raise ConfigurationError(
                    f"{name}: expected printable text without surrounding spaces", field=name)
        urls = _resolve_urls(
            base_url,
            {
                Area.CONTACTS: contacts_url,
                Area.CRM: crm_url,
                Area.INVOICING: invoicing_url,
                Area.VALIDATION: validation_url,
                Area.MAIL: mail_url,
            },
            environ,
        )
        if session is not None and not isinstance(session, aiohttp.ClientSession):
            raise InvalidInputError("session: expected an aiohttp.ClientSession", field="session")
        self._max_connections = check_count(max_connections, "max_connections", 1)
        self._trust_env = bool(trust_env)
        self._session: aiohttp.ClientSession | None = session
        self._owns_session = session is None
        self._no_resend_session: aiohttp.ClientSession | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._closed = False
        self._transport = Transport(
            credentials=Credentials(api_key=key, username=user),
            base_urls=urls,
            session=self._get_session,
            timeout=float(check_seconds(timeout, "timeout")),
            max_retries=check_count(max_retries, "max_retries", 0),
            proxy=proxy,
            ssl=ssl,
        )

    # The areas are built (and their models imported) on first use: ``import asyncsdk``
    # stays light for processes that use one area, or none yet.
    @cached_property
    def contacts(self) -> Contacts:
        """Contact lists: ``list``, ``get``, ``create``, ``update``, ``delete``."""
        from .resources.contacts import Contacts

        return Contacts(self._transport)

    @cached_property
    def leads(self) -> Leads:
        """Leads: ``list``, ``get``, ``create``, ``update``, ``delete``."""
        from .resources.leads import Leads

        return Leads(self._transport)

    @cached_property
    def customers(self) -> Customers:
        """Customers: ``list``, ``get``, ``create``, ``update``, ``delete``."""
        from .resources.customers import Customers

        return Customers(self._transport)

    @cached_property
    def products(self) -> Products:
        """Products: ``list``, ``get``, ``create``, ``update``, ``delete``."""
        from .resources.products import Products

        return Products(self._transport)

    @cached_property
    def invoices(self) -> Invoices:
        """Invoices and estimates: ``list``, ``update``, ``delete``."""
        from .resources.invoices import Invoices

        return Invoices(self._transport)

    @cached_property
    def validation(self) -> Validation:
        """Email validation: ``check``, ``check_many``, jobs."""
        from .resources.validation import Validation

        return Validation(self._transport)

    @cached_property
    def mail(self) -> Mail:
        """Transactional mail: ``send``."""
        from .resources.mail import Mail

        return Mail(self._transport)

    def _get_session(self, safe_to_repeat: bool = True) -> aiohttp.ClientSession:
        """The session for a request now; created at first use in the running loop.

        aiohttp silently sends a GET/PUT/DELETE a second time when the connection drops
        before the answer. For an operation that is not safe to repeat (``jobs/create``
        is a GET that spends credit) that would be a duplicate, so those go through a
        second session on the *same* connector (same pool) with that resend switched
        off. aiohttp offers no public switch for it: ``_retry_connection`` is checked by
        ``tests/test_aiohttp_resend.py`` against the installed aiohttp.
        """
        session = self._shared_session()
        if safe_to_repeat:
            return session
        if self._no_resend_session is None:
            self._no_resend_session = aiohttp.ClientSession(
                connector=session.connector,
                connector_owner=False,
                headers=session.headers,
                cookie_jar=session.cookie_jar,
                auth=session.auth,
                trust_env=session.trust_env,
                json_serialize=session.json_serialize,
            )
            self._no_resend_session._retry_connection = False  # type: ignore[attr-defined,unused-ignore]
        return self._no_resend_session

    def _shared_session(self) -> aiohttp.ClientSession:
        if self._closed:
            raise UsageError("this Client is closed; create a new one")
        try:
            loop = asyncio.get_running_loop()
        except RuntimeError:
            raise UsageError("Client calls must be awaited inside a running event loop") from None
        if self._loop is None:
            bound = getattr(self._session, "_loop", None) if self._session else None
            self._loop = bound if isinstance(bound, asyncio.AbstractEventLoop) else loop
        if self._loop is not loop:
            raise UsageError(
                "this Client (or its session) belongs to another event loop; create one "
                "Client per event loop (for example inside each asyncio.run())")
        if self._session is None:
            connector = aiohttp.TCPConnector(limit=self._max_connections, limit_per_host=0)
            self._session = aiohttp.ClientSession(
                connector=connector,
                trust_env=self._trust_env,
                headers={"User-Agent": C.USER_AGENT},
            )
        return self._session

    @property
    def closed(self) -> bool:
        """True once ``close()`` has run."""
        return self._closed

    async def close(self) -> None:
        """Release the connections of the client's own session (an injected session is
        left open). Safe to call twice."""
        if self._closed:
            return
        self._closed = True
        session, self._session = self._session, None
        no_resend, self._no_resend_session = self._no_resend_session, None
        if no_resend is not None:  # shares the connector: closing it closes no connection
            await no_resend.close()
        if self._owns_session and session is not None and not session.closed:
            await session.close()

    async def __aenter__(self) -> Client:
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        await self.close()

    def __repr__(self) -> str:
        urls = {a.argument: u for a, u in self._transport.base_urls.items() if u}
        hosts = sorted({self._transport.credentials.scrub(u.split("@")[-1]) for u in
                        urls.values()})
        return f"<asyncsdk.Client hosts={hosts} closed={self._closed}>"

    def __del__(self, _warn: Any = warnings.warn) -> None:
        # Only a warning: no task may be scheduled from a finaliser.
        session = getattr(self, "_session", None)
        if getattr(self, "_owns_session", False) and session is not None and not session.closed:
            _warn(
                "unclosed asyncsdk.Client: use 'async with Client(...)' or "
                "'await client.close()'",
                ResourceWarning,
                source=self,
                stacklevel=2,
            )
