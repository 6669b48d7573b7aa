"""asyncsdk.testing: an in-process sandbox of the whole HTTP interface.

    async with Sandbox() as sb:                 # 127.0.0.1, a free port
        async with sb.client() as client:       # an asyncsdk.Client for sb's account
            ...

Everything is deterministic: ids count 1, 2, 3 per kind; contact record uuids are
derived from a counter; only ``sb.faults.random(..., seed=...)`` draws random numbers,
from its own seeded generator. All state is in memory and shared by the accounts,
except jobs, which belong to the account that created them.

Credentials
    Resource areas: query ``api_key`` must be a known account's key, else HTTP 401
    ``{"detail": "Authentication credentials were not provided or are invalid."}``.
    Validation (query) and mail (form): ``api`` + ``username`` of one account, else
    HTTP 200 ``{"status": "fail", "error": "User authentication failed. Wrong API Key or
    username."}``. More accounts: ``sb.add_account(key, username, credit=...)``.

Resource areas (contacts, leads, customers, products, invoices)
    list/get 200; create 201 with the object (``id`` included); update 200 with the
    whole object; delete 204 with no body; unknown id 404 ``{"detail": "Not found."}``;
    bad input 400 ``{"field": ["This field is required."]}`` (Django REST style); a
    POST/PUT body that is not ``application/json`` 415. Contact dates: create takes
    ``DD-MM-YYYY``, update ``YYYY-MM-DDTHH:MM:SS``; both are stored and returned as
    ``YYYY-MM-DD``. Contact update changes records by ``uuid`` (an unknown uuid: 400,
    nothing changed). Customer update is partial and needs only ``email``; lead and
    product updates need their create fields. Invoices have no create or get: seed them
    with ``sb.seed_invoice({...})``; invoice update is partial. Money is returned as
    text with two places.

Validation verdicts (``ValidationRules``; every set can be replaced)
    - bad syntax (not a dot-atom local part ``@`` a dotted domain with an alphabetic
      TLD): ``{"status": "fail", "error": "Email Format is not correct."}``
    - domain in ``disposable_domains`` (mailinator.com, trashmail.com,
      10minutemail.com, guerrillamail.com, yopmail.com, ...): ``Disposable``
    - local part starting with ``bounce``, or domain ``bounce.example``: ``Bounce``
    - domain ``unknown.example``: ``Unknown``
    - domain ``catchall.example``: ``CatchAll``
    - anything else: ``Valid``
    ``role`` is True when the local part without ``+tag`` is a role name (admin, billing,
    contact, help, info, noreply, office, sales, support, ...), whatever the verdict.
    It is sent as a JSON boolean, or ``"True"``/``"False"`` (``role_format="str"``), or
    1/0 (``role_format="int"``). Success: ``{"email": ..., "status": "success",
    "result": "Valid", "role": false}``. Each check spends one credit, each job address
    one; with too little: "The request was refused due to insufficent credit.".
    Validation checks run in this order: required parameters (``timeout`` is a number
    >= 0 on check and jobs/create), credentials, then the operation's own checks.

Jobs
    ``jobs/create`` fetches ``file_name``: http(s) on 127.0.0.1/localhost only (unless
    ``allow_remote_files=True``), no redirects, read whole; a refused, failed or non-2xx
    fetch, or a file over ``sb.settings.max_file_bytes`` (64 MiB), is "File is not
    downloadable."; empty, binary or ``@``-free content is "File Format is not
    correct.". Input, read as the command line reads its files (``parse_address_file``
    in ``_validation``): UTF-8 (BOM or none) or UTF-16 with a BOM, any line ending
    (CRLF, LF, CR), blank lines and leading ``#`` comments skipped; a CSV under a header
    naming an email column (``email``, ``E-mail``, ``Email Address``..., any case;
    ``,`` ``;`` or tab) with an optional ``name``, a CSV without a header (address,
    name), or one address per line. The result has one row per address, in order,
    duplicates kept. A malformed address in a file gets the verdict ``Bounce``.
    ``sb.host_file(data)`` serves a file and returns its URL. A job answers
    ``{"status": "processing"}`` to ``job_polls`` (2) status polls, or for
    ``job_seconds`` (on ``time.monotonic``, or the clock given to ``sb.use_clock``), then
    ``{"status": "success"}`` (or ``{"status": "fail"}``, with no
    error text, after ``sb.fail_next_job()`` or with ``job_outcome="fail"``). Download
    before then: "List is currently Processing. Please wait some times."; a job of
    another account (or none): "This Job Id not associated to your users."; download
    of a failed job: "This job failed; there is no result to download." (the document
    has no text for it). The result ``emaillist.csv`` has the header ``Email,Name,Status,
    Role Based Emails`` and is sent per ``download_shape``: ``"csv"`` (streamed
    text/csv attachment), ``"json"`` (``{"status": "success", "result": "<csv>"}``,
    streamed) or ``"url"`` (``result`` is ``http://127.0.0.1:PORT/files/job<id>/
    emaillist.csv``, served without credentials). ``sb.make_job(rows=N)`` makes a
    finished job of N synthetic rows generated lazily (for benchmarks).

Mail
    ``POST /api/v1/mail/send/`` (form). Another method: "Request method is not
    correct."; a missing or empty field, or a malformed ``from``/``to``: "Required
    parameter missing or invalid."; sender domain not verified (``sb.verify_domain``):
    "Domain authentication failed. Unverified Sender found."; one credit per mail.
    Success: ``{"status": "success", "message": "Queued", "id": "msg-000001"}``
    (``mail_state="Send"`` for "Send"); the mail is appended to ``sb.outbox``.

Faults
    ``sb.faults`` spoils the next N requests to a path (exact, or a prefix ending in
    ``*``): resets, 5xx, 429 with Retry-After, delays, invalid JSON, HTML error pages,
    truncated bodies, wrong content types; see ``FaultKind`` and ``Faults``.

Rate limits
    ``Sandbox(rate_limit=RateLimit(rate, burst, retry_after=1.0, max_in_flight=None))``
    limits each API key as the service does: a token bucket (``rate`` tokens a second,
    ``burst`` at most, a key starts full) that every request carrying the key draws on
    (validation, mail, the resource areas; not the hosted files). An empty bucket
    answers HTTP 429 ``{"detail": "Request was throttled."}`` with ``Retry-After:
    retry_after`` (no header when None); beyond ``max_in_flight`` requests of the key
    at once, 429 without ``Retry-After``. A refused request runs nothing and spends no
    credit. ``sb.limits.set(...)`` changes the limit while the server runs (every key's,
    or one key's with ``key=``); so does ``PUT /sandbox/limit`` with a JSON limit, for a
    served sandbox; ``sb.limits.stats(key)`` counts answered and refused requests. A
    service time is a delay fault: ``sb.faults.delay(path, 0.02, times=None)`` (refused
    requests are answered at once).

Tools in your tests
    ``vcr_config()``: vcrpy / pytest-recording options that keep the credential fields
    out of cassettes. ``aioresponses``: aioresponses' mock, working on aiohttp 3.14
    (a drop-in for ``aioresponses.aioresponses``). What either sees of asyncsdk's
    requests carries no credential: the library adds them last (README, "Tracing, error
    tracking and recording"). ``VirtualClock``: time that moves only when the client
    sleeps (``sb.client(clock=VirtualClock())``): retries' and polls' pauses return at
    once, recorded in ``clock.sleeps``, and budgets are counted on it.

Observation
    ``sb.requests`` (method, path, query, headers, raw body with ``.json``/``.form``,
    time, answered status, fault), ``sb.in_flight``, ``sb.max_in_flight``, ``sb.outbox``,
    ``sb.state`` (all stored data). ``record=False`` turns recording off.
"""

from typing import TYPE_CHECKING

from .._lazy import lazy_attributes

if TYPE_CHECKING:  # at run time these load on first use: the pytest plugin, loaded in
    # every pytest run, must not pull in aiohttp unless a fixture is used
    from ._clock import VirtualClock
    from ._faults import Fault, FaultKind, Faults
    from ._limits import LimitStats, RateLimit, RateLimits, Refusal, TokenBucket
    from ._mocks import aioresponses
    from ._recorders import vcr_config
    from ._records import RecordedRequest, SentMail
    from ._rules import ValidationRules
    from ._server import DEFAULT_API_KEY, DEFAULT_USERNAME, Sandbox, run_standalone
    from ._state import Account, Settings

_LAZY = {
    "Fault": "._faults",
    "FaultKind": "._faults",
    "Faults": "._faults",
    "LimitStats": "._limits",
    "RateLimit": "._limits",
    "RateLimits": "._limits",
    "Refusal": "._limits",
    "TokenBucket": "._limits",
    "aioresponses": "._mocks",
    "RecordedRequest": "._records",
    "SentMail": "._records",
    "vcr_config": "._recorders",
    "ValidationRules": "._rules",
    "DEFAULT_API_KEY": "._server",
    "DEFAULT_USERNAME": "._server",
    "Sandbox": "._server",
    "run_standalone": "._server",
    "Account": "._state",
    "Settings": "._state",
    "VirtualClock": "._clock",
}


if not TYPE_CHECKING:  # hidden from type checkers: a module ``__getattr__`` would make
    # every misspelt name (``from asyncsdk import Clinet``) an ``Any`` they accept
    __getattr__, __dir__ = lazy_attributes(__name__, _LAZY)


__all__ = [
    "DEFAULT_API_KEY",
    "DEFAULT_USERNAME",
    "Account",
    "Fault",
    "FaultKind",
    "Faults",
    "LimitStats",
    "RateLimit",
    "RateLimits",
    "RecordedRequest",
    "Refusal",
    "Sandbox",
    "SentMail",
    "Settings",
    "TokenBucket",
    "ValidationRules",
    "VirtualClock",
    "aioresponses",
    "run_standalone",
    "vcr_config",
]
