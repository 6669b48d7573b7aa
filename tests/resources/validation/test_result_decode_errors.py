"""A job's result that cannot be read names the answer it was reading: its status, its
URL (redacted) and the operation, the service's answer or the hosted file's host's.
Before, ``job result unreadable: ...`` came without ``status_code``, ``url`` or
``body`` (every other decode error of the library has them): a user could not tell
which answer was broken."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
from helpers import API_KEY, USERNAME
from validation_tools import LocalServer, streaming

import asyncsdk

DOWNLOAD_PATH = "/api/v1/jobs/download"
HOSTED_PATH = f"/files/{API_KEY}/result.csv"  # a hosted URL may hold a credential anywhere
HEADER = "Email,Name,Status,Role Based Emails\r\n"
CUT_JSON = json.dumps({"status": "success", "result": HEADER + "a@b.com,A,Valid,1\r\n"})

#: what the service answers (media type, body), and what the hosted file's host answers
#: (None: no hosted file)
BROKEN: dict[str, tuple[str, bytes, bytes | None]] = {
    "success without a result": ("application/json", b'{"status": "success"}', None),
    "a JSON answer cut short": ("application/json", CUT_JSON[:60].encode(), None),
    "a result that is not CSV": ("text/csv", b"<html><p>maintenance</p></html>\r\n", None),
    "a hosted file that is not CSV": ("application/json", b"", b"<html>gone</html>\r\n"),
    "a hosted file that is not UTF-8": ("application/json", b"", HEADER.encode() + b"\xff\r\n"),
}


def serve(local: LocalServer, case: str) -> tuple[int, str]:
    """Program ``local`` to answer ``case``; the status and path of the broken answer."""
    content_type, body, hosted = BROKEN[case]
    if hosted is None:
        local.routes[DOWNLOAD_PATH] = streaming(body, content_type, status=200)
        return 200, DOWNLOAD_PATH
    url = f"{local.url}{HOSTED_PATH}?token=t1&user={USERNAME}"
    local.routes[DOWNLOAD_PATH] = streaming(
        json.dumps({"status": "success", "result": url}).encode(), content_type)
    local.routes[HOSTED_PATH] = streaming(hosted, "text/csv", status=203)
    return 203, "/files/"


def assert_names_the_answer(error: asyncsdk.ResponseDecodeError, local: LocalServer,
                            status: int, path: str) -> None:
    assert error.message.startswith("job result unreadable")
    assert error.operation == "validation.job_download"
    assert error.status_code == status
    assert error.url is not None and error.url.startswith(f"{local.url}{path}")
    shown = f"{error} {error!r} {error.url} {error.body}"
    for secret in (API_KEY, USERNAME):
        assert secret[:6] not in shown
    assert error.__cause__ is None and error.__context__ is None  # chains no records
    if path == "/files/":
        assert "hosted elsewhere" in error.message
        assert "token=t1" in error.url and "REDACTED" in error.url
    else:
        assert "job_id=4" in error.url


@pytest.mark.parametrize("case", BROKEN)
async def test_rows_of_an_unreadable_result_name_the_answer(
    local: LocalServer, local_client: asyncsdk.Client, case: str
) -> None:
    status, path = serve(local, case)
    with pytest.raises(asyncsdk.ResponseDecodeError) as info:
        async for _ in local_client.validation.job(4).rows():
            pass
    assert_names_the_answer(info.value, local, status, path)


@pytest.mark.parametrize("case", BROKEN)
async def test_download_of_an_unreadable_result_names_the_answer(
    local: LocalServer, local_client: asyncsdk.Client, tmp_path: Path, case: str
) -> None:
    status, path = serve(local, case)
    target = tmp_path / "emaillist.csv"
    with pytest.raises(asyncsdk.ResponseDecodeError) as info:
        await local_client.validation.job(4).download(target)
    assert_names_the_answer(info.value, local, status, path)
    assert os.listdir(tmp_path) == []


async def test_a_json_answer_without_a_result_is_shown_in_the_error(
    local: LocalServer, local_client: asyncsdk.Client
) -> None:
    """The JSON answer's start is the error's ``body`` (scrubbed); a CSV one's, the
    user's records, is not."""
    local.routes[DOWNLOAD_PATH] = streaming(
        json.dumps({"status": "success", "note": f"key {API_KEY}"}).encode(),
        "application/json")
    with pytest.raises(asyncsdk.ResponseDecodeError) as info:
        await local_client.validation.job(4).rows().__anext__()
    assert info.value.body == '{"status": "success", "note": "key REDACTED"}'

    serve(local, "a result that is not CSV")
    with pytest.raises(asyncsdk.ResponseDecodeError) as info:
        await local_client.validation.job(4).rows().__anext__()
    assert info.value.body is None
