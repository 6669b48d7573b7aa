"""``RawResponse``: an answer of the service as a caller may see it (status, redacted
headers, request id, time, attempts, redacted URL). On the ground floor, beside the
errors: ``APIError.response`` is one (``with_raw_response`` hands out the others)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Generic, TypeVar

import attrs

__all__ = ["RawResponse"]

T = TypeVar("T")


@attrs.frozen
class RawResponse(Generic[T]):
    """A call's result with the HTTP answer it came from.

    Attributes:
        parsed: what the call returns without ``with_raw_response``; None for the
            answer of an ``APIError`` (its body is the error's ``body``).
        status_code: the answer's HTTP status.
        headers: the answer's headers (e.g. rate-limit headers), each value scrubbed
            of the credentials.
        request_id: the service's ``X-Request-Id``, for support tickets (None if absent).
        elapsed: seconds from the first attempt to the final answer, read in full.
        url: the request URL with every credential redacted.
        attempts: attempts sent on the wire (1 + retries).
    """

    parsed: T
    status_code: int
    headers: Mapping[str, str]
    request_id: str | None
    elapsed: float
    url: str
    attempts: int
