"""rows() and download() end to end on the cases the corpora found, in both wire shapes,
through a real local server (each a regression: it failed before)."""

from __future__ import annotations

import csv
import io
import json
import os
import sys
from pathlib import Path
from typing import Any

import aiohttp
import pytest
from aioresponses import aioresponses
from helpers import API_KEY, USERNAME, corpus_json
from validation_tools import LocalServer, streaming, url_of

import asyncsdk
from asyncsdk import EmailRow, Verdict

DOWNLOAD_PATH = "/api/v1/jobs/download"
HEADER = "Email,Name,Status,Role Based Emails"


def shapes(text: str) -> list[tuple[bytes, str]]:
    return [(text.encode(), "text/csv"),
            (json.dumps({"status": "success", "result": text}).encode(), "application/json")]


def expected_rows(text: str) -> list[EmailRow]:
    records = list(csv.reader(io.StringIO(text.lstrip("\ufeff"), newline=""), strict=True))
    roles = {"true": True, "false": False, "yes": True, "no": False, "y": True, "n": False,
             "1": True, "0": False}
    return [EmailRow(email=r[0].strip(), name=r[1], status=Verdict(r[2]),
                     role_based=roles.get(r[3].strip().lower()))
            for r in records[1:] if r]


CASES = {
    # a last record with a quoted line break and no final line end (RFC 4180 allows it)
    "quoted-newline-last": f'{HEADER}\na@b.com,"No man is an island,\nEntire of itself",Valid,1',
    # a quote inside an unquoted field, then more records
    "o-brien": f'{HEADER}\r\nx@y.z,O"Brien,Valid,True\r\nq@r.s,"Plain",Bounce,False\r\n',
    # CR-only line ends
    "cr-only": f'{HEADER}\rx@y.z,"Two\rlines",Valid,True\rq@r.s,P,Bounce,0\r',
    # the common spellings of the role flag, and an unknown one (None)
    "role-words": (f"{HEADER}\na@b.c,A,Valid,Yes\nd@e.f,B,Valid,no\ng@h.i,C,Valid,Y\n"
                   "j@k.l,D,Valid,N\nm@n.o,E,Valid,maybe\np@q.r,F,Valid,\n"),
}


@pytest.mark.parametrize("piece", [7, 1 << 20])
@pytest.mark.parametrize("case", CASES)
async def test_rows_and_download_read_what_csv_reads(
    local: LocalServer, local_client: asyncsdk.Client, tmp_path: Path, case: str, piece: int
) -> None:
    text = CASES[case]
    expected = expected_rows(text)
    for body, content_type in shapes(text):
        local.routes[DOWNLOAD_PATH] = streaming(body, content_type, piece)
        job = local_client.validation.job(4)
        assert [r async for r in job.rows()] == expected, content_type
        target = tmp_path / "out.csv"
        assert await job.download(target) == len(expected)
        assert target.read_bytes() == text.encode()


async def test_download_of_a_json_result_with_a_bom_writes_no_bom(
    local: LocalServer, local_client: asyncsdk.Client, tmp_path: Path
) -> None:
    """Regression: the JSON shape wrote the U+FEFF the CSV shape drops."""
    text = f"{HEADER}\r\na@b.com,A,Valid,True\r\n"
    target = tmp_path / "out.csv"
    for body, content_type in shapes("\ufeff" + text):
        local.routes[DOWNLOAD_PATH] = streaming(body, content_type, 5)
        assert await local_client.validation.job(4).download(target) == 1
        assert target.read_bytes() == text.encode(), content_type


@pytest.mark.parametrize("inside", ["a\x00a", "a\nb", "a\tb", "a\x1fb"])
async def test_raw_control_characters_in_the_json_result_are_refused(
    local: LocalServer, local_client: asyncsdk.Client, tmp_path: Path, inside: str
) -> None:
    """Regression: json.loads refuses a raw control character inside a string; the
    reader took it as text. The escaped form is read."""
    good = json.dumps({"status": "success", "result": f'{HEADER}\nx@y.z,"{inside}",Valid,1\n'})
    raw = good.replace(json.dumps(inside)[1:-1], inside)
    local.routes[DOWNLOAD_PATH] = streaming(raw.encode(), "application/json", 3)
    with pytest.raises(asyncsdk.ResponseDecodeError):
        async for _ in local_client.validation.job(4).rows():
            pass
    with pytest.raises(asyncsdk.ResponseDecodeError):
        await local_client.validation.job(4).download(tmp_path / "o.csv")
    assert os.listdir(tmp_path) == []
    local.routes[DOWNLOAD_PATH] = streaming(good.encode(), "application/json", 3)
    if "\x00" in inside and sys.version_info < (3, 11):  # Python 3.10's csv reads no NUL
        with pytest.raises(asyncsdk.ResponseDecodeError, match="NUL"):
            async for _ in local_client.validation.job(4).rows():
                pass
        return
    rows = [r async for r in local_client.validation.job(4).rows()]
    assert [r.name for r in rows] == [inside]


async def test_a_json_refusal_is_the_mapped_error_in_any_member_order(
    local: LocalServer, local_client: asyncsdk.Client
) -> None:
    body = b'{"error": "This Job Id not associated to your users.", "status": "fail"}'
    local.routes[DOWNLOAD_PATH] = streaming(body, "application/json", 4)
    with pytest.raises(asyncsdk.JobNotFoundError):
        async for _ in local_client.validation.job(4).rows():
            pass


# --- Content-Disposition (reference: aiohttp's own parser) --------------------------------
def disposition_cases() -> list[Any]:
    table = corpus_json("content-disposition/aiohttp-parse_content_disposition.json", [])
    cases = [pytest.param(c["header"], c["disptype"], id=f"{c['test']}:{c['line']}")
             for c in table]
    cases += [pytest.param("ATTACHMENT; filename=x.csv", "attachment", id="upper"),
              pytest.param('inline; filename="Not an attachment!"', "inline", id="inline")]
    return cases


@pytest.mark.filterwarnings("error")
@pytest.mark.parametrize(("header", "disptype"), disposition_cases())
async def test_an_attachment_is_what_aiohttp_parses_as_one(
    client: asyncsdk.Client, mocked: aioresponses, header: str, disptype: str | None
) -> None:
    """Regression: the download looked for the substring 'attachment'. A JSON answer
    served as text/plain is read as JSON unless it is an attachment (then as CSV, which
    it is not)."""
    text = f"{HEADER}\r\na@b.com,A,Valid,True\r\n"
    body = json.dumps({"status": "success", "result": text})
    mocked.get(url_of(DOWNLOAD_PATH), body=body, content_type="text/plain",
               headers={"Content-Disposition": header})
    job = client.validation.job(4)
    if disptype is not None and disptype.lower() == "attachment":
        with pytest.raises(asyncsdk.ResponseDecodeError):
            async for _ in job.rows():
                pass
    else:
        assert len([r async for r in job.rows()]) == 1


async def test_a_long_cr_only_result_is_read_through_rows(
    local: LocalServer, local_client: asyncsdk.Client
) -> None:
    """Regression: records were cut at line feeds only, so a 1.5 MB CR-only file failed
    with "a CSV record is too long"."""
    text = f"{HEADER}\r" + "a@b.com,N,Valid,True\r" * 75_000
    for body, content_type in shapes(text):
        local.routes[DOWNLOAD_PATH] = streaming(body, content_type, 65536)
        count = 0
        async for row in local_client.validation.job(4).rows():
            assert row.email == "a@b.com"
            count += 1
        assert count == 75_000


async def test_a_decode_error_quoting_the_answer_shows_no_credential(
    local: LocalServer, local_client: asyncsdk.Client
) -> None:
    """Regression: a 200 answer that is not the result CSV was quoted unscrubbed."""
    body = f"<html><p>{'x' * 30} {API_KEY} {USERNAME}</html>,x\r\nmore\r\n".encode()
    local.routes[DOWNLOAD_PATH] = streaming(body, "text/csv", 7)
    with pytest.raises(asyncsdk.ResponseDecodeError) as info:
        async for _ in local_client.validation.job(4).rows():
            pass
    shown = f"{info.value} {info.value!r}"
    assert "html" in shown
    for secret in (API_KEY, USERNAME):
        assert secret[:6] not in shown  # not even cut short


async def test_a_header_aiohttp_cannot_parse_is_no_attachment(
    client: asyncsdk.Client, mocked: aioresponses, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Regression (found on the lowest allowed aiohttp, 3.12.0): its parser raised a bare
    IndexError for ``attachment; filename=``, which escaped ``rows()``. Such a header has
    no disposition type, as later aiohttp releases read it."""

    def crash(self: Any) -> Any:
        raise IndexError("string index out of range")

    monkeypatch.setattr(aiohttp.ClientResponse, "content_disposition", property(crash))
    text = f"{HEADER}\r\na@b.com,A,Valid,True\r\n"
    mocked.get(url_of(DOWNLOAD_PATH), body=json.dumps({"status": "success", "result": text}),
               content_type="text/plain", headers={"Content-Disposition": "attachment; filename="})
    rows = [r async for r in client.validation.job(4).rows()]
    assert [r.email for r in rows] == ["a@b.com"]
