"""What a run holds in Redis, read back: its progress (``status``) and its outcomes as the
result CSV of ``check-many`` (``export``).

The export writes the very columns ``asyncsdk check-many`` writes, with its own writer
(``asyncsdk.cli.outputs.ResultWriter``): ``row,email,verdict,role,error_type,error,
attempted,name`` then the input's other columns, one row per input, in input order
(``row`` is the input's position, 1 = the first). A run of addresses is exported once
every input has its outcome; a file job once it is done (its rows, in their order).
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import IO, Any

import attrs
from redis.asyncio import Redis

from asyncsdk.cli.inputs import InputRow, UsageProblem
from asyncsdk.cli.outputs import ResultWriter, Tally, output_columns

from .store import answer, inputs_key, job_key, meta_key, outcomes_key, total_key

#: Inputs (or rows) read from Redis in one round trip.
CHUNK = 1000
#: The error type ``check-many`` writes for an input that is not an address.
REFUSED = "InvalidInputError"


class NotReady(Exception):
    """The run has inputs without an outcome, or its job is not done: nothing to export
    yet (exit code 1)."""


@attrs.frozen
class RunStatus:
    """Where a run stands.

    Attributes:
        run: its label.
        kind: ``addresses`` (a file of addresses, in batches) or ``job`` (a file job).
        total: its inputs (addresses), or its rows once the job is done.
        done: inputs with an outcome (addresses), or rows stored (job).
        state: a job's ``queued``, ``submitting``, ``waiting``, ``failed`` or ``done``;
            ``done`` or ``running`` for addresses.
        error: why a job failed, else None.
    """

    run: str
    kind: str
    total: int
    done: int
    state: str
    error: str | None = None

    @property
    def finished(self) -> bool:
        """Nothing more will come: every input has its outcome, or the job ended."""
        return self.state in ("done", "failed")

    def to_dict(self) -> dict[str, Any]:
        """The status as JSON (what ``asyncsdk fleet status`` prints)."""
        shown: dict[str, Any] = {"run": self.run, "kind": self.kind, "state": self.state,
                                 "total": self.total, "done": self.done,
                                 "left": self.total - self.done}
        if self.kind == "job":
            shown["error"] = self.error
        return shown


async def run_status(redis: Redis, run: str) -> RunStatus:
    """The status of ``run`` (addresses or a job).

    Raises:
        UsageProblem: Redis holds no run of that label.
    """
    async with redis.pipeline(transaction=False) as pipe:
        pipe.get(total_key(run))
        pipe.hlen(outcomes_key(run))
        pipe.get(job_key(run) + ":state")
        pipe.get(job_key(run) + ":error")
        pipe.hlen(job_key(run) + ":rows")
        total, done, state, error, rows = await pipe.execute()
    if total is not None:
        finished = int(done) >= int(total)
        return RunStatus(run, "addresses", int(total), int(done),
                         "done" if finished else "running")
    if state is not None:
        text = state.decode()
        return RunStatus(run, "job", int(rows), int(rows), text,
                         error.decode() if error is not None else None)
    raise UsageProblem(f"no run {run!r} in this Redis (see the labels given to "
                       "'asyncsdk fleet submit --run')")


def split_error(text: str | None) -> tuple[str, str]:
    """A stored ``"Type: message"`` as ``(type, message)``."""
    if not text:
        return "", ""
    kind, _, message = text.partition(": ")
    return kind, message


def cells_of(record: dict[str, Any]) -> dict[str, Any]:
    """The result cells of one stored outcome, as ``check-many`` writes them."""
    error_type, error = split_error(record.get("error"))
    role = record.get("role")
    return {"verdict": record.get("verdict") or "",
            "role": "" if role is None else str(role),
            "error_type": error_type, "error": error,
            # an input refused before sending (not an address) was never attempted
            "attempted": bool(record.get("attempted")) and error_type != REFUSED}


async def _read(redis: Redis, keys: Sequence[str], start: int, stop: int,
                ) -> list[list[bytes | None]]:
    """The fields ``start``..``stop - 1`` of each hash of ``keys`` (one round trip)."""
    fields = [str(i) for i in range(start, stop)]
    async with redis.pipeline(transaction=False) as pipe:
        for key in keys:
            pipe.hmget(key, fields)
        values: list[list[bytes | None]] = await pipe.execute()
    return values


async def export_run(redis: Redis, run: str, handle: IO[str]) -> Tally:
    """Write ``run`` to ``handle`` as ``check-many``'s result CSV; the counts of its rows.

    Raises:
        UsageProblem: no such run.
        NotReady: inputs without an outcome yet, or a job not done (nothing written).
    """
    status = await run_status(redis, run)
    if status.kind == "job":
        return await export_job(redis, status, handle)
    return await export_addresses(redis, status, handle)


async def export_addresses(redis: Redis, status: RunStatus, handle: IO[str]) -> Tally:
    """Write every input of a run of addresses once, in input order; the counts.

    Raises:
        NotReady: some inputs have no outcome yet (nothing is written).
    """
    run = status.run
    if status.done < status.total:
        raise NotReady(f"run {run!r}: {status.total - status.done} of {status.total} "
                       f"inputs have no outcome yet; export it once they do "
                       f"('asyncsdk fleet status {run} --wait' waits for them)")
    raw_columns = await answer(redis.hget(meta_key(run), "columns"))
    extra = tuple(json.loads(raw_columns)) if raw_columns else ("name",)
    writer = ResultWriter(handle, output_columns(extra))
    writer.header()
    empty = ("",) * len(extra)
    for start in range(0, status.total, CHUNK):
        stop = min(start + CHUNK, status.total)
        outcomes, cells = await _read(redis, [outcomes_key(run), inputs_key(run)],
                                      start, stop)
        for index, raw, extra_cells in zip(range(start, stop), outcomes, cells, strict=True):
            if raw is None:  # deleted under us: say so rather than skip a row
                raise NotReady(f"run {run!r}: input {index} lost its outcome while "
                               "being exported")
            record = json.loads(raw)
            row = InputRow(index + 1, record["email"],
                           tuple(json.loads(extra_cells)) if extra_cells else empty)
            writer.write(row, **cells_of(record))
    return writer.tally


async def export_job(redis: Redis, status: RunStatus, handle: IO[str]) -> Tally:
    """Write the rows of a done job in their order to ``handle``; the counts.

    Raises:
        NotReady: the job is not done (still running, or failed).
    """
    name = status.run
    if status.state != "done":
        why = f": {status.error}" if status.error else ""
        raise NotReady(f"job {name!r} is {status.state}{why}; only a done job has rows "
                       "to export")
    writer = ResultWriter(handle, output_columns(["name"]))
    writer.header()
    for start in range(0, status.total, CHUNK):
        stop = min(start + CHUNK, status.total)
        (rows,) = await _read(redis, [job_key(name) + ":rows"], start, stop)
        for index, raw in zip(range(start, stop), rows, strict=True):
            if raw is None:
                raise NotReady(f"job {name!r}: row {index} is missing")
            row = json.loads(raw)
            role = row.get("role_based")
            writer.write(InputRow(index + 1, row["email"], (row.get("name") or "",)),
                         verdict=row.get("status") or "",
                         role="" if role is None else str(role))
    return writer.tally
