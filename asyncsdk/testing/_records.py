"""What the sandbox remembers for assertions: recorded requests and sent mails."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from email.parser import BytesParser
from email.policy import HTTP
from typing import Any
from urllib.parse import parse_qsl

__all__ = ["RecordedRequest", "SentMail", "multipart_fields"]


def multipart_fields(body: bytes, content_type: str) -> dict[str, str]:
    """The text fields of a ``multipart/form-data`` body (``content_type``: the request's
    header, with its boundary), each decoded with its part's charset (UTF-8 if none); a
    file field, and a part that is no form field, left out. Read from the bytes (the
    recorder has read the body: aiohttp's ``request.post()`` cannot read it again)."""
    head = f"Content-Type: {content_type}\r\n\r\n".encode("latin-1", "replace")
    message = BytesParser(policy=HTTP).parsebytes(head + body)
    if not message.is_multipart():
        return {}
    fields: dict[str, str] = {}
    for part in message.iter_parts():
        name = part.get_param("name", header="content-disposition")
        if (part.get_content_disposition() != "form-data" or not isinstance(name, str)
                or part.get_filename() is not None):
            continue
        payload = part.get_payload(decode=True)
        if not isinstance(payload, bytes):  # a nested multipart: no text field
            continue
        try:
            fields[name] = payload.decode(part.get_content_charset() or "utf-8")
        except (LookupError, UnicodeDecodeError):
            continue
    return fields


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
        """The body decoded as a form: ``multipart/form-data`` (its text fields), else
        urlencoded (empty dict if there is none)."""
        content_type = next((v for k, v in self.headers.items()
                             if k.lower() == "content-type"), "")
        if content_type.split(";")[0].strip().lower() == "multipart/form-data":
            return multipart_fields(self.body, content_type)
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
