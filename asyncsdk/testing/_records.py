"""What the sandbox remembers for assertions: recorded requests and sent mails."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import parse_qsl

__all__ = ["RecordedRequest", "SentMail"]


@dataclass
class RecordedRequest:
    """One request the sandbox received, secrets included (they are the point of a test).

    ``body`` is the raw request body; ``json`` and ``form`` decode it on access so that
    recording stays cheap. ``status`` is the HTTP status answered (None while in flight,
    or when a fault dropped the connection).
    """

    method: str
    path: str
    query: dict[str, str]
    headers: dict[str, str]
    body: bytes
    time: float
    status: int | None = None
    fault: str | None = None

    @property
    def json(self) -> Any:
        """The body decoded as JSON, or None if it is empty or not JSON."""
        if not self.body:
            return None
        try:
            return json.loads(self.body)
        except ValueError:
            return None

    @property
    def form(self) -> dict[str, str]:
        """The body decoded as an urlencoded form (empty dict if there is none)."""
        try:
            text = self.body.decode()
        except UnicodeDecodeError:
            return {}
        return dict(parse_qsl(text, keep_blank_values=True))


@dataclass(frozen=True)
class SentMail:
    """A mail accepted by ``POST /api/v1/mail/send/`` (``sender`` is the ``from`` field)."""

    id: str
    sender: str
    to: str
    subject: str
    message: str
    username: str
    state: str = field(default="Queued")
