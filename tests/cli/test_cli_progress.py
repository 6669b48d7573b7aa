"""What the progress line shows on a terminal: no rate for counts that are not a
throughput (a job's polls showed "1563.87polls/s"), a rate for addresses and rows."""

from __future__ import annotations

import io
import sys

import pytest

from asyncsdk.cli import jobs as cli_jobs
from asyncsdk.cli.progress import PlainBar, Progress


class Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


def test_a_count_without_a_rate_shows_none() -> None:
    out = Terminal()
    bar = PlainBar(None, "polls", out, rate=False)
    bar.update(1)
    bar.set_postfix_str("job 7: processing after 0.0s")
    bar.close()
    assert "/s" not in out.getvalue()
    assert "1 polls  0:00  job 7: processing after 0.0s" in out.getvalue()


def test_addresses_keep_their_rate() -> None:
    out = Terminal()
    bar = PlainBar(None, "addr", out)
    bar.update(3)
    bar.close()
    assert "3 addr  " in out.getvalue() and "/s" in out.getvalue()


async def test_waiting_for_a_job_shows_no_rate_of_polls(monkeypatch: pytest.MonkeyPatch,
                                                        ) -> None:
    monkeypatch.setitem(sys.modules, "tqdm", None)  # the plain bar (tqdm is optional)
    made: list[Progress] = []
    real = cli_jobs.Progress

    def progress(*args: object, **kwargs: object) -> Progress:
        made.append(real(*args, **kwargs))  # type: ignore[arg-type]
        return made[-1]

    monkeypatch.setattr(cli_jobs, "Progress", progress)

    class Job:
        job_id = 7

        async def wait(self, *, interval: float, deadline: float | None,
                       max_interval: float, on_status: object) -> None:
            on_status("processing", 0.0)  # type: ignore[operator]
            on_status("success", 0.001)  # type: ignore[operator]

    class Args:
        poll_interval, deadline = 1.0, None

    class Env:
        stderr = Terminal()

    await cli_jobs.wait_for(Job(), Args(), Env())  # type: ignore[arg-type]
    shown = Env.stderr.getvalue()
    assert "2 polls" in shown and "job 7: success" in shown
    assert "/s" not in shown  # was "2 polls  1563.9/s"


def test_tqdm_shows_no_rate_of_polls_either() -> None:
    pytest.importorskip("tqdm")
    out = Terminal()
    progress = Progress(None, "polls", out, rate=False)
    progress.advance()
    progress.status("job 7: processing")
    progress.close()
    assert "/s" not in out.getvalue() and "1 polls" in out.getvalue()
