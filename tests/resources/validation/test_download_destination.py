"""download() and the file its path names: a symbolic link, an existing file's
permission bits, a device or pipe, a path that names a directory. Each failed before:
the path was replaced by a regular file whatever it was (as root, ``download("/dev/null")``
replaced the device), and ``"out/"`` wrote a file named ``out``.

Never point a test at ``/dev/null``: on the old code (as root) it replaces the device.
A FIFO in the test's own folder stands for every file that is not a regular one."""

from __future__ import annotations

import os
import stat
from pathlib import Path

import pytest
from validation_tools import LocalServer, streaming

import asyncsdk

DOWNLOAD_PATH = "/api/v1/jobs/download"
CSV_TEXT = "Email,Name,Status,Role Based Emails\r\na@b.com,A,Valid,True\r\nc@d.e,,Bounce,0\r\n"


@pytest.fixture
def job(local: LocalServer, local_client: asyncsdk.Client) -> asyncsdk.ValidationJob:
    local.routes[DOWNLOAD_PATH] = streaming(CSV_TEXT.encode(), "text/csv")
    return local_client.validation.job(4)


async def test_a_symbolic_link_is_written_through(job: asyncsdk.ValidationJob,
                                                  tmp_path: Path) -> None:
    real = tmp_path / "real.csv"
    real.write_text("previous result")
    link = tmp_path / "link.csv"
    link.symlink_to(real)
    assert await job.download(link) == 2
    assert link.is_symlink()  # before: replaced by a regular file, real.csv left as it was
    assert real.read_bytes() == CSV_TEXT.encode()
    assert sorted(os.listdir(tmp_path)) == ["link.csv", "real.csv"]


async def test_a_dangling_link_leads_to_the_file_written(job: asyncsdk.ValidationJob,
                                                         tmp_path: Path) -> None:
    link = tmp_path / "link.csv"
    link.symlink_to(tmp_path / "made.csv")
    assert await job.download(link) == 2
    assert link.is_symlink()
    assert (tmp_path / "made.csv").read_bytes() == CSV_TEXT.encode()


@pytest.mark.parametrize("mode", [0o600, 0o640, 0o604])
async def test_an_existing_file_keeps_its_permission_bits(
    job: asyncsdk.ValidationJob, tmp_path: Path, mode: int
) -> None:
    """Before: a private (0600) result came back readable by everyone (0666 & ~umask)."""
    target = tmp_path / "emaillist.csv"
    target.write_text("previous result")
    target.chmod(mode)
    assert await job.download(target) == 2
    assert target.read_bytes() == CSV_TEXT.encode()
    assert stat.S_IMODE(target.stat().st_mode) == mode


async def test_a_new_file_gets_the_modes_open_gives(job: asyncsdk.ValidationJob,
                                                    tmp_path: Path) -> None:
    umask = os.umask(0o022)
    os.umask(umask)
    target = tmp_path / "emaillist.csv"
    await job.download(target)
    assert stat.S_IMODE(target.stat().st_mode) == 0o666 & ~umask


async def test_a_pipe_is_written_into_not_replaced(job: asyncsdk.ValidationJob,
                                                   tmp_path: Path) -> None:
    fifo = tmp_path / "out.fifo"
    os.mkfifo(fifo)
    reader = os.open(fifo, os.O_RDONLY | os.O_NONBLOCK)  # a reader, without blocking
    try:
        assert await job.download(fifo) == 2
        assert stat.S_ISFIFO(os.lstat(fifo).st_mode)  # before: a regular file
        assert os.read(reader, 1 << 16) == CSV_TEXT.encode()
    finally:
        os.close(reader)
    assert os.listdir(tmp_path) == ["out.fifo"]


async def test_a_pipe_without_a_reader_is_an_os_error_before_anything_is_sent(
    local: LocalServer, job: asyncsdk.ValidationJob, tmp_path: Path
) -> None:
    """Opening a FIFO for writing waits for a reader: the loop would hang in ``open``."""
    fifo = tmp_path / "out.fifo"
    os.mkfifo(fifo)
    with pytest.raises(OSError, match="no process is reading the pipe") as info:
        await job.download(fifo)
    assert info.value.filename == os.path.realpath(fifo)
    assert stat.S_ISFIFO(os.lstat(fifo).st_mode)
    assert local.count(DOWNLOAD_PATH) == 0
    assert os.listdir(tmp_path) == ["out.fifo"]


@pytest.mark.parametrize("name", ["new/", "new/.", "new/..", "new" + os.sep + os.sep])
async def test_a_path_naming_a_directory_is_refused_before_anything_is_sent(
    local: LocalServer, job: asyncsdk.ValidationJob, tmp_path: Path, name: str
) -> None:
    """Before: ``download("new/")`` wrote a file named ``new``."""
    with pytest.raises(asyncsdk.InvalidInputError, match="directory"):
        await job.download(f"{tmp_path}{os.sep}{name}")
    assert local.count(DOWNLOAD_PATH) == 0
    assert os.listdir(tmp_path) == []


async def test_a_folder_that_is_not_there_is_named_in_the_error(
    local: LocalServer, job: asyncsdk.ValidationJob, tmp_path: Path
) -> None:
    """Before: the error named the hidden temporary file (``.o.csv.1a2b3c4d.part``)."""
    target = tmp_path / "missing" / "o.csv"
    with pytest.raises(FileNotFoundError, match="cannot write the download") as info:
        await job.download(target)
    assert info.value.filename == os.path.realpath(target)
    assert ".part" not in str(info.value)
    assert local.count(DOWNLOAD_PATH) == 0
