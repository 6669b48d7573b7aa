"""The floors of issue 12: the plain code a user could write instead of calling asyncsdk.
Every paired target measures asyncsdk against one of these, in the same run, with the same
JSON library. Scenarios may import them.

* ``check_call``: one single check with raw aiohttp (``session.get(params=)``, read, parse).
* ``drive``: ``concurrency`` workers pulling from one iterator (the floor of ``check_many``
  and the driver of the ``validation.check`` levels).
* ``rows_floor``: a job's CSV result read with ``iter_chunked(64 KiB)`` and ``csv.reader``,
  yielding lists.
* ``pydantic_contact_lists``: pydantic v2 ``TypeAdapter(list[ContactList]).validate_json``
  for the listing of ``benchmarks._data``.
"""

from __future__ import annotations

import asyncio
import csv
import datetime as dt
import gc
from collections.abc import AsyncIterator, Awaitable, Callable, Iterable, Sequence
from typing import Any

from ._common import API_KEY, USERNAME, Clock
from ._data import contact_record

CHECK_PATH = "/api/v1/single/check"
DOWNLOAD_PATH = "/api/v1/jobs/download"
CHUNK = 64 * 1024

Loads = Callable[[Any], Any]


def check_params(email: str) -> dict[str, Any]:
    """The query of a single check, as asyncsdk sends it."""
    return {"email": email, "timeout": 30, "api": API_KEY, "username": USERNAME}


def check_call(session: Any, base_url: str, loads: Loads) -> Callable[[str], Awaitable[Any]]:
    """One check with raw aiohttp on ``session`` (an ``aiohttp.ClientSession``)."""
    url = base_url + CHECK_PATH

    async def call(email: str) -> Any:
        async with session.get(url, params=check_params(email)) as response:
            return loads(await response.read())

    return call


async def drive(call: Callable[[str], Awaitable[Any]], emails: Sequence[str],
                concurrency: int) -> Clock:
    """Run ``call`` over ``emails`` with ``concurrency`` workers sharing one iterator;
    the clock covers the run only (connections are opened first)."""
    await asyncio.gather(*(call(e) for e in emails[:concurrency]))  # warm-up
    source = iter(emails)

    async def worker() -> None:
        for email in source:
            await call(email)

    gc.collect()
    with Clock() as clock:
        await asyncio.gather(*(worker() for _ in range(concurrency)))
    return clock


async def csv_lists(chunks: AsyncIterator[bytes]) -> AsyncIterator[list[str]]:
    """CSV records as lists from UTF-8 byte chunks: each chunk cut at its last line end
    and fed to ``csv.reader`` (the result has no line breaks inside fields)."""
    pending = b""
    async for chunk in chunks:
        data = pending + chunk
        cut = data.rfind(b"\n") + 1
        pending = data[cut:]
        for record in csv.reader(data[:cut].decode().splitlines()):
            yield record
    if pending:
        for record in csv.reader([pending.decode()]):
            yield record


async def rows_floor(session: Any, base_url: str, job_id: int) -> int:
    """Read a CSV result with ``iter_chunked(64 KiB)`` + ``csv.reader``; the row count."""
    params = {"job_id": job_id, "api": API_KEY, "username": USERNAME}
    async with session.get(base_url + DOWNLOAD_PATH, params=params) as response:
        records = csv_lists(response.content.iter_chunked(CHUNK))
        count = -1  # the header
        async for _ in records:
            count += 1
    return count


def _model(name: str, fields: Iterable[tuple[str, Any]]) -> Any:
    from pydantic import ConfigDict, create_model

    spec: dict[str, Any] = {key: (kind | None, None) for key, kind in fields}
    return create_model(name, __config__=ConfigDict(extra="allow"), **spec)


def pydantic_contact_lists() -> Callable[[bytes], Any]:
    """pydantic v2 models of the listing (every field typed as asyncsdk types it, unknown
    keys kept like asyncsdk's ``extra``): bytes -> models with ``validate_json``."""
    from pydantic import TypeAdapter

    dates = {"dob", "marriage_date"}
    sample = contact_record(1)
    contact = _model("PContact", ((k, dt.date if k in dates else type(v))
                                  for k, v in sample.items()))
    group = _model("PContactGroup", [("contact", int), ("data", list[contact])])
    contact_list = _model("PContactList", [
        ("id", int), ("name", str), ("is_email", bool), ("is_push", bool), ("is_sms", bool),
        ("app_id", str), ("emaillist", list[group])])
    return TypeAdapter(list[contact_list]).validate_json


def records_in(lists: Any) -> int:
    """Contact records in a decoded listing (models or dicts)."""
    if lists and isinstance(lists[0], dict):
        return sum(len(g["data"]) for cl in lists for g in cl["emaillist"])
    return sum(len(g.data) for cl in lists for g in cl.emaillist)


def alternate(repeat: int, names: Sequence[str]) -> list[str]:
    """The running order of one repeat: forwards on even repeats, backwards on odd ones
    (A B, B A, ...), so neither side always runs first."""
    return list(names) if repeat % 2 == 0 else list(reversed(names))

