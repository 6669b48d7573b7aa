"""The fleet's settings: ``FLEET_*`` variables, or the flags of ``asyncsdk fleet``.

Plain Python (no arq, no Redis): the command line reads the settings' names from here
to build its flags whether or not the ``fleet`` extra is installed.
"""

from __future__ import annotations

import math
import os
from collections.abc import Mapping
from dataclasses import dataclass, fields
from typing import Any

#: Seconds a run keeps, after its last check's budget, for its last Redis writes.
WRITE_SECONDS = 1.0
#: Seconds between a run's own deadline and arq's timeout (turning it into a Retry).
MARGIN_SECONDS = 1.0


@dataclass(frozen=True)
class Setting:
    """One setting: its field, its variable, its flag, its type and its lower bound."""

    field: str
    kind: type
    low: float = 0
    inclusive: bool = True  # whether ``low`` itself is allowed
    about: str = ""  # the flag's help

    @property
    def variable(self) -> str:
        """``FLEET_CONCURRENCY`` for ``concurrency``."""
        return "FLEET_" + self.field.upper()

    @property
    def flag(self) -> str:
        """``--concurrency`` for ``concurrency``, ``--redis-url`` for ``redis_url``."""
        return "--" + self.field.replace("_", "-")

    def parse(self, raw: str, named: str) -> Any:
        """``raw`` (from a variable or a flag, ``named``) as this setting's value.

        Raises:
            ValueError: not a number of the setting's kind, or out of range; the message
                starts with ``named``.
        """
        if self.kind is str:
            value: Any = raw
        else:
            try:
                value = self.kind(raw.strip())
            except ValueError:
                raise ValueError(f"{named}: expected {self.wanted()}, got {raw!r}") from None
        self.check(value, named)
        return value

    def check(self, value: Any, named: str) -> None:
        """Refuse a value out of range (``named``: how the message names the setting)."""
        if self.kind is str:
            if not value:
                raise ValueError(f"{named}: expected a value, got ''")
            return
        if (isinstance(value, bool) or not isinstance(value, (int, float))
                or math.isnan(value) or math.isinf(value)
                or (value < self.low if self.inclusive else value <= self.low)):
            raise ValueError(f"{named}: expected {self.wanted()}, got {value!r}")

    def wanted(self) -> str:
        what = "an integer" if self.kind is int else "a number"
        bound = f">= {self.low:g}" if self.inclusive else f"> {self.low:g}"
        return what if self.kind is str else f"{what} {bound}"


SETTINGS: tuple[Setting, ...] = (
    Setting("redis_url", str, about="the fleet's Redis"),
    Setting("queue", str, about="the arq queue's name"),
    Setting("concurrency", int, 1, about="checks in flight per batch"),
    Setting("max_jobs", int, 1, about="batches a worker runs at once"),
    Setting("slice_seconds", float, 0, inclusive=False,
            about="a batch run takes no new address after this long; the rest is "
                  "re-queued at once"),
    Setting("request_timeout", float, 0, inclusive=False,
            about="each check's budget in seconds, its wait for the pace included"),
    Setting("client_retries", int, 0, about="the Client's max_retries"),
    Setting("max_tries", int, 1,
            about="runs of one batch; the last stores every input's outcome"),
    Setting("retry_seconds", float, 0,
            about="seconds before re-running a batch that met a failure"),
    Setting("job_poll_seconds", float, 0, inclusive=False,
            about="seconds between status polls of a file job"),
    Setting("job_max_polls", int, 1, about="polls of a file job before it is failed"),
)
#: The settings every command needs (where the fleet's Redis and queue are).
WHERE = ("redis_url", "queue")


@dataclass(frozen=True)
class FleetConfig:
    """The fleet's settings (defaults in brackets): the ``FLEET_*`` variable, or its flag
    on ``asyncsdk fleet`` (``FLEET_MAX_JOBS`` is ``--max-jobs``; a flag wins).

    Attributes:
        redis_url: ``FLEET_REDIS_URL`` [redis://127.0.0.1:6379/0].
        queue: ``FLEET_QUEUE``, the arq queue name [arq:queue].
        concurrency: ``FLEET_CONCURRENCY``, checks in flight per batch [16], >= 1.
        max_jobs: ``FLEET_MAX_JOBS``, batches a worker runs at once [16], >= 1. Many
            small batches rather than a few big ones: the shared pace, not these, bounds
            what is in flight, and a batch waits for its last check, one the service
            refused waiting out its ``Retry-After``: with few batches running, a 429
            episode idled the whole worker for that long.
        slice_seconds: ``FLEET_SLICE_SECONDS`` [60], > 0: a batch run takes no new
            address after this long; it lets those in flight end and re-queues the rest
            at once.
        request_timeout: ``FLEET_REQUEST_TIMEOUT``, each check's budget [30], > 0.
        client_retries: ``FLEET_CLIENT_RETRIES``, the Client's ``max_retries`` [2], >= 0.
        max_tries: ``FLEET_MAX_TRIES``, runs of one batch [50], >= 1 (a time slice is a
            run; a run that sent nothing because the fleet was paused is not). On the
            last one, errors that are not the address's (5xx, 429, ...) are stored as
            its outcome, and inputs it could not send are stored as not attempted.
        retry_seconds: ``FLEET_RETRY_SECONDS``, before re-running a batch that met a
            transient failure (a 5xx, a timeout, no credit) [5], >= 0; doubled for each
            run that failed as a whole (Redis down, ...), up to 16 times.
        job_poll_seconds: ``FLEET_JOB_POLL_SECONDS``, between status polls of a job [5].
        job_max_polls: ``FLEET_JOB_MAX_POLLS`` [17280, a day at 5 s], >= 1.

    Raises:
        ValueError: a value out of range (``read`` names the variable or the flag).
    """

    redis_url: str = "redis://127.0.0.1:6379/0"
    queue: str = "arq:queue"
    concurrency: int = 16
    max_jobs: int = 16
    slice_seconds: float = 60.0
    request_timeout: float = 30.0
    client_retries: int = 2
    max_tries: int = 50
    retry_seconds: float = 5.0
    job_poll_seconds: float = 5.0
    job_max_polls: int = 17280

    def __post_init__(self) -> None:
        by_field = {s.field: s for s in SETTINGS}
        for field in fields(self):
            setting = by_field[field.name]
            setting.check(getattr(self, field.name), f"{setting.variable} ({field.name})")

    @classmethod
    def from_env(cls, environ: Mapping[str, str] | None = None) -> FleetConfig:
        """The settings from the environment (``environ``: default ``os.environ``).

        Raises:
            ValueError: a variable that is not a number, or out of range; the message
                names it.
        """
        return cls.read(environ)

    @classmethod
    def read(cls, environ: Mapping[str, str] | None = None,
             flags: Mapping[str, str | None] | None = None) -> FleetConfig:
        """The settings from ``flags`` (field -> the flag's text, None: not given), else
        from the environment (``environ``: default ``os.environ``), else the defaults.

        Raises:
            ValueError: a value that is not a number, or out of range; the message names
                the flag or the variable it came from.
        """
        env = os.environ if environ is None else environ
        given = flags or {}
        values: dict[str, Any] = {}
        for setting in SETTINGS:
            flag = given.get(setting.field)
            if flag is not None:
                values[setting.field] = setting.parse(flag, setting.flag)
            elif (raw := env.get(setting.variable)) is not None:
                values[setting.field] = setting.parse(raw, setting.variable)
        return cls(**values)

    @property
    def run_budget(self) -> float:
        """The longest one task run takes: its slice, the last checks' budget, the writes."""
        return self.slice_seconds + self.request_timeout + WRITE_SECONDS

    @property
    def batch_timeout(self) -> float:
        """arq's timeout of one task run: its own budget, then time to turn it into a Retry.

        A run ends itself at ``run_budget``; arq's timeout would finish the job as failed.
        """
        return self.run_budget + MARGIN_SECONDS

    @property
    def arq_max_tries(self) -> int:
        """arq's ``max_tries`` of a batch: room for runs that only waited out a pause."""
        return 3 * self.max_tries

    @property
    def stop_grace(self) -> int:
        """Seconds a worker told to stop (SIGTERM) lets its batches' checks in flight end."""
        return math.ceil(self.request_timeout + WRITE_SECONDS + MARGIN_SECONDS)

    @property
    def requeue_after(self) -> float:
        """Seconds without progress after which ``submit --wait`` enqueues again the
        batches whose job ended with inputs left (``status --wait`` ends, saying so)."""
        return max(30.0, self.batch_timeout + 10)

    def backoff(self, job_try: int) -> float:
        """The defer after a run that failed as a whole: doubling, up to 16 times."""
        return float(self.retry_seconds * 2 ** min(max(job_try - 1, 0), 4))
