"""A stream broken off is a call given up, said at WARNING once (DESIGN §3: "a call
given up at WARNING").

Before: a result read with ``download()`` or ``rows()`` whose answer was cut short
after its head raised ``APIConnectionError`` with no line above DEBUG (the DEBUG line
of its attempt said 200), while the same failure of an answer read in full, or a 503 to
the same download, was given up at WARNING.
"""

from __future__ import annotations

import logging
import re
from pathlib import Path

import pytest

import asyncsdk
from asyncsdk.testing import Sandbox, VirtualClock

KEY = "kÖ+y/Z=9==Qx"
USER = "logging.user"
DOWNLOAD = "/api/v1/jobs/download"


async def _download(job: asyncsdk.ValidationJob, tmp: Path) -> None:
    await job.download(tmp / "out.csv")


async def _rows(job: asyncsdk.ValidationJob, tmp: Path) -> None:
    async for _ in job.rows():
        pass


@pytest.mark.parametrize("read", [_download, _rows], ids=["download", "rows"])
@pytest.mark.parametrize("plain_503s", [0, 1])
async def test_a_stream_cut_short_is_given_up_at_warning_once(
    caplog: pytest.LogCaptureFixture, tmp_path: Path, read: object, plain_503s: int,
) -> None:
    caplog.set_level(logging.INFO, logger="asyncsdk")
    async with Sandbox(api_key=KEY, username=USER) as sb, sb.client(
            max_retries=2, clock=VirtualClock()) as client:
        job = client.validation.job(sb.make_job(rows=2000))
        if plain_503s:
            sb.faults.status(DOWNLOAD, 503, times=plain_503s)
        sb.faults.truncated(DOWNLOAD, times=None)
        with pytest.raises(asyncsdk.APIConnectionError, match="cut short"):
            await read(job, tmp_path)  # type: ignore[operator]
    records = [r for r in caplog.records if r.name == "asyncsdk"]
    warnings = [r.getMessage() for r in records if r.levelno == logging.WARNING]
    assert len(warnings) == 1, warnings
    attempts = plain_503s + 1
    assert re.fullmatch(
        rf"Giving up GET http://127\.0\.0\.1:\d+{DOWNLOAD}\?job_id=\d+&\S+ after "
        rf"{attempts} attempt\(s\): validation\.job_download: the answer was cut short",
        warnings[0]), warnings[0]
    assert "api=REDACTED" in warnings[0] and KEY not in warnings[0]
    assert [r.levelno for r in records] == [logging.INFO] * plain_503s + [logging.WARNING]
