"""Email validation: single check, jobs (create, status, download) and hosted files.

Validation answers HTTP 200 with ``{"status": "fail", "error": <text>}`` on every
refusal. Checks run in this order, the first failure answering: (1) every required query
parameter present and well formed (``timeout`` a finite number >= 0, ``job_id`` an
integer, ``email`` and ``file_name`` non-empty), (2) credentials, (3) the operation's own
checks.
"""

from __future__ import annotations

import asyncio
import codecs
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
    """Read the addresses (and names) of an uploaded list: one per address, in the
    file's order, duplicates kept; None if it is not a list.

    Read as ``asyncsdk check-many`` and ``validate`` read their input (so that the
    command line's ``--sandbox validate`` matches every result row to its input row):
    UTF-8 (a BOM is skipped) or UTF-16 with a BOM; lines ended by CRLF, LF or CR; blank
    lines and ``#`` comments before the first line skipped. That first line decides:

    * no ``@`` in it: a header. Its delimiter is whichever of ``,`` ``;`` and tab it
      holds most of; its email column is named ``email``, ``e-mail``, ``mail``, ``email
      address``... (any case; else the first column), a ``name`` column fills the
      result's Name. The rows after it are CSV (quoted cells may hold delimiters and
      line breaks); a row with an empty email cell is not an address.
    * an ``@`` and no delimiter: a plain list, each line that is neither blank nor a
      ``#`` comment one address.
    * an ``@`` and a delimiter: CSV rows without a header, the first cell the address,
      the second the name.

    A single line without ``@`` that names no email column is not a header but the
    first (malformed) address. Text that is not well-formed CSV (a stray quote would
    take every line after it into one cell) is read one row per line: no address is
    lost or merged. Empty, binary (NUL, or neither UTF-8 nor UTF-16 with a BOM) or
    ``@``-free content is refused.
    """
    text = _decode(data)
    if text is None or "@" not in text:
        return None
    first = next(((line, start) for line, start, _ in _lines(text) if _is_content(line)), None)
    if first is None:
        return None
    line, start = first[0].strip(), first[1]
    layout = None if "@" in line else _header_layout(line)
    if layout is not None:  # the rows after the header
        email_at, name_at, delimiter = layout
        rows = _table(_after_line(text, start), delimiter)
    elif not any(d in line for d in _DELIMITERS):
        return [(ln.strip(), "") for ln, at, _ in _lines(text) if at >= start
                and _is_content(ln)] or None
    else:
        email_at, name_at = 0, 1
        rows = _table(text[start:], _delimiter_of(line))
    found = [(_cell(row, email_at), _cell(row, name_at)) for row in rows]
    return [(email, name) for email, name in found if email] or None


_DELIMITERS = (",", ";", "\t")
#: One line and its break (CRLF, LF, or a lone CR: old Mac files, spreadsheet exports).
_LINE = re.compile(r"([^\r\n]*)(\r\n|\r|\n)|([^\r\n]+)\Z")
#: Column names, the likeliest first: the command line's reader knows the first four,
#: and takes the same column where a header has more than one of these.
_EMAIL_COLUMNS = ("email", "emailaddress", "mail", "mailaddress", "emails", "emailid",
                  "address")
_NAME_COLUMNS = ("name", "fullname")


def _decode(data: bytes) -> str | None:
    """UTF-8 (BOM or none) or UTF-16 with its BOM; None for anything else or a NUL."""
    utf16 = data.startswith((codecs.BOM_UTF16_LE, codecs.BOM_UTF16_BE))
    try:
        text = data.decode("utf-16" if utf16 else "utf-8-sig")
    except UnicodeDecodeError:
        return None
    return text if text and "\x00" not in text else None


def _lines(text: str) -> Iterator[tuple[str, int, int]]:
    """(line without its break, where it starts, where the next one starts)."""
    for match in _LINE.finditer(text):
        yield match.group(1) if match.group(3) is None else match.group(3), *match.span()


def _after_line(text: str, start: int) -> str:
    """``text`` after the line that starts at ``start`` and its break."""
    match = _LINE.match(text, start)
    return text[match.end():] if match is not None else ""


def _is_content(line: str) -> bool:
    stripped = line.strip()
    return bool(stripped) and not stripped.startswith("#")


def _delimiter_of(line: str) -> str:
    """Whichever of comma, semicolon and tab ``line`` holds most of (a comma if none)."""
    return max(_DELIMITERS, key=line.count)


def _column_key(name: str) -> str:
    return re.sub(r"[^a-z0-9]", "", name.lower())


def _header_layout(line: str) -> tuple[int, int | None, str] | None:
    """(email column, name column, delimiter) of a header line; None if ``line`` is a
    lone cell naming no email column (an address without ``@``, then)."""
    delimiter = _delimiter_of(line)
    try:
        cells = next(csv.reader([line], delimiter=delimiter), [])
    except csv.Error:
        cells = line.split(delimiter)
    keys = [_column_key(cell) for cell in cells]
    email_at = _column_named(keys, _EMAIL_COLUMNS)
    if email_at is None and len(cells) < 2:
        return None
    return email_at or 0, _column_named(keys, _NAME_COLUMNS), delimiter


def _column_named(keys: list[str], names: tuple[str, ...]) -> int | None:
    """The first column of the likeliest of ``names`` that ``keys`` holds."""
    return next((keys.index(name) for name in names if name in keys), None)


def _table(text: str, delimiter: str) -> list[list[str]]:
    """The cells of ``text`` read as CSV (quoted cells may hold delimiters and line
    breaks); text that is not well-formed CSV, one row per line."""
    try:
        # newline="": the csv module sees the line endings as sent, every one of them.
        return list(csv.reader(io.StringIO(text, newline=""), delimiter=delimiter, strict=True))
    except csv.Error:
        return [[cell.strip().strip('"') for cell in line.split(delimiter)]
                for line, _, _ in _lines(text)]


def _cell(row: list[str], at: int | None) -> str:
    return row[at].strip() if at is not None and at < len(row) else ""


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
    job = state.new_job(account.api_key, lambda: iter(rows), len(rows), state.clock())
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
    return web.json_response({"status": job.poll(_state(request).clock())})


async def jobs_download(request: web.Request) -> web.StreamResponse:
    state = _state(request)
    account = _login(request, ("job_id",), _texts.REQUIRED_NO_DOT)
    job = _owned_job(request, account)
    if not job.is_done(state.clock()):
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
    response.charset = "utf-8"
    if fault is not None and kind is FaultKind.WRONG_CONTENT_TYPE:
        # The whole header as given, a charset included (not replaced by ours).
        response.headers["Content-Type"] = str(fault.options.get("content_type", "text/html"))
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
    # As a header: aiohttp's content_type= refuses one with a charset (an answer 500).
    return web.Response(body=hosted.data, headers={"Content-Type": hosted.content_type})


ROUTES = [
    web.get("/api/v1/single/check", single_check),
    web.get("/api/v1/jobs/create", jobs_create),
    web.get("/api/v1/jobs/status", jobs_status),
    web.get("/api/v1/jobs/download", jobs_download),
    # Any name: the default pattern takes no "{", "}" or "/" (a file so named was 404).
    web.get("/files/{token}/{name:.+}", hosted_file),
]
"""The validation routes and the hosted-file route."""
