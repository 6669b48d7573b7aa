"""The reliability suite's hooks.

* Prints what the suite counted (``tests/reliability/README.md`` takes its figures from
  this line).
* Fails a test during which asyncio reported an unclosed session or connector, a task
  destroyed while pending or an exception never retrieved: aiohttp and asyncio report
  those through the loop's exception handler (the ``asyncio`` logger), not as
  exceptions. ResourceWarning and unraisable exceptions are errors already
  (``pyproject.toml``).
"""

from __future__ import annotations

import gc
import logging
from collections.abc import Iterator

import pytest
from reliability_helpers import FIGURES

#: What the loop's exception handler says about a leak.
LEAK_WORDS = ("Unclosed", "unclosed", "was destroyed but it is pending", "never retrieved")


class _LeakReports(logging.Handler):
    def __init__(self) -> None:
        super().__init__(logging.WARNING)
        self.messages: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        message = record.getMessage()
        if any(word in message for word in LEAK_WORDS):
            self.messages.append(message)


REPORTS = _LeakReports()


def pytest_configure(config: pytest.Config) -> None:
    logging.getLogger("asyncio").addHandler(REPORTS)


@pytest.fixture(autouse=True)
def _no_leak_reports() -> Iterator[None]:
    REPORTS.messages.clear()
    yield
    found, REPORTS.messages[:] = list(REPORTS.messages), []
    FIGURES["leaks found"] += len(found)
    assert not found, f"asyncio reported leaks: {found}"


def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    gc.collect()  # anything left unclosed by the last tests reports now
    if REPORTS.messages:
        FIGURES["leaks found"] += len(REPORTS.messages)
        session.exitstatus = pytest.ExitCode.TESTS_FAILED


def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter) -> None:
    if REPORTS.messages:
        terminalreporter.write_line(f"asyncio reported leaks: {REPORTS.messages}", red=True)
    if FIGURES:
        shown = ", ".join(f"{k}: {v}" for k, v in sorted(FIGURES.items()))
        terminalreporter.write_line(f"reliability figures: {shown}")
