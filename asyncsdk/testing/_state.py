"""The sandbox's in-memory world: accounts, resources, jobs, hosted files and mail."""

from __future__ import annotations

import asyncio
import itertools
import math
import time
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any, Generic, Literal, TypeVar, overload
from urllib.parse import quote

import aiohttp
from aiohttp import web

from asyncsdk import InvalidInputError

from ._records import RecordedRequest, SentMail
from ._rules import ValidationRules

__all__ = ["Account", "HostedFile", "Job", "Row", "SandboxState", "Settings", "StateView"]

DownloadShape = Literal["csv", "json", "url"]
RoleFormat = Literal["bool", "str", "int"]
JobOutcome = Literal["success", "fail"]
MailState = Literal["Queued", "Send"]

# One result row: (email, name, verdict, role based).
Row = tuple[str, str, str, bool]


def _one_of(*choices: object) -> Callable[[object], bool]:
    return lambda value: any(isinstance(value, type(c)) and value == c for c in choices)


def _count(least: int) -> Callable[[object], bool]:
    return lambda value: type(value) is int and value >= least


def _seconds_or_none(value: object) -> bool:
    if value is None:
        return True
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return False
    return math.isfinite(value) and value >= 0


#: What each switch takes, and how the error says it: a wrong value would otherwise
#: fail later requests of the server (or answer what the service never does, a job
#: status "failed"), not the line that set it.
_SETTING_RULES: dict[str, tuple[Callable[[object], bool], str]] = {
    "download_shape": (_one_of("csv", "json", "url"), "'csv', 'json' or 'url'"),
    "role_format": (_one_of("bool", "str", "int"), "'bool', 'str' or 'int'"),
    "job_polls": (_count(0), "an int >= 0"),
    "job_seconds": (_seconds_or_none, "None or a finite number of seconds >= 0"),
    "job_outcome": (_one_of("success", "fail"), "'success' or 'fail'"),
    "allow_remote_files": (_one_of(True, False), "True or False"),
    "mail_state": (_one_of("Queued", "Send"), "'Queued' or 'Send'"),
    "max_file_bytes": (_count(0), "an int >= 0"),
    "chunk_size": (_count(1), "an int >= 1"),
    "record": (_one_of(True, False), "True or False"),
}


@dataclass
class Account:
    """Credentials and credit of one account; ``credit=None`` means unlimited."""

    api_key: str
    username: str
    credit: int | None = None

    def __setattr__(self, name: str, value: object) -> None:
        # A credit of another type failed every later check of the account (HTTP 500).
        if name == "credit" and value is not None and not _count(0)(value):
            raise InvalidInputError(f"credit: expected None (unlimited) or an int >= 0, "
                                    f"got {value!r}", field="credit")
        if name in ("api_key", "username") and not (isinstance(value, str) and value):
            raise InvalidInputError(f"{name}: expected a non-empty str, got {value!r}",
                                    field=name)
        super().__setattr__(name, value)

    def can_spend(self, amount: int = 1) -> bool:
        return self.credit is None or self.credit >= amount

    def spend(self, amount: int = 1) -> None:
        if self.credit is not None:
            self.credit -= amount


@dataclass
class Job:
    """A validation job. ``rows`` is called afresh for each download (rows are lazy)."""

    id: int
    owner: str
    rows: Callable[[], Iterator[Row]]
    row_count: int
    outcome: JobOutcome
    polls_left: int
    created_at: float
    seconds: float | None
    forced: JobOutcome | None = None
    render: Callable[[str, int], Iterator[str]] | None = None
    """Optional fast path: (role_format, chunk_size) -> CSV text pieces, header first."""

    def is_done(self, now: float) -> bool:
        if self.forced is not None:
            return True
        if self.seconds is not None:
            return now - self.created_at >= self.seconds
        return self.polls_left <= 0

    def poll(self, now: float) -> str:
        """Answer one status poll: ``processing`` until done, then the outcome."""
        if self.is_done(now):
            return self.forced or self.outcome
        if self.seconds is None:
            self.polls_left -= 1
        return "processing"

    @property
    def final_status(self) -> JobOutcome:
        return self.forced or self.outcome


@dataclass(frozen=True)
class HostedFile:
    """A file served at ``/files/<token>/<name>``: fixed bytes, or a job's result."""

    name: str
    content_type: str
    data: bytes | None = None
    job_id: int | None = None


@dataclass
class Settings:
    """Behaviour switches; see ``Sandbox`` for their meaning. A value a switch does not
    take is refused when it is set (``InvalidInputError`` naming the switch)."""

    download_shape: DownloadShape = "csv"
    role_format: RoleFormat = "bool"
    job_polls: int = 2
    job_seconds: float | None = None
    job_outcome: JobOutcome = "success"
    allow_remote_files: bool = False
    mail_state: MailState = "Queued"
    max_file_bytes: int = 64 * 1024 * 1024
    chunk_size: int = 64 * 1024
    record: bool = True

    def __setattr__(self, name: str, value: object) -> None:
        rule = _SETTING_RULES.get(name)
        if rule is not None and not rule[0](value):
            raise InvalidInputError(f"{name}: expected {rule[1]}, got {value!r}", field=name)
        super().__setattr__(name, value)


@dataclass
class SandboxState:
    """Everything the handlers read and change; one per ``Sandbox``."""

    settings: Settings
    rules: ValidationRules
    base_url: str = ""
    accounts: dict[str, Account] = field(default_factory=dict)
    contact_lists: dict[int, dict[str, Any]] = field(default_factory=dict)
    leads: dict[int, dict[str, Any]] = field(default_factory=dict)
    customers: dict[int, dict[str, Any]] = field(default_factory=dict)
    products: dict[int, dict[str, Any]] = field(default_factory=dict)
    invoices: dict[int, dict[str, Any]] = field(default_factory=dict)
    jobs: dict[int, Job] = field(default_factory=dict)
    hosted: dict[str, HostedFile] = field(default_factory=dict)
    outbox: list[SentMail] = field(default_factory=list)
    verified_domains: set[str] = field(default_factory=set)
    requests: list[RecordedRequest] = field(default_factory=list)
    fail_next_jobs: int = 0
    http: aiohttp.ClientSession | None = None
    """Fetches the files of jobs/create; opened by ``Sandbox.start``."""
    closed: bool = False
    """Closed after a start (its URL leads nowhere until it starts again)."""
    clock: Callable[[], float] = time.monotonic
    """What jobs' ``job_seconds`` are timed on (``Sandbox.use_clock``)."""
    in_flight: int = 0
    max_in_flight: int = 0
    #: The tasks answering requests now (``Sandbox.close`` ends those still running:
    #: a held answer whose client went away would otherwise outlive the sandbox).
    handlers: set[asyncio.Task[Any]] = field(default_factory=set)
    _counters: dict[str, Iterator[int]] = field(default_factory=dict)

    def next_id(self, kind: str) -> int:
        """Next integer id for ``kind`` (each kind counts 1, 2, 3, ...)."""
        counter = self._counters.get(kind)
        if counter is None:
            counter = self._counters[kind] = itertools.count(1)
        return next(counter)

    def next_uuid(self) -> str:
        """A deterministic UUID (version 4 layout) for a new contact record."""
        return str(uuid.UUID(int=self.next_id("uuid"), version=4))

    def account_by_key(self, api_key: str | None) -> Account | None:
        return self.accounts.get(api_key) if api_key else None

    def account(self, api_key: str | None, username: str | None) -> Account | None:
        """The account whose key *and* username match, else None."""
        found = self.account_by_key(api_key)
        return found if found is not None and found.username == username else None

    def host(self, hosted: HostedFile) -> str:
        """Register a hosted file and return its absolute URL."""
        token = f"f{self.next_id('file')}"
        self.hosted[token] = hosted
        # Percent-encoded: a name with a space, "#", "?", "%" or "/" made a URL that
        # missed the file (or that the client refused).
        return f"{self.base_url}/files/{token}/{quote(hosted.name, safe='')}"

    def job_result_url(self, job: Job) -> str:
        """The URL (no credentials needed) where a job's result CSV is served."""
        token = f"job{job.id}"
        self.hosted[token] = HostedFile("emaillist.csv", "text/csv", job_id=job.id)
        return f"{self.base_url}/files/{token}/emaillist.csv"

    def new_job(
        self, owner: str, rows: Callable[[], Iterator[Row]], row_count: int, now: float,
        *, ended: JobOutcome | None = None,
    ) -> Job:
        """Create a job under the current settings (consuming a pending ``fail_next_job``),
        or one that has ``ended`` already (``make_job``: it leaves ``fail_next_job`` to
        the jobs that jobs/create makes, as documented)."""
        outcome: JobOutcome = ended or self.settings.job_outcome
        if ended is None and self.fail_next_jobs > 0:
            self.fail_next_jobs -= 1
            outcome = "fail"
        job = Job(
            id=self.next_id("job"),
            owner=owner,
            rows=rows,
            row_count=row_count,
            outcome=outcome,
            polls_left=self.settings.job_polls,
            created_at=now,
            seconds=self.settings.job_seconds,
        )
        job.forced = ended
        self.jobs[job.id] = job
        return job


def not_serving(state: SandboxState) -> str:
    """Why a sandbox has no URL to give: not started yet, or closed."""
    if state.closed:
        return ("the sandbox is closed: its URL leads nowhere; use it inside its "
                "'async with Sandbox()' block (or start() it again)")
    return "the sandbox is not started; use 'async with Sandbox()'"


STATE_KEY = web.AppKey("asyncsdk_sandbox_state", SandboxState)


T = TypeVar("T")


class StateView(Generic[T]):
    """A read-only attribute of a sandbox that reads the same name on its ``state``
    (``sb.requests`` is ``sb.state.requests``): one rule for every observation."""

    def __init__(self, doc: str) -> None:
        self.__doc__ = doc
        self.name = ""

    def __set_name__(self, owner: type, name: str) -> None:
        self.name = name

    @overload
    def __get__(self, obj: None, owner: type | None = None) -> StateView[T]: ...
    @overload
    def __get__(self, obj: object, owner: type | None = None) -> T: ...
    def __get__(self, obj: object, owner: type | None = None) -> T | StateView[T]:
        if obj is None:
            return self
        value: T = getattr(obj.state, self.name)  # type: ignore[attr-defined]
        return value

    def __set__(self, obj: object, value: T) -> None:
        raise AttributeError(f"{self.name} is read-only; change sb.state.{self.name}")
