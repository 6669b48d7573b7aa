"""Progress on stderr for the command line: tqdm when installed, else a plain bar.

Drawn only when stderr is a terminal, so logs and pipes never receive control
characters. The plain bar needs nothing installed: the README's first command shows
progress on a bare install.
"""

from __future__ import annotations

import os
import time
from typing import Any, TextIO

WIDTH = 30
REDRAW_EVERY = 0.1  # seconds: a terminal redrawn 10 times a second looks live, costs nothing


class PlainBar:
    """``[#########.........]  1204/5000  24%  310/s  0:12 left`` redrawn in place with
    ``\\r``; without a total: ``1204 addr  310/s  0:04``; without a rate (counts that
    are not a throughput, such as polls): ``3 polls  0:04``."""

    def __init__(self, total: int | None, unit: str, stream: TextIO, *,
                 rate: bool = True) -> None:
        self.total, self.unit, self.stream, self.rate = total, unit, stream, rate
        self.count = 0
        self.note = ""
        self.started = self.drawn_at = time.monotonic()
        self.width = 0

    def update(self, count: int) -> None:
        self.count += count
        now = time.monotonic()
        if now - self.drawn_at >= REDRAW_EVERY or self.count == self.total:
            self.draw(now)

    def set_postfix_str(self, text: str) -> None:
        self.note = text
        self.draw(time.monotonic())

    def draw(self, now: float) -> None:
        self.drawn_at = now
        elapsed = max(now - self.started, 1e-9)
        rate = self.count / elapsed
        if self.total:
            done = min(self.count / self.total, 1.0)
            filled = round(WIDTH * done)
            left = (self.total - self.count) / rate if rate > 0 else 0.0
            text = (f"[{'#' * filled}{'.' * (WIDTH - filled)}] {self.count}/{self.total} "
                    f"{done:4.0%}  {rate:.0f}/s  {_clock(left)} left")
        elif self.rate:
            text = f"{self.count} {self.unit}  {rate:.1f}/s  {_clock(elapsed)}"
        else:
            text = f"{self.count} {self.unit}  {_clock(elapsed)}"
        if self.note:
            text = f"{text}  {self.note}"
        padding = " " * max(self.width - len(text), 0)  # wipe the rest of a longer line
        self.width = len(text)
        self.stream.write(f"\r{text}{padding}")
        self.stream.flush()

    def close(self) -> None:
        self.draw(time.monotonic())
        self.stream.write("\n")
        self.stream.flush()


def _clock(seconds: float) -> str:
    minutes, secs = divmod(int(seconds), 60)
    hours, minutes = divmod(minutes, 60)
    return f"{hours}:{minutes:02d}:{secs:02d}" if hours else f"{minutes}:{secs:02d}"


#: The size of a terminal that does not tell its own (a pty whose size was never set).
DEFAULT_COLUMNS, DEFAULT_ROWS = 80, 24


def _known_width(stream: TextIO) -> bool:
    """Whether ``stream``'s terminal tells its width (a pty may say 0 columns)."""
    try:
        return os.get_terminal_size(stream.fileno()).columns > 0
    except (OSError, ValueError):
        return False


#: tqdm's line for counts that are not a throughput: ``3 polls [00:04, job 7: ...]``.
NO_RATE_FORMAT = "{n_fmt} {unit} [{elapsed}{postfix}]"


class Progress:
    """A progress display on ``stream`` when it is a terminal, else nothing at all.

    ``unit`` names what is counted (``addr``, ``rows``); ``rate=False`` for counts whose
    rate means nothing (the polls of a job: a rate of polls per second is noise).
    """

    def __init__(self, total: int | None, unit: str, stream: TextIO, *,
                 rate: bool = True) -> None:
        self._bar: Any = None
        if not stream.isatty():
            return
        try:
            from tqdm import tqdm  # type: ignore[import-untyped,import-not-found,unused-ignore]
        except ImportError:
            self._bar = PlainBar(total, unit, stream, rate=rate)
            return
        shape: dict[str, Any] = {} if rate else {"bar_format": NO_RATE_FORMAT}
        if not _known_width(stream):  # tqdm would draw nothing in 0 columns and 0 rows
            shape.update(ncols=DEFAULT_COLUMNS, nrows=DEFAULT_ROWS)
        self._bar = tqdm(total=total, unit=unit, file=stream, dynamic_ncols="ncols" not in shape,
                         **shape)

    @property
    def shown(self) -> bool:
        """True when something is drawn."""
        return self._bar is not None

    def advance(self, count: int = 1) -> None:
        """Count ``count`` more items done."""
        if self._bar is not None:
            self._bar.update(count)

    def status(self, text: str) -> None:
        """Show ``text`` beside the bar."""
        if self._bar is not None:
            self._bar.set_postfix_str(text)

    def close(self) -> None:
        """End the display (its last state stays on screen); safe to call twice."""
        bar, self._bar = self._bar, None
        if bar is not None:
            bar.close()
