"""Constants and small fakes shared by the tests."""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncGenerator
from pathlib import Path
from typing import Any

import pytest

API_KEY = "sk_live_SECRET_key_0123456789"
USERNAME = "secret-user-name"
BASE = "https://api.test"

#: Public test corpora of other projects, beside the repository (``../shared/
#: peer-corpora``, see its SOURCES.md: one source states no licence, so they are read in
#: place, not copied here). The tests that read them are skipped where it is absent: a
#: checkout of this repository alone still runs the rest.
CORPORA = Path(__file__).resolve().parents[1].parent / "shared" / "peer-corpora"
needs_corpora = pytest.mark.skipif(
    not CORPORA.is_dir(), reason="the peer corpora are not beside the repository "
    "(../shared/peer-corpora)")


def corpus_json(relative: str, default: Any) -> Any:
    """A JSON file of the corpora, or ``default`` where they are absent."""
    path = CORPORA / relative
    return json.loads(path.read_text(encoding="utf-8")) if path.is_file() else default


class SleepRecorder:
    """Stands in for asyncio.sleep: records the delays, returns at once."""

    def __init__(self) -> None:
        self.delays: list[float] = []

    async def __call__(self, delay: float) -> None:
        self.delays.append(delay)


def rows_of(pieces: list[str]) -> list[Any]:
    """The ``EmailRow``s that ``rows()`` makes of CSV text arriving in ``pieces`` (its
    hot loop, ``_rows.email_rows``, driven without a server); a malformed text raises
    the ``StreamDecodeError`` itself."""
    from asyncsdk._rows import email_rows

    async def texts() -> AsyncGenerator[str, None]:
        for piece in pieces:
            yield piece

    async def collect() -> list[Any]:
        return [row async for row in email_rows(texts(), lambda error: error)]

    return asyncio.run(collect())
