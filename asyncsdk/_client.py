"""``Client``: configuration, ownership of the HTTP session, and the resource attributes."""

from __future__ import annotations

import os
import warnings
from collections.abc import Mapping
from functools import cached_property
from types import TracebackType
from typing import TYPE_CHECKING, Any, NoReturn, cast

import aiohttp

from . import _constants as C
from ._checks import check_bool, check_count, check_http_url, check_seconds, check_tls
from ._core.clock import SYSTEM_CLOCK, Clock
from ._core.credentials import Credentials, SecretValue, redact_url
from ._core.log import setup_logging_from_env
from ._core.policy import PaceTable
from ._core.raw import WithRawResponse
from ._core.session import SessionOwner
from ._core.transport import make_transport
from ._errors import ConfigurationError, InvalidInputError, UsageError
from .models._base import UNSET, UnsetType
from .resources._areas import Area

if TYPE_CHECKING:
    from .resources.contacts import Contacts
    from .resources.customers import Customers
    from .resources.invoices import Invoices
    from .resources.leads import Leads
    from .resources.mail import Mail
    from .resources.products import Products
    from .resources.validation.resource import Validation
    from .resources.with_raw_response import RawAreas


def _resolve_urls(
    base_url: str | None, area_args: Mapping[Area, str | None], environ: Mapping[str, str]
) -> dict[Area, str | None]:
    """Each area's URL: its argument, ``base_url``, its variable, ``ASYNCSDK_BASE_URL``.
    An argument given (not None) is checked whether or not it is used: ``""`` or a
    value that is not text is refused, never taken for "not given" (the environment
    would then choose the URL). An empty variable is unset, as in a shell."""
    for value, source in ((base_url, "the base_url argument"),
                          *((own, f"the {area.argument} argument")
                            for area, own in area_args.items())):
        if value is not None:
            _check_url(value, source)
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
    """A base URL: the operations' paths are appended to it, so it may have a path
    (a prefix) but no query or fragment (``?x`` would swallow every path)."""
    url = check_http_url(value, source, error=ConfigurationError,
                         what="an absolute http(s) URL such as https://api.example.com")
    if "?" in url or "#" in url:
        raise ConfigurationError(
            f"{source}: expected a base URL without a query or fragment ('?...', '#...'):"
            " the operations' paths are appended to it", field=source)
    return url.rstrip("/")


def _copied_urls(current: Mapping[Area, str | None], base_url: str | UnsetType,
                 given: Mapping[Area, str | UnsetType]) -> dict[Area, str | None]:
    """A copy's URL of each area: its own argument, else the copy's ``base_url``, else
    the URL it has now (the environment is not read again)."""
    urls: dict[Area, str | None] = {}
    for area, own in given.items():
        if not isinstance(own, UnsetType):
            urls[area] = _check_url(own, f"the {area.argument} argument")
        elif not isinstance(base_url, UnsetType):
            urls[area] = _check_url(base_url, "the base_url argument")
        else:
            urls[area] = current[area]
    return urls


def _kept(url: str | None) -> SecretValue | None:
    return None if not url else SecretValue(url)


def _shown(url: SecretValue | None) -> str | None:
    return None if url is None else url.reveal()


def _check_credentials(key: object, user: object, from_env: Mapping[str, str] | None = None,
                       ) -> None:
    """``from_env``: the variable each argument's value was read from, if it was (the
    error names it: the caller's code passed nothing wrong)."""
    if not key:
        raise ConfigurationError(
            f"no API key: pass api_key= to Client or set {C.ENV_API_KEY}", field="api_key")
    for name, value in (("api_key", key), ("username", user)):
        if value is not None and (not isinstance(value, str) or not value.isprintable()
                                  or value != value.strip()):
            variable = (from_env or {}).get(name)
            source = name if variable is None else f"{name}, read from {variable}"
            raise ConfigurationError(
                f"{source}: expected printable text without surrounding spaces", field=name)


_NOT_COPIED = ("an asyncsdk.Client cannot be copied with copy.copy or copy.deepcopy: use "
               "client.with_options(...) for a copy sharing its connections, or make "
               "another Client")


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
        attempt_timeout: seconds one attempt of a safe operation may take before it is
            abandoned and retried within ``timeout`` (default: a third of the call's
            ``timeout``). Unsafe operations (creates, ``mail.send``, ``create_job``)
            are never abandoned early: they may have reached the service.
        max_retries: retries after the first attempt (see README, "Retries").
        max_connections: connections kept open at most (the connector's limit). Creates,
            ``mail.send`` and ``create_job`` each open a connection of their own, closed
            after the answer, up to as many at once besides the pool (README).
        session: your own ``aiohttp.ClientSession``, made in the event loop that awaits
            the client's calls (one of another loop: ``UsageError`` at the first call,
            nothing sent); the client never closes it, and
            every call goes through it with all its settings (headers, auth, cookies,
            trace configs, middlewares). A ``User-Agent`` header of that session is
            kept; without one the library's is sent. Its ``raise_for_status`` and
            ``auto_decompress`` are overridden per request (off and on): the library
            reads every status and body itself, to raise its typed errors.
        proxy: proxy URL for every request; trust_env: read proxies from the environment.
        ssl: passed to aiohttp per request: False, an ``ssl.SSLContext`` that trusts a
            private CA, or True (default: verify certificates).
        app_name: your application, e.g. ``"myapp/1.2"``, appended to the
            ``User-Agent`` (``asyncsdk/<version> python/<x.y> aiohttp/<version>``).
        clock: the time, sleep and randomness the client's waits use (an
            ``asyncsdk.Clock``; default: the system's). For tests:
            ``asyncsdk.testing.VirtualClock()``, on which retries' and polls' pauses
            return at once. ``close()`` ends a pause on any clock.

    Raises:
        ConfigurationError: no API key anywhere, or a URL that is not absolute http(s).
        InvalidInputError: a timeout or count out of range.

    Use ``async with Client(...) as client:`` (once: its end closes the client) or
    ``await client.close()``. A client is not copied (``copy``, ``deepcopy``: see
    ``with_options``) nor pickled (``TypeError``). The client's own
    session is created at first use, inside the running loop; a client is bound to that
    loop and refuses, with ``UsageError``, to be used from another. When that loop ends
    through ``asyncio.run`` (or another runner that finalises async generators), the
    client's connections are released with it, and ``close()`` may then be awaited from
    a later loop.

    ``with_options(...)`` makes a copy with other settings that shares this client's
    connection pool (see there for who closes what).
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
        attempt_timeout: float | None = None,
        max_retries: int = C.DEFAULT_MAX_RETRIES,
        max_connections: int = C.DEFAULT_MAX_CONNECTIONS,
        session: aiohttp.ClientSession | None = None,
        proxy: str | None = None,
        trust_env: bool = False,
        ssl: Any = True,
        app_name: str | None = None,
        clock: Clock | None = None,
    ) -> None:
        setup_logging_from_env()  # ASYNCSDK_LOG, read once per process
        environ = os.environ
        key = api_key if api_key is not None else environ.get(C.ENV_API_KEY)
        user = username if username is not None else environ.get(C.ENV_USERNAME)
        _check_credentials(key, user, {
            name: variable for name, given, variable in (
                ("api_key", api_key, C.ENV_API_KEY), ("username", username, C.ENV_USERNAME))
            if given is None})
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
        if app_name is not None and (
            not isinstance(app_name, str) or not app_name or not app_name.isprintable()
            or app_name != app_name.strip() or len(app_name) > C.MAX_APP_NAME_CHARS
        ):
            raise InvalidInputError(
                "app_name: expected printable text such as 'myapp/1.2', without surrounding "
                f"spaces, at most {C.MAX_APP_NAME_CHARS} characters", field="app_name")
        if proxy is not None:
            check_http_url(proxy, "proxy", what="an http(s) proxy URL")
        if clock is None:
            clock = SYSTEM_CLOCK
        elif not isinstance(clock, Clock):
            raise InvalidInputError(
                "clock: expected an asyncsdk.Clock (now(), async sleep(seconds), random()),"
                f" got {type(clock).__name__}", field="clock")
        sessions = SessionOwner(
            session, max_connections=check_count(max_connections, "max_connections", 1),
            trust_env=check_bool(trust_env, "trust_env"), app_name=app_name, proxy=proxy,
            ssl=check_tls(ssl))
        self._setup(sessions, Credentials(api_key=key, username=user), urls,
                    base_url or environ.get(C.ENV_BASE_URL), timeout, attempt_timeout,
                    max_retries, clock, PaceTable(clock))

    def _setup(self, sessions: SessionOwner, credentials: Credentials,
               urls: Mapping[Area, str | None], base_url: str | None, timeout: float,
               attempt_timeout: float | None, max_retries: int, clock: Clock,
               paces: PaceTable) -> None:
        """The client's state from its settings (the time settings checked here);
        ``clock`` and ``paces`` (the bulk paces by key and area) are shared with the
        client's copies."""
        self._sessions = sessions
        self._credentials = credentials  # what a copy keeps unless told otherwise
        #: True once an ``async with`` entered this client (whose end closes it).
        self._entered = False
        self._clock = clock
        self._paces = paces
        #: Each area's URL as configured and the base URL, if any: kept as secrets (a
        #: ``user:password@`` login in them shows in no repr, ``vars(client)`` included).
        self._urls = {area: _kept(url) for area, url in urls.items()}
        self._base_url = _kept(base_url.rstrip("/") if base_url else None)
        # The settings as checked, kept here: the properties and copies read them, not
        # the transport they configure.
        self._timeout = float(check_seconds(timeout, "timeout"))
        self._attempt_timeout = (None if attempt_timeout is None
                                 else float(check_seconds(attempt_timeout, "attempt_timeout")))
        self._max_retries = check_count(max_retries, "max_retries", 0)
        self._transport = make_transport(
            credentials=credentials,
            base_urls=urls,
            sessions=sessions,
            clock=clock,
            timeout=self._timeout,
            attempt_timeout=self._attempt_timeout,
            max_retries=self._max_retries,
            paces=paces,
        )

    def with_options(
        self,
        *,
        api_key: str | UnsetType = UNSET,
        username: str | UnsetType = UNSET,
        base_url: str | UnsetType = UNSET,
        contacts_url: str | UnsetType = UNSET,
        crm_url: str | UnsetType = UNSET,
        invoicing_url: str | UnsetType = UNSET,
        validation_url: str | UnsetType = UNSET,
        mail_url: str | UnsetType = UNSET,
        timeout: float | UnsetType = UNSET,
        attempt_timeout: float | UnsetType | None = UNSET,
        max_retries: int | UnsetType = UNSET,
    ) -> Client:
        """A copy of this client with other settings, sharing its connection pool::

            patient = client.with_options(timeout=300, max_retries=5)
            await patient.validation.create_job(url)

        An argument left ``UNSET`` keeps this client's value (``attempt_timeout=None``
        means the default share of the budget). A new ``base_url`` applies to every
        area the call does not give its own URL for; the environment is not read again.
        Settings of the pool itself (``session``, ``max_connections``, ``proxy``,
        ``trust_env``, ``ssl``, ``app_name``) are this client's, and so is its ``clock``:
        make another ``Client`` for other ones.

        The pace of bulk work (``check_many``) is shared too: a copy with the same API
        key waits in its parent's pace of each area (a 429 to either holds both); a copy
        with another key has paces of its own.

        Who owns what: the pool (this client's own session, or the ``session=`` you gave
        it) stays this client's. Closing the copy ends the copy's own calls in flight
        and refuses its later calls; it releases nothing shared, and this client goes on.
        Closing this client releases the pool and closes every copy. Nothing needs
        closing but the client you made (``async with Client(...)``); a copy needs no
        ``async with`` of its own (it may have one).

        Raises:
            ConfigurationError, InvalidInputError: a value ``Client`` would refuse.
        """
        credentials = self._credentials
        key = credentials.api_key if api_key is UNSET else api_key
        user = credentials.username if username is UNSET else username
        if not key:  # the copy reads no variable: "set ASYNCSDK_API_KEY" would mislead
            raise ConfigurationError(
                f"api_key: expected the key, got {key!r} (leave api_key out to keep this "
                "client's)", field="api_key")
        _check_credentials(key, user)
        urls = _copied_urls({a: _shown(u) for a, u in self._urls.items()}, base_url, {
            Area.CONTACTS: contacts_url, Area.CRM: crm_url, Area.INVOICING: invoicing_url,
            Area.VALIDATION: validation_url, Area.MAIL: mail_url})
        base = _shown(self._base_url) if base_url is UNSET else base_url
        copy = Client.__new__(Client)
        copy._setup(
            self._sessions.shared(), Credentials(api_key=key, username=user), urls, base,
            self._timeout if timeout is UNSET else timeout,
            self._attempt_timeout if attempt_timeout is UNSET else attempt_timeout,
            self._max_retries if max_retries is UNSET else max_retries,
            self._clock, self._paces)
        return copy

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
        from .resources.validation.resource import Validation

        return Validation(self._transport)

    @cached_property
    def mail(self) -> Mail:
        """Transactional mail: ``send``."""
        from .resources.mail import Mail

        return Mail(self._transport)

    @property
    def with_raw_response(self) -> RawAreas:
        """The same areas, whose methods return a ``RawResponse`` with the answer's
        ``status_code``, ``headers``, ``request_id``, ``elapsed`` and ``attempts``
        (``.parsed`` is the usual result)::

            raw = await client.with_raw_response.contacts.list()
            print(raw.status_code, raw.request_id, len(raw.parsed))

        Methods that make no single request (``check_many``, ``job``) are refused
        with ``UsageError``. Type checkers see each method's own parameters and a
        ``RawResponse`` of its usual result (``_raw_areas``).
        """
        # Made at each use, not kept: kept, it would hold the client in a reference
        # cycle, collected only by the collector (after its loop ended, often), and a
        # client dropped unclosed would then not warn (``__del__``).
        return cast("RawAreas", WithRawResponse(self))

    # --- what the client was configured with (readable, never a credential) -----------
    @property
    def base_url(self) -> str | None:
        """The base URL (the ``base_url`` argument, else ``ASYNCSDK_BASE_URL``), a
        ``user:password@`` password shown as ``REDACTED``; None when not set (each area
        then has its own: ``contacts_url`` and the others)."""
        return None if self._base_url is None else redact_url(self._base_url.reveal())

    def _url_of(self, area: Area) -> str | None:
        url = self._urls.get(area)
        return None if url is None else redact_url(url.reveal())

    @property
    def contacts_url(self) -> str | None:
        """The URL contact lists are sent to (as ``base_url`` shows it; None: none)."""
        return self._url_of(Area.CONTACTS)

    @property
    def crm_url(self) -> str | None:
        """The URL leads are sent to (as ``base_url`` shows it; None: none)."""
        return self._url_of(Area.CRM)

    @property
    def invoicing_url(self) -> str | None:
        """The URL customers, products and invoices are sent to (None: none)."""
        return self._url_of(Area.INVOICING)

    @property
    def validation_url(self) -> str | None:
        """The URL email validation is sent to (None: none)."""
        return self._url_of(Area.VALIDATION)

    @property
    def mail_url(self) -> str | None:
        """The URL mail is sent to (None: none)."""
        return self._url_of(Area.MAIL)

    @property
    def timeout(self) -> float:
        """Seconds one call may take in all (``Client(timeout=...)``)."""
        return self._timeout

    @property
    def attempt_timeout(self) -> float | None:
        """Seconds one attempt of a safe operation may take (None: a share of the
        call's budget)."""
        return self._attempt_timeout

    @property
    def max_retries(self) -> int:
        """Retries after the first attempt."""
        return self._max_retries

    @property
    def _session(self) -> aiohttp.ClientSession | None:
        """The session in use (None before the first call or after ``close()``)."""
        return self._sessions.current

    @property
    def closed(self) -> bool:
        """True once ``close()`` has run."""
        return self._sessions.closed

    async def close(self) -> None:
        """End every call in flight and release the connections of the client's own
        session (an injected session is left open). Safe to call twice.

        A call in flight (a retry sleep, a pooled-connection wait, a stream being read)
        ends at once with ``APIConnectionError`` (``may_have_been_sent=True``); later
        calls raise ``UsageError``. Every copy made by ``with_options`` is closed too;
        closing a copy ends only the copy's calls and releases nothing shared.

        May be awaited from a later event loop once the client's own has ended (its
        connections went with it: ``asyncio.run(client.close())`` after
        ``asyncio.run(main())``).

        Raises:
            UsageError: called from another event loop while the client's own still
                runs (its connections can only be released there); nothing closed.
        """
        await self._sessions.close()

    async def __aenter__(self) -> Client:
        # Entered twice, the inner block's end would close the client under the outer
        # one (a shared client under every later request): refused at the entry.
        if self.closed:
            raise UsageError("this Client is closed ('async with' closes it at its end); "
                             "create a new one")
        if self._entered:
            raise UsageError(
                "this Client is already entered by an 'async with', which closes it at its "
                "end; use it as it is there, without entering it again")
        self._entered = True
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        await self.close()

    # A plain or deep copy would share (or copy) the client's session owner: closing one
    # would close the other's pool. Pickled, nothing of a pool or a loop could travel.
    def __copy__(self) -> NoReturn:
        raise TypeError(_NOT_COPIED)

    def __deepcopy__(self, memo: dict[int, Any]) -> NoReturn:
        raise TypeError(_NOT_COPIED)

    def __reduce_ex__(self, protocol: Any) -> NoReturn:
        raise TypeError(
            "an asyncsdk.Client cannot be pickled: its connections belong to one process "
            "and event loop; make a Client where it is used (each process, each loop)")

    def __repr__(self) -> str:
        return f"<asyncsdk.Client hosts={self._transport.shown_hosts()} closed={self.closed}>"

    def __del__(self, _warn: Any = warnings.warn) -> None:
        # Only a warning: no task may be scheduled from a finaliser.
        sessions = getattr(self, "_sessions", None)
        if sessions is not None and sessions.owns_open_session:
            _warn(
                "unclosed asyncsdk.Client: use 'async with Client(...)' or "
                "'await client.close()'",
                ResourceWarning,
                source=self,
                stacklevel=2,
            )
