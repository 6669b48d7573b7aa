"""One run at a time per output file: ``check-many`` holds a lock on its ``-o`` for the
run's whole life, so that a second run on the same output (a ``--resume`` started while
the first still runs) is refused instead of paying for the same addresses twice.

The lock is ``.NAME.lock`` beside the output (the file a symbolic link leads to), held
with ``flock``: the kernel lets it go when the process ends, however it ends (a crash,
SIGKILL), so a lock file left by a dead run is stale and the next run simply takes it. A
run that ends normally removes the file. The file holds the pid of the run that holds
it, for the message. (Where there is no ``flock``, on Windows, no lock is taken.)
"""

from __future__ import annotations

import contextlib
import os
import sys
from collections.abc import Iterator
from pathlib import Path

from .common import UsageProblem

if sys.platform != "win32":
    import fcntl


def lock_path(output: Path) -> Path:
    """Where the lock of ``output`` lives: ``.NAME.lock`` in its folder."""
    return output.with_name(f".{output.name}.lock")


def _holder(path: Path) -> str:
    """The pid written in a held lock file ("another run" if it cannot be read)."""
    try:
        text = path.read_text(encoding="ascii").strip()
    except (OSError, UnicodeDecodeError):
        text = ""
    return f"pid {text}" if text.isdecimal() else "another run"


def _take(path: Path, output: Path) -> int | None:
    """A descriptor of ``path`` holding its lock, or None when the file at ``path`` was
    replaced meanwhile (try again).

    Raises:
        UsageProblem: another living run holds it.
    """
    fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        os.close(fd)
        raise UsageProblem(
            f"-o {output}: in use by another run ({_holder(path)}, still running); wait for "
            "it to end, or pass another -o") from None
    try:
        same = os.fstat(fd).st_ino == os.stat(path).st_ino
    except FileNotFoundError:  # the run before removed it as it ended
        same = False
    if not same:
        os.close(fd)
        return None
    return fd


@contextlib.contextmanager
def output_lock(output: Path) -> Iterator[None]:
    """Hold the lock of ``output`` for the block (see the module's docstring).

    Raises:
        UsageProblem: another run holds it.
    """
    if sys.platform == "win32":  # pragma: no cover - no flock there
        yield
        return
    # The file itself, however -o names it (a symbolic link, another spelling): one lock
    path = lock_path(Path(os.path.realpath(output)) if output.is_file() else output)
    fd = None
    while fd is None:
        fd = _take(path, output)
    try:
        os.ftruncate(fd, 0)
        os.write(fd, f"{os.getpid()}\n".encode())
        yield
    finally:
        with contextlib.suppress(OSError):
            path.unlink()  # still held: no other run can have it now
        os.close(fd)
