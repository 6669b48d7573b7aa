"""Where ``ValidationJob.download`` writes: the file a path names, replaced atomically
where that is possible, written in place where a rename would destroy it.

* A symbolic link is followed: the file it leads to gets the new content and the link
  stays a link (as ``open(path, "w")`` writes through it).
* A new file, or an existing regular one, is written to a temporary file beside it and
  renamed over it once whole; an existing file's permission bits are kept (a private
  ``0600`` result does not come back readable by everyone).
* An existing device, pipe or socket (``/dev/null``, a FIFO) is written in place: a
  rename over it would replace it with a regular file.
"""

from __future__ import annotations

import errno
import os
import secrets
import stat
from contextlib import suppress
from typing import BinaryIO

__all__ = ["Destination", "temporary_name"]


class Destination:
    """The file ``download()`` writes for ``path`` (already checked by
    ``check_file_path``). ``open()`` before anything is fetched; ``commit()`` once the
    content is whole; ``discard()`` on any failure (the target is then untouched, unless
    it is written in place)."""

    __slots__ = ("_mode", "target", "temp")

    def __init__(self, path: str) -> None:
        self.target = os.path.realpath(path)
        try:
            mode: int | None = os.stat(self.target).st_mode
        except OSError:  # not there (or not reachable: opening it says why)
            mode = None
        in_place = mode is not None and not stat.S_ISREG(mode)
        #: the temporary file renamed over ``target``; None: written in place
        self.temp = None if in_place else temporary_name(self.target)
        self._mode = None if mode is None else stat.S_IMODE(mode) & 0o777

    @property
    def atomic(self) -> bool:
        """True when the content goes to a temporary file renamed over the target."""
        return self.temp is not None

    def open(self) -> BinaryIO:
        """The file to write the content to; an ``OSError`` names ``target`` (not the
        temporary file the caller never named)."""
        try:
            return self._open()
        except OSError as exc:
            raise _named(exc, self.target) from None

    def _open(self) -> BinaryIO:
        if self.temp is None:
            # Without a reader a FIFO's open would block the loop: fail at once (ENXIO).
            fd = os.open(self.target, os.O_WRONLY | os.O_NONBLOCK | os.O_CLOEXEC)
        else:
            fd = os.open(self.temp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC,
                         0o666 if self._mode is None else self._mode)
        try:
            if self.temp is None:
                os.set_blocking(fd, True)
            elif self._mode is not None:  # exactly the old file's bits, whatever the umask
                os.fchmod(fd, self._mode)
            return os.fdopen(fd, "wb")
        except BaseException:
            os.close(fd)
            raise

    def commit(self) -> None:
        """Put the written content in place (the temporary file renamed over the target)."""
        if self.temp is not None:
            try:
                os.replace(self.temp, self.target)
            except OSError as exc:
                raise _named(exc, self.target) from None

    def discard(self) -> None:
        """Remove the temporary file, if any (after a failure)."""
        if self.temp is not None:
            with suppress(OSError):
                os.unlink(self.temp)


def _named(exc: OSError, target: str) -> OSError:
    """``exc`` (same class and errno) naming the download's ``target``."""
    why = "no process is reading the pipe" if exc.errno == errno.ENXIO else exc.strerror
    return type(exc)(exc.errno, f"cannot write the download: {why}", target)


def temporary_name(target: str) -> str:
    """A fresh temporary file name beside ``target`` (``.name.XXXXXXXX.part``), the name
    shortened to stay within the directory's file-name limit (``NAME_MAX``)."""
    folder, name = os.path.split(target)
    try:
        limit = os.pathconf(folder or ".", "PC_NAME_MAX")
    except (OSError, ValueError):
        limit = 255
    suffix = f".{secrets.token_hex(4)}.part"
    room = limit - len(os.fsencode(suffix)) - 1
    while len(os.fsencode(name)) > room:
        name = name[:-1]
    return os.path.join(folder, f".{name}{suffix}")
