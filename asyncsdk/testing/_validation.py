"""Email validation: single check, jobs (create, status, download) and hosted files.

Validation answers HTTP 200 with ``{"status": "fail", "error": <text>}`` on every
refusal. Checks run in this order, the first failure answering: (1) every required query
parameter present and well formed (``timeout`` a finite number >= 0, ``job_id`` an
integer, ``email`` and ``file_name`` non-empty), (2) credentials, (3) the operation's own
checks.
"""

from __future__ import annotations

import asyncio
import csv
import io
import json
import math
import re
from collections.abc import Iterator
from typing import Any
from urllib.parse import urlsplit

import aiohttp
from aiohttp import web

from . import _texts
from ._faults import FAULT_KEY, INVALID_JSON_BODY, Fault, FaultKind
from ._resources import Reject
from ._state import STATE_KEY, Account, Job, Row, SandboxState

__all__ = ["RESULT_HEADER", "ROUTES", "csv_chunks", "parse_address_file"]

RESULT_HEADER = ("Email", "Name", "Status", "Role Based Emails")
LOOPBACK_HOSTS = frozenset({"127.0.0.1", "localhost", "::1"})


def _fail(error: str) -> Reject:
    return Reject(web.json_response({"status": "fail", "error": error}))


def _state(request: web.Request) -> SandboxState:
    return request.app[STATE_KEY]


#: A JSON-style number in ASCII: what a client sends for ``timeout`` (``float()`` alone
#: would also take other scripts' digits, "5_0" and " 5").
_NUMBER = re.compile(r"[+-]?(?:[0-9]+(?:\.[0-9]*)?|\.[0-9]+)(?:[eE][+-]?[0-9]+)?", re.ASCII)
#: A job id: ASCII digits of a 64-bit number (other scripts' digits, superscripts and
#: 5,000 digits are not ids).
_JOB_ID = re.compile(r"[0-9]{1,19}", re.ASCII)


def _valid_timeout(raw: str | None) -> bool:
    if raw is None or not _NUMBER.fullmatch(raw):
        return False
    value = float(raw)
    return math.isfinite(value) and value >= 0


def _login(request: web.Request, required: tuple[str, ...], missing_text: str) -> Account:
    """Steps (1) and (2): required parameters, then credentials."""
    query = request.query
    if any(not query.get(name) for name in ("api", "username", *required)):
        raise _fail(missing_text)
    if "timeout" in required and not _valid_timeout(query.get("timeout")):
        raise _fail(missing_text)
    if "job_id" in required and not _JOB_ID.fullmatch(query["job_id"]):
        raise _fail(missing_text)
    account = _state(request).account(query["api"], query["username"])
    if account is None:
        raise _fail(_texts.AUTH_FAILED)
    return account


def role_value(role: bool, role_format: str) -> Any:
    """``role`` as the settings say the service sends it: JSON bool, text or 1/0."""
    if role_format == "str":
        return "True" if role else "False"
    if role_format == "int":
        return int(role)
    return role


# -- single check -------------------------------------------------------------------------
async def single_check(request: web.Request) -> web.Response:
    state = _state(request)
    account = _login(request, ("email", "timeout"), _texts.REQUIRED)
    email = request.query["email"]
    if not state.rules.is_well_formed(email):
        raise _fail(_texts.EMAIL_FORMAT)
    if not account.can_spend():
        raise _fail(_texts.NO_CREDIT)
    account.spend()
    return web.json_response(
        {
            "email": email,
            "status": "success",
            "result": state.rules.verdict(email),
            "role": role_value(state.rules.is_role(email), state.settings.role_format),
        }
    )


# -- jobs ---------------------------------------------------------------------------------
def parse_address_file(data: bytes) -> list[tuple[str, str]] | None:
    """Read the addresses (and names) of an uploaded list; None if it is not a list.

    Accepted: UTF-8 text, either CSV whose header row has an ``email`` column (any case;
    an optional ``name`` column fills the result's Name), or rows whose first column is
    the address (a second column, if any, is the name). Empty, binary (NUL bytes or not
    UTF-8) or ``@``-free content is refused.
    """
    if not data or b"\x00" in data:
        return None
    try:
        text = data.decode("utf-8-sig")
    except UnicodeDecodeError:
        return None
    if "@" not in text:
        return None
    rows = [row for row in csv.reader(io.StringIO(text)) if any(c.strip() for c in row)]
    if not rows:
        return None
    header = [cell.strip().lower() for cell in rows[0]]
    if "email" in header:
        email_at = header.index("email")
        name_at = header.index("name") if "name" in header else None
        body = rows[1:]
    else:
        email_at, name_at, body = 0, (1 if len(rows[0]) > 1 else None), rows
    found: list[tuple[str, str]] = []
    for row in body:
        email = row[email_at].strip() if len(row) > email_at else ""
        name = row[name_at].strip() if name_at is not None and len(row) > name_at else ""
        if email:
            found.append((email, name))
    return found or None


async def _fetch(state: SandboxState, url: str) -> bytes | None:
    """The whole file at ``url``, or None if it may not or cannot be downloaded, or is
    over ``max_file_bytes``.

    Only loopback hosts are fetched unless ``allow_remote_files``: a test server that
    fetches any URL a request names would be a server-side request forgery tool, and
    tests must never reach the network. Redirects are not followed for the same reason.
    """
    parts = urlsplit(url)
    if parts.scheme not in ("http", "https") or not parts.hostname:
        return None
    if not state.settings.allow_remote_files and parts.hostname not in LOOPBACK_HOSTS:
        return None
    if state.http is None:
        return None
    try:
        async with state.http.get(url, allow_redirects=False) as resp:
            if not 200 <= resp.status < 300:
                return None
            return await _read_whole(resp, state.settings.max_file_bytes)
    except (aiohttp.ClientError, asyncio.TimeoutError, ValueError):
        return None


async def _read_whole(resp: aiohttp.ClientResponse, limit: int) -> bytes | None:
    """The whole body, or None if it is longer than ``limit`` bytes.

    One ``content.read(n)`` returns what is buffered so far, not ``n`` bytes: a file
    over ~64 KiB came back cut (rows lost, a UTF-8 character split). Read to the end.
    """
    if resp.content_length is not None and resp.content_length > limit:
        return None  # refused before it is downloaded
    data = bytearray()
    async for chunk in resp.content.iter_any():
        data += chunk
        if len(data) > limit:
            return None
    return bytes(data)


async def jobs_create(request: web.Request) -> web.Response:
    state = _state(request)
    account = _login(request, ("file_name", "timeout"), _texts.REQUIRED)
    if not account.can_spend():
        raise _fail(_texts.NO_CREDIT)
    data = await _fetch(state, request.query["file_name"])
    if data is None:
        raise _fail(_texts.NOT_DOWNLOADABLE)
    addresses = parse_address_file(data)
    if addresses is None:
        raise _fail(_texts.FILE_FORMAT)
    if not account.can_spend(len(addresses)):
        raise _fail(_texts.NO_CREDIT)
    account.spend(len(addresses))
    rules = state.rules
    # A malformed address cannot be delivered to: its verdict in a job is Bounce.
    rows: list[Row] = [
        (
            email,
            name,
            rules.verdict(email) if rules.is_well_formed(email) else "Bounce",
            rules.is_role(email),
        )
        for email, name in addresses
    ]
    now = asyncio.get_running_loop().time()
    job = state.new_job(account.api_key, lambda: iter(rows), len(rows), now)
    return web.json_response({"status": "success", "job_id": job.id})


def _owned_job(request: web.Request, account: Account) -> Job:
    job = _state(request).jobs.get(int(request.query["job_id"]))
    if job is None or job.owner != account.api_key:
        raise _fail(_texts.JOB_NOT_YOURS)
    return job


async def jobs_status(request: web.Request) -> web.Response:
    account = _login(request, ("job_id",), _texts.REQUIRED_NO_DOT)
    job = _owned_job(request, account)
    # A job's own failure is {"status": "fail"} with no error text: an error text would
    # mean the *request* failed.
    return web.json_response({"status": job.poll(asyncio.get_running_loop().time())})


async def jobs_download(request: web.Request) -> web.StreamResponse:
    state = _state(request)
    account = _login(request, ("job_id",), _texts.REQUIRED_NO_DOT)
    job = _owned_job(request, account)
    if not job.is_done(asyncio.get_running_loop().time()):
        raise _fail(_texts.JOB_PROCESSING)
    if job.final_status == "fail":
        raise _fail(_texts.JOB_FAILED_DOWNLOAD)
    shape = state.settings.download_shape
    if shape == "url":
        return web.json_response({"status": "success", "result": state.job_result_url(job)})
    return await stream_result(request, job, as_json=shape == "json")


# -- result streaming -----------------------------------------------------------------------
def role_texts(role_format: str) -> tuple[str, str]:
    """How a result CSV writes role True and False."""
    return ("1", "0") if role_format == "int" else ("True", "False")


def csv_chunks(rows: Iterator[Row], role_format: str, chunk_size: int) -> Iterator[str]:
    """The result CSV (header first) as text pieces of about ``chunk_size`` characters."""
    yes, no = role_texts(role_format)
    buffer = io.StringIO()
    writer = csv.writer(buffer, lineterminator="\r\n")
    writer.writerow(RESULT_HEADER)
    for email, name, status, role in rows:
        writer.writerow((email, name, status, yes if role else no))
        if buffer.tell() >= chunk_size:
            yield buffer.getvalue()
            buffer.seek(0)
            buffer.truncate()
    if buffer.tell():
        yield buffer.getvalue()


async def stream_result(request: web.Request, job: Job, *, as_json: bool) -> web.StreamResponse:
    """Stream a job's result without holding it whole: as CSV, or inside a JSON string.

    The JSON shape is written as a prefix, each CSV piece escaped by ``json.dumps``
    (without its quotes), and a suffix, so the document is valid JSON at any size.
    """
    settings = _state(request).settings
    fault: Fault | None = request.get(FAULT_KEY)
    kind = fault.kind if fault is not None else None
    response = web.StreamResponse()
    if as_json:
        response.content_type = "application/json"
    else:
        response.content_type = "text/csv"
        response.headers["Content-Disposition"] = 'attachment; filename="emaillist.csv"'
    if fault is not None and kind is FaultKind.WRONG_CONTENT_TYPE:
        response.content_type = str(fault.options.get("content_type", "text/html"))
    response.charset = "utf-8"
    await response.prepare(request)
    if kind is FaultKind.INVALID_JSON:
        await response.write(INVALID_JSON_BODY)
        await response.write_eof()
        return response
    if as_json:
        await response.write(b'{"status": "success", "result": "')
    if job.render is not None:
        pieces = job.render(settings.role_format, settings.chunk_size)
    else:
        pieces = csv_chunks(job.rows(), settings.role_format, settings.chunk_size)
    for piece in pieces:
        await response.write((json.dumps(piece)[1:-1] if as_json else piece).encode())
        if kind is FaultKind.TRUNCATED:  # the first piece only, then hang up
            if request.transport is not None:
                request.transport.abort()
            return response
    if as_json:
        await response.write(b'"}')
    await response.write_eof()
    return response


async def hosted_file(request: web.Request) -> web.StreamResponse:
    """``GET /files/<token>/<name>``: a hosted file or a job's result; no credentials."""
    state = _state(request)
    hosted = state.hosted.get(request.match_info["token"])
    if hosted is None or hosted.name != request.match_info["name"]:
        raise Reject(web.json_response({"detail": _texts.NOT_FOUND_DETAIL}, status=404))
    if hosted.job_id is not None:
        return await stream_result(request, state.jobs[hosted.job_id], as_json=False)
    return web.Response(body=hosted.data, content_type=hosted.content_type)


ROUTES = [
    web.get("/api/v1/single/check", single_check),
    web.get("/api/v1/jobs/create", jobs_create),
    web.get("/api/v1/jobs/status", jobs_status),
    web.get("/api/v1/jobs/download", jobs_download),
    web.get("/files/{token}/{name}", hosted_file),
]
"""The validation routes and the hosted-file route."""
